"""The default command's work: build the binaries, run them, report, choose the exit."""

from __future__ import annotations

import argparse
import hashlib
import platform
import shlex
import sys
from pathlib import Path

import git
import orjson

from recall import __version__
from recall.build import build_base, finder_root, resolve_commit, run_build, with_bin
from recall.corpus import cache_root, fetch, hold_in_use, load_pins, mirror_root, use_lock
from recall.engine import Engine, resolve_engine
from recall.errors import EXIT_LOSS, EXIT_OK, RecallError
from recall.html import render_html
from recall.measure import Binary, Corpus, RunResult, check_not_empty, run_binary
from recall.queryset import read_queries, select
from recall.report import build_report, diff, misses, render
from recall.symbols import checkout_symbols, ctags_version, distinct_names, write_atomic


def cmd_run(args: argparse.Namespace) -> int:
    if args.fail_on_loss and not (args.base or args.base_bin):
        raise RecallError("--fail-on-loss needs a baseline (--base REF or --base-bin PATH)")
    if args.jobs < 1 or args.timeout <= 0:
        raise RecallError("--jobs must be 1 or more and --timeout above 0")
    corpus_path, queries_path = Path(args.corpus), Path(args.queries)
    pins = load_pins(corpus_path)
    for repo in args.repo or []:
        if repo not in pins:
            raise RecallError(f"--repo {repo}: not a pin in {corpus_path}")
    rows = select(read_queries(queries_path, set(pins)), args.repo, args.type)
    if not rows:
        raise RecallError(f"{queries_path}: no rows match the selection")
    cache, mirror = cache_root(args.cache), mirror_root(args.mirror)
    root = finder_root(Path(args.finder))
    engine = resolve_engine(args.engine, root)

    binaries: list[Binary] = []
    if args.base or args.base_bin:
        if args.base_bin:
            binaries.append(Binary("base", with_bin(engine, args.base_bin), root))
        else:
            commit = resolve_commit(root, args.base)
            tree = build_base(root, commit, engine, cache)
            binaries.append(Binary(f"base {args.base} ({commit[:12]})", engine, tree))
    candidate = with_bin(engine, args.bin) if args.bin else engine
    run_build(candidate, root)
    binaries.append(Binary("candidate", candidate, root))

    corpora = {}
    for repo in dict.fromkeys(r.repo for r in rows):
        hold_in_use(use_lock(cache, "corpora", repo))
        checkout = fetch(pins[repo], cache, mirror)
        corpora[repo] = Corpus(checkout, distinct_names(checkout_symbols(checkout, cache)))

    runs: list[RunResult] = []
    for binary in binaries:
        run = run_binary(binary, rows, corpora, jobs=args.jobs, timeout=args.timeout)
        if not args.allow_empty:
            check_not_empty(run)
        runs.append(run)

    diff_result = diff(rows, runs[0], runs[1]) if len(runs) == 2 else None
    meta = _meta(engine, corpus_path, queries_path)
    report = build_report(meta, pins, rows, runs, diff_result)
    if args.html:
        _write_html(Path(args.html), report)
    if args.json:
        if args.misses:
            report["misses"] = misses(rows, runs[-1])
        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        shown = misses(rows, runs[-1]) if args.misses else None
        explain_args = _explain_args(args)
        sys.stdout.write(
            render(report, markdown=args.markdown, show_misses=shown, explain_args=explain_args)
        )
    sys.stdout.flush()
    if (
        args.fail_on_loss
        and diff_result
        and (diff_result["lost_first"] or diff_result["lost_top10"] or diff_result["new_errors"])
    ):
        return EXIT_LOSS
    return EXIT_OK


def _explain_args(args: argparse.Namespace) -> str:
    """The flags that make `recall explain` compare the same two binaries as this run."""
    pairs = [("--engine", args.engine), ("--bin", args.bin), ("--base", args.base)]
    pairs.append(("--base-bin", args.base_bin))
    return " ".join(f"{flag} {shlex.quote(value)}" for flag, value in pairs if value)


def _write_html(path: Path, report: dict) -> None:
    try:
        write_atomic(path, render_html(report).encode("utf-8"))
    except OSError as exc:
        raise RecallError(f"--html {path}: cannot write: {exc.strerror or exc}") from None


def _meta(engine: Engine, corpus: Path, queries: Path) -> dict:
    def digest(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    return {
        "recall": __version__,
        "python": platform.python_version(),
        "git": ".".join(map(str, git.Git().version_info)),
        "ctags": ctags_version(),
        "engine": {"source": engine.source, "sha256": engine.digest},
        "corpus_sha256": digest(corpus),
        "queries_sha256": digest(queries),
    }
