"""How a command prints what a workflow gave: a report, or a history, as text, Markdown or
JSON on stdout, as a page with --html, and the exit status they mean. A run and `recall
merge` of its shards print a report alike, as a history and a merge of its shards do."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from recall.analysis.history import History
from recall.analysis.model import Report
from recall.errors import EXIT_FAILURE, EXIT_LOSS, EXIT_OK, RecallError
from recall.files import write_atomic
from recall.render import history as history_page
from recall.render.html import render_html
from recall.render.text import log_lines, loss_reasons, render
from recall.workflows.options import Output


def output_of(args: argparse.Namespace) -> Output:
    """How the report is printed (add_report_flags): run and merge print alike."""
    return Output(
        json=args.json, markdown=args.markdown, html=args.html, fail_on_loss=args.fail_on_loss
    )


def print_report(report: Report, output: Output) -> int:
    """The report, printed as asked (and written as a page with --html), and the exit
    status: 1 for a loss with --fail-on-loss, else 0. A run and `recall merge` of its
    shards print alike."""
    if output.html:
        try:
            write_atomic(Path(output.html), render_html(report).encode("utf-8"))
        except OSError as exc:
            raise RecallError(
                f"--html {output.html}: cannot write: {exc.strerror or exc}"
            ) from None
    if output.json:
        data = report.to_json()
        sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        sys.stdout.write(render(report, markdown=output.markdown))
    sys.stdout.flush()
    failed = output.fail_on_loss and report.is_loss
    log = log_lines(report)
    if failed:
        log.append(f"recall: --fail-on-loss: exit 1: {'; '.join(loss_reasons(report))}")
    if log:  # the log's own lines, whatever stdout went to (a summary file, a JSON file)
        sys.stderr.write("".join(f"{line}\n" for line in log))
        sys.stderr.flush()
    return EXIT_LOSS if failed else EXIT_OK


def print_history(args: argparse.Namespace, measured: History) -> int:
    """The history as --json, --markdown or text (and --html), and its exit status: 0
    unless every commit failed."""
    if args.html:
        page = history_page.render_html(measured, by=args.by).encode("utf-8")
        try:
            write_atomic(Path(args.html), page)
        except OSError as exc:
            raise RecallError(f"--html {args.html}: cannot write: {exc.strerror or exc}") from None
    if args.json:
        data = measured.to_json()
        sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        sys.stdout.write(history_page.render(measured, by=args.by, markdown=args.markdown))
    return EXIT_OK if measured.ok else EXIT_FAILURE
