"""frizbee (a Python library, no command line) as a batch finder over a names file.

The names are copied into frizbee's Rust-side Haystacks once per process, so a query
costs one match over them, which is how an editor would use the library; a fresh process
per query would measure Python's start-up instead. Requests and answers follow the
harness's batch protocol: one JSON line {"id", "query", "limit"} in, one JSON line
{"id", "results"} out (a request without an id gets the bare list).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import frizbee
import orjson


def read_names(path: Path) -> list[str]:
    """One name a line; split on newlines only, since a name may hold other separators."""
    text = path.read_text(encoding="utf-8")
    return [line for line in text.split("\n") if line]


class Finder:
    """The names as frizbee Haystacks and the match options fixed for this process."""

    def __init__(self, names: list[str], max_typos: int) -> None:
        self.names = names
        self.max_typos = max_typos
        self.haystacks = frizbee.Haystacks(names)

    def search(self, query: str, limit: int) -> list[str]:
        """Names best first; frizbee breaks ties by input order, so answers are stable."""
        if not query:
            return []
        matcher = frizbee.Matcher(query, max_typos=self.max_typos, max_items=limit or None)
        return [self.names[m.index] for m in matcher.match_list(self.haystacks)]


def answer(finder: Finder, line: bytes) -> bytes:
    """One request line to one answer line; a bad request gets an error, not a crash. A
    request's id, when it has one, is echoed with its answer or error, so the harness can
    tell an answer that landed on the wrong query."""
    request = None
    try:
        request = orjson.loads(line)
        query, limit = request["query"], request.get("limit", 0)
        if not isinstance(query, str) or not isinstance(limit, int) or limit < 0:
            raise ValueError("query must be a string and limit a whole number >= 0")
    except (orjson.JSONDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        error = {"error": f"bad request: {exc}"}
        return orjson.dumps({"id": request["id"], **error} if _has_id(request) else error) + b"\n"
    rows = [{"name": name} for name in finder.search(query, limit)]
    if _has_id(request):
        return orjson.dumps({"id": request["id"], "results": rows}) + b"\n"
    return orjson.dumps(rows) + b"\n"


def _has_id(request: object) -> bool:
    return isinstance(request, dict) and "id" in request


def serve(finder: Finder, requests: Iterable[bytes], out: BinaryIO) -> None:
    for line in requests:
        if not line.strip():
            continue
        out.write(answer(finder, line))
        out.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recall.peers.frizbee",
        description="frizbee over a names file: --query once, else JSON lines on stdin.",
    )
    parser.add_argument("--names", type=Path, required=True, help="one name a line")
    parser.add_argument("--max-typos", type=int, default=0, help="frizbee's max_typos")
    parser.add_argument("--query", help="answer this one query and exit")
    parser.add_argument("--limit", type=int, default=0, help="with --query (0 = unlimited)")
    args = parser.parse_args(argv)
    if args.max_typos < 0 or args.limit < 0:
        parser.error("--max-typos and --limit must be 0 or more")
    try:
        names = read_names(args.names)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"frizbee adapter: {args.names}: cannot read: {exc}", file=sys.stderr)
        return 2
    finder = Finder(names, args.max_typos)
    if args.query is not None:
        rows = [{"name": name} for name in finder.search(args.query, args.limit)]
        sys.stdout.buffer.write(orjson.dumps(rows) + b"\n")
        return 0
    serve(finder, sys.stdin.buffer, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
