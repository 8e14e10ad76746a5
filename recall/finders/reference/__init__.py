"""The reference fuzzy symbol finder: the engine `make recall` measures by default.

`python -m recall.finders.reference index` stores a corpus's definitions in SQLite (store.py) and
`python -m recall.finders.reference query` ranks them for a query (rank.py). This module imports
nothing heavy, so that starting the CLI costs little before the query is read.
"""
