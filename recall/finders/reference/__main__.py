"""Command line of the reference finder, in the shape the engine description expects.

    python -m recall.finders.reference index CORPUS_DIR --language L --db FILE
    python -m recall.finders.reference index-names NAMES_FILE --db FILE   (a names list
        alone, one a line: the judgments set's candidates, with no corpus behind them)
    python -m recall.finders.reference query Q --db FILE [--json] [--limit N]
    python -m recall.finders.reference query --batch --db FILE   (the batch protocol of
        recall.finders.protocol: {"id": I, "query": Q, "limit": N} in, {"id": I,
        "results": [...]} out, and a request without an id gets the bare list)

What a command needs is imported once it runs: an index imports NumPy (and ctags's
reader, for a corpus); a query, neither (its start-up counts in its queries' time).
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import SimpleNamespace

from recall.errors import EXIT_FAILURE, EXIT_OK, RecallError

TYPE_CHECKING = False  # typing for the type checker alone: see recall/__init__.py
if TYPE_CHECKING:
    import argparse


def _parser() -> argparse.ArgumentParser:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m recall.finders.reference", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    index = sub.add_parser("index", help="index a corpus into a file")
    index.add_argument("corpus", type=Path)
    index.add_argument("--language", required=True)
    index.add_argument("--db", required=True, type=Path)
    names = sub.add_parser("index-names", help="index a names list (one a line) alone")
    names.add_argument("names", type=Path)
    names.add_argument("--db", required=True, type=Path)
    query = sub.add_parser("query", help="rank the indexed names for a query")
    query.add_argument("query", nargs="?")
    query.add_argument("--db", required=True)
    query.add_argument("--json", action="store_true", help="one JSON list on one line")
    query.add_argument("--limit", type=int, default=0, help="0 for every plausible name")
    query.add_argument("--batch", action="store_true", help="JSON lines on stdin")
    return parser


def _plain_query(argv: list[str]) -> SimpleNamespace | None:
    """The arguments of a query command of the plain shape an engine's argv gives it
    (`query [Q] --db FILE [--json] [--limit N] [--batch]`), read without argparse, whose
    import and help formatter cost some milliseconds of every query process's start-up;
    None for any other command line, which the parser reads (and refuses, with usage)."""
    if not argv or argv[0] != "query":
        return None
    args = SimpleNamespace(command="query", query=None, db=None, json=False, limit=0, batch=False)
    words = iter(argv[1:])
    for word in words:
        if word in ("--json", "--batch"):
            setattr(args, word[2:], True)
        elif word in ("--db", "--limit"):
            value = next(words, None)
            if value is None:
                return None
            if word == "--db":
                args.db = value
            else:
                try:
                    args.limit = int(value)
                except ValueError:
                    return None
        elif word.startswith("-") or args.query is not None:
            return None
        else:
            args.query = word
    return args if args.db is not None else None


def _query(args: argparse.Namespace | SimpleNamespace) -> None:
    from recall.finders.reference.rank import Finder
    from recall.finders.reference.store import Index

    if args.limit < 0:
        raise RecallError(f"--limit must be 0 or more, got {args.limit}")
    if args.batch and args.query is not None:
        raise RecallError("--batch reads queries from stdin; give no query argument")
    if not args.batch and args.query is None:
        raise RecallError("query: give a query, or --batch")
    finder = Finder(Index(args.db))
    if args.batch:
        from recall.finders.protocol import serve

        serve(finder.search_json, sys.stdin.buffer, sys.stdout.buffer)
    elif args.json:
        sys.stdout.buffer.write(bytes(finder.search_json(args.query, args.limit)) + b"\n")
    else:
        import orjson

        rows = orjson.loads(finder.search_json(args.query, args.limit))
        # a names list's rows name no file or line: the name alone
        lines = (
            f"{r['name']}\t{r['file']}:{r['line']}" if "file" in r else r["name"] for r in rows
        )
        sys.stdout.write("".join(f"{line}\n" for line in lines))


def main(argv: list[str] | None = None) -> int:
    """Run one command; a RecallError is one line on stderr and exit status 2."""
    # The index process imports NumPy and uses none of its BLAS, whose threads would only
    # be started (a tenth of a second of CPU, on the cores the harness works on).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    words = sys.argv[1:] if argv is None else argv
    args = _plain_query(words) or _parser().parse_args(words)
    try:
        if args.command == "index":
            from recall.finders.reference.store import build

            build(args.corpus, args.language, args.db)
        elif args.command == "index-names":
            from recall.finders.reference.store import build_names

            build_names(args.names, args.db)
        else:
            _query(args)
    except RecallError as exc:
        print(f"recall.finders.reference: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:
        return EXIT_OK
    return EXIT_OK


if __name__ == "__main__":
    status = main()
    # Leave without tearing down the interpreter (its arrays, lists and modules: some tens
    # of milliseconds of a batch process's time, which counts as the queries'): nothing is
    # left to write once the streams are flushed.
    with contextlib.suppress(BrokenPipeError):  # a reader gone: nothing to tell it
        sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
