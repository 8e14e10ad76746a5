"""A history spread over machines: `recall history --shard K/N --save FILE` measures one
share of the (commit, repo) pairs, and `recall merge FILE...` puts the shares back
together into the history the unsharded command prints.

The pairs are counted oldest commit first and, within a commit, repos in sorted order;
shard K of N takes the K-th of N runs of consecutive pairs, as near equal in length as
can be. So every machine given the same commits and selection makes the same split, and
a shard builds only the commits its pairs touch (about one N-th of them, plus one where
two shards meet), not every commit. Each repo's results do not depend on which other
repos ran beside it (each corpus has its own index and processes), so a commit measured
in parts is the commit measured whole; a part is judged (`history.answered`: answers on
almost no query) only once the merge has the whole commit.

A merge refuses anything that would make its history differ from the unsharded one
beyond the seconds: files of other code or data (their meta differ), of another
selection (other commits, rows or paths), a (commit, repo) pair in two files or in none,
and a selection other than the merge's own flags give.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

import orjson

from recall import __version__
from recall.analysis.history import KIND, SCHEMA, History
from recall.analysis.model import QueryResult, RunResult
from recall.errors import RecallError
from recall.files import target, write_atomic
from recall.inputs.corpus import Pin
from recall.inputs.queryset import QueryRow, query_set_path
from recall.inputs.suite import locate
from recall.inputs.symbols import ctags_version
from recall.running.identity import environment_key
from recall.running.results_cache import (
    FORMAT,
    HISTORY_KIND,
    check_format,
    contradiction,
    decode_rows,
    decode_run,
    encode_run,
    read_saved,
)
from recall.workflows.history import (
    Commit,
    Plan,
    Point,
    answered,
    chosen_commits,
    commit_key,
    commit_url,
    document,
    header,
    make_plan,
    measure_rows,
    select_rows,
)
from recall.workflows.merge import check_same_meta
from recall.workflows.options import HistoryOptions, MergeOptions, listed

# What judges a run's report, which a history's merge refuses: each option and its flag.
RUN_ONLY = (
    ("needs_baseline", "--fail-on-loss"), ("accept", "--accept"), ("regress", "--regress"),
    ("no_regress", "--no-regress"), ("misses", "--misses"),
)  # fmt: skip


@dataclass(frozen=True)
class Part:
    """What one shard measured at one commit: the repos of its pairs there, and the point
    over their rows (not yet judged by `answered`)."""

    repos: tuple[str, ...]
    point: Point


@dataclass(frozen=True)
class Shard:
    """A shard's file read back and checked field by field."""

    meta: dict  # the code and data every commit ran with
    head: History  # the history but its commits
    rows: list[QueryRow]  # the whole selection's rows, every shard's
    commits: list[tuple[Commit, str | None]]  # the whole history's commits and their urls
    parts: list[Part]


