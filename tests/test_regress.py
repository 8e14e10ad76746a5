import json
from pathlib import Path

import git
import pytest
from conftest import (
    ROOT,
    SUBSEQUENCE_ENGINE,
    SUBSEQUENCE_FINDER,
    commit_files,
    make_repo,
    needs_ctags,
    run_cli,
)

from recall.analysis.model import FailingCase, Hit, QueryResult
from recall.analysis.regress import (
    Case,
    broken,
    has_locations,
    read_cases,
    summarize,
    verdict,
)
from recall.errors import RecallError
from recall.inputs.corpus import load_pins
from recall.inputs.sides import HOLDOUT


def _first(name: str, file: str | None = "lib/ctx.go", line: int | None = 12) -> QueryResult:
    return QueryResult(None, (Hit(name, file, line), Hit("Other", "x.go", 1)))


def test_the_first_result_is_matched_written_as_file_line_name():
    case = Case("gin", "ctx", r"^lib/ctx\.go:\d+ Context$")
    assert verdict(case, _first("Context")) == "holds"
    assert verdict(case, _first("Context", file="lib/ctx_test.go")) == "fails"
    assert verdict(case, _first("ContextJSON")) == "fails"


def test_a_leading_bang_means_the_first_result_must_not_match():
    case = Case("gin", "ctx", "!_test\\.go:")
    assert verdict(case, _first("Context")) == "holds"
    assert verdict(case, _first("Context", file="ctx_test.go")) == "fails"
    assert verdict(case, QueryResult(None, ())) == "holds"


def test_no_answer_or_an_error_fails_and_a_result_without_location_is_not_applicable():
    case = Case("gin", "ctx", "Context")
    assert verdict(case, QueryResult(None, ())) == "fails"
    assert verdict(case, QueryResult(None, (), "timed out")) == "fails"
    assert verdict(case, _first("Context", file=None, line=None)) == "n/a"


def test_summary_counts_and_lists_the_failing_cases_with_what_came_first():
    cases = [Case("gin", "a", "A$"), Case("gin", "b", "B$"), Case("gin", "c", "C$")]
    results = [_first("A"), _first("X"), _first("C", file=None, line=None)]
    summary = summarize(cases, results)
    assert (summary.holds, summary.fails, summary.not_applicable) == (1, 1, 1)
    assert summary.failing == (FailingCase("gin", "b", "B$", "lib/ctx.go:12 X"),)


def test_only_a_case_that_held_and_now_fails_is_broken():
    cases = [Case("gin", "a", "A$"), Case("gin", "b", "B$"), Case("gin", "c", "C$")]
    base = [_first("A"), _first("X"), _first("C")]
    new = [_first("X"), _first("X"), _first("C")]
    assert [b.query for b in broken(cases, base, new)] == ["a"]


def test_a_finder_that_prints_no_locations_gets_n_a_for_every_case_never_a_failure():
    """Issue 44 item 5: fzy's `recall --base 1.0` listed 4 regress cases failing in the
    candidate: file:line patterns against a finder that prints names alone, failed where
    it answered nothing. Such a finder (no hit of its run names a file) gets n/a for
    every case, answered or not, and breaks none; the summary says why."""
    cases = [Case("gin", "a", "A$"), Case("gin", "zz", "B$"), Case("gin", "c", "!_test")]
    names_only = [
        QueryResult(None, (Hit("A", None, None),)), QueryResult(None, ()),
        QueryResult(None, (), "timed out"),
    ]  # fmt: skip
    assert not has_locations(names_only)
    assert has_locations([*names_only, _first("A")])
    summary = summarize(cases, names_only, located=False)
    assert (summary.holds, summary.fails, summary.not_applicable) == (0, 0, 3)
    assert summary.no_locations and summary.failing == ()
    located = [_first("A"), _first("B"), _first("C")]
    assert broken(cases, located, names_only, new_located=False) == ()
    assert [b.query for b in broken(cases, located, names_only)] == ["zz", "c"]  # as on main


