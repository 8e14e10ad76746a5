"""The judgments set read (recall/inputs/judgments.py) and judged (recall/analysis/judgments.py):
the committed file whole and verbatim, every bad row refused naming its file and line,
contested pairs apart, the rows a run asks over each query's own sorted candidates, and
each pair's verdict from its two ranks."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from conftest import ROOT, run_cli

from recall.analysis.judgments import (
    Judged,
    agrees,
    disputed_by,
    judge,
    neither,
    set_correlation,
)
from recall.analysis.stats import spearman, spearman_interval, wilson
from recall.errors import RecallError
from recall.inputs.judgments import (
    HEADER,
    candidates,
    contested,
    is_judgments_file,
    judged_rows,
    list_name,
    lists_of,
    on_side,
    parse_judgments,
    project_side,
    projects_by_side,
    read_judgments,
)
from recall.inputs.paths import domain_of
from recall.inputs.queryset import JUDGED
from recall.render.judgments import render_judged_diff
from recall.workflows.run import selected_rows

COMMITTED = ROOT / "judgments.tsv"
HEAD = "\t".join(HEADER) + "\n"
SOURCE = "owner/repo test.c@0123456789ab a_test"


def _file(*rows: str) -> bytes:
    return (HEAD + "".join(f"{row}\t{SOURCE}\n" for row in rows)).encode()


def test_the_committed_set_reads_whole_with_its_fields_verbatim():
    rows = read_judgments(COMMITTED)
    assert len(rows) == 547 and not contested(rows)
    assert len({j.project for j in rows}) == 25
    assert sum(1 for j in rows if j.domain == "symbol") == 342
    padded = [j for j in rows if j.preferred != j.preferred.strip() or j.other != j.other.strip()]
    assert len(padded) == 22  # fzy's "    a b c " and the like keep their spaces
    raw = COMMITTED.read_text(encoding="utf-8").splitlines()
    assert all(raw[j.line - 1].split("\t")[2] == j.preferred for j in rows)
    assert is_judgments_file(COMMITTED) and not is_judgments_file(ROOT / "queries.tsv")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (b"", "empty file; expected the header domain query preferred other source"),
        (HEAD.encode(), "no judgments under the header"),
        (HEAD.encode() + b"symbol\tab\tab_c\n", ":2: expected 5 tab-separated fields, got 3"),
        (_file("symbol\tab\tab_c\tab_d\textra"), ":2: expected 5 tab-separated fields, got 6"),
        (_file("name\tab\tab_c\tabc"), ":2: unknown domain 'name' (one of symbol, path)"),
        (_file("symbol\t\tab_c\tabc"), ":2: empty query"),
        (_file("path\tab\t\tabc"), ":2: empty preferred"),
        (_file("symbol\tab\tab_c\tab_c"), ":2: preferred and other are the same candidate 'ab_c'"),
        (_file("symbol\tab\ta\0b\tabc"), ":2: the preferred holds a NUL byte"),
        (_file("symbol\tab\tab_c\tabc", "path\tx\txy\tx_y", "symbol\tab\tab_c\tabc"),
         ":4: duplicate of line 2"),
        (HEAD.encode() + b"symbol\tab\tab_c\tabc\t \n", ":2: empty source"),
        (HEAD.encode() + b"symbol\tab\t\xff\tabc\ts\n", ":2: not valid UTF-8"),
    ],
)  # fmt: skip
def test_a_bad_row_is_one_line_naming_the_file_and_line(text, error):
    with pytest.raises(RecallError) as caught:
        parse_judgments(text, "mine.tsv")
    assert str(caught.value).startswith("mine.tsv") and error in str(caught.value)


def test_a_bad_row_through_the_command_line_exits_2_before_anything_runs(tmp_path):
    path = tmp_path / "mine.tsv"
    path.write_bytes(_file("symbol\tab\tab_c\tabc", "symbol\tab\tab_c\tab_c"))
    proc = run_cli("--cache", str(tmp_path / "cache"), "--queries", str(path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (
        f"recall: {path}:3: preferred and other are the same candidate 'ab_c'"
    )
    assert not (tmp_path / "cache" / "results").exists()


def test_a_bom_and_crlf_are_read_cleanly_and_the_same_pair_from_two_sources_stays_twice():
    rows = parse_judgments(
        b"\xef\xbb\xbf" + HEAD.encode() + b"symbol\tab\tab_c\tabc\ta/b x\r\n"
        b"symbol\tab\tab_c\tabc\tc/d y\r\n",
        "x",
    )  # fmt: skip
    assert [(j.preferred, j.source, j.line) for j in rows] == [
        ("ab_c", "a/b x", 2),
        ("ab_c", "c/d y", 3),
    ]


def test_a_pair_whose_reverse_is_in_the_file_is_contested_both_ways_and_no_other():
    rows = parse_judgments(
        _file("symbol\tab\tab_c\tabc", "symbol\tab\tabc\tab_c", "path\tab\tabc\tab_c",
              "symbol\tab\tab_c\txab"),
        "x",
    )  # fmt: skip
    assert sorted(j.line for j in contested(rows)) == [2, 3]  # the path pair has no reverse


def test_each_query_runs_over_its_own_sorted_candidates_and_equal_lists_share_a_name():
    rows = parse_judgments(
        _file("symbol\tfb\tfoo_bar\tfbar", "symbol\tfb\tfoo_bar\tBaz", "path\tx\tfbar\tfoo_bar",
              "path\tx\tBaz\tfoo_bar", "symbol\tzz\tzz\tz_z"),
        "x",
    )  # fmt: skip
    assert candidates(rows) == {
        ("symbol", "fb"): ("Baz", "fbar", "foo_bar"),
        ("path", "x"): ("Baz", "fbar", "foo_bar"),
        ("symbol", "zz"): ("z_z", "zz"),
    }
    asked = judged_rows(rows)
    assert [(r.type, r.query, r.source) for r in asked[:3]] == [
        ("symbol", "fb", "Baz"), ("symbol", "fb", "fbar"), ("symbol", "fb", "foo_bar"),
    ]  # fmt: skip
    lists = lists_of(asked)
    assert len(lists) == 2 and lists[list_name(("Baz", "fbar", "foo_bar"))] == [
        "Baz",
        "fbar",
        "foo_bar",
    ]
    assert domain_of(asked) == JUDGED
    # the list's name is its candidates', whatever the file's order or other rows
    again = judged_rows(parse_judgments(_file("symbol\tfb\tBaz\tfbar", "symbol\tq\tfoo_bar\tBaz",
                                              "symbol\tfb\tfoo_bar\tBaz"), "y"))  # fmt: skip
    assert asked[0].repo == again[0].repo


@pytest.mark.parametrize(
    ("ranks", "agree", "none"),
    [((1, 2), True, False), ((3, 1), False, False), ((4, None), True, False),
     ((None, 2), False, False), ((None, None), False, True)],
)  # fmt: skip
def test_a_pair_agrees_when_preferred_ranks_above_other_or_other_is_not_found(ranks, agree, none):
    assert agrees(ranks) is agree and neither(ranks) is none


def _judged(text: bytes, *answers: dict[str, int | None]) -> Judged:
    """The judgments of text judged on runs whose answers give each candidate's rank."""
    rows = parse_judgments(text, "x")
    asked = judged_rows(rows)
    runs = [(f"f{i}", [(a.get(r.source), None) for r in asked]) for i, a in enumerate(answers)]
    return judge(rows, asked, runs, baseline=len(answers) > 1)


