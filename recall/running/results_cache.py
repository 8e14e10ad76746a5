"""A run's results on disk: the results cache and the files of --save and --against.

Both hold the same thing, a binary's per-query results together with the key of everything
that could change them, so that a cached run is reused only when every part of its key
matches, and a saved run stands in for a baseline only when it ran the same corpora and
queries.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from recall.analysis.codec import decode
from recall.analysis.model import TOP, Hit, Meta, QueryResult, RunResult
from recall.cache import drop_file, keep_file, key_digest, read_file, warn
from recall.errors import RecallError
from recall.files import read_input, write_atomic
from recall.finders.engine import Engine
from recall.inputs.queryset import QueryRow
from recall.inputs.symbols import ctags_identity
from recall.running.identity import build_world, environment_key

# Bump when what a stored result means changes (ranking rule, fields, parsing, or what
# a run must pass before it is stored: 2 checks every source against its corpus's names;
# 3 keeps whether each answer named nothing in the corpus; 4 how many times its batch
# processes were started again).
FORMAT = 4
SAVED_KIND = "recall-saved-run"
HISTORY_KIND = "recall-saved-history"  # a history shard's file (history_shards.py)
Flags = tuple[tuple[str, str], ...]  # command-line flags and their values, in order


def run_key(identity: str, engine: Engine, asked: dict, timeout: float) -> dict:
    """Every input that can change a binary's results: asked is data_key() of the rows."""
    return {
        "format": FORMAT,
        "binary": identity,
        "engine": engine.digest,
        **asked,
        "ctags": ctags_identity(),
        "python": platform.python_version(),
        "timeout": timeout,
        "environment": environment_key(engine),
        "build world": build_world(engine),
    }


def encode_run(run: RunResult, key: dict) -> dict:
    return {
        "label": run.label,
        "bin": run.bin,
        "index_s": run.index_s,
        "query_s": run.query_s,
        "restarts": run.restarts,
        "key": key,
        "results": [
            [r.rank, [[h.name, h.file, h.line] for h in r.top], r.error, r.off_corpus]
            for r in run.results
        ],
    }


def decode_run(data: object) -> tuple[RunResult, dict]:
    """The run and its key; ValueError naming the field of anything not shaped as
    encode_run writes it (a rank "1" or 0 would otherwise count as a miss or a #1)."""
    if not isinstance(data, dict):
        raise ValueError(f"expected an object, not {_shown(data)}")
    for field in ("label", "bin", "index_s", "query_s", "restarts", "key", "results"):
        if field not in data:
            raise ValueError(f"missing field {field!r}")
    for field in ("label", "bin"):
        if not isinstance(data[field], str):
            raise ValueError(f"{field} must be a string, not {_shown(data[field])}")
    for field in ("index_s", "query_s"):
        if not _is_number(data[field]) or not 0 <= data[field] < float("inf"):
            raise ValueError(f"{field} must be a number of seconds, not {_shown(data[field])}")
    if not _is_whole(data["restarts"]) or data["restarts"] < 0:
        raise ValueError(f"restarts must be a whole number >= 0, not {_shown(data['restarts'])}")
    if not isinstance(data["key"], dict):
        raise ValueError(f"key must be an object, not {_shown(data['key'])}")
    if not isinstance(data["results"], list):
        raise ValueError(f"results must be a list, not {_shown(data['results'])}")
    results = tuple(_decode_result(i, item) for i, item in enumerate(data["results"]))
    run = RunResult(
        data["label"], data["bin"], float(data["index_s"]), float(data["query_s"]), results,
        restarts=data["restarts"],
    )  # fmt: skip
    return run, data["key"]


