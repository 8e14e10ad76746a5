"""Running one finder build over the query set: every corpus, every row, in row order.

A session (recall.running.session) runs one build on one corpus; this module decides how many
run at once and how a corpus's rows are split among processes, and checks what came
back: a checkout the finder wrote into is rebuilt, and a finder that answered (almost)
nothing stops the run.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, TypeVar

from recall.analysis.model import QueryResult, RunResult, UnknownSource
from recall.errors import RecallError
from recall.inputs.corpus import Pin, fetch, is_clean
from recall.inputs.judgments import lists_of
from recall.inputs.paths import NAMES, PATHS, checkout_paths, domain_of
from recall.inputs.queryset import JUDGED, QueryRow
from recall.inputs.symbols import checkout_symbols, distinct_names
from recall.running.session import BatchFeed, Session, limit_of
from recall.running.values import Corpus, FinderBuild
from recall.terminal import Task, progress

EMPTY_SUSPECT = 0.95
OFF_CORPUS_SHOWN = 3  # answers quoted when a run is refused for naming nothing
JOIN_MIN = 64  # rows a corpus must have left for another batch process to start on it


def open_corpus(pin: Pin, cache: Path, mirror: Path | None, domain: str = NAMES) -> Corpus:
    """A pin's checkout, fetched and held in use by this process (so that neither prune nor
    another run's rebuild touches it while this process runs), with its candidates listed:
    what every binary run on it needs (its names, or for the path set its tracked paths,
    recall.inputs.paths). The checkout is checked deeply
    (every file, ignored paths and mtimes too) and rebuilt if it is not the pin byte for
    byte, so a hand edit in the cache is undone before the first query, not found after."""
    checkout = fetch(pin, cache, mirror, deep=True)
    if domain == PATHS:
        return Corpus(checkout, checkout_paths(checkout, cache), cache, mirror)
    return Corpus(checkout, distinct_names(checkout_symbols(checkout, cache)), cache, mirror)


def names_corpora(lists: dict[str, list[str]], cache: Path) -> dict[str, Corpus]:
    """Names lists alone as corpora (a judgments set's candidate lists, by name): no
    checkout to fetch or keep clean; the cache keeps their indexes (`index_cache`)."""
    return {label: Corpus(None, names, cache, label=label) for label, names in lists.items()}


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

    A batch engine's corpora are served by `jobs` batch processes at once (one, for an
    engine that says `batch_jobs = false`), scheduled by `_BatchPlan`; per-query engines
    take one corpus at a time through a pool of `jobs` processes. The sessions are made
    one after another before any runs: each sweeps the temporary folders of dead runs,
    and must not see another's folder before it is locked."""
    repos = list(dict.fromkeys(r.repo for r in rows))
    picked = [[i for i, r in enumerate(rows) if r.repo == repo] for repo in repos]
    subsets = [[rows[i] for i in indexes] for indexes in picked]
    engine = binary.engine
    sessions: list[Session] = []
    status = progress()
    try:
        with status.task(binary.label, len(rows), "rows") as counted:
            home = None  # names lists share the first one's: see Session.home
            for repo in repos:
                session = Session(binary, corpora[repo], timeout, build=build, home=home)
                sessions.append(session)
                if corpora[repo].checkout is None:
                    home = home or session.home
            if engine.batch:
                plan = _BatchPlan(binary.label, repos, sessions, subsets, corpora, counted)
                workers = max(1, min(jobs, len(rows))) if engine.batch_jobs else 1
                _in_parallel(plan.halt, plan.work, list(range(workers)), workers)
                measured = plan.measured()
            else:
                measured = []
                for k, session in enumerate(sessions):
                    status.note(counted, f"{repos[k]}: indexing")
                    index_s = session.index()
                    status.note(counted, repos[k])
                    started = time.perf_counter()
                    answers = _per_query(session, subsets[k], jobs, counted)
                    measured.append((answers, index_s, time.perf_counter() - started))
    finally:
        for session in sessions:  # every process ended before a shared home goes
            session.stop()
        for session in sessions:
            session.close()
    dirtied = tuple(repo for repo in repos if restore_if_dirty(corpora[repo]))
    results: list[QueryResult | None] = [None] * len(rows)
    for k, (answers, _index_s, _query_s) in enumerate(measured):
        for i, answer in zip(picked[k], answers, strict=True):
            results[i] = answer
    done = tuple(r for r in results if r is not None)
    return RunResult(
        binary.label, " ".join(binary.bin_argv()),
        sum(m[1] for m in measured), sum(m[2] for m in measured), done, dirtied=dirtied,
        restarts=sum(session.restarts for session in sessions),
    )  # fmt: skip


T = TypeVar("T")
R = TypeVar("R")


def _counting(
    work: Callable[[list[QueryRow]], list[R]], counted: Task
) -> Callable[[list[QueryRow]], list[R]]:
    """work, the rows of each call counted on the status line once it returns."""

    def counted_work(rows: list[QueryRow]) -> list[R]:
        result = work(rows)
        progress().advance(counted, len(rows))
        return result

    return counted_work


def _per_query(
    session: Session, rows: list[QueryRow], jobs: int, counted: Task
) -> list[QueryResult]:
    """A corpus's rows through a pool of `jobs` per-query processes, in row order. Rows
    that ask one question (the query and its limit: a judgments query's candidates) share
    one process, whose one answer gives each its rank, rather than a process a row."""
    alike: dict[tuple[str, int], list[int]] = {}
    for i, row in enumerate(rows):
        alike.setdefault((row.query, limit_of(row)), []).append(i)
    groups = list(alike.values())
    query = _counting(session.query_alike, counted)
    asked = _in_parallel(session.stop, query, [[rows[i] for i in g] for g in groups], jobs)
    answers: dict[int, QueryResult] = {}
    for indexes, got in zip(groups, asked, strict=True):
        answers.update(zip(indexes, got, strict=True))
    return [answers[i] for i in range(len(rows))]


class _CountedFeed(BatchFeed):
    """A BatchFeed whose every answer is counted on the status line."""

    def __init__(self, rows: list[QueryRow], counted: Task) -> None:
        super().__init__(rows)
        self.counted = counted

    def answer(self, i: int, result: QueryResult) -> None:
        super().answer(i, result)
        progress().advance(self.counted)


@dataclasses.dataclass
class _Served:
    """One corpus under a _BatchPlan: how far it has got."""

    session: Session
    feed: BatchFeed
    state: Literal["waiting", "indexing", "ready"] = "waiting"  # indexed by its first worker
    index_s: float = 0.0
    first: float | None = None  # when its first query was sent
    last: float = 0.0  # when its last process ended


class _BatchPlan:
    """Which corpus each of `jobs` workers serves next, as a batch process of its own.

    The corpora are started heaviest first (rows times names: a query's cost grows with
    the names it ranks), each indexed by the worker that starts it. Once none is left to
    start, a worker joins the corpus with the most rows left, drawing from the same feed
    as the processes already on it, and waits while a corpus worth joining is being
    indexed. So one large corpus (rails has a third of the rows and most of the work) is
    not left to one core while the other idles; and since a batch finder answers from
    its index alone, the answers are those of one process a corpus, one after another."""

    def __init__(
        self,
        label: str,
        repos: list[str],
        sessions: list[Session],
        subsets: list[list[QueryRow]],
        corpora: dict[str, Corpus],
        counted: Task,
    ) -> None:
        self.label, self.repos, self.counted = label, repos, counted
        self.served = [
            _Served(s, _CountedFeed(rows, counted))
            for s, rows in zip(sessions, subsets, strict=True)
        ]
        names = [len(corpora[repo].names) + 1 for repo in repos]
        weights = [len(rows) * n for rows, n in zip(subsets, names, strict=True)]
        self.order = sorted(range(len(repos)), key=lambda k: -weights[k])
        self.halted = False
        self.changed = threading.Condition()

    def _next(self) -> tuple[int, bool] | None:
        """The corpus a free worker serves next and whether it must index it first, or
        None when no work is left for it; waits while the only work is joining a corpus
        being indexed. Called with `changed` held."""
        while not self.halted:
            for k in self.order:
                if self.served[k].state == "waiting":
                    self.served[k].state = "indexing"
                    return k, True
            ready = [k for k in self.order if self.served[k].state == "ready"]
            joinable = [k for k in ready if self.served[k].feed.left() >= JOIN_MIN]
            if joinable:
                return max(joinable, key=lambda k: self.served[k].feed.left()), False
            if not any(s.state == "indexing" and s.feed.left() >= JOIN_MIN for s in self.served):
                return None  # nor will there be: no corpus being indexed is worth joining
            self.changed.wait()
        return None

    def work(self, _worker: int) -> None:
        """One worker: corpora from _next until none is left; any failure stops them all,
        and is the run's error: a worker whose process that stop killed (an index killed by
        SIGKILL) ends quietly, so its own error never stands in for the cause."""
        while True:
            with self.changed:
                job = self._next()
                if job is None:
                    return
                k, index_first = job
                served = self.served[k]
            try:
                if index_first:
                    progress().note(self.counted, f"{self.repos[k]}: indexing")
                    served.index_s = served.session.index()
                    progress().note(self.counted, "")
                    with self.changed:
                        served.state = "ready"
                        self.changed.notify_all()
                with self.changed:
                    served.first = served.first or time.perf_counter()
                served.session.serve(served.feed)
            except BaseException:
                with self.changed:
                    stopped = self.halted
                if stopped:  # its processes killed for another worker's failure: that is the error
                    return
                self.halt()
                raise
            finally:
                with self.changed:
                    served.last = max(served.last, time.perf_counter())
                    self.changed.notify_all()

    def halt(self) -> None:
        """No more work for any worker, and every process of every corpus killed now: one
        failure, or an interrupt, ends the run rather than its other corpora's rows."""
        with self.changed:
            self.halted = True
            self.changed.notify_all()
        for served in self.served:
            served.session.stop()

    def measured(self) -> list[tuple[list[QueryResult], float, float]]:
        """Each corpus's answers in row order, its index seconds, and its query seconds
        (from its first query to the end of its last process)."""
        return [
            (s.feed.answers(), s.index_s, s.last - s.first if s.first is not None else 0.0)
            for s in self.served
        ]


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
    check, since a finder may write into ignored paths) so the next binary sees the pin.
    A names list alone has no checkout to write into."""
    if corpus.checkout is None or is_clean(corpus.checkout):
        return False
    if corpus.cache is not None:
        fetch(corpus.checkout.pin, corpus.cache, corpus.mirror, deep=True)
    return True


def check_answered(run: RunResult, *, allow_empty: bool) -> None:
    """A binary that answers (almost) nothing is far likelier misdescribed than bad: one
    that fails on (almost) every query cannot be measured at all, and one that returns
    nothing is accepted only when the user says it is meant (--allow-empty). One whose
    answers mostly name nothing in the corpus (more than half of those that list
    anything) is read wrong: its numbers would be zeros that look like a finder's."""
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
    check_named(run.label, run.results)