def test_agreement_leaves_contested_pairs_out_and_counts_neither_found_apart_and_in_total():
    text = _file("symbol\tab\tab_c\tabc", "symbol\tab\tabc\tab_c", "symbol\tq\tq_x\tqq",
                 "path\tq\tq_x\txq", "path\tz\tz1\tz2")  # fmt: skip
    judged = _judged(text, {"ab_c": 1, "abc": 2, "q_x": 1, "qq": 2})
    run = judged.runs[0]
    assert judged.contested == 2 and run.contested_as_row == 1  # ab_c > abc, as line 2 says
    assert (run.agreement.n, run.agreement.agree, run.agreement.neither) == (3, 2, 1)
    assert run.agreement.pct == 66.7 and run.agreement.ci == (20.8, 93.9)
    assert run.by_domain["path"].agree == 1 and run.by_domain["path"].neither == 1
    assert run.ranks[4] == (None, None)


def test_a_diff_lists_lost_and_gained_judgments_and_judges_them_with_mcnemar():
    text = _file("symbol\tab\tab_c\tabc", "symbol\tq\tq_x\tqq", "symbol\tz\tz1\tz2")
    judged = _judged(text, {"ab_c": 1, "abc": 2, "q_x": 1, "qq": 2},
                     {"ab_c": 2, "abc": 1, "q_x": 1, "qq": 2, "z1": 1})  # fmt: skip
    (diff,) = judged.diffs
    assert [c.pair.query for c in diff.lost] == ["ab"] and diff.lost[0].new == (2, 1)
    assert [c.pair.query for c in diff.gained] == ["z"] and diff.same == 1
    agreement = diff.verdict.agreement
    assert (agreement.gained, agreement.lost, agreement.p) == (1, 1, 1.0)
    assert diff.is_loss
    assert diff.verdict_line().startswith("verdict on judgments (McNemar's exact test")
    assert Judged.from_json(json.loads(json.dumps(judged.to_json()))) == judged


