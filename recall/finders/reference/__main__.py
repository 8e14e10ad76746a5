"""Command line of the reference finder, in the shape the engine description expects.

    python -m recall.finders.reference index CORPUS_DIR --language L --db FILE
    python -m recall.finders.reference query Q --db FILE [--json] [--limit N]
    python -m recall.finders.reference query --batch --db FILE   (JSON lines in, JSON lines out:
        {"id": I, "query": Q, "limit": N} gets {"id": I, "results": [...]}, and a
        request without an id the bare list)

NumPy, RapidFuzz and SQLite are imported only once a command needs them, so a usage
error costs nothing and a query pays only for what it uses.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import IO, Any

from recall.errors import EXIT_FAILURE, EXIT_OK, RecallError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m recall.finders.reference", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    index = sub.add_parser("index", help="index a corpus into an SQLite file")
    index.add_argument("corpus", type=Path)
    index.add_argument("--language", required=True)
    index.add_argument("--db", required=True, type=Path)
    query = sub.add_parser("query", help="rank the indexed names for a query")
    query.add_argument("query", nargs="?")
    query.add_argument("--db", required=True, type=Path)
    query.add_argument("--json", action="store_true", help="one JSON list on one line")
    query.add_argument("--limit", type=int, default=0, help="0 for every plausible name")
    query.add_argument("--batch", action="store_true", help="JSON lines on stdin")
    return parser


def _one_batch_line(finder: Any, line: bytes) -> bytes:
    """The answer to one request line; a bad line is that query's error, never the end
    of the batch. A request's id, when it has one, is echoed with its answer or error
    (the harness checks it, so an answer can never land on another query)."""
    import orjson

    try:
        request = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return orjson.dumps({"error": f"bad JSON line: {exc}"})
    echo = isinstance(request, dict) and "id" in request
    try:
        if not isinstance(request, dict) or not isinstance(request.get("query"), str):
            raise RecallError('expected an object {"query": string, "limit": integer}')
        limit = request.get("limit", 0)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise RecallError(f"limit must be a non-negative integer, got {limit!r}")
        results = finder.search_json(request["query"], limit)
    except Exception as exc:  # one query's failure must not end the batch
        error = {"error": f"{type(exc).__name__}: {exc}"}
        return orjson.dumps({"id": request["id"], **error} if echo else error)
    if echo:
        return b'{"id":' + orjson.dumps(request["id"]) + b',"results":' + results + b"}"
    return results


def _batch(finder: Any, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """One answer line per request line, in order, flushed so the harness never waits."""
    for line in stdin:
        stdout.write(_one_batch_line(finder, line) + b"\n")
        stdout.flush()


def _query(args: argparse.Namespace) -> None:
    from recall.finders.reference.rank import Finder
    from recall.finders.reference.store import load

    if args.limit < 0:
        raise RecallError(f"--limit must be 0 or more, got {args.limit}")
    if args.batch:
        if args.query is not None:
            raise RecallError("--batch reads queries from stdin; give no query argument")
        finder = Finder(load(args.db))
        _batch(finder, sys.stdin.buffer, sys.stdout.buffer)
        return
    if args.query is None:
        raise RecallError("query: give a query, or --batch")
    finder = Finder(load(args.db))
    if args.json:
        sys.stdout.buffer.write(finder.search_json(args.query, args.limit) + b"\n")
    else:
        hits = finder.search(args.query, args.limit)
        sys.stdout.write("".join(f"{h.name}\t{h.file}:{h.line}\n" for h in hits))


def main(argv: list[str] | None = None) -> int:
    """Run one command; a RecallError is one line on stderr and exit status 2."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "index":
            from recall.finders.reference.store import build

            build(args.corpus, args.language, args.db)
        else:
            _query(args)
    except RecallError as exc:
        print(f"recall.finders.reference: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:
        return EXIT_OK
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