@needs_ctags
def test_a_run_of_a_finder_without_locations_reports_its_regress_cases_n_a_and_why(mine):
    (mine / "regress.tsv").write_text(
        "repo\tquery\texpect\ntiny\talpfun\t^a\\.py:1 alpha_function$\n"
        "tiny\tzzzz\t^a\\.py:1 alpha_function$\n"
    )
    finder = git.Repo(mine.parent / "finder")
    commit_files(finder, {"finder.py": SUBSEQUENCE_FINDER + "\n"}, "a change of no consequence")
    proc = _mine(mine, "--base", "HEAD~1", "--fail-on-loss", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    for run in report["runs"]:
        assert run["regress"] == {
            "cases": 2, "holds": 0, "fails": 0, "not_applicable": 2, "failing": [],
            "no_locations": True,
        }  # fmt: skip
    assert report["diff"]["regress_broken"] == []
    text = _mine(mine, "--base", "HEAD~1").stdout
    assert (
        "n/a: base HEAD~1 ({}), candidate print no locations (file:line), which every "
        "regress case matches, so no case applies".format(finder.commit("HEAD~1").hexsha[:12])
    ) in text
    assert "Regress cases failing" not in text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("repo\tquery\n", r"cases.tsv:1: the header must be repo<TAB>query<TAB>expect"),
        ("repo\tquery\texpect\ngin\tctx\n", r"cases.tsv:2: expected 3 tab-separated fields, not 2"),
        ("repo\tquery\texpect\nnope\tctx\tX\n", r"cases.tsv:2: unknown repo 'nope'"),
        ("repo\tquery\texpect\ngin\tctx\t!\n", r"cases.tsv:2: the query and the pattern must"),
        ("repo\tquery\texpect\ngin\tctx\t(\n", r"cases.tsv:2: bad pattern '\('"),
    ],
)
def test_a_bad_cases_file_is_refused_naming_its_line(tmp_path, text, message):
    path = tmp_path / "cases.tsv"
    path.write_text(text)
    with pytest.raises(RecallError, match=message):
        read_cases(path, {"gin"})


def test_the_committed_cases_are_twenty_or_more_over_every_corpus_but_the_fresh_holdout():
    """A regress case is written by reading a ranking, which the fresh holdout forbids
    (docs/DECISIONS.md): its corpora have none."""
    pins = load_pins(ROOT / "corpus.json")
    cases = read_cases(ROOT / "regress.tsv", set(pins))
    assert len(cases) >= 20
    assert {c.repo for c in cases} == {name for name, pin in pins.items() if pin.split != HOLDOUT}


def _gin_abbr3(cache: Path, *extra: str) -> dict:
    proc = run_cli("--cache", str(cache), "--repo", "gin", "--type", "abbr3", "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_reference_finder_holds_the_committed_gin_cases_kept_out_of_the_counts(real_cache, gin):
    cases = read_cases(ROOT / "regress.tsv", set(load_pins(ROOT / "corpus.json")))
    gin_cases = [c for c in cases if c.repo == "gin"]
    report = _gin_abbr3(real_cache)
    regress = report["runs"][0]["regress"]
    assert report["regress"]["cases"] == regress["cases"] == len(gin_cases) > 0
    assert regress["holds"] == len(gin_cases), regress["failing"]
    assert report["queries"] == report["runs"][0]["n"] == report["runs"][0]["by_type"]["abbr3"]["n"]


def test_no_regress_skips_the_cases(real_cache, gin):
    report = _gin_abbr3(real_cache, "--no-regress")
    assert "regress" not in report and report["runs"][0]["regress"] is None


@pytest.fixture
def mine(tmp_path: Path) -> Path:
    """A project of its own: one tiny pin, its queries, and the committed regress.tsv with
    one case for the tiny pin added, so the default file names repos it does not pin."""
    upstream = make_repo(tmp_path / "upstream", {"a.py": "def alpha_function():\n    pass\n"})
    project = tmp_path / "project"
    project.mkdir()
    pin = {"url": (tmp_path / "upstream").as_uri(), "sha": upstream.head.commit.hexsha}
    (project / "mine.json").write_text(json.dumps({"tiny": {**pin, "language": "python"}}))
    (project / "mine.tsv").write_text(
        "repo\tquery\ttype\tsource\ntiny\talpfun\tabbr3\talpha_function\n"
    )
    committed = (ROOT / "regress.tsv").read_text()
    (project / "regress.tsv").write_text(committed + "tiny\talpfun\t^a\\.py:1 alpha_function$\n")
    make_repo(
        tmp_path / "finder", {"finder.py": SUBSEQUENCE_FINDER, "recall.toml": SUBSEQUENCE_ENGINE}
    )
    return project


def _mine(project: Path, *extra: str):
    where = project.parent
    return run_cli(
        "--corpus", "mine.json", "--queries", "mine.tsv", "--finder", str(where / "finder"),
        "--cache", str(where / "cache"), *extra, cwd=project, env={"RECALL_MIRROR": ""},
    )  # fmt: skip


@needs_ctags
@pytest.mark.slow
def test_the_default_regress_file_skips_cases_of_repos_the_corpus_does_not_pin_and_says_so(mine):
    committed = len(read_cases(ROOT / "regress.tsv", None))
    proc = _mine(mine, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["regress"] == {"file": "regress.tsv", "cases": 1, "skipped": committed}
    assert report["runs"][0]["regress"]["cases"] == 1
    for flag in ((), ("--markdown",)):
        text = _mine(mine, *flag).stdout
        assert f"{committed} regress cases skipped: their repos are not in the corpus pins" in text


def test_an_explicit_regress_file_naming_a_repo_the_corpus_does_not_pin_is_refused(mine):
    proc = _mine(mine, "--regress", "regress.tsv")
    assert proc.returncode == 2
    assert proc.stderr == "recall: regress.tsv:2: unknown repo 'rails'\n"