def test_wilson_interval_matches_its_textbook_values():
    assert wilson(0, 0) == (0.0, 0.0)
    low, high = wilson(5, 10)
    assert round(low, 4) == 0.2366 and round(high, 4) == 0.7634
    low, high = wilson(0, 10)
    assert low == 0.0 and round(high, 4) == 0.2775
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_spearman_uses_average_ranks_and_its_interval_is_fisher_z_with_bonett_wright():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486833)
    assert spearman([1, 2], [2, 1]) is None and spearman([1, 1, 1], [1, 2, 3]) is None
    low, high = spearman_interval(0.5, 10)
    assert round(low, 4) == -0.2321 and round(high, 4) == 0.8705
    assert spearman_interval(0.5, 3) is None


def test_a_set_correlates_over_the_finders_of_both_and_the_leaders_disputed_pairs_are_listed():
    correlation = set_correlation(
        "default", {"a": 70.0, "b": 40.0, "c": 30.0, "d": 10.0},
        {"a": 90.0, "b": 80.0, "c": 85.0, "e": 10.0},
    )  # fmt: skip
    assert correlation.finders == ("a", "b", "c") and correlation.rho == 0.5
    assert correlation.ci is None  # three finders: no interval
    text = _file("symbol\tab\tab_c\tabc", "symbol\tq\tq_x\tqq", "symbol\tz\tz1\tz2")
    judged = _judged(text, {"abc": 1, "ab_c": 2, "q_x": 1}, {"abc": 1, "ab_c": 2, "qq": 1})
    assert disputed_by(judged.pairs, judged.runs) == [(0, 2), (2, 2)]


HOLDOUT_PROJECTS = (
    "garybernhardt/selecta", "KDE/kcoreaddons", "kovidgoyal/kitty", "krisk/Fuse",
    "mawww/kakoune", "superhuman/command-score", "vim/vim", "wincent/command-t",
)  # fmt: skip


def test_the_committed_set_holds_out_eight_whole_projects_by_the_hash_of_owner_repo():
    rows = read_judgments(COMMITTED)
    sides = projects_by_side(rows)
    assert sides["holdout"] == HOLDOUT_PROJECTS and len(sides["tune"]) == 17
    for project in {j.project for j in rows}:  # the rule: sha256's first byte below 77
        below = hashlib.sha256(project.encode()).digest()[0] < 77
        assert project_side(project) == ("holdout" if below else "tune")
    holdout, tune = on_side(rows, "holdout"), on_side(rows, "tune")
    assert (len(holdout), len(tune)) == (137, 410) and on_side(rows, None) == rows
    assert {j.project for j in holdout} == set(HOLDOUT_PROJECTS)  # each project whole
    assert not {j.project for j in holdout} & {j.project for j in tune}

    # flx's tests import 13 Command-T cases: the same pairs sit on both sides (queries.md)
    def pair(j):
        return j.domain, j.query, j.preferred, j.other

    leaked = {pair(j) for j in holdout} & {pair(j) for j in tune}
    assert len(leaked) == 13
    assert {j.project for j in holdout if pair(j) in leaked} == {"wincent/command-t"}
    assert {j.project for j in tune if pair(j) in leaked} == {"lewang/flx"}


