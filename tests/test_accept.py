import json

import pytest
from conftest import (
    ROOT,
    SUBSEQUENCE_ENGINE,
    SUBSEQUENCE_FINDER,
    make_repo,
    needs_ctags,
    needs_mirror,
    run_cli,
)

from recall.analysis.accept import apply_accepted, in_selection, read_accepted
from recall.analysis.model import Diff, Lost, Stale
from recall.analysis.stats import compare
from recall.errors import RecallError
from recall.inputs.queryset import QueryRow


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


def test_an_accepted_row_outside_the_selection_is_neither_accepted_nor_stale():
    ran = [QueryRow("gin", "a", "abbr3", "A"), QueryRow("gin", "b", "abbr3", "B")]
    every = [*ran, QueryRow("gin", "c", "abbr2", "C"), QueryRow("tokio", "t", "abbr3", "T")]
    accepted = [("gin", "a", "A"), ("gin", "c", "C"), ("tokio", "t", "T"), ("gin", "gone", "G")]
    assert in_selection(accepted, every, ran) == [("gin", "a", "A"), ("gin", "gone", "G")]


@needs_ctags
@needs_mirror
def test_repo_and_type_selection_lists_only_its_own_accepted_rows_as_stale(
    gin, real_cache, tmp_path
):
    """Issue 31 class 11: `--repo gin --accept docs/accepted.tsv` listed every other repo's
    accepted rows as "stale (no longer lost)"; a row the --type left out is not stale either.
    A gin row that no row of the query set holds any more is."""
    make_repo(
        tmp_path / "finder", {"finder.py": SUBSEQUENCE_FINDER, "recall.toml": SUBSEQUENCE_ENGINE}
    )
    queries = tmp_path / "queries.tsv"
    queries.write_text(
        "repo\tquery\ttype\tsource\ngin\tcontxt\tabbr3\tContext\ngin\tcoxt\tabbr2\tContext\n"
        "tokio\tspwn\tabbr3\tspawn\n"
    )
    accepted = tmp_path / "accepted.tsv"
    accepted.write_text("gin\tcoxt\tContext\ntokio\tspwn\tspawn\ngin\tzz\tZz\n")
    proc = run_cli(
        "--finder", str(tmp_path / "finder"), "--corpus", str(ROOT / "corpus.json"),
        "--queries", str(queries), "--cache", str(real_cache), "--repo", "gin",
        "--type", "abbr3", "--base", "HEAD",
        "--same-program-ok", "--accept", str(accepted), "--json",
        cwd=tmp_path / "finder",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    diff = json.loads(proc.stdout)["diff"]
    assert diff["stale_accepted"] == [{"repo": "gin", "query": "zz", "source": "Zz"}]
