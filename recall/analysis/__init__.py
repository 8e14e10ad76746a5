"""Analysis: numbers from results, with no I/O: the report, its statistics, the ceiling."""