def check_named(label: str, results: Sequence[QueryResult]) -> None:
    """Answers that mostly name nothing in the corpus (more than half of those that list
    anything) are read wrong: a finder of paths given names, of names given the path set,
    or output that is not names. `recall run` asks it of every run, `recall explain` of
    its one answer, so that explain refuses what run refuses."""
    listed = [r for r in results if r.top and not r.error]
    off = [r for r in listed if r.off_corpus]
    if 2 * len(off) > len(listed):
        quoted = ", ".join(repr(r.top[0].name) for r in off[:OFF_CORPUS_SHOWN])
        raise RecallError(
            f"{label}: {len(off)} of the {len(listed)} answers that listed anything name "
            f"nothing in the corpus (the first begin {quoted}): the engine description is "
            "probably wrong (does its output give names?)"
        )


def unknown_sources(
    rows: list[QueryRow], corpora: dict[str, Corpus], all_rows: list[QueryRow]
) -> tuple[UnknownSource, ...]:
    """The sourced rows whose source is not a name of their corpus at its pin, with their
    lines in the file (rows are unique; line 1 is the header)."""
    names = {repo: set(corpus.names) for repo, corpus in corpora.items()}
    lines = {row: i + 2 for i, row in enumerate(all_rows)}
    return tuple(
        UnknownSource(row.repo, row.query, row.type, row.source, lines[row])
        for row in rows
        if row.sourced and row.source not in names[row.repo]
    )


