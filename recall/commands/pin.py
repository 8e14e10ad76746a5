"""`recall pin REPO URL SHA --language L`: add or move a pin and regenerate that repo's
queries in one step (the work is recall/workflows/pin.py's; this is its flags)."""

from __future__ import annotations

import argparse
import sys

from recall.commands._flags import add_common, add_queries
from recall.errors import EXIT_OK
from recall.inputs.queryset import DERIVED_SETS
from recall.workflows import pin
from recall.workflows.options import Data, PinOptions


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pin", help="add or move a pin and regenerate that repo's queries")
    add_common(p)
    p.add_argument("repo", metavar="REPO")
    p.add_argument("url", metavar="URL")
    p.add_argument("sha", metavar="SHA", help="the full 40-hex commit to pin")
    p.add_argument("--language", required=True, metavar="L", help="the corpus language")
    p.add_argument(
        "--n", type=int,
        help=f"names to sample for the repo (default: its derive.json n, else {pin.DEFAULT_N})",
    )  # fmt: skip
    p.add_argument(
        "--force", action="store_true",
        help="pin even when no name of the repo can be sampled (a language with no names)",
    )  # fmt: skip
    p.add_argument(
        "--settings", metavar="FILE",
        help="per-repo n and seed, and the recipes (default: the named set's own, "
        + ", ".join(f"{d} for {name}" for name, (_q, d) in DERIVED_SETS.items())
        + "; derive.json for a file)",
    )  # fmt: skip
    add_queries(p, "the query set to update, made with its settings' recipes; hand rows are kept")


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(pin.render(pin.pin(options_of(args))))
    return EXIT_OK


def options_of(args: argparse.Namespace) -> PinOptions:
    data = Data(corpus=args.corpus, queries=args.queries, cache=args.cache, mirror=args.mirror)
    return PinOptions(
        repo=args.repo, url=args.url, sha=args.sha, language=args.language, data=data, n=args.n,
        force=args.force, settings=args.settings,
    )  # fmt: skip
