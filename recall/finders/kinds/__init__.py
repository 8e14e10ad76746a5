"""Adapters that let finders without a command line of their own speak the batch protocol."""