def test_split_selects_the_candidates_of_its_side_s_pairs_and_keeps_every_pair_to_name_sides():
    for split, pairs in (("holdout", 137), ("tune", 410)):
        selected = selected_rows(COMMITTED, {}, None, None, split)
        side = on_side(read_judgments(COMMITTED), split)
        assert len(side) == pairs and selected.rows == judged_rows(side)
        assert len(selected.judgments) == 547  # the report names both sides' projects
    with pytest.raises(RecallError, match=r"^--split: unknown split 'sealed' \(one of tune"):
        on_side(read_judgments(COMMITTED), "sealed")


def test_a_split_with_no_project_of_its_side_is_refused_in_one_line_before_anything_runs(
    tmp_path,
):
    path = ROOT / "tests" / "fixtures" / "zerobrane-judgments.tsv"  # one project, tune
    assert project_side("pkulchenko/ZeroBraneStudio") == "tune"
    proc = run_cli("--cache", str(tmp_path), "--queries", str(path), "--split", "holdout")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (
        f"recall: --split holdout: {path} holds no judgment of a project on the holdout side "
        "(a project's side is a hash of its owner/repo: docs/queries.md, the judgments set)"
    )
    assert not (tmp_path / "results").exists()
    bad = run_cli("--cache", str(tmp_path), "--queries", "judgments", "--split", "sealed")
    assert bad.returncode == 2 and "invalid choice: 'sealed'" in bad.stderr


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--repo", "gin"), "--repo: "),
        (("--type", "abbr3"), "--type: "),
        (("--bench", "1"), "--bench: "),
        (("--regress", "regress.tsv"), "--regress: "),
        (("--misses",), "--misses: "),
    ],
)
def test_flags_of_sourced_rows_are_refused_with_a_judgments_set_before_anything_runs(
    tmp_path, flags, said
):
    proc = run_cli("--cache", str(tmp_path), "--queries", "judgments", *flags)
    assert proc.returncode == 2 and proc.stdout == ""
    line = proc.stderr.strip()
    assert line.startswith(f"recall: {said}") and "judgments.tsv is a judgments set" in line
    assert not (tmp_path / "results").exists()


def test_accept_with_a_judgments_set_is_refused_in_one_line(tmp_path):
    accept = tmp_path / "accept.tsv"
    accept.write_text("repo\tquery\tsource\n")
    proc = run_cli("--cache", str(tmp_path), "--queries", "judgments", "--against",
                   str(tmp_path / "none.json"), "--accept", str(accept))  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("recall: --accept: ")


@pytest.mark.parametrize(
    "argv",
    [
        ("history", "HEAD~1..HEAD"),
        ("bisect", "--good", "HEAD~1", "--bad", "HEAD", "--query", "gin:tst"),
        ("explain", "t", "--repo", "gin"),
    ],
)
def test_history_bisect_and_explain_refuse_a_judgments_set_naming_the_command(tmp_path, argv):
    proc = run_cli(*argv, "--cache", str(tmp_path), "--queries", "judgments")
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert f"judgments.tsv: a judgments set, which recall {argv[0]} does not read" in last
    assert last.endswith("measures a finder's agreement with it")


def test_pin_refuses_a_judgments_set_which_no_corpus_derives(tmp_path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text("{}")
    proc = run_cli("pin", "gin", "https://github.com/gin-gonic/gin", "0" * 40, "--language",
                   "go", "--queries", str(COMMITTED), "--corpus", str(corpus),
                   "--cache", str(tmp_path / "cache"))  # fmt: skip
    assert proc.returncode == 2
    assert "a judgments set, which recall pin does not read" in proc.stderr
    assert corpus.read_text() == "{}"


def test_a_diff_lists_each_change_s_ranks_and_quotes_a_candidate_s_own_spaces():
    text = (HEAD + "symbol\tabc\t    a b c \t a  b  c \tjhawthorn/fzy t.c@1 x\n").encode()
    judged = _judged(text, {"    a b c ": 1, " a  b  c ": 2}, {"    a b c ": 2, " a  b  c ": 1})
    lines = render_judged_diff(judged.diffs[0], markdown=False)
    assert "Lost judgments: 1" in lines
    (row,) = [line for line in lines if line.startswith("symbol")]
    assert row.startswith("symbol  abc    '    a b c '  ' a  b  c '  ")
    assert re.search(r"  1 / 2\s+2 / 1  jhawthorn/fzy t\.c@1 x$", row)
