"""recall: a recall harness for fuzzy symbol finders."""

__version__ = "0.1.0"
