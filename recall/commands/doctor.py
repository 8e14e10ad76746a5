"""`recall doctor`: what the harness will use on this machine, and whether it works (the
work is recall/workflows/doctor.py's; this is its flags)."""

from __future__ import annotations

import argparse
import sys

from recall.commands._flags import add_common, add_finder, add_queries
from recall.errors import EXIT_FAILURE, EXIT_OK
from recall.workflows import doctor
from recall.workflows.options import Data, DoctorOptions


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("doctor", help="check what the harness will use and whether it works")
    add_common(parser)
    add_queries(parser)
    add_finder(parser, ", where presets look for built binaries")


def run(args: argparse.Namespace) -> int:
    diagnosis = doctor.doctor(options_of(args))
    sys.stdout.write(doctor.render(diagnosis))
    return EXIT_OK if diagnosis.healthy else EXIT_FAILURE


def options_of(args: argparse.Namespace) -> DoctorOptions:
    data = Data(corpus=args.corpus, queries=args.queries, cache=args.cache, mirror=args.mirror)
    return DoctorOptions(data=data, finder=args.finder)
