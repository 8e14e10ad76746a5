from recall.measure import Hit, QueryResult, RunResult, rank_by_name
from recall.queryset import QueryRow
from recall.report import diff, move_bucket

ROWS = [QueryRow("gin", f"q{i}", "abbr3", f"name{i}") for i in range(6)]


def _result(source: str, order: list[str], located: bool = True) -> QueryResult:
    hits = [Hit(n, f"{n}.go" if located else None, 7 if located else None) for n in order]
    return rank_by_name(hits, source)


def _run(label: str, results: list[QueryResult]) -> RunResult:
    return RunResult(label, "bin", 0.0, 0.0, tuple(results))


def test_move_buckets_are_new_minus_base_rank_with_found_and_lost():
    assert move_bucket(3, 1) == "up 2-4" and move_bucket(20, 1) == "up 10+"
    assert move_bucket(1, 2) == "down 1" and move_bucket(1, 9) == "down 5-9"
    assert move_bucket(None, 4) == "found" and move_bucket(4, None) == "lost"
    assert move_bucket(None, None) == "same" == move_bucket(5, 5)


def test_diff_moves_count_every_sourced_row_and_lost_rows_carry_the_source_location():
    fill = [f"x{j}" for j in range(12)]
    base = [
        _result("name0", ["name0", "x0"]),  # 1 -> 2: down 1, lost #1
        _result("name1", ["name1", *fill]),  # 1 -> missed: lost, lost #1 and top 10
        _result("name2", ["x0", "x1", "name2"]),  # 3 -> 1: up 2-4
        _result("name3", ["x0"]),  # missed -> 1: found
        _result("name4", ["name4"], located=False),  # 1 -> 2 without locations
        _result("name5", ["name5"]),  # same
    ]
    new = [
        _result("name0", ["x0", "name0"]),
        _result("name1", fill),
        _result("name2", ["name2"]),
        _result("name3", ["name3"]),
        _result("name4", ["x0", "name4"], located=False),
        _result("name5", ["name5"]),
    ]
    d = diff(ROWS, _run("base", base), _run("new", new))
    moves = {k: v for k, v in d["moves"].items() if v}
    assert moves == {"down 1": 2, "lost": 1, "up 2-4": 1, "found": 1, "same": 1}
    assert list(d["moves"]) == [
        "found", "up 10+", "up 5-9", "up 2-4", "up 1", "same",
        "down 1", "down 2-4", "down 5-9", "down 10+", "lost",
    ]  # fmt: skip
    assert sum(d["moves"].values()) == d["up"] + d["down"] + d["same"]
    by_source = {r["source"]: r for r in d["lost_first"]}
    assert (by_source["name0"]["source_file"], by_source["name0"]["source_line"]) == (
        "name0.go", 7,
    )  # fmt: skip
    assert by_source["name4"]["source_file"] is None and by_source["name4"]["source_line"] is None
    assert [r["source"] for r in d["lost_top10"]] == ["name1"]
    assert d["lost_top10"][0]["source_file"] == "name1.go"


def test_text_report_prints_a_pasteable_explain_line_under_each_lost_row():
    from recall.corpus import Pin
    from recall.report import build_report, render

    rows = [QueryRow("gin", "it's", "abbr3", "name0"), QueryRow("gin", "q1", "abbr3", "name1")]
    base = _run("base", [_result("name0", ["name0"]), _result("name1", ["name1"])])
    new = _run("new", [_result("name0", ["x", "name0"]), _result("name1", ["name1"])])
    pins = {"gin": Pin("gin", "https://example.com/gin.git", "0" * 40, "go")}
    report = build_report({}, pins, rows, [base, new], diff(rows, base, new))
    text = render(report, explain_args="--base main")
    assert "  recall explain 'it'\"'\"'s' --repo gin --base main" in text.splitlines()
    assert "recall explain 'q1'" not in text and "recall explain q1" not in text
    assert "recall explain" not in render(report, markdown=True, explain_args="--base main")