def check_sources(
    rows: list[QueryRow], corpora: dict[str, Corpus], path: Path, all_rows: list[QueryRow]
) -> None:
    """Every source of a strict query set (a committed one, or any with --strict-queries)
    must be a name of its corpus at its pin: a source that is not (a typo in a hand-kept
    row, a trailing space, a pin moved without regenerating) would count as the finder's
    miss. Checked once the names are known, that is, before a binary runs."""
    for row in unknown_sources(rows, corpora, all_rows)[:1]:
        raise RecallError(
            f"{path}:{row.line}: source {row.source!r} is not a name of {row.repo} at its pin"
        )


@dataclasses.dataclass
class Corpora:
    """The corpora of one run (or history), each opened the first time rows need it, so
    that a run answered from the results cache fetches and lists nothing. A judgments
    set's lists need no fetch: they are made from every row of each (a run holds them all
    from the start)."""

    pins: dict[str, Pin]
    cache: Path
    mirror: Path | None
    opened: dict[str, Corpus] = dataclasses.field(default_factory=dict)

    def open(self, rows: Sequence[QueryRow]) -> dict[str, Corpus]:
        """Every corpus opened so far, those of the rows among them."""
        domain = domain_of(list(rows))
        if domain == JUDGED:
            for name, corpus in names_corpora(lists_of(list(rows)), self.cache).items():
                self.opened.setdefault(name, corpus)
            return self.opened
        for repo in dict.fromkeys(row.repo for row in rows):
            if repo not in self.opened:
                self.opened[repo] = open_corpus(self.pins[repo], self.cache, self.mirror, domain)
        return self.opened
