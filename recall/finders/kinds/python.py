"""kind = "python": a library's function as a finder, called in one worker per corpus.

An engine names `callable = "package.module:function"`; the harness runs this module as
the batch process of that engine, so the library is imported once per corpus (its import
cost is not a query's) and a crash of the library is the death of one worker, which the
harness reports and restarts, never of the harness. The function is called as
`function(query, names, limit=limit, **options)`: names is a new list of the corpus's
names in the names file's order (a library may rewrite it), limit a whole number or None
for all. A function with no `limit` parameter is called without it and its hits are cut
to the limit; a coroutine function (an async library, pfzy's fuzzy_match) is run to its
end on one event loop of the worker.
It returns hits best first, as a list (or a tuple, or any other iterable with an order),
each a name, a dict with "name" (or the engine's `name_key`: pfzy's dicts hold the name
under "value"; and "file", "line"), or a tuple whose first element is the name, as
RapidFuzz's and thefuzz's (match, score, index) are, so most libraries need no wrapper.
Anything else (a str, which would be read as one hit a letter, bytes, a dict, a set with
no order) is that query's error. A library that needs a wrapper has one in a module of the
finder's tree: the tree is on the worker's path (PYTHONPATH={tree}), and `path` adds
folders of it (a src layout).

The worker is recall's own: the tree's when the tree is recall (a base runs its own
worker), else the harness's, whatever the tree holds (adapter.BOOT). What the library
prints goes to stderr: the worker keeps stdout for its answers (adapter.keep_stdout).

Requests and answers follow the harness's batch protocol (recall.finders.protocol, which
serves them): one JSON line {"id", "query", "limit"} in, one JSON line {"id", "results"}
out (a request without an id gets the bare list); a bad request or an exception of the
function is an error answer for that query.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from recall.errors import RecallError
from recall.finders.kinds import HARNESS_ROOT
from recall.finders.kinds.adapter import (
    json_argument,
    json_object_flag,
    keep_stdout,
    kind_tables,
    run_worker,
    worker_bin,
)
from recall.finders.protocol import Rows, Search

_CALLABLE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def worker_path(table: dict, source: str) -> str:
    """The worker's PYTHONPATH: {tree} (or the engine's own PYTHONPATH, which names it and
    any folder outside it), the folders of the tree an engine's `path` names (a src
    layout's module), then the harness's own folder (HARNESS_ROOT), always last: the worker
    is imported from it (adapter.BOOT), and a results key that sees it covers its code."""
    extra = table.get("path", [])
    if not isinstance(extra, list) or not all(isinstance(p, str) and p for p in extra):
        raise RecallError(f"{source}: [engine] path must be a list of folders of the tree")
    folders = []
    for folder in extra:
        if folder.startswith("/") or ".." in Path(folder).parts or "{" in folder:
            raise RecallError(
                f"{source}: [engine] path: {folder!r} must be a folder inside the tree, "
                "relative to its root (the root itself is always on the path)"
            )
        folders.append("{tree}/" + folder.strip("/"))
    env = table.get("env", {})
    own = env.get("PYTHONPATH") if isinstance(env, dict) else None
    return os.pathsep.join([own if isinstance(own, str) else "{tree}", *folders, HARNESS_ROOT])


def process_table(table: dict, source: str) -> dict:
    """A kind = "python" [engine] as the process engine that runs this worker for it."""
    known = {"callable", "options", "env", "path", "name_key"}
    tables = kind_tables(table, source, "python", known, ("options", "env"))
    target = table.get("callable")
    if not isinstance(target, str) or not _CALLABLE.fullmatch(target):
        raise RecallError(
            f"{source}: [engine] kind 'python' needs callable = \"package.module:function\", "
            f"got {target!r}"
        )
    name_key = table.get("name_key", "name")
    if not isinstance(name_key, str) or not name_key:
        raise RecallError(f"{source}: [engine] name_key must be the key of a hit's name")
    options, env = tables["options"], tables["env"]
    worker = ["{bin}", "--callable", target, "--options", json_argument(options)]
    if name_key != "name":
        worker += ["--name-key", name_key]
    worker += ["--names", "{names}"]
    return {
        "bin": worker_bin("recall.finders.kinds.python"),
        "query": [*worker, "--query", "{query}", "--limit", "{limit}"],
        "batch": worker,
        "env": {**env, "PYTHONPATH": worker_path(table, source)},
        "output": "json",
    }


def load_callable(target: object) -> Callable:
    """package.module:function (the attribute may be dotted, as in Class.method)."""
    if not isinstance(target, str) or not _CALLABLE.fullmatch(target):
        raise TypeError(f"{target!r} is not of the form package.module:function")
    module_name, _, attribute = target.partition(":")
    found: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        found = getattr(found, part)
    if not callable(found):
        raise TypeError(f"{target} is not callable")
    return found


def resolve_options(options: dict) -> dict:
    """Keyword arguments as TOML spells them; a value { callable = "module:name" } stands
    for that object, so a preset can pass a scorer (RapidFuzz's scorer=fuzz.partial_ratio)
    without a wrapper of ours between the library and the harness."""
    return {
        key: load_callable(value["callable"])
        if isinstance(value, dict) and set(value) == {"callable"}
        else value
        for key, value in options.items()
    }


def takes_limit(function: Callable) -> bool:
    """Whether function has a `limit` parameter (or takes any keyword); one whose signature
    cannot be read (a builtin) is taken to, as RapidFuzz's and thefuzz's extract do."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        (p.name == "limit" and p.kind != p.POSITIONAL_ONLY) or p.kind == p.VAR_KEYWORD
        for p in parameters
    )


