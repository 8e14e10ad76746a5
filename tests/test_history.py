"""`recall history` and `recall bisect` on fzy's real repository: real commits, real
`make` builds, real fzy processes over gin's abbr3 queries (84 rows, fast enough)."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path

import git
import numpy as np
import pytest
from conftest import fzy_clone, mirror_dir, needs_chromium, needs_ctags, needs_mirror, run_cli
from helpers import FIRST_BLUE, chromium

from recall.analysis.history import CommitRow, EngineUsed, History, Tally
from recall.analysis.model import Counts, QueryResult, RunResult
from recall.errors import RecallError
from recall.inputs.queryset import QueryRow
from recall.render.history import render_html
from recall.workflows.history import Commit, Point, document, github_commit_url, is_range, thin

pytestmark = [needs_mirror, needs_ctags]
SELECTION = ("--repo", "gin", "--type", "abbr3")
FIRST_BAD_05_06 = (
    "5c2d67ca7a14cfad94a5718ea62ad1b4d31f73b6"  # Don't consider numbers word separators
)


def recall(fzy: Path, cache: Path, *args: str):  # type: ignore[no-untyped-def]
    return run_cli(
        *args, "--finder", str(fzy), "--cache", str(cache), "--mirror", str(mirror_dir()),
        *SELECTION,
    )  # fmt: skip


def history_json(fzy: Path, cache: Path, *args: str) -> dict:
    proc = recall(fzy, cache, "history", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def commit(clone: Path, files: dict[str, str], message: str) -> str:
    with git.Repo(clone) as repo:
        for name, text in files.items():
            (clone / name).write_text(text)
        repo.index.add(list(files))
        return repo.index.commit(message).hexsha


@pytest.fixture(scope="module")
def broken(fzy_origin: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A clone with four local commits on master: a README edit, a Makefile that cannot
    build, the Makefile back, then consecutive matches penalised instead of rewarded (a
    real ranking change, for the worse). Returns the clone and those five commits."""
    clone = fzy_clone(fzy_origin, tmp_path_factory.mktemp("fzy-broken") / "fzy")
    makefile = (clone / "Makefile").read_text()
    config = (clone / "src" / "config.def.h").read_text()
    with git.Repo(clone) as repo:
        shas = [repo.head.commit.hexsha]
    shas.append(commit(clone, {"README.md": "fzy, edited\n"}, "Edit the README"))
    shas.append(commit(clone, {"Makefile": "all:\n\tfalse\n"}, "Break the Makefile"))
    shas.append(commit(clone, {"Makefile": makefile}, "Mend the Makefile"))
    worse = config.replace("SCORE_MATCH_CONSECUTIVE 1.0", "SCORE_MATCH_CONSECUTIVE -1.0")
    assert worse != config
    shas.append(commit(clone, {"src/config.def.h": worse}, "Penalise consecutive matches"))
    return clone, shas


def test_history_of_release_tags_is_one_row_per_commit_oldest_first(fzy: Path, real_cache: Path):
    data = history_json(fzy, real_cache, "--tags", "0.[4-6]")
    assert (data["schema"], data["kind"]) == (1, "recall-history")
    assert [c["refs"] for c in data["commits"]] == [["0.4"], ["0.5"], ["0.6"]]
    assert [c["first"] for c in data["commits"]] == [73, 73, 72]
    first = data["commits"][0]
    assert first["sha"].startswith("e62a3c6") and first["subject"] == "Version 0.4"
    assert first["n"] == 84 and first["error"] is None and first["url"] is None
    assert set(first["by_type"]) == {"abbr3"} and set(first["by_repo"]) == {"gin"}

    text = recall(fzy, real_cache, "history", "--tags", "0.[4-6]").stdout
    assert "e62a3c6 (0.4)  2016-05-19  Version 0.4  73 (86.9%)" in text
    markdown = recall(fzy, real_cache, "history", "--markdown", "--by", "type", "0.6", "0.4")
    assert (
        "| commit | date | subject | #1 | top 10 | found | MRR | nDCG@10 | errors |"
        in markdown.stdout
    )
    assert "## type abbr3" in markdown.stdout
    assert markdown.stdout.index("(0.4)") < markdown.stdout.index("(0.6)")  # oldest first


def test_tags_on_one_commit_make_one_row_naming_both(fzy: Path, real_cache: Path):
    data = history_json(fzy, real_cache, "--tags", "*1.1")
    assert [c["refs"] for c in data["commits"]] == [["1.1", "v1.1"]]


