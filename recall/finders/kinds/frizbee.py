"""frizbee (a Python library, no command line) as a batch finder over a names file.

The names are copied into frizbee's Rust-side Haystacks once per process, so a query
costs one match over them, which is how an editor would use the library; a fresh process
per query would measure Python's start-up instead. Requests and answers follow the
harness's batch protocol, served by recall.finders.protocol through the kinds' shared worker
(recall.finders.kinds.adapter).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import frizbee

from recall.finders.kinds.adapter import keep_stdout, run_worker
from recall.finders.protocol import Rows, Search


def frizbee_search(names: list[str], max_typos: int) -> Search:
    """Names best first; frizbee breaks ties by input order, so answers are stable."""
    haystacks = frizbee.Haystacks(names)

    def search(query: str, limit: int) -> Rows:
        if not query:
            return []
        matcher = frizbee.Matcher(query, max_typos=max_typos, max_items=limit or None)
        return [{"name": names[m.index]} for m in matcher.match_list(haystacks)]

    return search


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recall.finders.kinds.frizbee",
        description="frizbee over a names file: --query once, else JSON lines on stdin.",
    )
    parser.add_argument("--names", type=Path, required=True, help="one name a line")
    parser.add_argument("--max-typos", type=int, default=0, help="frizbee's max_typos")
    parser.add_argument("--query", help="answer this one query and exit")
    parser.add_argument("--limit", type=int, default=0, help="with --query (0 = unlimited)")
    args = parser.parse_args(argv)
    if args.max_typos < 0 or args.limit < 0:
        parser.error("--max-typos and --limit must be 0 or more")
    return run_worker(
        "frizbee adapter",
        args.names,
        lambda names: frizbee_search(names, args.max_typos),
        args.query,
        args.limit,
        keep_stdout(),
    )


if __name__ == "__main__":
    sys.exit(main())