def library_search(
    function: Callable, names: list[str], options: dict, name_key: str = "name"
) -> Search:
    """search(query, limit) over function: limit passed when it takes one, else the hits
    cut; a coroutine run to its end on the worker's one event loop. Each call gets a list
    of its own: a library may rewrite the list it is given (pfzy turns each name into a
    dict in place), and the next query must see the names."""
    frozen = tuple(names)
    with_limit = takes_limit(function)
    loop: asyncio.AbstractEventLoop | None = None

    def search(query: str, limit: int) -> Rows:
        nonlocal loop
        if with_limit:
            hits = function(query, list(frozen), limit=limit or None, **options)
        else:
            hits = function(query, list(frozen), **options)
        if inspect.isawaitable(hits):
            loop = loop or asyncio.new_event_loop()
            hits = loop.run_until_complete(hits)
        rows = [_row(hit, name_key) for hit in hit_list(hits)]
        return rows if with_limit or not limit else rows[:limit]

    return search


def hit_list(hits: object) -> Iterable[object]:
    """The function's return value as its hits, when it has the one shape answers have:
    a list, or another iterable whose order is the ranking. A str would be iterated a
    letter at a time (and single letters are names of some corpora, so no other check
    would notice), bytes a byte at a time, a dict by its keys, a set in an order that
    changes from one process to the next: each is refused, as that query's error."""
    refused = (str, bytes, bytearray, memoryview, Mapping, set, frozenset)
    if isinstance(hits, refused) or not isinstance(hits, Iterable):
        raise TypeError(
            f"the function returned a value of type {type(hits).__name__}, not a list of hits "
            "(a single name is [name])"
        )
    return hits


def _row(hit: object, name_key: str = "name") -> dict[str, object]:
    """A hit as the protocol's result row; anything else is an error of the finder."""
    if isinstance(hit, str):
        return {"name": hit}
    if isinstance(hit, (tuple, list)) and hit and isinstance(hit[0], str):
        return {"name": hit[0]}
    if isinstance(hit, dict) and isinstance(hit.get(name_key), str):
        row = {key: hit[key] for key in ("file", "line") if key in hit}
        return {"name": hit[name_key], **row}
    raise TypeError(
        f"a hit must be a name, a (name, ...) tuple or a dict with {name_key!r}, got {hit!r:.80}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recall.finders.kinds.python",
        description="A library function over a names file: --query once, else JSON lines on stdin.",
    )
    parser.add_argument("--callable", required=True, help="package.module:function")
    parser.add_argument("--options", default="{}", help="keyword arguments as a JSON object")
    parser.add_argument("--names", type=Path, required=True, help="one name a line")
    parser.add_argument("--name-key", default="name", help="the key of a dict hit's name")
    parser.add_argument("--query", help="answer this one query and exit")
    parser.add_argument("--limit", type=int, default=0, help="with --query (0 = unlimited)")
    args = parser.parse_args(argv)
    if args.limit < 0:
        parser.error("--limit must be 0 or more")
    options = json_object_flag(parser, "--options", args.options)
    out = keep_stdout()
    try:
        function, options = load_callable(args.callable), resolve_options(options)
    except (ImportError, AttributeError, TypeError) as exc:
        print(f"library worker: cannot load {args.callable}: {exc}", file=sys.stderr)
        return 2
    return run_worker(
        "library worker",
        args.names,
        lambda names: library_search(function, names, options, args.name_key),
        args.query,
        args.limit,
        out,
    )


if __name__ == "__main__":
    sys.exit(main())
