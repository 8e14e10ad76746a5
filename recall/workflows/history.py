"""`recall history`: one finder measured at many commits of its own repo.

A `--base REF` run answers "is this change better than that ref"; a history answers "what
has recall done over these releases". Each commit is measured exactly as a baseline is
(run.py): `git archive` of the commit, the engine's build, the built tree cached by commit
and engine (build.build_base), the results cached under the same full key (`commit:SHA`
as the binary's identity), so a history, a later `--base` run and a bisect over the same
commits share every build and every result, and a second history builds and runs nothing.

These are plain functions over a Plan (what to ask, where, with which engine), so bisect
reuses them (and history_shards, which measures a history in parts on many machines);
the typed values it returns are analysis/history.py's, their rendering render/history.py's.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import urlsplit

import git

from recall.analysis.history import Commit, CommitRow, EngineUsed, History, summarize
from recall.analysis.model import RunResult
from recall.errors import RecallError
from recall.finders.engine import Engine, resolve_engine
from recall.inputs.corpus import Pin, cache_root, load_pins, mirror_root
from recall.inputs.judgments import refuse_judgments
from recall.inputs.keystrokes import refuse_typing
from recall.inputs.paths import domain_of
from recall.inputs.queryset import QueryRow, query_set_path, read_queries, select
from recall.inputs.suite import locate
from recall.running.build import (
    base_binary,
    build_key,
    finder_root,
    resolve_commit,
)
from recall.running.identity import data_key, unseen_code
from recall.running.measure import (
    Corpora,
    check_answered,
    check_sources,
    run_binary,
)
from recall.running.results_cache import cached_or_run, run_key
from recall.running.values import Corpus
from recall.terminal import progress
from recall.workflows.options import CommitOptions, HistoryOptions, listed


@dataclass
class Plan:
    """Everything every commit of a history is measured with: one engine (read from the
    working tree, as `--base` reads it), one selection of rows, one cache. Corpora are
    opened on the first commit that has to run, so a history answered wholly from the
    cache fetches nothing."""

    root: Path
    engine: Engine
    engine_spec: str | None
    corpora: Corpora  # the pins, the cache, and the corpora opened so far
    rows: list[QueryRow]
    all_rows: list[QueryRow]
    corpus_path: Path
    queries_path: Path
    timeout: float
    build_timeout: float
    jobs: int
    no_cache: bool
    allow_empty: bool

    @cached_property
    def asked(self) -> dict:
        """What every commit is asked: the key part shared by all of them."""
        return data_key(self.corpora.pins, self.rows)


@dataclass(frozen=True)
class Point:
    """One commit measured: its run, or why it could not be (its build failed, say)."""

    commit: Commit
    run: RunResult | None
    error: str | None
    built: bool  # built now, not found in the build cache
    cached: bool  # results read from the results cache

    @property
    def ok(self) -> bool:
        return self.run is not None


def make_plan(options: CommitOptions, command: str = "recall history") -> Plan:
    """The Plan of history's or bisect's options, checked as `recall run` checks them;
    command is the one a refusal names."""
    data = options.data
    found = locate("history", finder=options.finder, corpus=data.corpus, queries=data.queries)
    corpus_path, queries_path = Path(found.corpus), query_set_path(found.queries or "")
    pins, all_rows, rows = select_rows(
        corpus_path, queries_path, listed(data.repos), listed(data.types), command
    )
    root = finder_root(Path(found.finder))
    return Plan(
        root=root, engine=resolve_engine(options.engine, root, domain_of(rows)),
        engine_spec=options.engine,
        corpora=Corpora(pins, cache_root(data.cache), mirror_root(data.mirror)),
        rows=rows, all_rows=all_rows, corpus_path=corpus_path.absolute(),
        queries_path=queries_path.absolute(), timeout=options.timeout,
        build_timeout=options.build_timeout, jobs=options.jobs, no_cache=options.no_cache,
        allow_empty=options.allow_empty,
    )  # fmt: skip


def measure_history(options: HistoryOptions) -> History:
    """The history of the options' commits (its JSON is docs/history.md's): the Python
    API's `recall.history`, and `recall history` without --shard."""
    if options.shard:
        raise RecallError(
            "--shard: a shard makes no history; history_shards.measure_saved saves it"
        )
    plan = make_plan(options.commits)
    commits = chosen_commits(plan, options)
    return history_of(plan, history(plan, commits))


def chosen_commits(plan: Plan, options: HistoryOptions) -> list[Commit]:
    """The commits a history measures: a range, refs, or the tags matching a pattern,
    thinned to every Nth."""
    if options.tags is not None and options.revs:
        raise RecallError("history: give --tags or RANGE|REF..., not both")
    revs = list(options.revs)
    if options.tags is not None:
        commits = tag_commits(plan.root, options.tags)
    elif not revs:
        raise RecallError("history: give a RANGE (A..B), REFs, or --tags [PATTERN]")
    elif is_range(revs):
        commits = range_commits(plan.root, revs, first_parent=options.first_parent)
    else:
        commits = listed_commits(plan.root, revs)
    return thin(commits, options.every)


