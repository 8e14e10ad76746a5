"""A JSON answer is ranked in one pass that makes Hits of the top 10 only: it must rank
exactly as rank_by_name does over every row made a Hit, and still refuse a bad row
anywhere in the list."""

import pytest

from recall.answers import rank_by_name, rank_json
from recall.model import Hit


def _rows(names: list[str]) -> list[dict]:
    return [{"name": n, "file": f"f{k}.py", "line": k} for k, n in enumerate(names)]


def _as_hits(rows: list[dict]) -> list[Hit]:
    return [Hit(r["name"], r.get("file"), r.get("line")) for r in rows]


@pytest.mark.parametrize(
    ("names", "source"),
    [
        (["a", "a", "b", "c"], "c"),  # a duplicate before the source
        ([f"n{k}" for k in range(30)], "n3"),  # found early, the top 10 filled after it
        ([f"n{k}" for k in range(30)], "n25"),  # found beyond the top 10
        ([f"n{k % 12}" for k in range(40)], "n11"),  # repeats all through the list
        (["x", "y"], "zzz"),  # not found
        ([], "a"),
    ],
)
def test_rank_json_ranks_as_rank_by_name_over_every_row(names, source):
    rows = _rows(names)
    assert rank_json(rows, source) == rank_by_name(_as_hits(rows), source)


def test_a_row_whose_file_or_line_has_the_wrong_type_keeps_its_name_only():
    rows = [{"name": "a", "file": 3, "line": True}, {"name": "b", "line": 2.5}]
    assert rank_json(rows, "b").top == (Hit("a", None, None), Hit("b", None, None))


@pytest.mark.parametrize("bad", [{"name": 7}, {"file": "x"}, "a", None])
def test_a_bad_row_after_the_source_and_a_full_top_10_is_still_an_error(bad):
    rows = [*_rows([f"n{k}" for k in range(20)]), bad]
    with pytest.raises(ValueError):
        rank_json(rows, "n0")


def test_an_answer_that_is_not_a_list_is_an_error():
    with pytest.raises(ValueError):
        rank_json({"name": "a"}, "a")
