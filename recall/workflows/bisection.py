"""`recall bisect`: the first commit at which a query's rank changed, or the #1 rate fell.

asv's `find` for ranking: the commits of `git rev-list --first-parent GOOD..BAD` are
bisected, each measured by history.measure (so with the builds and results caches that
`--base` and `recall history` use). A commit that does not build is skipped as `git
bisect skip` skips: the nearest untested commit beside it is tried instead, and when only
skipped commits are left between the last good and the first bad one, all of them are
named as the range the change is in.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from recall.errors import RecallError
from recall.inputs.queryset import QueryRow
from recall.running.build import resolve_commit
from recall.terminal import Task, progress, safe_output
from recall.workflows.history import (
    Commit,
    Plan,
    Point,
    commit_info,
    make_plan,
    measure,
    range_commits,
)
from recall.workflows.options import BisectOptions


@dataclass(frozen=True)
class Verdict:
    """What bisect found: the first bad commit, the last good one before it (the good
    ref itself when the first commit of the range is bad), their values, and the
    commits skipped because they did not build."""

    first_bad: Commit
    last_good: Commit
    good_value: float | int | None
    bad_value: float | int | None
    before: float | int | None  # at last_good
    after: float | int | None  # at first_bad
    skipped: tuple[Commit, ...]
    candidates: tuple[Commit, ...]  # more than one: skips hide which of these it is
    tested: int
    what: str = ""  # the value watched, as printed: "rank of NAME (REPO:QUERY)" or "#1 %"
    row: QueryRow | None = None  # the query's row, when a query's rank was watched
    # with a query: the commands that show it side by side at the commit and the one before
    side_by_side: tuple[str, ...] = ()


def find_first_bad(options: BisectOptions) -> Verdict:
    """The first commit between good and bad where the query's rank changed, or where the
    #1 rate fell by `drop` points or more from good's: the Python API's `recall.bisect`;
    `recall bisect` prints it (`render`)."""
    if options.metric and (options.drop is None or not options.drop > 0):
        raise RecallError("--metric first_pct needs --drop PTS, above 0")
    if options.drop is not None and not options.metric:
        raise RecallError("--drop goes with --metric first_pct")
    if options.source is not None and not options.query:
        raise RecallError("--source goes with --query")
    commit_options = options.commits
    if options.query and not commit_options.data.repos:
        repos = (options.query.partition(":")[0],)
        data = dataclasses.replace(commit_options.data, repos=repos)
        commit_options = dataclasses.replace(commit_options, data=data)
    plan = make_plan(commit_options, "recall bisect")
    row = query_row(plan, options.query, options.source) if options.query else None
    if row is not None:
        what = f"rank of {row.source} ({row.repo}:{row.query})"
        rank = rank_of(plan, row)
        verdict = bisect(plan, options.good, options.bad, rank, lambda g, v: v != g)
        lines = tuple(explain_lines(plan, verdict, row))
        return dataclasses.replace(verdict, what=what, row=row, side_by_side=lines)
    drop = options.drop or 0.0

    def fell(good: float | int | None, value: float | int | None) -> bool:
        return good is not None and value is not None and good - value >= drop - 1e-9

    verdict = bisect(plan, options.good, options.bad, first_pct(plan), fell)
    return dataclasses.replace(verdict, what="#1 %")


def query_row(plan: Plan, spec: str, source: str | None = None) -> QueryRow:
    """--query REPO:QUERY as the sourced row of the selection it names; a query derived
    from two names (gin's `getuinsli`) needs --source to say which one is meant."""
    repo, sep, query = spec.partition(":")
    if not sep or not repo or not query:
        raise RecallError(f"--query {spec}: give REPO:QUERY")
    rows = [row for row in plan.rows if (row.repo, row.query) == (repo, query)]
    if source is not None:
        rows = [row for row in rows if row.source == source]
    if not rows:
        given = f" with source {source}" if source is not None else ""
        raise RecallError(
            f"--query {spec}: no sourced row of {plan.queries_path} in the selection has it{given}"
        )
    if len(rows) > 1:
        sources = ", ".join(row.source for row in rows)
        raise RecallError(f"--query {spec}: rows for several sources ({sources}): give --source")
    return rows[0]


def rank_of(plan: Plan, row: QueryRow) -> Callable[[Point], int | None]:
    index = plan.rows.index(row)

    def value(point: Point) -> int | None:
        assert point.run is not None
        return point.run.results[index].rank

    return value


def first_pct(plan: Plan) -> Callable[[Point], float]:
    def value(point: Point) -> float:
        assert point.run is not None
        ranks = [r.rank for r in point.run.results]
        return round(100.0 * sum(1 for r in ranks if r == 1) / len(ranks), 1)

    return value


def bisect(
    plan: Plan,
    good: str,
    bad: str,
    value: Callable[[Point], float | int | None],
    is_bad: Callable[[float | int | None, float | int | None], bool],
) -> Verdict:
    """Bisect GOOD..BAD (first parents) for the first commit whose value is bad against
    good's value. Good and bad themselves must build; bad must be bad."""
    root = plan.root
    good_c = commit_info(root, _sha(plan, good))
    bad_sha = _sha(plan, bad)
    commits = range_commits(root, [f"{good_c.sha}..{bad_sha}"], first_parent=True)
    if not commits or commits[-1].sha != bad_sha:
        raise RecallError(f"--bad {bad}: not a first-parent descendant of --good {good}")
    with progress().task("bisect", _steps(len(commits)), "commits") as counted:
        return _search(plan, good, bad, good_c, commits, value, is_bad, counted)


def _steps(commits: int) -> int:
    """The commits a bisect of GOOD..BAD measures when none is skipped: good, bad, then
    halving the commits between them (the status line's total; a skip adds one)."""
    return 2 + math.ceil(math.log2(commits)) if commits > 1 else 2


def _search(
    plan: Plan, good: str, bad: str, good_c: Commit, commits: list[Commit],
    value: Callable[[Point], float | int | None],
    is_bad: Callable[[float | int | None, float | int | None], bool], counted: Task,
) -> Verdict:  # fmt: skip
    def measured(commit: Commit) -> Point:
        point = measure(plan, commit)
        progress().advance(counted)
        return point

    good_point = _must(measured(good_c), "--good", good)
    good_value = value(good_point)
    bad_point = _must(measured(commits[-1]), "--bad", bad)
    bad_value = value(bad_point)
    if not is_bad(good_value, bad_value):
        raise RecallError(
            f"--bad {bad}: {_shown(bad_value)} against {_shown(good_value)} at --good "
            f"{good}: not bad, nothing to bisect"
        )
    values: dict[int, float | int | None] = {-1: good_value, len(commits) - 1: bad_value}
    skipped: set[int] = set()
    lo, hi, tested = -1, len(commits) - 1, 2
    while True:
        untested = [i for i in range(lo + 1, hi) if i not in skipped]
        if not untested:
            break
        mid = (lo + hi) // 2
        pick = min(untested, key=lambda i: (abs(i - mid), i))
        point = measured(commits[pick])
        tested += 1
        if not point.ok:
            skipped.add(pick)
            continue
        values[pick] = value(point)
        if is_bad(good_value, values[pick]):
            hi = pick
        else:
            lo = pick
    last_good = good_c if lo == -1 else commits[lo]
    return Verdict(
        first_bad=commits[hi], last_good=last_good, good_value=good_value,
        bad_value=bad_value, before=values[lo], after=values[hi],
        skipped=tuple(commits[i] for i in sorted(skipped)),
        candidates=tuple(commits[i] for i in range(lo + 1, hi + 1)), tested=tested,
    )  # fmt: skip


def _sha(plan: Plan, ref: str) -> str:
    return resolve_commit(plan.root, ref)


def _must(point: Point, flag: str, ref: str) -> Point:
    if not point.ok:
        raise RecallError(f"{flag} {ref}: cannot be measured: {point.error}")
    return point


def _shown(value: float | int | None) -> str:
    return "not found" if value is None else str(value)


def explain_lines(plan: Plan, verdict: Verdict, row: QueryRow) -> list[str]:
    """The commands that show the query side by side at the commit and the one before:
    a worktree of the commit as the candidate, the commit before as the base."""
    commit, parent = verdict.first_bad.sha, verdict.last_good.sha
    worktree = f"/tmp/recall-bisect-{commit[:12]}"
    engine = plan.engine.source
    if engine.startswith("preset:"):
        engine_flag = f" --engine {engine.removeprefix('preset:')}"
    else:
        engine_flag = f" --engine {shlex.quote(str(engine))}"
    paths = (
        f" --corpus {shlex.quote(str(plan.corpus_path))}"
        f" --queries {shlex.quote(str(plan.queries_path))}"
    )
    query, repo = shlex.quote(row.query), shlex.quote(row.repo)
    source = f" --source {shlex.quote(row.source)}"
    return [
        f"git -C {shlex.quote(str(plan.root))} worktree add --detach {worktree} {commit}",
        f"recall explain {query} --repo {repo} --finder {worktree} --base {parent}"
        f"{source}{engine_flag}{paths}",
    ]


def render(verdict: Verdict) -> str:
    """The verdict as the lines bisect prints."""
    c = verdict.first_bad
    lines = []
    if len(verdict.candidates) > 1:
        lines.append(
            f"the first bad commit is one of {len(verdict.candidates)} (the others did not build):"
        )
        lines += [f"  {x.sha[:12]} {x.subject}" for x in verdict.candidates]
    else:
        lines.append(f"first bad commit: {c.sha[:12]} {c.date[:10]} {c.subject}")
    lines.append(f"  {c.sha}")
    lines.append(
        f"{verdict.what}: {_shown(verdict.before)} at {verdict.last_good.sha[:12]} (before), "
        f"{_shown(verdict.after)} at {c.sha[:12]} (after); --good had {_shown(verdict.good_value)}"
    )
    lines.append(f"measured {verdict.tested} commits; skipped (no build): {len(verdict.skipped)}")
    lines += [f"  skipped {x.sha[:12]} {x.subject}" for x in verdict.skipped]
    if verdict.side_by_side:
        lines.append("side by side at the commit (candidate) and the one before it (base):")
        lines += [f"  {line}" for line in verdict.side_by_side]
    return safe_output("\n".join(lines) + "\n")  # a subject is a stranger's text