def test_a_second_history_builds_nothing_and_runs_nothing(fzy_origin: Path, tmp_path: Path):
    log = tmp_path / "builds.log"
    clone = fzy_clone(fzy_origin, tmp_path / "fzy", f'["sh", "-c", "echo x >> {log}; make"]')
    cache = tmp_path / "cache"
    started = time.perf_counter()
    cold = history_json(clone, cache, "--tags", "0.[12]")
    cold_s = time.perf_counter() - started
    assert log.read_text().count("x") == 2
    assert [(c["built"], c["cached"]) for c in cold["commits"]] == [(True, False)] * 2

    started = time.perf_counter()
    warm = history_json(clone, cache, "--tags", "0.[12]")
    warm_s = time.perf_counter() - started
    assert log.read_text().count("x") == 2  # no build ran
    assert [(c["built"], c["cached"]) for c in warm["commits"]] == [(False, True)] * 2
    assert [c["first"] for c in warm["commits"]] == [c["first"] for c in cold["commits"]]
    assert warm_s < cold_s


def test_a_commit_that_fails_to_build_is_a_row_saying_why_and_the_history_goes_on(
    broken: tuple[Path, list[str]], real_cache: Path
):
    clone, shas = broken
    data = history_json(clone, real_cache, f"{shas[0]}..{shas[3]}")
    rows = data["commits"]
    assert [c["sha"] for c in rows] == shas[1:4]
    assert rows[1]["error"].startswith("build failed (exit 2): make:")
    assert "first" not in rows[1]
    assert rows[0]["first"] == rows[2]["first"] == 72

    text = recall(clone, real_cache, "history", shas[2], shas[1], shas[3]).stdout
    assert f"{shas[2][:7]}  " in text and "failed: build failed (exit 2)" in text
    assert "1 of 3 commits could not be measured" in text


def test_history_exits_2_when_every_commit_failed(broken: tuple[Path, list[str]], real_cache: Path):
    clone, shas = broken
    proc = recall(clone, real_cache, "history", shas[2])
    assert proc.returncode == 2
    assert "failed: build failed" in proc.stdout


