"""The reference fuzzy symbol finder: the engine `make recall` measures by default.

`python -m recall.finders.reference index` writes a corpus's definitions, what the ranker derives
from its names and the compiled kernel into one index file (store.py), and `python -m
recall.finders.reference query` ranks them for a query (rank.py, kernel.c). This module imports
nothing heavy, so that starting the CLI costs little before the query is read.
"""
