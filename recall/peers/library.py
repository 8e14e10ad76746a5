"""kind = "python": a library's function as a finder, called in one worker per corpus.

An engine names `callable = "package.module:function"`; the harness runs this module as
the batch process of that engine, so the library is imported once per corpus (its import
cost is not a query's) and a crash of the library is the death of one worker, which the
harness reports and restarts, never of the harness. The function is called as
`function(query, names, limit=limit, **options)`: names is a tuple of the corpus's names in
the names file's order, limit a whole number or None for all. It returns hits best first,
each a name, a dict with "name" (and "file", "line"), or a tuple whose first element is
the name, as RapidFuzz's and thefuzz's (match, score, index) are, so most libraries need
no wrapper at all.

Requests and answers follow the harness's batch protocol: one JSON line {"id", "query",
"limit"} in, one JSON line {"id", "results"} out (a request without an id gets the bare
list); a bad request or an exception of the function is an error answer for that query.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

import orjson

from recall.errors import RecallError

Rows = list[dict[str, object]]
Search = Callable[[str, int], Rows]

_CALLABLE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


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


def process_table(table: dict, source: str) -> dict:
    """A kind = "python" [engine] as the process engine that runs this worker for it."""
    tables = kind_tables(
        table, source, "python", {"callable", "options", "env"}, ("options", "env")
    )
    target = table.get("callable")
    if not isinstance(target, str) or not _CALLABLE.fullmatch(target):
        raise RecallError(
            f"{source}: [engine] kind 'python' needs callable = \"package.module:function\", "
            f"got {target!r}"
        )
    options, env = tables["options"], tables["env"]
    worker = ["{bin}", "--callable", target, "--options", json_argument(options)]
    worker += ["--names", "{names}"]
    return {
        "bin": ["{python}", "-P", "-m", "recall.peers.library"],
        "query": [*worker, "--query", "{query}", "--limit", "{limit}"],
        "batch": worker,
        "env": {"PYTHONPATH": "{tree}", **env},
        "output": "json",
    }


def read_names(path: Path) -> list[str]:
    """One name a line; split on newlines only, since a name may hold other separators."""
    text = path.read_text(encoding="utf-8")
    return [line for line in text.split("\n") if line]


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


def library_search(function: Callable, names: list[str], options: dict) -> Search:
    frozen = tuple(names)

    def search(query: str, limit: int) -> Rows:
        hits = function(query, frozen, limit=limit or None, **options)
        return [_row(hit) for hit in hits]

    return search


def _row(hit: object) -> dict[str, object]:
    """A hit as the protocol's result row; anything else is an error of the finder."""
    if isinstance(hit, str):
        return {"name": hit}
    if isinstance(hit, (tuple, list)) and hit and isinstance(hit[0], str):
        return {"name": hit[0]}
    if isinstance(hit, dict) and isinstance(hit.get("name"), str):
        return {key: hit[key] for key in ("name", "file", "line") if key in hit}
    raise TypeError(f"a hit must be a name, a (name, ...) tuple or a dict, got {hit!r:.80}")


def answer(search: Search, line: bytes) -> bytes:
    """One request line to one answer line; a bad request or a failing search gets an
    error, not a crash. A request's id, when it has one, is echoed with its answer or error,
    so the harness can tell an answer that landed on the wrong query."""
    request = None
    try:
        request = orjson.loads(line)
        query, limit = request["query"], request.get("limit", 0)
        if not isinstance(query, str) or not isinstance(limit, int) or limit < 0:
            raise ValueError("query must be a string and limit a whole number >= 0")
    except (orjson.JSONDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return _reply(request, {"error": f"bad request: {exc}"})
    try:
        rows = search(query, limit)
    except Exception as exc:  # the library's fault, reported for this query alone
        return _reply(request, {"error": f"{type(exc).__name__}: {exc}"})
    if _has_id(request):
        return orjson.dumps({"id": request["id"], "results": rows}) + b"\n"
    return orjson.dumps(rows) + b"\n"


def _reply(request: object, error: dict[str, str]) -> bytes:
    body = {"id": request["id"], **error} if _has_id(request) else error  # type: ignore[index]
    return orjson.dumps(body) + b"\n"


def _has_id(request: object) -> bool:
    return isinstance(request, dict) and "id" in request


def serve(search: Search, requests: Iterable[bytes], out: BinaryIO) -> None:
    for line in requests:
        if not line.strip():
            continue
        out.write(answer(search, line))
        out.flush()


def run_worker(
    name: str,
    names_path: Path,
    search_from: Callable[[list[str]], Search],
    query: str | None,
    limit: int,
) -> int:
    """Read the names, build the search once, then answer one --query or serve stdin."""
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
        sys.stdout.buffer.write(orjson.dumps(rows) + b"\n")
        return 0
    serve(search, sys.stdin.buffer, sys.stdout.buffer)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recall.peers.library",
        description="A library function over a names file: --query once, else JSON lines on stdin.",
    )
    parser.add_argument("--callable", required=True, help="package.module:function")
    parser.add_argument("--options", default="{}", help="keyword arguments as a JSON object")
    parser.add_argument("--names", type=Path, required=True, help="one name a line")
    parser.add_argument("--query", help="answer this one query and exit")
    parser.add_argument("--limit", type=int, default=0, help="with --query (0 = unlimited)")
    args = parser.parse_args(argv)
    if args.limit < 0:
        parser.error("--limit must be 0 or more")
    options = json_object_flag(parser, "--options", args.options)
    try:
        function, options = load_callable(args.callable), resolve_options(options)
    except (ImportError, AttributeError, TypeError) as exc:
        print(f"library worker: cannot load {args.callable}: {exc}", file=sys.stderr)
        return 2
    return run_worker(
        "library worker",
        args.names,
        lambda names: library_search(function, names, options),
        args.query,
        args.limit,
    )


if __name__ == "__main__":
    sys.exit(main())
