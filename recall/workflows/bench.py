"""`--bench REPS`: the latency of the hand-picked queries through every binary of a run.

A latency figure is only worth comparing if both binaries met the same machine. So the
samples are interleaved: within a rep every query goes through every binary in turn,
and the binary that goes first rotates from rep to rep, so a slow minute (another job,
a thermal step) lands on each binary alike instead of on whichever ran second. Rep 0 is
a warm-up (page cache, first imports) and is not counted. Per binary the figure is the
median over reps for each query, then the median and p90 over queries of those
medians: robust to one stray sample, and per query, so a ratio new/base can be read
query by query.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import numpy as np
import orjson

from recall.analysis import stats
from recall.analysis.model import NOISE_SPREAD, BenchRatio, BenchRun, BenchSummary, MedianP90
from recall.errors import RecallError
from recall.inputs.queryset import QueryRow
from recall.running.session import Session
from recall.running.values import Corpus, FinderBuild


def schedule(n_queries: int, n_binaries: int, reps: int) -> Iterator[tuple[int, int, int]]:
    """(rep, query, binary) in run order; rep 0 is the warm-up, then reps 1..reps.

    Rep r sends each query to binary r mod n first, then the next ones round the circle,
    so over n reps every binary takes every position equally often.
    """
    for rep in range(reps + 1):
        for query in range(n_queries):
            for turn in range(n_binaries):
                yield rep, query, (rep + turn) % n_binaries


def per_query_medians(samples: Sequence[Sequence[float]]) -> list[float]:
    """samples[q] holds one query's timed reps; its median resists one stray sample."""
    return [float(np.median(reps)) for reps in samples]


def median_p90(values: Sequence[float]) -> MedianP90:
    """stats.median_p90 as the report holds it, in ms to the microsecond."""
    median, p90 = stats.median_p90(values)
    return MedianP90(round(median, 3), round(p90, 3))


def spread(samples: Sequence[Sequence[float]]) -> float:
    """The median over queries of each query's interquartile range over its median."""
    relative = []
    for reps in samples:
        low, mid, high = np.percentile(np.asarray(reps, dtype=float), [25, 50, 75])
        relative.append(float((high - low) / mid) if mid > 0 else 0.0)
    return round(float(np.median(relative)), 4)


def ratio(base: Sequence[float], new: Sequence[float]) -> dict[str, float]:
    """new/base of per-query medians: its median, and p10..p90 as the spread."""
    values = np.asarray(new, dtype=float) / np.asarray(base, dtype=float)
    p10, mid, p90 = np.percentile(values, [10, 50, 90])
    return {
        "median": round(float(mid), 3),
        "p10": round(float(p10), 3),
        "p90": round(float(p90), 3),
    }


def parse_phases(err: bytes) -> dict[str, float]:
    """The engine's own phases: the last stderr line, a JSON object {"phases": {name: ms}}."""
    lines = [line for line in err.splitlines() if line.strip()]
    if not lines:
        raise ValueError("stderr is empty")
    data = orjson.loads(lines[-1])
    phases = data.get("phases") if isinstance(data, dict) else None
    if not isinstance(phases, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in phases.values()
    ):
        raise ValueError('the last stderr line is not {"phases": {name: ms}}')
    return {str(name): float(ms) for name, ms in phases.items()}


class _Timer:
    """One binary on one corpus, timed one query process at a time."""

    def __init__(self, session: Session) -> None:
        self.session = session
        engine = session.engine
        self.argv = session.prepared(engine.profile or engine.query)
        self.profiled = bool(engine.profile)
        self.ok_codes = {0, *engine.no_match_exit}

    def time(self, row: QueryRow, timeout: float) -> tuple[float, dict[str, float], str | None]:
        argv = self.argv.fill(row.query, "0")
        started = time.perf_counter()
        code, _out, err = self.session.run(argv, timeout)
        wall_ms = (time.perf_counter() - started) * 1000.0
        if code is None:
            return wall_ms, {}, f"timed out after {timeout:g} s"
        if code not in self.ok_codes:
            return wall_ms, {}, f"exit {code}"
        if not self.profiled:
            return wall_ms, {}, None
        try:
            return wall_ms, parse_phases(err), None
        except ValueError as exc:
            raise RecallError(
                f"--bench: {self.session.binary.label}: profile of {row.repo} query "
                f"{row.query!r}: {exc}"
            ) from None


def run_bench(
    binaries: Sequence[FinderBuild],
    hand_rows: Sequence[QueryRow],
    corpora: dict[str, Corpus],
    reps: int,
    timeout: float,
) -> BenchSummary:
    """Index each binary on each corpus once, then time the schedule."""
    if reps < 1:
        raise RecallError(f"--bench {reps}: give 1 or more reps")
    if not hand_rows:
        raise RecallError("--bench: the selected repos have no hand rows to time")
    repos = list(dict.fromkeys(row.repo for row in hand_rows))
    sessions: list[Session] = []
    try:
        timers: dict[tuple[int, str], _Timer] = {}
        for b, binary in enumerate(binaries):
            for repo in repos:
                session = Session(binary, corpora[repo], timeout)
                sessions.append(session)
                session.index()
                timers[b, repo] = _Timer(session)
        n_q, n_b = len(hand_rows), len(binaries)
        wall: list[list[list[float]]] = [[[] for _ in range(n_q)] for _ in range(n_b)]
        phases: list[list[dict[str, list[float]]]] = [[{} for _ in range(n_q)] for _ in range(n_b)]
        errors = [0] * n_b
        for rep, q, b in schedule(n_q, n_b, reps):
            row = hand_rows[q]
            wall_ms, phase_ms, error = timers[b, row.repo].time(row, timeout)
            if rep == 0:
                continue
            wall[b][q].append(wall_ms)
            errors[b] += error is not None
            for name, ms in phase_ms.items():
                phases[b][q].setdefault(name, []).append(ms)
    finally:
        for session in sessions:
            session.close()
    return summarize_bench([b.label for b in binaries], wall, phases, errors, reps)


def summarize_bench(
    labels: Sequence[str],
    wall: Sequence[Sequence[Sequence[float]]],
    phases: Sequence[Sequence[dict[str, list[float]]]],
    errors: Sequence[int],
    reps: int,
) -> BenchSummary:
    """The statistics of timed samples: wall[b][q] and phases[b][q][name] are lists of ms."""
    runs: list[BenchRun] = []
    medians = []
    for b, label in enumerate(labels):
        wall_medians = per_query_medians(wall[b])
        medians.append(wall_medians)
        names = list(dict.fromkeys(name for per_query in phases[b] for name in per_query))
        runs.append(
            BenchRun(
                label=label,
                wall_ms=median_p90(wall_medians),
                phases={
                    name: median_p90(
                        per_query_medians([pq[name] for pq in phases[b] if name in pq])
                    )
                    for name in names
                },
                spread=spread(wall[b]),
                errors=errors[b],
            )
        )
    return BenchSummary(
        reps=reps,
        queries=len(wall[0]) if wall else 0,
        noisy=any(run.spread > NOISE_SPREAD for run in runs),
        runs=tuple(runs),
        ratios=tuple(
            BenchRatio(labels[0], labels[b], **ratio(medians[0], medians[b]))
            for b in range(1, len(labels))
        ),
    )
