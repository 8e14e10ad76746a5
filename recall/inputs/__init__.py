"""Inputs: the pinned corpora, their names, and the query sets derived from them."""