@needs_chromium
@pytest.mark.slow
def test_history_chart_draws_each_line_with_a_gap_at_a_failed_build(
    broken: tuple[Path, list[str]], real_cache: Path, tmp_path: Path
):
    clone, shas = broken
    page = tmp_path / "history.html"
    proc = recall(clone, real_cache, "history", "--html", str(page), "--first-parent",
                  f"{shas[0]}~1..{shas[3]}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    html = page.read_text()
    assert html.count('data-series="#1 %"') == 1  # master~1 to readme; the break; one point
    assert html.count("<circle") == 3 * 3  # three metrics at the three commits that built
    pixels, console = chromium(page, tmp_path)
    assert not console
    blue = np.all(pixels == np.array(FIRST_BLUE, dtype=np.uint8), axis=2)
    columns = np.flatnonzero(blue.any(axis=0))
    assert columns.size, "the #1 line was not drawn"
    gaps = np.diff(columns)
    assert gaps.max() > 56, "no gap where the build failed"  # one x step is 56 px


def test_a_fault_of_the_harness_ends_the_history_instead_of_failing_one_commit(
    fzy: Path, real_cache: Path, tmp_path: Path
):
    queries = tmp_path / "queries.tsv"
    queries.write_text("repo\tquery\ttype\tsource\ngin\tnotnam\tabbr3\tNotANameOfGin\n")
    proc = recall(fzy, real_cache, "history", "--queries", str(queries), "0.5", "0.6")
    assert proc.returncode == 2
    assert f"{queries}:2: source 'NotANameOfGin' is not a name of gin at its pin" in proc.stderr
    assert proc.stdout == ""


def test_a_point_links_to_its_commit_when_origin_is_on_github():
    sha = "5c2d67ca7a14cfad94a5718ea62ad1b4d31f73b6"
    url = f"https://github.com/jhawthorn/fzy/commit/{sha}"
    assert github_commit_url("https://github.com/jhawthorn/fzy.git", sha) == url
    assert github_commit_url("git@github.com:jhawthorn/fzy.git", sha) == url
    assert github_commit_url("/srv/git/fzy.git", sha) is None
    counts = Counts(n=1, first=1, top10=1, found=1, errors=0, first_pct=100.0, top10_pct=100.0,
                    found_pct=100.0, mrr=1.0, ndcg10=1.0)  # fmt: skip
    row = CommitRow(Commit(sha, "2016-07-10", "<b>s</b>"), url, False, True, None,
                    Tally(counts, {}, {}), 1.0, 2.0)  # fmt: skip
    page = render_html(_of([row, dataclasses.replace(row, url=None)]))
    assert f'<a href="{url}"><circle' in page
    assert f"<title>{sha} &lt;b&gt;s&lt;/b&gt;: #1 % 100.0</title>" in page
    assert "<b>s</b>" not in page


def test_a_history_row_counts_as_the_report_does_ndcg_at_10_included():
    rows = [QueryRow("gin", "ctx", "abbr3", "Context"), QueryRow("gin", "eng", "abbr3", "Engine"),
            QueryRow("flask", "app", "typo", "Flask")]  # fmt: skip
    results = (QueryResult(1, ()), QueryResult(3, ()), QueryResult(None, (), error="timed out"))
    point = Point(Commit("a" * 40, "2024-01-02T03:04:05+00:00", "s"),
                  RunResult("c", "bin", 1.0, 2.0, results), None, False, True)  # fmt: skip
    head = History("f", EngineUsed("e", "0"), "q", 3, ("flask", "gin"), ("abbr3", "typo"), ())
    history = document(head, rows, [point], [None])
    assert History.from_json(history.to_json()) == history  # the codec reads back what it wrote
    entry = history.to_json()["commits"][0]
    assert {k: entry[k] for k in ("n", "first", "top10", "found", "errors", "mrr", "ndcg10")} == {
        "n": 3,
        "first": 1,
        "top10": 2,
        "found": 2,
        "errors": 1,
        "mrr": 0.4444,
        "ndcg10": 0.5,
    }  # rank 3 gains 1 / log2(4)
    assert entry["by_repo"]["gin"]["ndcg10"] == 0.75 and entry["by_type"]["typo"]["ndcg10"] == 0.0
    assert list(entry["by_repo"]) == ["flask", "gin"]  # sorted, as before


def test_every_n_keeps_the_newest_commit_and_ranges_are_told_from_refs():
    commits = [Commit(str(i), "", "") for i in range(7)]
    assert [c.sha for c in thin(commits, 3)] == ["0", "3", "6"]
    assert [c.sha for c in thin(commits, 4)] == ["2", "6"]
    assert is_range(["0.5..0.6"]) and is_range(["^0.5", "0.6"]) and not is_range(["0.5", "0.6"])


def test_bisect_finds_the_fzy_commit_where_a_query_lost_a_place(fzy: Path, real_cache: Path):
    proc = recall(fzy, real_cache, "bisect", "--good", "0.5", "--bad", "0.6",
                  "--query", "gin:tescongetintsli")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"first bad commit: {FIRST_BAD_05_06[:12]} 2016-07-10 " in out
    assert "Don't consider numbers word separators" in out
    assert "3 at 95eb1c06231c (before), 4 at 5c2d67ca7a14 (after)" in out
    assert (
        f"recall explain tescongetintsli --repo gin --finder /tmp/recall-bisect-"
        f"{FIRST_BAD_05_06[:12]} --base 95eb1c06231c5a32724402a589f9b07274194a2f"
    ) in out
    assert f"worktree add --detach /tmp/recall-bisect-{FIRST_BAD_05_06[:12]} " in out


def test_bisect_asks_which_source_when_a_query_has_several(fzy: Path, real_cache: Path):
    proc = recall(fzy, real_cache, "bisect", "--good", "0.5", "--bad", "0.6",
                  "--query", "gin:getuinsli")  # fmt: skip
    assert proc.returncode == 2
    assert "rows for several sources (GetUint64Slice, GetUint8Slice): give --source" in (
        proc.stderr
    )
    proc = recall(fzy, real_cache, "bisect", "--good", "0.5", "--bad", "0.6",
                  "--query", "gin:getuinsli", "--source", "GetUint8Slice")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "rank of GetUint8Slice (gin:getuinsli): 1 at " in proc.stdout
    assert "--source GetUint8Slice --engine " in proc.stdout


def test_bisect_skips_a_commit_that_does_not_build(
    broken: tuple[Path, list[str]], real_cache: Path
):
    clone, shas = broken
    proc = recall(clone, real_cache, "bisect", "--good", shas[0], "--bad", shas[4],
                  "--metric", "first_pct", "--drop", "1")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"first bad commit: {shas[4][:12]} " in proc.stdout
    assert "Penalise consecutive matches" in proc.stdout
    assert f"skipped {shas[2][:12]} Break the Makefile" in proc.stdout


def test_bisect_refuses_a_bad_ref_that_is_not_bad(fzy: Path, real_cache: Path):
    proc = recall(fzy, real_cache, "bisect", "--good", "0.1", "--bad", "0.2",
                  "--query", "gin:tescongetintsli")  # fmt: skip
    assert proc.returncode == 2
    assert "nothing to bisect" in proc.stderr


def _of(rows: list[CommitRow]) -> History:
    return History("fzy", EngineUsed("e", "0"), "q", 1000, ("gin",), ("abbr3",), tuple(rows))


def _history(points: list[tuple[float, float]], by: dict | None = None) -> History:
    """A history of len(points) commits, each (#1 %, top 10 %) over 1000 rows; `by` gives
    each commit's counts per repo (n, first_pct, top10_pct, mrr)."""

    def counts(n: int, first: float, top10: float, mrr: float) -> Counts:
        return Counts(n=n, first=round(first * n / 100), top10=round(top10 * n / 100), found=n,
                      errors=0, first_pct=first, top10_pct=top10, found_pct=100.0, mrr=mrr,
                      ndcg10=0.8)  # fmt: skip

    repos = {repo: counts(c["n"], c["first_pct"], c["top10_pct"], c["mrr"])
             for repo, c in (by or {}).items()}  # fmt: skip
    rows = [
        CommitRow(Commit(f"{i:040x}", "2016-07-10", f"c{i}"), None, False, True, None,
                  Tally(counts(1000, first, top10, first / 100 + 0.05), {}, repos), 1.0, 2.0)
        for i, (first, top10) in enumerate(points)
    ]  # fmt: skip
    return _of(rows)


def _dots(svg: str, series: str) -> list[tuple[float, float]]:
    return [
        (float(x), float(y))
        for x, y, tip in re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"[^>]*><title>([^<]*)', svg)
        if f": {series} " in tip
    ]


def test_history_charts_scale_to_the_data_and_keep_coinciding_lines_apart():
    """Issue 44 item 10: history charts were 312 px wide on a fixed 0-100 axis, so fzy's
    real change (-0.2 points of #1) could not be seen, and lines hid each other."""
    page = render_html(_history([(72.0, 90.0), (71.8, 90.0), (71.8, 90.1), (72.0, 90.0)]))
    charts = re.findall(r"<svg .*?</svg>", page)
    assert len(charts) == 3  # #1, top 10, MRR: each on its own axis
    widths = [float(w) for w in re.findall(r'<svg [^>]*width="([\d.]+)"', page)]
    assert min(widths) >= 640
    first = _dots(charts[0], "#1 %")
    assert len(first) == 4 and first[1][1] - first[0][1] >= 40  # -0.2 points: 40 px or more
    same = {"gin": {"n": 500, "first_pct": 70.0, "top10_pct": 90.0, "mrr": 0.8},
            "redis": {"n": 500, "first_pct": 70.0, "top10_pct": 90.0, "mrr": 0.8}}  # fmt: skip
    by = render_html(_history([(70.0, 90.0)] * 3, same), by="repo")
    gin, redis = _dots(by, "gin"), _dots(by, "redis")
    assert len(gin) == len(redis) == 9
    assert all(abs(a[1] - b[1]) >= 3 for a, b in zip(gin, redis, strict=True))


def test_a_history_read_back_from_its_json_is_the_same_history_failed_commits_included():
    """`History.from_json` reads what `--json` printed: a failed commit has no counts and no
    seconds in JSON, and reads back with none (the codec's flattened part left out)."""
    failed = CommitRow(Commit("b" * 40, "2016-07-11", "broken", ("v2",)), None, True, False,
                       "build failed (exit 2)", None)  # fmt: skip
    history = _of([_history([(72.0, 90.0)]).commits[0], failed])
    data = json.loads(json.dumps(history.to_json()))
    assert set(data["commits"][1]) == {"sha", "short", "date", "subject", "refs", "url",
                                       "built", "cached", "error"}  # fmt: skip
    assert History.from_json(data) == history
    with pytest.raises(RecallError, match="kind"):
        History.from_json({**data, "kind": "recall-report"})
