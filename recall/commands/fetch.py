"""`recall fetch`: the pinned corpora into the cache, ahead of a run that needs them (the
work is recall/workflows/fetch.py's; this is its flags)."""

from __future__ import annotations

import argparse

from recall.commands._flags import add_common
from recall.errors import EXIT_OK
from recall.workflows.fetch import fetch_pins
from recall.workflows.options import Data, FetchOptions


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fetch", help="fetch the pinned corpora into the cache")
    add_common(parser)
    parser.add_argument("repos", nargs="*", metavar="REPO", help="pins to fetch (default: all)")


def run(args: argparse.Namespace) -> int:
    data = Data(corpus=args.corpus, cache=args.cache, mirror=args.mirror)
    for checkout in fetch_pins(FetchOptions(data=data, repos=tuple(args.repos))):
        print(f"{checkout.pin.name}\t{checkout.pin.sha[:12]}\t{checkout.path}")
    return EXIT_OK