def select_rows(
    corpus_path: Path, queries_path: Path, repos: list[str] | None, types: list[str] | None,
    command: str = "recall history",
) -> tuple[dict[str, Pin], list[QueryRow], list[QueryRow]]:  # fmt: skip
    """The pins, every row of the query set, and the sourced rows of --repo and --type that
    a history asks each commit (and that a merge of its shards must be given again)."""
    pins = load_pins(corpus_path)
    for repo in repos or []:
        if repo not in pins:
            raise RecallError(f"--repo {repo}: not a pin in {corpus_path}")
    refuse_typing(queries_path, command)
    refuse_judgments(queries_path, command)
    all_rows = read_queries(queries_path, set(pins))
    rows = [row for row in select(all_rows, repos, types) if row.sourced]
    if not rows:
        raise RecallError(f"{queries_path}: no sourced rows match the selection")
    return pins, all_rows, rows


# Which commits -------------------------------------------------------------------------


def commit_info(root: Path, sha: str, refs: tuple[str, ...] = ()) -> Commit:
    with git.Repo(root) as repo:
        date, subject = repo.git.log("-1", "--format=%cI%x00%s", sha).split("\0", 1)
    return Commit(sha, date, subject, refs)


def tag_commits(root: Path, pattern: str = "*") -> list[Commit]:
    """Tags matching a glob, oldest first by their commit's date, ties by tag name; tags
    on one commit make one row that names them all (fzy's 1.1 and v1.1)."""
    with git.Repo(root) as repo:
        listed = repo.git.for_each_ref(
            "--format=%(refname:short)%00%(*objectname)%00%(objectname)", "refs/tags"
        )
    by_sha: dict[str, list[str]] = {}
    for line in listed.splitlines():
        name, peeled, direct = line.split("\0")
        if fnmatch.fnmatchcase(name, pattern):
            by_sha.setdefault(resolve_commit(root, peeled or direct), []).append(name)
    if not by_sha:
        raise RecallError(f"--tags {pattern}: no tag of {root} matches")
    commits = [commit_info(root, sha, tuple(sorted(names))) for sha, names in by_sha.items()]
    return sorted(commits, key=lambda c: (_epoch(root, c.sha), c.refs[0]))


def _epoch(root: Path, sha: str) -> int:
    with git.Repo(root) as repo:
        return repo.commit(sha).committed_date


def is_range(revs: list[str]) -> bool:
    """Arguments that only `git rev-list` can expand: `A..B`, `A...B`, `^A B`."""
    return any(".." in rev or rev.startswith("^") for rev in revs)


def range_commits(root: Path, revs: list[str], *, first_parent: bool = False) -> list[Commit]:
    """A git range as `git rev-list` takes it, oldest first."""
    flags = ["--reverse", *(["--first-parent"] if first_parent else [])]
    with git.Repo(root) as repo:
        try:
            shas = repo.git.rev_list(*flags, *revs, "--").split()
        except git.GitCommandError as exc:
            raise RecallError(
                f"range {' '.join(revs)}: git rev-list refuses it: {_last_line(exc.stderr)}"
            ) from None
    if not shas:
        raise RecallError(f"range {' '.join(revs)}: names no commits")
    return [commit_info(root, sha) for sha in shas]


def listed_commits(root: Path, refs: list[str]) -> list[Commit]:
    """REFs as given, oldest first by commit date (stable for equal dates); refs naming
    one commit make one row."""
    by_sha: dict[str, list[str]] = {}
    for ref in refs:
        sha = resolve_commit(root, ref)
        names = by_sha.setdefault(sha, [])
        if not sha.startswith(ref.lower()):  # a sha given names nothing more than the sha
            names.append(ref)
    commits = [commit_info(root, sha, tuple(names)) for sha, names in by_sha.items()]
    return sorted(commits, key=lambda c: _epoch(root, c.sha))


def thin(commits: list[Commit], every: int) -> list[Commit]:
    """Every Nth commit, counted back from the newest, which is always kept."""
    last = len(commits) - 1
    return [c for i, c in enumerate(commits) if (last - i) % every == 0]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[-1] if lines else "failed"


# Measuring -----------------------------------------------------------------------------


def measure(plan: Plan, commit: Commit) -> Point:
    """One commit through the baseline machinery; a commit whose build or run fails is a
    Point with its one-line reason, not an error of the history."""
    return answered(measure_rows(plan, commit, plan.rows), plan.allow_empty)


def commit_key(plan: Plan, commit: Commit, rows: list[QueryRow]) -> dict:
    """The results cache key of rows run at the commit."""
    asked = plan.asked if rows == plan.rows else data_key(plan.corpora.pins, rows)
    return run_key(f"commit:{commit.sha}", plan.engine, asked, plan.timeout)


