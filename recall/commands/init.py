"""`recall init`: a starter recall.toml in a finder's repo (the work is
recall/workflows/init.py's; this is its flags)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from recall.commands._flags import add_finder
from recall.errors import EXIT_OK
from recall.workflows import init
from recall.workflows.options import InitOptions


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("init", help="write a starter recall.toml in the finder's repo")
    parser.add_argument(
        "--preset", metavar="NAME",
        help="start from this preset (default: a blank engine with every key explained)",
    )  # fmt: skip
    add_finder(parser, ", whose top folder gets recall.toml", found=False)


def run(args: argparse.Namespace) -> int:
    started = init.init(InitOptions(finder=args.finder, preset=args.preset))
    sys.stdout.write(init.render(started, Path.cwd()))
    return EXIT_OK
