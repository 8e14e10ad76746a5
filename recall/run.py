"""The default command's work: build the binaries, run them, report, choose the exit."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import platform
import sys
from pathlib import Path

import git
import orjson

from recall import __version__
from recall.bench import run_bench
from recall.build import build_base, finder_root, resolve_commit, run_build
from recall.corpus import cache_root, fetch, load_pins, mirror_root
from recall.engine import Engine, resolve_engine
from recall.errors import EXIT_LOSS, EXIT_OK, RecallError
from recall.html import render_html
from recall.measure import Binary, Corpus, RunResult, check_not_empty, run_binary
from recall.queryset import HAND, read_queries, select
from recall.report import build_report, diff, misses, render
from recall.symbols import checkout_symbols, ctags_version, distinct_names, write_atomic


def _with_bin(engine: Engine, path: str) -> Engine:
    program = Path(path)
    if not program.exists():
        raise RecallError(f"--bin {path}: no such file")
    return dataclasses.replace(engine, bin=(str(program.absolute()),), build=())


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
    all_rows = read_queries(queries_path, set(pins))
    rows = select(all_rows, args.repo, args.type)
    hand = [r for r in select(all_rows, args.repo, None) if r.type == HAND]
    if args.bench is not None and args.bench < 1:
        raise RecallError(f"--bench {args.bench}: give 1 or more reps")
    if args.bench and not hand:
        raise RecallError(f"--bench: {queries_path} has no hand rows in the selected repos")
    if not rows:
        raise RecallError(f"{queries_path}: no rows match the selection")
    cache, mirror = cache_root(args.cache), mirror_root(args.mirror)
    root = finder_root(Path(args.finder))
    engine = resolve_engine(args.engine, root)

    binaries: list[Binary] = []
    if args.base or args.base_bin:
        if args.base_bin:
            binaries.append(Binary("base", _with_bin(engine, args.base_bin), root))
        else:
            commit = resolve_commit(root, args.base)
            tree = build_base(root, commit, engine, cache)
            binaries.append(Binary(f"base {args.base} ({commit[:12]})", engine, tree))
    candidate = _with_bin(engine, args.bin) if args.bin else engine
    run_build(candidate, root)
    binaries.append(Binary("candidate", candidate, root))

    corpora = {}
    for repo in dict.fromkeys(r.repo for r in [*rows, *(hand if args.bench else [])]):
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
    if args.bench:
        report["bench"] = run_bench(binaries, hand, corpora, args.bench, args.timeout)
    if args.html:
        _write_html(Path(args.html), report)
    if args.json:
        if args.misses:
            report["misses"] = misses(rows, runs[-1])
        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        shown = misses(rows, runs[-1]) if args.misses else None
        sys.stdout.write(render(report, markdown=args.markdown, show_misses=shown))
    sys.stdout.flush()
    if (
        args.fail_on_loss
        and diff_result
        and (diff_result["lost_first"] or diff_result["lost_top10"] or diff_result["new_errors"])
    ):
        return EXIT_LOSS
    return EXIT_OK


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
