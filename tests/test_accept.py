import pytest

from recall.accept import apply_accepted, read_accepted
from recall.errors import RecallError
from recall.model import Diff, Lost, Stale
from recall.stats import compare


def _loss(query: str, source: str) -> Lost:
    return Lost("gin", query, "abbr3", source, base_rank=1, new_rank=12, new_first="X")


DIFF = Diff(
    base="base", new="new", up=0, down=2, same=0, top10_changed=2, moves={},
    lost_first=(_loss("a", "A"), _loss("b", "B")), lost_top10=(_loss("a", "A"),),
    new_errors=(), significance=compare([1, 1], [12, 12]), candidate_errors=0,
)  # fmt: skip


def test_accepted_losses_leave_the_lost_lists_once_each_and_stale_rows_are_named():
    accepted = [("gin", "a", "A"), ("gin", "gone", "G")]
    d = apply_accepted(DIFF, accepted)
    assert [c.query for c in d.lost_first] == ["b"] and d.lost_top10 == ()
    assert [c.query for c in d.accepted or ()] == ["a"]
    assert d.stale_accepted == (Stale("gin", "gone", "G"),)


def test_an_accepted_row_must_match_repo_query_and_source():
    d = apply_accepted(DIFF, [("gin", "a", "Other")])
    assert len(d.lost_first) == 2 and d.accepted == () and len(d.stale_accepted or ()) == 1


def test_the_file_takes_an_optional_header_and_refuses_a_short_row_naming_its_line(tmp_path):
    path = tmp_path / "accepted.tsv"
    path.write_text("repo\tquery\tsource\ngin\ta\tA\r\n")
    assert read_accepted(path) == [("gin", "a", "A")]
    path.write_text("gin\ta\tA\ngin\tb\n")
    with pytest.raises(RecallError, match=r"accepted.tsv:2: expected repo<TAB>query<TAB>source"):
        read_accepted(path)