def shard_pairs(
    commits: list[Commit], repos: list[str], k: int, n: int
) -> list[tuple[Commit, tuple[str, ...]]]:
    """Shard k of n: each commit it touches, oldest first, with its repos there."""
    ordered = sorted(repos)
    pairs = [(i, repo) for i in range(len(commits)) for repo in ordered]
    mine = pairs[(k - 1) * len(pairs) // n : k * len(pairs) // n]
    if not mine:
        raise RecallError(
            f"--shard {k}/{n}: the history has {len(pairs)} (commit, repo) pairs, "
            f"so shard {k} has none"
        )
    by_commit: dict[int, list[str]] = {}
    for i, repo in mine:
        by_commit.setdefault(i, []).append(repo)
    return [(commits[i], tuple(names)) for i, names in by_commit.items()]


def measure_shard(
    plan: Plan, commits: list[Commit], k: int, n: int
) -> list[tuple[Part, dict | None]]:
    """Shard k of n's pairs measured, each part with the results cache key of its run."""
    measured = []
    for commit, repos in shard_pairs(commits, sorted({r.repo for r in plan.rows}), k, n):
        rows = [row for row in plan.rows if row.repo in repos]
        point = measure_rows(plan, commit, rows)
        key = commit_key(plan, commit, rows) if point.run is not None else None
        measured.append((Part(repos, point), key))
    return measured


def meta(plan: Plan) -> dict:
    """What must be the same on every shard for their parts to be one history: the code
    that ran (recall, Python, ctags, the engine and what it runs, the limits) and the
    data (the pins)."""
    repos = sorted({row.repo for row in plan.rows})
    return {
        "recall": __version__,
        "python": platform.python_version(),
        "ctags": ctags_version(),
        "engine": {"source": plan.engine.source, "sha256": plan.engine.digest},
        "environment": environment_key(plan.engine),
        "timeout": plan.timeout,
        "build_timeout": plan.build_timeout,
        "allow_empty": plan.allow_empty,
        "pins": {repo: plan.corpora.pins[repo].identity() for repo in repos},
    }


def save_shard(
    path: Path, plan: Plan, commits: list[tuple[Commit, str | None]],
    measured: list[tuple[Part, dict | None]], shard: tuple[int, int],
) -> None:  # fmt: skip
    """Write --save FILE: the shard's parts, with all a merge needs to print the history
    (its header, every commit of it, every row of the selection) without the finder's
    repo or the corpora."""
    parts = []
    for part, key in measured:
        point = part.point
        run = None if point.run is None or key is None else encode_run(point.run, key)
        parts.append({
            "sha": point.commit.sha, "repos": list(part.repos), "built": point.built,
            "cached": point.cached, "error": point.error, "run": run,
        })  # fmt: skip
    data = {
        "kind": HISTORY_KIND,
        "format": FORMAT,
        "shard": list(shard),
        "meta": meta(plan),
        "history": header(plan).header(),
        "rows": [[r.repo, r.query, r.type, r.source] for r in plan.rows],
        "commits": [
            {"sha": c.sha, "date": c.date, "subject": c.subject, "refs": list(c.refs), "url": url}
            for c, url in commits
        ],
        "parts": parts,
    }
    try:
        write_atomic(path, orjson.dumps(data))
    except OSError as exc:
        raise RecallError(f"--save {path}: cannot write: {exc.strerror or exc}") from None


def load_shard(path: Path) -> Shard:
    """A history shard's file, or a RecallError naming the file and the field."""
    where = f"merge {path}"
    data = read_saved(path, "merge", (HISTORY_KIND,))
    check_format(where, data)
    for name in ("meta", "history"):
        if not isinstance(data.get(name), dict):
            raise RecallError(f"{where}: {name} must be an object")
    rows = decode_rows(where, data.get("rows"))
    head = _check_head(where, data["history"], rows)
    commits = _decode_commits(where, data.get("commits"))
    known = {commit.sha: commit for commit, _url in commits}
    if not isinstance(data.get("parts"), list):
        raise RecallError(f"{where}: parts must be a list")
    parts = [_decode_part(f"{where}: parts[{i}]", item, known, rows)
             for i, item in enumerate(data["parts"])]  # fmt: skip
    return Shard(data["meta"], head, rows, commits, parts)


def _check_head(where: str, head: dict, rows: list[QueryRow]) -> History:
    """The history's header, which the merged history prints as it is: the shape
    History.header writes, and the counts of the file's own rows."""
    engine = head.get("engine")
    shaped = (
        set(head) == {"schema", "kind", "finder", "engine", "queries", "sourced", "repos",
                      "types"}
        and (head["schema"], head["kind"]) == (SCHEMA, KIND)
        and isinstance(head["finder"], str) and isinstance(head["queries"], str)
        and isinstance(engine, dict) and set(engine) == {"source", "sha256"}
        and all(isinstance(value, str) for value in engine.values())
    )  # fmt: skip
    if not shaped:
        raise RecallError(f"{where}: history must be the header recall history writes")
    derived = {
        "sourced": len(rows),
        "repos": sorted({row.repo for row in rows}),
        "types": sorted({row.type for row in rows}),
    }
    for key, value in derived.items():
        if head[key] != value:
            raise RecallError(
                f"{where}: history.{key} is {head[key]!r:.60}, but its rows give {value}"
            )
    return History.from_json({**head, "commits": []})


def _decode_commits(where: str, value: object) -> list[tuple[Commit, str | None]]:
    def text(item: dict, name: str) -> bool:
        return isinstance(item.get(name), str)

    if not isinstance(value, list) or not value:
        raise RecallError(f"{where}: commits must be a list of one commit or more")
    commits = []
    for i, item in enumerate(value):
        if not (
            isinstance(item, dict) and text(item, "sha") and text(item, "date")
            and text(item, "subject") and isinstance(item.get("refs"), list)
            and all(isinstance(ref, str) for ref in item["refs"])
            and "url" in item and (item["url"] is None or text(item, "url"))
        ):  # fmt: skip
            raise RecallError(
                f"{where}: commits[{i}] must be {{sha, date, subject, refs, url}} strings"
            )
        commit = Commit(item["sha"], item["date"], item["subject"], tuple(item["refs"]))
        commits.append((commit, item["url"]))
    return commits


def _decode_part(where: str, item: object, known: dict[str, Commit], rows: list[QueryRow]) -> Part:
    if not isinstance(item, dict) or item.get("sha") not in known:
        raise RecallError(f"{where}: sha must name one of the file's commits")
    repos = item.get("repos")
    if not isinstance(repos, list) or not repos or not all(isinstance(r, str) for r in repos):
        raise RecallError(f"{where}: repos must be a list of one repo or more")
    built, cached, error = item.get("built"), item.get("cached"), item.get("error")
    if not isinstance(built, bool) or not isinstance(cached, bool):
        raise RecallError(f"{where}: built and cached must be true or false")
    if (error is None) == (item.get("run") is None) or not isinstance(error, str | None):
        raise RecallError(f"{where}: give a run, or an error saying why there is none")
    run = None
    if item.get("run") is not None:
        try:
            run, _key = decode_run(item["run"])
        except ValueError as exc:
            raise RecallError(f"{where}: run: {exc}") from None
        try:  # the results cache's own check: a file edited by hand proves nothing
            contradiction(run.results, [row for row in rows if row.repo in repos])
        except ValueError as exc:
            raise RecallError(f"{where}: run: {exc}") from None
    return Part(tuple(repos), Point(known[item["sha"]], run, error, built, cached))


def merge(paths: list[Path], pins: dict[str, Pin], rows: list[QueryRow], corpus: Path) -> History:
    """The history object of the shards' files, for the selection rows of the merge's own
    flags (pins: the merge's corpus, read from corpus)."""
    shards = [load_shard(path) for path in paths]
    first = shards[0]
    for path, shard in zip(paths, shards, strict=True):
        check_same_meta(path, shard.meta, paths[0], first.meta)
        theirs, ours = _selection(shard), _selection(first)
        if theirs != ours:
            changed = sorted(k for k in theirs if theirs[k] != ours[k])
            raise RecallError(
                f"merge {path}: measured another selection than {paths[0]} "
                f"({', '.join(changed)} differ)"
            )
    ran = first.meta.get("pins")
    if not isinstance(ran, dict):
        raise RecallError(f"merge {paths[0]}: meta.pins must be an object")
    moved = [repo for repo in ran if repo not in pins or pins[repo].identity() != ran[repo]]
    if moved:
        raise RecallError(
            f"merge {paths[0]}: ran other data than {corpus} has now "
            f"(the pins of {', '.join(moved)} differ)"
        )
    wanted = sorted({row.repo for row in rows})
    if first.rows != rows:
        raise RecallError(
            f"merge {paths[0]}: its rows are not the selection's ({len(first.rows)} rows, "
            f"{len(rows)} here): give the --queries, --repo and --type the shards ran with"
        )
    owner: dict[tuple[str, str], int] = {}
    for i, shard in enumerate(shards):
        for part in shard.parts:
            sha = part.point.commit.sha
            for repo in part.repos:
                if repo not in wanted:
                    raise RecallError(f"merge {paths[i]}: repo {repo} is not in the selection")
                if (sha, repo) in owner:
                    raise RecallError(
                        f"merge {paths[i]}: commit {sha[:12]} repo {repo} is in "
                        f"{paths[owner[sha, repo]]} too"
                    )
                owner[sha, repo] = i
    for commit, _url in first.commits:
        for repo in wanted:
            if (commit.sha, repo) not in owner:
                raise RecallError(
                    f"merge: no file has commit {commit.sha[:12]} repo {repo}: "
                    "give every shard's file"
                )
    allow_empty = bool(first.meta.get("allow_empty"))
    points = []
    for commit, _url in first.commits:
        parts = [part for shard in shards for part in shard.parts
                 if part.point.commit.sha == commit.sha]  # fmt: skip
        points.append(answered(_joined(commit, parts, rows), allow_empty))
    return document(first.head, rows, points, [url for _commit, url in first.commits])


def _selection(shard: Shard) -> dict:
    """What a shard was asked, beside the code and data: equal on every shard of a history."""
    return {"history": shard.head, "rows": shard.rows, "commits": shard.commits}


def _joined(commit: Commit, parts: list[Part], rows: list[QueryRow]) -> Point:
    """One commit's parts as the one point the unsharded history measures: failed if a
    part failed (its reason, in the order of the repos), built if any part built it,
    cached if every part's results came from the cache, the seconds summed."""
    order = sorted({repo for part in parts for repo in part.repos})
    parts = sorted(parts, key=lambda part: order.index(part.repos[0]))
    built = any(part.point.built for part in parts)
    failed = [part.point.error for part in parts if part.point.error is not None]
    if failed:
        return Point(commit, None, failed[0], built, False)
    found: dict[str, list[QueryResult]] = {}
    for part in parts:
        assert part.point.run is not None
        mine = [row for row in rows if row.repo in part.repos]
        for row, result in zip(mine, part.point.run.results, strict=True):
            found.setdefault(row.repo, []).append(result)
    taken = {repo: iter(results) for repo, results in found.items()}
    results = tuple(next(taken[row.repo]) for row in rows)
    runs = [part.point.run for part in parts if part.point.run is not None]
    cached = all(part.point.cached for part in parts)
    run = RunResult(
        runs[0].label, runs[0].bin, sum(r.index_s for r in runs), sum(r.query_s for r in runs),
        results, cached=cached, restarts=sum(r.restarts for r in runs),
    )  # fmt: skip
    return Point(commit, run, None, built, cached)


def merge_history(options: MergeOptions) -> History:
    """The history of the files a history's shards saved, as the unsharded history makes
    it (`recall merge` of them; the Python API's `recall.merge_history`): for the rows of
    the options' selection, else every row the files hold."""
    if options.split is not None:
        raise RecallError("--split goes with the files of a run's shards, not a history's")
    for name, flag in RUN_ONLY:
        if getattr(options, name):
            raise RecallError(f"{flag} goes with the files of a run's shards, not a history's")
    data = options.data
    found = locate("merge", corpus=data.corpus, queries=data.queries)
    corpus, queries = Path(found.corpus), query_set_path(found.queries or "")
    pins, _all_rows, rows = select_rows(corpus, queries, listed(data.repos), listed(data.types))
    paths = [Path(f) for f in options.files]
    if data.repos is None and data.types is None:  # the rows the shards ran: all in each file
        rows = load_shard(paths[0]).rows
    return merge(paths, pins, rows, corpus)


@dataclass(frozen=True)
class SavedShard:
    """What `recall history --shard K/N --save FILE` measured and saved: its (commit,
    repo) pairs of the history's total, over how many commits."""

    shard: tuple[int, int]
    file: str
    pairs: int
    total: int
    commits: int


def measure_saved(options: HistoryOptions) -> SavedShard:
    """Shard K of N of the options' history measured and saved to options.save for
    `recall merge` (the Python API's `recall.history_shard`)."""
    if options.shard is None or options.save is None:
        raise RecallError("--shard K/N and --save FILE: a shard is measured to be saved")
    target(Path(options.save))  # a FIFO or a device there is refused before any work
    plan = make_plan(options.commits)
    commits = chosen_commits(plan, options)
    k, n = options.shard
    measured = measure_shard(plan, commits, k, n)
    urls = [(commit, commit_url(plan.root, commit.sha)) for commit in commits]
    save_shard(Path(options.save), plan, urls, measured, options.shard)
    pairs = sum(len(part.repos) for part, _key in measured)
    total = len(commits) * len({row.repo for row in plan.rows})
    return SavedShard(options.shard, options.save, pairs, total, len(measured))
