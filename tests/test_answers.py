"""A JSON answer is ranked in one pass that makes Hits of the top 10 only: it must rank
exactly as rank_by_name does over every row made a Hit, and still refuse a bad row
anywhere in the list; an answer that names nothing in the corpus is flagged."""

import pytest

from recall.analysis.model import Hit
from recall.finders.protocol import rank_by_name, rank_json


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


CORPUS = frozenset({"Context", "Copy", "New"})


@pytest.mark.parametrize(
    ("names", "off_corpus"),
    [
        (["1.895000", "1.200000"], True),  # fzy --show-scores read as lines: scores, no names
        (["0.9", "Context"], False),  # one name of the corpus is enough
        ([f"n{k}" for k in range(40)] + ["Copy"], False),  # found past the top 10
        ([], False),  # an empty answer is empty, not off the corpus
    ],
)
def test_an_answer_of_which_no_row_is_a_corpus_name_is_off_corpus(names, off_corpus):
    rows = _rows(names)
    assert rank_json(rows, "Copy", CORPUS).off_corpus is off_corpus
    assert rank_by_name(_as_hits(rows), "Copy", CORPUS).off_corpus is off_corpus


def test_a_corpus_name_after_the_source_and_a_full_top_10_still_counts():
    """The search for a corpus name goes on past the point where ranking stops."""
    rows = _rows(["zz", *(f"n{k}" for k in range(20)), "New"])
    result = rank_json(rows, "zz", CORPUS)
    assert (result.rank, result.off_corpus) == (1, False)
    assert rank_by_name(_as_hits(rows), "zz", CORPUS) == result


def test_without_the_corpus_names_nothing_is_flagged():
    assert not rank_json(_rows(["1.0"]), "Copy").off_corpus
