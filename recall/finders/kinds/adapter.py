"""What every kind's adapter shares: the checks of its [engine] table and its JSON argv,
how its worker starts (recall's own code, whatever the tree holds), the corpus's names
file, the one check of every path an adapter creates, its stdout kept for the protocol,
and the worker's main (one --query, else the batch protocol of recall.finders.protocol on
stdin).

The kinds' own modules (python, frizbee, lsp, node) hold what each kind alone does.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import orjson

from recall.errors import RecallError
from recall.finders.kinds import HARNESS_ROOT
from recall.finders.protocol import Search, serve

# Starts a worker module of recall's (argv: {tree}, the harness's folder, the module, then
# the worker's flags): the tree's own when the tree is recall (a base runs its own worker),
# else the harness's, imported with the harness's folder first on the path, whatever the
# tree holds (a finder with a top-level package `recall` of its own would otherwise hide
# it); then recall's modules are forgotten, so that the library the worker loads from the
# tree imports its own `recall` if it has one. As node.BOOT does for the Node adapter.
BOOT = (
    "import importlib, os, sys; "
    "tree, harness, name = sys.argv[1:4]; "
    "own = os.path.isfile(os.path.join(tree, *name.split('.')) + '.py'); "
    "sys.path.insert(0, tree if own else harness); "
    "worker = importlib.import_module(name); "
    "del sys.path[0]; "
    "own or [sys.modules.pop(m) for m in list(sys.modules) if m.partition('.')[0] == 'recall']; "
    "sys.exit(worker.main(sys.argv[4:]))"
)


def worker_bin(module: str) -> list[str]:
    """The `bin` of a kind whose worker is a module of recall's (BOOT)."""
    return ["{python}", "-P", "-c", BOOT, "{tree}", HARNESS_ROOT, module]


def kind_tables(
    table: dict, source: str, kind: str, known: set[str], tables: tuple[str, ...]
) -> dict[str, dict]:
    """The checks every kind's [engine] table shares: no key the kind does not take, and
    the keys that must be tables (options, settings, env) as tables, {} when absent."""
    for key in table:
        if key not in known:
            raise RecallError(f"{source}: [engine] unknown key {key!r} for kind {kind!r}")
    found = {key: table.get(key, {}) for key in tables}
    for key, value in found.items():
        if not isinstance(value, dict):
            raise RecallError(f"{source}: [engine] {key} must be a table")
    return found


def json_argument(value: dict) -> str:
    """A table as one argv element, the same bytes for the same table (sorted keys), since
    the argv is part of what a cached result is known by."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def json_object_flag(parser: argparse.ArgumentParser, flag: str, text: str) -> dict:
    """The JSON object an adapter's --options or --settings carries, or a usage error."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        parser.error(f"{flag}: {exc}")
    if not isinstance(value, dict):
        parser.error(f"{flag}: not a JSON object")
    return value


def confined(root: Path, path: Path) -> Path:
    """path resolved (every link that exists followed, `..` taken away), if it lies in
    root, resolved too; else ValueError naming both. Every path an adapter creates goes
    through here before anything is written: its parts come from an engine file (a
    folder) or from a corpus (a go.mod's module path), either of which can hold an
    absolute path, `..` or a link that leads out of the run's folder."""
    real_root, real = root.resolve(), path.resolve()
    if real != real_root and real_root not in real.parents:
        raise ValueError(f"{path} is outside {root}")
    return real


def keep_stdout() -> BinaryIO:
    """The protocol's stdout, for the worker's answers alone: file descriptor 1 is copied
    for them, then pointed at stderr (sys.stdout with it), so that what a library prints,
    with print() or from C or from a child process, goes to the stderr tail the harness
    shows with an error, never between two answers, where it would shift every answer
    after it. Called before the library is imported: an import can print too."""
    sys.stdout.flush()
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return answers


def read_names(path: Path) -> list[str]:
    """One name a line; split on newlines only, since a name may hold other separators."""
    text = path.read_text(encoding="utf-8")
    return [line for line in text.split("\n") if line]


def run_worker(
    name: str,
    names_path: Path,
    search_from: Callable[[list[str]], Search],
    query: str | None,
    limit: int,
    out: BinaryIO | None = None,
) -> int:
    """Read the names, build the search once, then answer one --query or serve stdin,
    writing the answers to out: keep_stdout() where a library of someone else's runs
    in the process, else stdout."""
    out = out or sys.stdout.buffer
    try:
        names = read_names(names_path)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"{name}: {names_path}: cannot read: {exc}", file=sys.stderr)
        return 2
    search = search_from(names)
    if query is not None:
        try:
            rows = search(query, limit)
        except Exception as exc:  # one query, one process: the exit status says it failed
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        out.write(orjson.dumps(rows) + b"\n")
        out.flush()
        return 0
    serve(search, sys.stdin.buffer, out)
    return 0
