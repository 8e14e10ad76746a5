import os
from pathlib import Path

import pytest
from helpers import META, PINS, golden_report, ranked, run_result

from recall.analysis.ceiling import RowCeiling
from recall.analysis.ceiling import summary as ceiling_summary
from recall.analysis.model import (
    AgainstCeiling,
    Margin,
    QueryResult,
    Report,
)
from recall.analysis.report import analyse, diff, move_bucket
from recall.inputs.corpus import Pin
from recall.inputs.queryset import QueryRow
from recall.render.html import render_html
from recall.render.text import render

ROWS = [QueryRow("gin", f"q{i}", "abbr3", f"name{i}") for i in range(6)]


def test_move_buckets_are_new_minus_base_rank_with_found_and_lost():
    assert move_bucket(3, 1) == "up 2-4" and move_bucket(20, 1) == "up 10+"
    assert move_bucket(1, 2) == "down 1" and move_bucket(1, 9) == "down 5-9"
    assert move_bucket(None, 4) == "found" and move_bucket(4, None) == "lost"
    assert move_bucket(None, None) == "same" == move_bucket(5, 5)


def test_diff_moves_count_every_sourced_row_and_lost_rows_carry_the_source_location():
    fill = [f"x{j}" for j in range(12)]
    base = [
        ranked("name0", ["name0", "x0"]),  # 1 -> 2: down 1, lost #1
        ranked("name1", ["name1", *fill]),  # 1 -> missed: lost, lost #1 and top 10
        ranked("name2", ["x0", "x1", "name2"]),  # 3 -> 1: up 2-4
        ranked("name3", ["x0"]),  # missed -> 1: found
        ranked("name4", ["name4"], located=False),  # 1 -> 2 without locations
        ranked("name5", ["name5"]),  # same
    ]
    new = [
        ranked("name0", ["x0", "name0"]),
        ranked("name1", fill),
        ranked("name2", ["name2"]),
        ranked("name3", ["name3"]),
        ranked("name4", ["x0", "name4"], located=False),
        ranked("name5", ["name5"]),
    ]
    d = diff(ROWS, run_result("base", base), run_result("new", new))
    moves = {k: v for k, v in d.moves.items() if v}
    assert moves == {"down 1": 2, "lost": 1, "up 2-4": 1, "found": 1, "same": 1}
    assert list(d.moves) == [
        "found", "up 10+", "up 5-9", "up 2-4", "up 1", "same",
        "down 1", "down 2-4", "down 5-9", "down 10+", "lost",
    ]  # fmt: skip
    assert sum(d.moves.values()) == d.up + d.down + d.same
    by_source = {r.source: r for r in d.lost_first}
    assert (by_source["name0"].source_file, by_source["name0"].source_line) == ("name0.go", 7)
    assert by_source["name4"].source_file is None and by_source["name4"].source_line is None
    assert [r.source for r in d.lost_top10] == ["name1"]
    assert d.lost_top10[0].source_file == "name1.go"


GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", ["report.txt", "report.md"])
def test_the_rendered_report_matches_the_committed_golden_file(name):
    text = render(golden_report(), markdown=name.endswith(".md"))
    path = GOLDEN / name
    if os.environ.get("RECALL_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"rerun with RECALL_UPDATE_GOLDEN=1 and review {path}"


def test_text_report_prints_a_pasteable_explain_line_under_each_lost_row():
    rows = [QueryRow("gin", "it's", "abbr3", "name0"), QueryRow("gin", "q1", "abbr3", "name1")]
    base = run_result("base", [ranked("name0", ["name0"]), ranked("name1", ["name1"])])
    new = run_result("new", [ranked("name0", ["x", "name0"]), ranked("name1", ["name1"])])
    pins = {"gin": Pin("gin", "https://example.com/gin.git", "0" * 40, "go")}
    report = analyse(
        META, pins, rows, [base, new], baseline=True, cases=[], case_results=[(), ()],
        regress=None, accepted=None, explain_flags=["--base main"],
        ceiling=ceiling_summary(rows, {}, {"gin": "go"}),
    )  # fmt: skip
    text = render(report)
    line = "  recall explain 'it'\"'\"'s' --repo gin --source name0 --type abbr3 --base main"
    assert line in text.splitlines()
    assert "recall explain 'q1'" not in text and "recall explain q1" not in text
    assert "recall explain" not in render(report, markdown=True)


def _against(hits: dict[str, int], chances: list[RowCeiling], left_out: int = 0) -> Report:
    """A report of finders that hit the first hits[label] of ten abbr3 rows of gin, with a
    ceiling of `chances` per row; the last `left_out` rows have no ceiling."""
    rows = [QueryRow("gin", f"q{i}", "abbr3", f"name{i}") for i in range(10)]
    runs = [
        run_result(label, [ranked(r.source, [r.source] if i < hit else ["x"])
                     for i, r in enumerate(rows)])
        for label, hit in hits.items()
    ]  # fmt: skip
    per_row = dict(zip(rows[: len(rows) - left_out], chances, strict=False))
    return analyse(
        META, PINS, rows, runs, baseline=False, cases=[], case_results=[() for _ in runs],
        regress=None, accepted=None, explain_flags=[],
        ceiling=ceiling_summary(rows, per_row, {"gin": "go"}),
    )  # fmt: skip


def test_a_finder_above_the_ceiling_within_its_range_is_not_flagged_and_beyond_it_is():
    # ten rows at chance 1/2 each: the count is Binomial(10, 1/2), its 95% range [2, 8]
    report = _against({"within": 8, "beyond": 9}, [RowCeiling(2, 0.5, 1.0)] * 10)
    c = report.ceiling.counts
    assert (c.first, c.first_ci, c.first_se) == (5.0, (2, 8), 1.58)
    within, beyond = c.finders
    assert (within.first, within.first_above) == (8, False)
    assert (beyond.first, beyond.first_above) == (9, True)
    assert report.ceiling.by_type["abbr3"].against("beyond") == beyond
    text = render(report)
    lines = {line.split()[0]: line.split() for line in text.splitlines() if line}
    assert lines["beyond"][2:4] == ["9", "(90.0%)^"] and lines["within"][2:4] == ["8", "(80.0%)"]
    assert lines["ceiling"][2:5] == ["5.0", "(50.0%)", "[2-8]"]
    assert "^ above the ceiling's 95% range on the same rows" in text
    assert "90.0^ / 90.0 / 90.0 / 0.900" in text  # by type, repo and language too
    calm = render(_against({"within": 8}, [RowCeiling(2, 0.5, 1.0)] * 10))
    assert "^" not in calm
    page = render_html(report)
    assert "9 (90.0%)^" in page and "8 (80.0%)^" not in page


def test_rows_without_a_ceiling_are_named_and_left_out_of_both_sides():
    # 8 rows certain for the model (k = 1), 2 it cannot model: the finder that hits the
    # first 9 rows has 8 of the ceiling's 8, not 9 of 8
    report = _against({"finder": 9}, [RowCeiling(1, 1.0, 1.0)] * 8, left_out=2)
    c = report.ceiling.counts
    assert (c.n, c.first, c.first_ci) == (8, 8.0, (8, 8))
    assert report.ceiling.counts.against("finder") == AgainstCeiling("finder", 8, 8, False, False)
    assert [r.query for r in report.ceiling.left_out.first] == ["q8", "q9"]
    assert report.runs[0].counts.n == 10 and report.runs[0].counts.first == 9  # its own: all
    text = render(report)
    assert "points below it on its 8 rows (#1 / top 10): finder 0.0 / 0.0" in text
    assert "Left out of the ceiling: 2 rows the recipes cannot make" in text
    assert report.to_json()["ceiling"]["left_out"] == {
        "count": 2,
        "first": [{"repo": "gin", "query": f"q{i}", "type": "abbr3", "source": f"name{i}"}
                  for i in (8, 9)],
    }  # fmt: skip
    assert "Left out of the ceiling: 2" in render_html(report)


def test_explain_lines_name_each_rows_source_and_a_row_lost_twice_is_explained_once():
    # issue 32 item 4: two rows of one query (each its own source), and a source that
    # falls from #1 out of the top 10 (in both lost lists)
    rows = [QueryRow("gin", "q", "abbr3", "name0"), QueryRow("gin", "q", "abbr2", "name1")]
    fill = [f"x{j}" for j in range(12)]
    base = run_result("base", [ranked("name0", ["name0", "name1"]), ranked("name1", ["name1"])])
    new = run_result("new", [ranked("name0", [*fill, "name0"]), ranked("name1", ["x", "name1"])])
    pins = {"gin": Pin("gin", "https://example.com/gin.git", "0" * 40, "go")}
    report = analyse(
        META, pins, rows, [base, new], baseline=True, cases=[], case_results=[(), ()],
        regress=None, accepted=None, explain_flags=["--finder /src/f --base main"],
        ceiling=ceiling_summary(rows, {}, {"gin": "go"}),
    )  # fmt: skip
    lines = [line for line in render(report).splitlines() if "recall explain" in line]
    assert lines == [
        "  recall explain q --repo gin --source name0 --type abbr3 --finder /src/f --base main",
        "  recall explain q --repo gin --source name1 --type abbr2 --finder /src/f --base main",
    ]


def test_gains_are_listed_beside_losses_in_text_markdown_and_json():
    fill = [f"x{j}" for j in range(12)]
    base = [
        ranked("name0", ["x0", "name0"]),  # 2 -> 1: gained #1
        ranked("name1", [*fill, "name1"]),  # 13 -> 1: gained #1, entered the top 10
        ranked("name2", [*fill, "name2"]),  # 13 -> 4: entered the top 10
        ranked("name3", ["name3"]),  # 1 -> 2: lost #1
        ranked("name4", ["name4"]),
        ranked("name5", ["name5"]),
    ]
    new = [
        ranked("name0", ["name0"]),
        ranked("name1", ["name1"]),
        ranked("name2", ["x0", "x1", "x2", "name2"]),
        ranked("name3", ["x0", "name3"]),
        ranked("name4", ["name4"]),
        ranked("name5", ["name5"]),
    ]
    d = diff(ROWS, run_result("base", base), run_result("new", new))
    assert [(g.source, g.base_rank, g.new_rank) for g in d.gained_first] == [
        ("name0", 2, 1), ("name1", 13, 1),
    ]  # fmt: skip
    assert [(g.source, g.base_rank, g.new_rank, g.new_first) for g in d.gained_top10] == [
        ("name1", 13, 1, "name1"), ("name2", 13, 4, "x0"),
    ]  # fmt: skip
    assert (d.gained_first[0].source_file, d.gained_first[0].source_line) == ("name0.go", 7)
    data = d.to_json()
    assert [g["source"] for g in data["gained_first"]] == ["name0", "name1"]
    assert set(data["gained_top10"][0]) == set(data["lost_first"][0])
    assert data["verdict"]["first"] == {
        "outcome": "no significant change", "gained": 2, "lost": 1, "p": 1.0,
    }  # fmt: skip
    assert data["verdict"]["test"] == "mcnemar_exact" and data["verdict"]["alpha"] == 0.05
    report = analyse(
        META, {"gin": PINS["gin"]}, ROWS, [run_result("base", base), run_result("new", new)],
        baseline=True, cases=[], case_results=[(), ()], regress=None, accepted=None,
        explain_flags=[None],
        ceiling=ceiling_summary(ROWS, {}, {"gin": "go"}),
    )  # fmt: skip
    text = render(report).splitlines()
    at = text.index("Gained #1: 2")
    assert text[at + 1].split() == ["repo", "query", "type", "source", "old", "new"]
    assert text[at + 2].split() == ["gin", "q0", "abbr3", "name0", "2", "1"]
    at = text.index("Entered the top 10: 2")
    assert text[at + 3].split() == ["gin", "q2", "abbr3", "name2", "13", "4", "x0"]
    assert "## Gained #1: 2" in render(report, markdown=True).splitlines()


def test_with_several_candidates_a_summary_comes_first_and_the_lists_are_capped():
    rows = [QueryRow("gin", f"q{i}", "abbr3", f"name{i}") for i in range(30)]
    base = run_result("base", [ranked(r.source, [r.source]) for r in rows])
    worse = run_result("worse", [ranked(r.source, ["x", r.source]) for r in rows])
    same = run_result("same", [ranked(r.source, [r.source]) for r in rows])
    report = analyse(
        META, {"gin": PINS["gin"]}, rows, [base, worse, same], baseline=True, cases=[],
        case_results=[(), (), ()], regress=None, accepted=None, explain_flags=["", ""],
        ceiling=ceiling_summary(rows, {}, {"gin": "go"}),
    )  # fmt: skip
    text = render(report).splitlines()
    assert text[0] == "Summary: 2 candidates against base"
    cells = [[cell for cell in line.split("  ") if cell] for line in text[1:5]]
    assert [c.strip() for c in cells[0]] == [
        "binary", "#1", "top 10", "found", "verdict #1", "verdict top 10",
    ]  # fmt: skip
    assert [c.strip() for c in cells[1]] == ["base", "100.0%", "100.0%", "100.0%", "-", "-"]
    assert [c.strip() for c in cells[2]] == [
        "worse", "0.0%", "100.0%", "100.0%", "regressed (p=1.9e-09)",
        "no significant change (p=1)",
    ]  # fmt: skip
    assert cells[3][-1].strip() == "no significant change (p=1)"
    at = text.index("Lost #1: 30")
    assert text[at + 22] == "… and 10 more: see --json or --html"
    explains = [line for line in text if line.startswith("  recall explain")]
    assert len(explains) == 20
    assert len(render(report, markdown=True).splitlines()) < 120
    assert len(report.to_json()["diffs"][0]["lost_first"]) == 30


def test_the_html_page_has_every_diff_whole_with_its_verdict_and_gains():
    rows = [QueryRow("gin", f"q{i}", "abbr3", f"name{i}") for i in range(30)]
    base = run_result("base", [ranked(r.source, ["x", r.source]) for r in rows])
    better = run_result("better", [ranked(r.source, [r.source]) for r in rows])
    worse = run_result("worse", [ranked(r.source, ["x", "y", r.source]) for r in rows])
    report = analyse(
        META, {"gin": PINS["gin"]}, rows, [base, better, worse], baseline=True, cases=[],
        case_results=[(), (), ()], regress=None, accepted=None, explain_flags=["", ""],
        ceiling=ceiling_summary(rows, {}, {"gin": "go"}),
    )  # fmt: skip
    page = render_html(report)
    assert "<h2>Verdicts against the baseline</h2>" in page
    assert '<td class="text">improved (p=1.9e-09)</td>' in page
    assert (
        "<h2>Diff: better against base</h2>" in page and "<h2>Diff: worse against base</h2>" in page
    )
    assert "<h3>Gained #1: 30</h3>" in page and page.count("<td>q29</td>") == 0
    assert page.count('<td class="text">q29</td>') == 1  # the gain, whole: no cap in HTML
    assert "verdict (McNemar&#x27;s exact test, two-sided, alpha 0.05): #1 improved" in page


def test_a_holdout_report_names_its_fresh_and_seen_corpora_and_the_first_finders_margins():
    """issue 43: --split holdout names its corpora, and on the fresh ones apart from the
    seen ones the first finder's #1 against the best other's, paired by row."""
    pins = {
        "okio": Pin("okio", "https://h/okio.git", "a" * 40, "kotlin", "holdout"),
        "fmt": Pin("fmt", "https://h/fmt.git", "b" * 40, "c++", "seen"),
    }
    rows = [QueryRow("okio", f"q{i}", "abbr3", f"name{i}") for i in range(10)]
    rows += [QueryRow("fmt", f"f{i}", "abbr3", f"fmt{i}") for i in range(4)]
    hit = {  # which rows each finder puts #1
        "reference": set(range(8)) | {10, 11},
        "fzf": set(range(2, 7)) | {10, 11, 12},
        "fzy": set(range(6)) | {9},
    }
    runs = [
        run_result(label, [ranked(r.source, [r.source] if i in hits else ["x"])
                           for i, r in enumerate(rows)])
        for label, hits in hit.items()
    ]  # fmt: skip
    report = analyse(
        META, pins, rows, runs, baseline=False, cases=[], case_results=[() for _ in runs],
        regress=None, accepted=None, explain_flags=[],
        ceiling=ceiling_summary(rows, {}, {"okio": "kotlin", "fmt": "c++"}), split="holdout",
    )  # fmt: skip
    fresh, seen = report.holdout.fresh, report.holdout.seen
    assert (fresh.corpora, fresh.n, seen.corpora, seen.n) == (("okio",), 10, ("fmt",), 4)
    # fresh: reference 8 of 10, fzy 7 (the best other), fzf 5; the rows differ on 6, 7
    # (reference's) and 9 (fzy's): differences 1, 1, -1 and seven 0s, mean 0.1, sample
    # variance 2.9 / 9, SE sqrt(0.322 / 10) = 0.180
    assert fresh.margin == Margin("reference", "fzy", 10, 80.0, 70.0, 10.0, 18.0)
    assert seen.margin == Margin("reference", "fzf", 4, 50.0, 75.0, -25.0, 25.0)
    line = (
        "fresh holdout: okio (10 sourced rows); #1 reference 80.0% against fzy 70.0%, "
        "margin +10.0 points (paired SE 18.0)"
    )
    assert line in render(report).splitlines()
    assert f"- {line}" in render(report, markdown=True).splitlines()
    assert f"<p>{line}</p>" in render_html(report)
    assert report.to_json()["holdout"]["seen"]["margin"]["points"] == -25.0
    alone = analyse(
        META, pins, rows, runs[:1], baseline=False, cases=[], case_results=[()],
        regress=None, accepted=None, explain_flags=[],
        ceiling=ceiling_summary(rows, {}, {"okio": "kotlin", "fmt": "c++"}), split="holdout",
    )  # fmt: skip
    assert alone.holdout.fresh.margin is None
    assert "seen holdout: fmt (4 sourced rows)" in render(alone).splitlines()
    whole = analyse(
        META, pins, rows, runs, baseline=False, cases=[], case_results=[() for _ in runs],
        regress=None, accepted=None, explain_flags=[],
        ceiling=ceiling_summary(rows, {}, {"okio": "kotlin", "fmt": "c++"}),
    )  # fmt: skip
    assert whole.holdout is None and "holdout" not in whole.to_json()
    assert "holdout:" not in render(whole)


def test_an_error_many_queries_got_is_said_once_with_those_queries():
    """A function that returns a str for some queries fails each of them the same way:
    the text, Markdown and HTML reports say the error once and list its queries; JSON
    keeps a row per query."""
    shape = "finder error: TypeError: the function returned a value of type str, not a list"
    results = [
        QueryResult(None, (), shape), ranked("name1", ["name1"]), QueryResult(None, (), shape),
        QueryResult(None, (), "exit 3: it fell over"), QueryResult(None, (), shape),
        ranked("name5", ["name5"]),
    ]  # fmt: skip
    report = analyse(
        META, PINS, ROWS, [run_result("candidate", results)], baseline=False, cases=[],
        case_results=[()], regress=None, accepted=None, explain_flags=[],
        ceiling=ceiling_summary(ROWS, {}, {"gin": "go"}),
    )  # fmt: skip
    text = render(report)
    assert text.count("returned a value of type str") == 1
    assert "Errors in candidate: 4 queries\n" in text
    assert f"  3 queries: {shape}\n    gin\t'q0'\n    gin\t'q2'\n    gin\t'q4'\n" in text
    assert "  gin\t'q3': exit 3: it fell over\n" in text
    assert render(report, markdown=True).count("returned a value of type str") == 1
    page = render_html(report)
    assert page.count("returned a value of type str") == 1
    assert "gin: q0 (abbr3); gin: q2 (abbr3); gin: q4 (abbr3)" in page
    assert [row["query"] for row in report.to_json()["runs"][0]["error_rows"]] == [
        "q0", "q2", "q3", "q4",
    ]  # fmt: skip
