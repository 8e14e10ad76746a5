"""Finders: engine files and presets, the kinds of adapter, the batch protocol, and the
reference finder."""
