"""recall: a recall harness for fuzzy symbol finders.

The workflows can be called from Python as well as from the command line (docs/api.md):
`recall.run(recall.RunOptions(...))` returns the Report `recall run --json` prints. The
names are loaded on first use, so that `import recall` (and `recall --version`, `recall
--help`) loads neither NumPy nor GitPython; they are looked up by name rather than
imported here, as the commands are (recall/commands/__init__.py), so that the modules
below, which read `__version__` from here, import nothing above them. It imports nothing
itself: `python -m recall` and the `recall` command import this package before their
signal handlers are in place (recall/__main__.py).
"""

TYPE_CHECKING = False  # typing's own flag, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

# The Python API: each name, and the module that defines it.
API = {
    "run": ("recall.workflows.run", "run"),
    "measure": ("recall.workflows.run", "measure"),
    "merge": ("recall.workflows.merge", "merge"),
    "merge_history": ("recall.workflows.history_shards", "merge_history"),
    "history_shard": ("recall.workflows.history_shards", "measure_saved"),
    "history": ("recall.workflows.history", "measure_history"),
    "bisect": ("recall.workflows.bisection", "find_first_bad"),
    "explain": ("recall.workflows.explain", "explain"),
    "pin": ("recall.workflows.pin", "pin"),
    "init": ("recall.workflows.init", "init"),
    "derive_recipes": ("recall.workflows.derive", "derived_queries"),
    "derive_sample": ("recall.workflows.derive", "sample"),
    "derive_all": ("recall.workflows.derive", "derive_sets"),
    "cache_entries": ("recall.workflows.cache", "list_entries"),
    "prune": ("recall.workflows.cache", "prune_stale"),
    "doctor": ("recall.workflows.doctor", "doctor"),
    "fetch": ("recall.workflows.fetch", "fetch_pins"),
    "results": ("recall.workflows.results", "results_page"),
    "Data": ("recall.workflows.options", "Data"),
    "RunOptions": ("recall.workflows.options", "RunOptions"),
    "MergeOptions": ("recall.workflows.options", "MergeOptions"),
    "CommitOptions": ("recall.workflows.options", "CommitOptions"),
    "HistoryOptions": ("recall.workflows.options", "HistoryOptions"),
    "BisectOptions": ("recall.workflows.options", "BisectOptions"),
    "ExplainOptions": ("recall.workflows.options", "ExplainOptions"),
    "PinOptions": ("recall.workflows.options", "PinOptions"),
    "PruneOptions": ("recall.workflows.options", "PruneOptions"),
    "InitOptions": ("recall.workflows.options", "InitOptions"),
    "RecipesOptions": ("recall.workflows.options", "RecipesOptions"),
    "SampleOptions": ("recall.workflows.options", "SampleOptions"),
    "DeriveOptions": ("recall.workflows.options", "DeriveOptions"),
    "DoctorOptions": ("recall.workflows.options", "DoctorOptions"),
    "FetchOptions": ("recall.workflows.options", "FetchOptions"),
    "ResultsOptions": ("recall.workflows.options", "ResultsOptions"),
    "Report": ("recall.analysis.model", "Report"),
    "History": ("recall.analysis.history", "History"),
    "Verdict": ("recall.workflows.bisection", "Verdict"),
    "PinChange": ("recall.workflows.pin", "PinChange"),
    "Diagnosis": ("recall.workflows.doctor", "Diagnosis"),
    "RecallError": ("recall.errors", "RecallError"),
    "reporting": ("recall.terminal", "reporting"),
    "Reporter": ("recall.terminal", "Reporter"),
}
__all__ = ["__version__", *API]


def __getattr__(name: str) -> "Any":
    """An API name, its module imported now."""
    import importlib

    if name not in API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = API[name]
    return getattr(importlib.import_module(module), attribute)