def _decode_result(i: int, item: object) -> QueryResult:
    at = f"results[{i}]"
    if not isinstance(item, list) or len(item) != 4:
        raise ValueError(f"{at} must be [rank, top, error, off_corpus], not {_shown(item)}")
    rank, top, error, off_corpus = item
    if rank is not None and (not _is_whole(rank) or rank < 1):
        raise ValueError(
            f"{at}: rank must be a whole number 1 or more, or null, not {_shown(rank)}"
        )
    if not isinstance(top, list) or len(top) > TOP:
        raise ValueError(f"{at}: top must be a list of [name, file, line], not {_shown(top)}")
    hits = []
    for j, hit in enumerate(top):
        where = f"{at}: top[{j}]"
        if not isinstance(hit, list) or len(hit) != 3:
            raise ValueError(f"{where} must be [name, file, line], not {_shown(hit)}")
        name, file, line = hit
        if not isinstance(name, str):
            raise ValueError(f"{where}: name must be a string, not {_shown(name)}")
        if file is not None and not isinstance(file, str):
            raise ValueError(f"{where}: file must be a string or null, not {_shown(file)}")
        if line is not None and not _is_whole(line):
            raise ValueError(f"{where}: line must be a whole number or null, not {_shown(line)}")
        hits.append(Hit(name, file, line))
    if error is not None and not isinstance(error, str):
        raise ValueError(f"{at}: error must be a string or null, not {_shown(error)}")
    if not isinstance(off_corpus, bool):
        raise ValueError(f"{at}: off_corpus must be true or false, not {_shown(off_corpus)}")
    return QueryResult(rank, tuple(hits), error, off_corpus)


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _shown(value: object) -> str:
    """A value in an error message, cut short: a corrupt entry can be megabytes."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# The results cache --------------------------------------------------------------------


def _entry(cache: Path, key: dict) -> Path:
    return cache / "results" / f"{key_digest(key)}.json"


def cached_run(cache: Path, key: dict, label: str, rows: list[QueryRow]) -> RunResult | None:
    """The stored run for key, relabelled for this run; None on a miss, or on an entry
    that does not prove itself (its digest, its key, or its results read against rows:
    each then dropped with one warning line, and the run made again)."""
    path = _entry(cache, key)
    data = read_file(path)
    if data is None:
        return None
    try:
        run, stored_key = decode_run(orjson.loads(data))
        if stored_key != key:
            raise ValueError("its key does not match")
        contradiction(run.results, rows)
    except ValueError as exc:
        warn(f"cache entry {path} is not a run of these rows ({exc}): dropped, made again")
        drop_file(path)
        return None
    return RunResult(
        label, run.bin, run.index_s, run.query_s, run.results, cached=True,
        restarts=run.restarts,
    )  # fmt: skip


def contradiction(results: tuple[QueryResult, ...], rows: list[QueryRow]) -> None:
    """ValueError naming the first result that cannot be what a run of rows gives: one
    result per row, each top list of distinct names, and each rank where its top list
    puts the source (a rank within the top 10 names the source at that place and not
    before; a rank past it, or none, leaves the source out of a list; a hand row's
    source is empty, and it is read the same way)."""
    if len(results) != len(rows):
        raise ValueError(f"{len(results)} results for {len(rows)} rows")
    for i, (result, row) in enumerate(zip(results, rows, strict=True)):
        names = [hit.name for hit in result.top]
        at = f"results[{i}] ({row.repo} {row.query!r})"
        if len(set(names)) != len(names):
            raise ValueError(f"{at}: its top list repeats a name")
        place = names.index(row.source) + 1 if row.source in names else None
        if result.rank is not None and result.rank <= len(names):
            if place != result.rank:
                raise ValueError(
                    f"{at}: rank {result.rank}, but its top list has the source at {place}"
                )
        elif place is not None:
            raise ValueError(
                f"{at}: rank {result.rank}, but its top list has the source at {place}"
            )
        elif result.rank is not None and len(names) < TOP:
            raise ValueError(f"{at}: rank {result.rank} past a top list of {len(names)} names")


def cached_or_run(
    cache: Path, key: dict, label: str, rows: list[QueryRow], *, cacheable: bool,
    run: Callable[[], RunResult],
) -> tuple[RunResult, bool]:  # fmt: skip
    """The one cached-or-run step of a run's binaries and a history's commits: the rows'
    results from the results cache under key when cacheable (--no-cache, or code the key
    cannot see, is not), else `run()` now, kept for next time when cacheable; and
    whether they came from the cache."""
    if cacheable:
        kept = cached_run(cache, key, label, rows)
        if kept is not None:
            return kept, True
    made = run()
    if cacheable:  # --no-cache neither reads nor writes
        store_run(cache, key, made)
    return made, False


def store_run(cache: Path, key: dict, run: RunResult) -> None:
    """Keep a run for next time, unless a query errored (an error may not recur) or the
    finder wrote into a checkout (its later queries saw a changed corpus). A cache that
    cannot be written is one warning line: the run is reported all the same."""
    if run.errors or run.dirtied:
        return
    keep_file(_entry(cache, key), orjson.dumps(encode_run(run, key)))


# Saved runs ---------------------------------------------------------------------------

WORKING_TREE = "working tree "  # a side's identity: the tree it ran, known by its path


def code_of(key: dict) -> tuple[object, object]:
    """What code a saved run ran, as machines can compare it: its binary's identity (a
    commit, a program's content) or, for a working tree, the tree's content digest (the
    key's `tree`, which `recall run --save` records) and never its path, which differs
    from machine to machine while the code may not."""
    binary = key.get("binary")
    if isinstance(binary, str) and binary.startswith(WORKING_TREE):
        binary = WORKING_TREE.strip()
    return binary, key.get("tree")


def save_runs(
    path: Path, meta: Meta, rows: list[QueryRow], runs: list[tuple[RunResult, dict]],
    *, baseline: bool = False, explain: list[Flags | None] | None = None,
    selection: dict | None = None,
) -> None:  # fmt: skip
    """Write --save FILE: the rows and every run with its key; baseline says the first run
    is the baseline the others were diffed against, and explain holds the flags with which
    `recall explain` runs each binary again, so a merge of shards reports as the run did.
    selection holds the run's --repo, --type and --split, so a merge of shards (each holding some
    repos' rows) knows the whole selection without being told it again."""
    data: dict = {
        "kind": SAVED_KIND,
        "format": FORMAT,
        "meta": meta.to_json(),
        "baseline": baseline,
        "explain": [None if f is None else [list(pair) for pair in f] for f in explain or []],
        "rows": [[r.repo, r.query, r.type, r.source] for r in rows],
        "runs": [encode_run(run, key) for run, key in runs],
    }
    if selection is not None:
        data["selection"] = selection
    try:
        write_atomic(path, orjson.dumps(data))
    except OSError as exc:
        raise RecallError(f"--save {path}: cannot write: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class Saved:
    """A --save file read back whole and checked field by field."""

    meta: Meta
    baseline: bool  # the first run is the baseline the others were diffed against
    rows: list[QueryRow]
    runs: list[tuple[RunResult, dict]]  # each run and its key
    explain: list[Flags | None]  # each run's flags for `recall explain`; [] if not saved
    selection: object = None  # the run's --repo, --type and --split, as save_runs wrote it


def read_saved(path: Path, flag: str, kinds: tuple[str, ...] = (SAVED_KIND,)) -> dict:
    """The JSON object of a file written by --save of one of kinds (its format not yet
    checked), or a RecallError naming flag and the file."""
    where = f"{flag} {path}"
    try:
        data = orjson.loads(read_input(path, where))
    except orjson.JSONDecodeError:
        raise RecallError(f"{where}: not JSON") from None
    if not isinstance(data, dict) or data.get("kind") not in kinds:
        raise RecallError(f"{where}: not a file written by recall --save")
    return data


def check_format(where: str, data: dict) -> None:
    """A saved file's results are read only in the format this recall writes."""
    if data.get("format") != FORMAT:
        raise RecallError(
            f"{where}: saved with results format {data.get('format')}, "
            f"this recall reads {FORMAT}: save it again"
        )


def load_saved(path: Path, flag: str) -> Saved:
    """A file written by --save, or a RecallError naming flag, the file and the field."""
    where = f"{flag} {path}"
    data = read_saved(path, flag)
    if not isinstance(data.get("runs"), list) or not data["runs"]:
        raise RecallError(f"{where}: runs must be a list of one run or more")
    check_format(where, data)
    runs = []
    for i, item in enumerate(data["runs"]):
        try:
            runs.append(decode_run(item))
        except ValueError as exc:
            raise RecallError(f"{where}: runs[{i}]: {exc}") from None
    rows = decode_rows(where, data.get("rows"))
    for i, (run, _key) in enumerate(runs):
        try:  # the results cache's own check: a file edited by hand proves nothing
            contradiction(run.results, rows)
        except ValueError as exc:
            raise RecallError(f"{where}: runs[{i}]: {exc}") from None
    baseline = data.get("baseline", False)
    if not isinstance(baseline, bool):
        raise RecallError(f"{where}: baseline must be true or false")
    explain = _decode_explain(where, data.get("explain", []))
    if explain and len(explain) != len(runs):
        raise RecallError(f"{where}: explain must hold one entry a run ({len(runs)}), or none")
    meta = decode(Meta, data.get("meta"), f"{where}: meta")  # what a merged report shows ran
    return Saved(meta, baseline, rows, runs, explain, data.get("selection"))


def _decode_explain(where: str, value: object) -> list[Flags | None]:
    def pairs(item: object) -> bool:
        return isinstance(item, list) and all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(v, str) for v in p) for p in item
        )

    if not isinstance(value, list) or not all(item is None or pairs(item) for item in value):
        raise RecallError(f"{where}: explain must be a list of [flag, value] lists or nulls")
    return [None if item is None else tuple((a, b) for a, b in item) for item in value]


