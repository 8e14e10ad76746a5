"""Running one finder build over the query set: every corpus, every row, in row order.

A session (recall.session) runs one build on one corpus; this module decides how many
run at once and how a corpus's rows are split among processes, and checks what came
back: a checkout the finder wrote into is rebuilt, and a finder that answered (almost)
nothing stops the run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from recall.corpus import Pin, fetch, hold_in_use, is_clean, use_lock
from recall.errors import RecallError
from recall.model import Corpus, FinderBuild, QueryResult, RunResult
from recall.queryset import QueryRow
from recall.session import Session
from recall.symbols import checkout_symbols, distinct_names

EMPTY_SUSPECT = 0.95


def open_corpus(pin: Pin, cache: Path, mirror: Path | None) -> Corpus:
    """A pin's checkout, marked in use by this process (so prune leaves it), fetched, with
    its names listed: what every binary run on it needs. The checkout is checked deeply
    (every file, ignored paths and mtimes too) and rebuilt if it is not the pin byte for
    byte, so a hand edit in the cache is undone before the first query, not found after."""
    hold_in_use(use_lock(cache, "corpora", pin.name))
    checkout = fetch(pin, cache, mirror, deep=True)
    return Corpus(checkout, distinct_names(checkout_symbols(checkout, cache)), cache, mirror)


def run_binary(
    binary: FinderBuild,
    rows: list[QueryRow],
    corpora: dict[str, Corpus],
    *,
    jobs: int,
    timeout: float,
    build: str | None = None,
) -> RunResult:
    """Every row through binary, results in row order whatever the completion order.

    build is the cache identity of a cacheable build (the `binary` of its result key):
    with it, an engine that declares `index_cache` reuses a kept index of each corpus;
    without it (a working tree, --no-cache), every corpus is indexed anew.

    A batch engine's corpora are measured `jobs` at a time, each with its own index and
    processes, and a corpus's rows in shards when there are more jobs than corpora left;
    per-query engines take one corpus at a time through a pool of `jobs` processes. The
    sessions are made one after another before any runs: each sweeps the temporary
    folders of dead runs, and must not see another's folder before it is locked."""
    repos = list(dict.fromkeys(r.repo for r in rows))
    picked = [[i for i, r in enumerate(rows) if r.repo == repo] for repo in repos]
    engine = binary.engine
    together = min(jobs, len(repos)) if engine.batch and engine.batch_jobs else 1
    sessions: list[Session] = []

    def measure(k: int) -> tuple[list[QueryResult], float, float, bool]:
        session, subset = sessions[k], [rows[i] for i in picked[k]]
        _progress(f"{binary.label}: {repos[k]}: indexing, then {len(subset)} queries")
        try:
            index_s = session.index()
            started = time.perf_counter()
            if not engine.batch:
                answers = _query_pool(session, subset, jobs)
            else:
                answers = _batch_shards(
                    session, subset, jobs // together if engine.batch_jobs else 1
                )
            query_s = time.perf_counter() - started
        finally:
            session.close()
        return answers, index_s, query_s, restore_if_dirty(corpora[repos[k]])

    def stop() -> None:
        for session in sessions:
            session.stop()

    try:
        for repo in repos:
            sessions.append(Session(binary, corpora[repo], timeout, build=build))
        if together > 1:
            measured = _in_parallel(stop, measure, list(range(len(repos))), together)
        else:
            measured = [measure(k) for k in range(len(repos))]
    finally:
        for session in sessions:
            session.close()
    results: list[QueryResult | None] = [None] * len(rows)
    for k, (answers, _index_s, _query_s, _dirtied) in enumerate(measured):
        for i, answer in zip(picked[k], answers, strict=True):
            results[i] = answer
    done = tuple(r for r in results if r is not None)
    return RunResult(
        binary.label, " ".join(binary.bin_argv()),
        sum(m[1] for m in measured), sum(m[2] for m in measured), done,
        dirtied=tuple(repo for repo, m in zip(repos, measured, strict=True) if m[3]),
    )  # fmt: skip


T = TypeVar("T")
R = TypeVar("R")


def _batch_shards(session: Session, rows: list[QueryRow], jobs: int) -> list[QueryResult]:
    """A corpus's rows in `jobs` contiguous shards, each through batch processes of its
    own over the one index: a batch finder answers each query from the index alone, so
    the answers are the ones a single process gives, in row order, in about 1/jobs of the
    time on as many cores."""
    size = -(-len(rows) // max(1, jobs))
    shards = [rows[i : i + size] for i in range(0, len(rows), size)] if rows else []
    if len(shards) <= 1:
        return session.query_batch(rows)
    answers = _in_parallel(session.stop, session.query_batch, shards, len(shards))
    return [answer for shard in answers for answer in shard]


def _query_pool(session: Session, rows: list[QueryRow], jobs: int) -> list[QueryResult]:
    """Per-query processes in parallel."""
    return _in_parallel(session.stop, session.query_one, rows, jobs)


def _in_parallel(
    stop: Callable[[], None], work: Callable[[T], R], items: list[T], workers: int
) -> list[R]:
    """work over items on threads, results in item order; an interrupt cancels what has not
    started and kills what has, instead of waiting for every queued item to finish."""
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        return list(pool.map(work, items))
    except BaseException:
        stop()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)


def restore_if_dirty(corpus: Corpus) -> bool:
    """After a binary's queries: did it write into the checkout? If so, rebuild it (the deep
    check, since a finder may write into ignored paths) so the next binary sees the pin."""
    if is_clean(corpus.checkout):
        return False
    if corpus.cache is not None:
        fetch(corpus.checkout.pin, corpus.cache, corpus.mirror, deep=True)
    return True


def _progress(message: str) -> None:
    """Progress goes to a terminal only, so stdout and logs carry just the report."""
    if sys.stderr.isatty():
        print(f"recall: {message}", file=sys.stderr, flush=True)


def check_answered(run: RunResult, *, allow_empty: bool) -> None:
    """A binary that answers (almost) nothing is far likelier misdescribed than bad: one
    that fails on (almost) every query cannot be measured at all, and one that returns
    nothing is accepted only when the user says it is meant (--allow-empty)."""
    if not run.results:
        return
    total = len(run.results)
    failed = [r.error for r in run.results if r.error]
    if len(failed) / total >= EMPTY_SUSPECT:
        raise RecallError(
            f"{run.label} failed on {len(failed)} of {total} queries, so it cannot be "
            f"measured; the first: {failed[0]}"
        )
    empty = sum(1 for r in run.results if not r.top and not r.error)
    if not allow_empty and (empty + len(failed)) / total >= EMPTY_SUSPECT:
        raise RecallError(
            f"{run.label} returned nothing for {empty} of {total} queries: the "
            "engine description is probably wrong (use --allow-empty if it is not)"
        )