def measure_rows(plan: Plan, commit: Commit, rows: list[QueryRow]) -> Point:
    """The commit built (or found built) and run over rows, the plan's or a shard's share
    of them, before `answered` judges the run: a shard's part of a commit is judged only
    once the merge has put the commit's parts together."""
    key = commit_key(plan, commit, rows)
    marker = plan.corpora.cache / "builds" / build_key(commit.sha, plan.engine) / ".recall-built"
    built = not marker.is_file()
    named = "".join(f" {ref}" for ref in commit.refs)
    _say(f"{commit.sha[:12]}{named}: {'building' if built else 'built before'}")
    try:
        binary, _sha = base_binary(plan.root, commit.sha, plan.engine, plan.corpora.cache,
                                   plan.build_timeout)  # fmt: skip
    except RecallError as exc:
        return Point(commit, None, _one_line(str(exc)), built, False)
    cacheable = not plan.no_cache and unseen_code(plan.engine) is None

    def run_now() -> RunResult:
        opened = _open_corpora(plan, rows)  # not a _Failed: a fetch or a bad source ends it
        kept = None if plan.no_cache else f"commit:{commit.sha}"  # its kept indexes
        try:
            return run_binary(
                binary, rows, opened, jobs=plan.jobs, timeout=plan.timeout, build=kept
            )
        except RecallError as exc:
            raise _Failed(_one_line(str(exc))) from None

    try:
        run, cached = cached_or_run(
            plan.corpora.cache, key, commit.sha[:12], rows, cacheable=cacheable, run=run_now
        )
    except _Failed as failed:
        return Point(commit, None, failed.line, built, False)
    return Point(commit, run, None, built, cached)


class _Failed(Exception):
    """The commit's run failed: a row of the history saying why, not an end of it."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def answered(point: Point, allow_empty: bool) -> Point:
    """The point, or a failed one when its run failed on (almost) every query or, unless
    allow_empty, returned nothing for (almost) every one."""
    if point.run is None:
        return point
    try:
        check_answered(point.run, allow_empty=allow_empty)
    except RecallError as exc:
        return Point(point.commit, None, _one_line(str(exc)), point.built, point.cached)
    return point


def _open_corpora(plan: Plan, rows: list[QueryRow]) -> dict[str, Corpus]:
    """The corpora of the rows, each opened once per history, and every source checked
    against them before the first binary runs on them (as `recall run` does)."""
    fresh = [row for row in rows if row.repo not in plan.corpora.opened]
    opened = plan.corpora.open(rows)
    if fresh:
        check_sources(fresh, opened, plan.queries_path, plan.all_rows)
    return opened


def history(plan: Plan, commits: list[Commit]) -> list[Point]:
    """Every commit, oldest first; a failed one is recorded and the history goes on."""
    points = []
    status = progress()
    with status.task("history", len(commits), "commits") as counted:
        for commit in commits:
            points.append(measure(plan, commit))
            status.advance(counted)
    return points


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _say(message: str) -> None:
    progress().say(f"recall: history: {message}")  # above the status line, if any


# The history ---------------------------------------------------------------------------


def commit_url(root: Path, sha: str) -> str | None:
    """The commit's page when the finder repo's origin is on GitHub, else None."""
    with git.Repo(root) as repo:
        try:
            url = repo.remotes.origin.url
        except (AttributeError, ValueError):
            return None
    return github_commit_url(url, sha)


def github_commit_url(url: str, sha: str) -> str | None:
    """https://github.com/OWNER/NAME/commit/SHA for an https, ssh or scp-style GitHub url."""
    if url.startswith("git@github.com:"):
        path = url.split(":", 1)[1]
    else:
        parts = urlsplit(url)
        if parts.hostname != "github.com":
            return None
        path = parts.path
    path = path.strip("/").removesuffix(".git")
    if path.count("/") != 1:
        return None
    return f"https://github.com/{path}/commit/{sha}"


def history_of(plan: Plan, points: list[Point]) -> History:
    """The history of the plan's measured commits."""
    urls = [commit_url(plan.root, point.commit.sha) for point in points]
    return document(header(plan), plan.rows, points, urls)


def header(plan: Plan) -> History:
    """The history but its commits: what every commit was measured with (a shard's file
    keeps it for the merge)."""
    return History(
        finder=str(plan.root), engine=EngineUsed(plan.engine.source, plan.engine.digest),
        queries=str(plan.queries_path), sourced=len(plan.rows),
        repos=tuple(sorted({row.repo for row in plan.rows})),
        types=tuple(sorted({row.type for row in plan.rows})), commits=(),
    )  # fmt: skip


def document(
    head: History, rows: list[QueryRow], points: list[Point], urls: list[str | None]
) -> History:
    """The history of its header and each commit's point and url: what a history prints
    and what a merge of its shards prints."""
    commits = [_commit_row(rows, point, url) for point, url in zip(points, urls, strict=True)]
    return dataclasses.replace(head, commits=tuple(commits))


def _commit_row(rows: list[QueryRow], point: Point, url: str | None) -> CommitRow:
    run = point.run
    if run is None:
        return CommitRow(point.commit, url, point.built, point.cached, point.error, None)
    return CommitRow(
        point.commit, url, point.built, point.cached, point.error,
        summarize(rows, run.results), round(run.index_s, 2), round(run.query_s, 2),
    )  # fmt: skip