def load_against(
    path: Path, rows: list[QueryRow], key: dict, selection: dict | None = None
) -> tuple[RunResult, dict]:
    """The last run of a saved file, as a baseline for these rows; refused with the reason
    when its corpus pins or query set differ from this run's: another selection (--repo,
    --type, --split) said as such, since the pins and the file may well be the same."""
    saved = load_saved(path, "--against")
    run, saved_key = saved.runs[-1]
    for part in ("pins", "queries"):
        if saved_key.get(part) != key[part]:
            reason = _difference(part, saved_key, key, saved, rows, selection)
            raise RecallError(f"--against {path}: {reason}")
    if len(run.results) != len(rows):
        raise RecallError(f"--against {path}: {len(run.results)} results for {len(rows)} rows")
    label = f"saved {path.name} ({run.label})"
    against = RunResult(
        label, run.bin, run.index_s, run.query_s, run.results, cached=True,
        restarts=run.restarts,
    )  # fmt: skip
    return against, saved_key


def _selection_flags(selection: dict) -> str:
    """A saved or asked selection as the flags that give it."""
    flags = []
    for flag in ("repo", "type"):
        values = selection.get(flag)
        if isinstance(values, list):
            flags += [f"--{flag} {value}" for value in values]
    if selection.get("split"):
        flags.append(f"--split {selection['split']}")
    return " ".join(flags) or "every repo and type"


