"""`recall fetch`: the pinned corpora into the cache, ahead of a run that needs them."""

from __future__ import annotations

import argparse
from pathlib import Path

from recall.commands._flags import add_common, locate_flags
from recall.errors import EXIT_OK
from recall.inputs.corpus import cache_root, fetch, load_pins, mirror_root, select_pins


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fetch", help="fetch the pinned corpora into the cache")
    add_common(parser)
    parser.add_argument("repos", nargs="*", metavar="REPO", help="pins to fetch (default: all)")


def run(args: argparse.Namespace) -> int:
    locate_flags(args)
    corpus = Path(args.corpus)
    pins = select_pins(load_pins(corpus), args.repos, corpus)
    cache, mirror = cache_root(args.cache), mirror_root(args.mirror)
    for pin in pins:
        checkout = fetch(pin, cache, mirror)
        print(f"{pin.name}\t{pin.sha[:12]}\t{checkout.path}")
    return EXIT_OK
