"""A run's results on disk: the results cache and the files of --save and --against.

Both hold the same thing, a binary's per-query results together with the key of everything
that could change them, so that a cached run is reused only when every part of its key
matches, and a saved run stands in for a baseline only when it ran the same corpora and
queries.
"""

from __future__ import annotations

import hashlib
import platform
import sys
from pathlib import Path

import orjson

from recall.corpus import Pin
from recall.engine import Engine
from recall.errors import RecallError
from recall.measure import Hit, QueryResult, RunResult
from recall.queryset import QueryRow, queries_digest
from recall.symbols import ctags_version, write_atomic

# Bump when what a stored result means changes (ranking rule, fields, parsing, or what
# a run must pass before it is stored: 2 checks every source against its corpus's names).
FORMAT = 2
SAVED_KIND = "recall-saved-run"


def run_key(identity: str, engine: Engine, asked: dict, timeout: float) -> dict:
    """Every input that can change a binary's results: asked is data_key() of the rows."""
    return {
        "format": FORMAT,
        "binary": identity,
        "engine": engine.digest,
        **asked,
        "ctags": ctags_version(),
        "python": platform.python_version(),
        "timeout": timeout,
    }


def data_key(pins: dict[str, Pin], rows: list[QueryRow]) -> dict:
    """The part of a key that says what was asked: the pins of the repos used, the rows."""
    return {
        "pins": {repo: pins[repo].as_json() for repo in sorted({r.repo for r in rows})},
        "queries": queries_digest(rows),
    }


def file_identity(path: Path) -> str:
    """A hand-built binary is known by its content, not its name or mtime."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"file:{digest.hexdigest()}"


def encode_run(run: RunResult, key: dict) -> dict:
    return {
        "label": run.label,
        "bin": run.bin,
        "index_s": run.index_s,
        "query_s": run.query_s,
        "key": key,
        "results": [
            [r.rank, [[h.name, h.file, h.line] for h in r.top], r.error] for r in run.results
        ],
    }


def decode_run(data: object) -> tuple[RunResult, dict]:
    """The run and its key; ValueError on anything not shaped as encode_run writes it."""
    try:
        assert isinstance(data, dict)
        results = tuple(
            QueryResult(rank, tuple(Hit(n, f, ln) for n, f, ln in top), error)
            for rank, top, error in data["results"]
        )
        run = RunResult(
            str(data["label"]), str(data["bin"]), float(data["index_s"]),
            float(data["query_s"]), results,
        )  # fmt: skip
        key = data["key"]
        assert isinstance(key, dict)
    except (AssertionError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a stored run ({type(exc).__name__})") from None
    return run, key


# The results cache --------------------------------------------------------------------


def _entry(cache: Path, key: dict) -> Path:
    digest = hashlib.sha256(orjson.dumps(key, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return cache / "results" / f"{digest[:32]}.json"


def cached_run(cache: Path, key: dict, label: str) -> RunResult | None:
    """The stored run for key, relabelled for this run; None on a miss or a bad entry."""
    path = _entry(cache, key)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _warn(f"cannot read results cache entry {path} ({exc.strerror}): running again")
        return None
    try:
        run, stored_key = decode_run(orjson.loads(data))
    except ValueError as exc:
        _warn(f"ignoring corrupt results cache entry {path} ({exc}): running again")
        return None
    if stored_key != key or len(run.results) == 0:
        _warn(f"ignoring results cache entry {path}: its key does not match: running again")
        return None
    return RunResult(label, run.bin, run.index_s, run.query_s, run.results, cached=True)


def store_run(cache: Path, key: dict, run: RunResult) -> None:
    """Keep a run for next time, unless a query errored (an error may not recur) or the
    finder wrote into a checkout (its later queries saw a changed corpus)."""
    if run.errors or run.dirtied:
        return
    path = _entry(cache, key)
    try:
        write_atomic(path, orjson.dumps(encode_run(run, key)))
    except OSError as exc:
        raise RecallError(f"cache {path.parent}: cannot write: {exc.strerror or exc}") from None


def _warn(message: str) -> None:
    print(f"recall: warning: {message}", file=sys.stderr)


# Saved runs ---------------------------------------------------------------------------


def save_runs(path: Path, meta: dict, rows: list[QueryRow], runs: list[tuple[RunResult, dict]]):
    """Write --save FILE: the rows and every run with its key."""
    data = {
        "kind": SAVED_KIND,
        "format": FORMAT,
        "meta": meta,
        "rows": [[r.repo, r.query, r.type, r.source] for r in rows],
        "runs": [encode_run(run, key) for run, key in runs],
    }
    try:
        write_atomic(path, orjson.dumps(data))
    except OSError as exc:
        raise RecallError(f"--save {path}: cannot write: {exc.strerror or exc}") from None


def load_against(path: Path, rows: list[QueryRow], key: dict) -> tuple[RunResult, dict]:
    """The last run of a saved file, as a baseline for these rows; refused with the reason
    when its corpus pins or query set differ from this run's."""
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise RecallError(f"--against {path}: cannot read: {exc.strerror}") from None
    except orjson.JSONDecodeError:
        raise RecallError(f"--against {path}: not JSON") from None
    if not isinstance(data, dict) or data.get("kind") != SAVED_KIND or not data.get("runs"):
        raise RecallError(f"--against {path}: not a file written by recall --save")
    if data.get("format") != FORMAT:
        raise RecallError(
            f"--against {path}: saved with results format {data.get('format')}, "
            f"this recall reads {FORMAT}: save it again"
        )
    try:
        run, saved_key = decode_run(data["runs"][-1])
        saved_rows = [QueryRow(*row) for row in data["rows"]]
    except (ValueError, TypeError) as exc:
        raise RecallError(f"--against {path}: {exc}") from None
    for part in ("pins", "queries"):
        if saved_key.get(part) != key[part]:
            reason = _difference(part, saved_key, key, saved_rows, rows)
            raise RecallError(f"--against {path}: {reason}")
    if len(run.results) != len(rows):
        raise RecallError(f"--against {path}: {len(run.results)} results for {len(rows)} rows")
    label = f"saved {path.name} ({run.label})"
    return RunResult(label, run.bin, run.index_s, run.query_s, run.results, cached=True), saved_key


def _difference(
    part: str, saved: dict, now: dict, saved_rows: list[QueryRow], rows: list[QueryRow]
) -> str:
    if part == "pins":
        old, new = saved.get("pins") or {}, now["pins"]
        changed = sorted(r for r in old.keys() | new.keys() if old.get(r) != new.get(r))
        return f"its corpus pins differ from this run's ({', '.join(changed)})"
    for i, (a, b) in enumerate(zip(saved_rows, rows, strict=False), start=1):
        if a != b:
            return (
                f"its query set differs from this run's at row {i} "
                f"({a.repo} {a.query!r} saved, {b.repo} {b.query!r} now)"
            )
    return f"its query set differs from this run's ({len(saved_rows)} rows saved, {len(rows)} now)"