def decode_rows(where: str, rows: object) -> list[QueryRow]:
    """The saved rows, each [repo, query, type, source] of strings, or the field named."""
    if not isinstance(rows, list):
        raise RecallError(f"{where}: rows must be a list, not {_shown(rows)}")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != 4 or not all(isinstance(v, str) for v in row):
            raise RecallError(
                f"{where}: rows[{i}] must be [repo, query, type, source] strings, not {_shown(row)}"
            )
    return [QueryRow(*row) for row in rows]


def _difference(
    part: str, saved_key: dict, now: dict, saved: Saved, rows: list[QueryRow],
    selection: dict | None,
) -> str:  # fmt: skip
    old, new = saved_key.get("pins") or {}, now["pins"]
    if not isinstance(old, dict):
        old = {}
    moved = sorted(r for r in old.keys() & new.keys() if old[r] != new[r])
    if part == "pins" and moved:
        return f"its corpus pins differ from this run's ({', '.join(moved)})"
    if isinstance(saved.selection, dict) and selection and saved.selection != selection:
        return (
            f"it was saved with another selection ({_selection_flags(saved.selection)}) than "
            f"this run's ({_selection_flags(selection)}): give the same --repo, --type and "
            "--split, or save a run of this selection"
        )
    if part == "pins":
        changed = sorted(old.keys() ^ new.keys())
        return f"it ran other repos than this run ({', '.join(changed)} in one only)"
    saved_rows = saved.rows
    for i, (a, b) in enumerate(zip(saved_rows, rows, strict=False), start=1):
        if a != b:
            return (
                f"its query set differs from this run's at row {i} "
                f"({a.repo} {a.query!r} saved, {b.repo} {b.query!r} now)"
            )
    return f"its query set differs from this run's ({len(saved_rows)} rows saved, {len(rows)} now)"
