"""The subcommands, one module each: `add_parser(sub)` defines the command's flags and
`run(args)` does its work (or calls the stage modules that do) and returns the exit
status. The order here is the order `recall --help` lists them in.

A command's module is imported only when that command runs (or its --help is asked):
the modules import GitPython and NumPy, and `recall --version` and `recall --help` must
answer at once. So the one-line summaries `recall --help` lists are kept here too;
tests/test_commands.py checks that each equals its module's own.
"""

from __future__ import annotations

import importlib
from types import ModuleType

SUMMARIES = {
    "fetch": "fetch the pinned corpora into the cache",
    "derive": "derive queries from the corpora's names",
    "run": "measure the finder (the default command)",
    "doctor": "check what the harness will use and whether it works",
    "init": "write a starter recall.toml in the finder's repo",
    "explain": "one query through each binary, top 10 side by side",
    "pin": "add or move a pin and regenerate that repo's queries",
    "cache": "list the cache's entries or prune what is not needed",
    "history": "measure the finder at many commits of its repo",
    "bisect": "the first commit where a query's rank or #1 rate changed",
    "results": "every peer finder and the reference over a query set: docs/RESULTS.md",
    "merge": "one report from the files of recall run --shard K/N --save FILE "
    "(or one history from those of recall history --shard K/N --save FILE)",
}
NAMES = tuple(SUMMARIES)


def module(name: str) -> ModuleType:
    """The command's module, imported now."""
    return importlib.import_module(f"recall.commands.{name}")


def __getattr__(name: str) -> dict[str, ModuleType]:
    """`MODULES`: every command's module by name, each imported (for tests and tools
    that want them all; the CLI imports only the one it runs)."""
    if name == "MODULES":
        return {command: module(command) for command in NAMES}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
