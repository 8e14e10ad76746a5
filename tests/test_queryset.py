import json
import re

import pytest
from conftest import ROOT, needs_mirror, run_cli

from recall.errors import RecallError
from recall.inputs.corpus import load_pins
from recall.inputs.queryset import (
    QueryRow,
    format_queries,
    parse_queries,
    read_queries,
    select,
    split_repos,
)
from recall.inputs.sides import HOLDOUT, SEEN, TUNE

HEAD = b"repo\tquery\ttype\tsource\n"
REPOS = {"gin"}


def parse(data: bytes):
    return parse_queries(data, "q.tsv", REPOS)


def test_round_trip():
    rows = [QueryRow("gin", "ctxjs", "abbr3", "ContextJSON"), QueryRow("gin", "a b", "hand", "")]
    assert parse(format_queries(rows)) == rows


def test_bom_and_crlf_are_accepted_cleanly():
    data = b"\xef\xbb\xbf" + HEAD.replace(b"\n", b"\r\n") + b"gin\tq\tabbr3\tName\r\n"
    assert parse(data) == [QueryRow("gin", "q", "abbr3", "Name")]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"gin\tq\tabbr3\n", "q.tsv:2: expected 4"),
        (b"gin\tq\tabbr3\tN\tx\n", "q.tsv:2: expected 4"),
        (b"rails\tq\tabbr3\tN\n", "q.tsv:2: unknown repo 'rails'"),
        (b"gin\tq\tweird\tN\n", "q.tsv:2: unknown type 'weird'"),
        (b"gin\t\tabbr3\tN\n", "q.tsv:2: empty query"),
        (b"gin\tq\tabbr3\tN\ngin\tq\tabbr3\tN\n", "q.tsv:3: duplicate of line 2"),
        (b"gin\tq\xff\tabbr3\tN\n", "q.tsv:2: not valid UTF-8"),
        (b"gin\tq\thand\tN\n", "q.tsv:2: a hand row has no source"),
    ],
)
def test_bad_rows_name_the_file_and_line(body, message):
    with pytest.raises(RecallError, match=re.escape(message)):
        parse(HEAD + body)


def test_wrong_header_is_refused():
    with pytest.raises(RecallError, match=re.escape("q.tsv:1: header")):
        parse(b"repo\tquery\tsource\n")


FOREIGN = (
    "repo\tquery\ttype\tsource\n"
    "gin\ttescongetintsli\tabbr3\tTestContextGetInt16Slice\n"
    "gin\tskcaac\tabbr2\tskip_#{callback}_action\n"  # a define_method string, as in rq's file
    "gin\ttstcnt\tconsonants\tTestContextGetInt16Slice\n"
    "gin\tcntxt\tconsonants\tContextNoSuchName\n"
)


@needs_mirror
def test_a_foreign_query_file_runs_its_unknown_sources_as_not_found_and_lists_them(
    real_cache, gin, tmp_path
):
    # issue 32 item 5: a file with rows whose sources ctags does not list was refused whole
    path = tmp_path / "rq-queries.tsv"
    path.write_text(FOREIGN)
    proc = run_cli(
        "--cache", str(real_cache), "--queries", str(path), "--engine", "reference",
        "--no-regress", "--misses", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["unknown_sources"] == {
        "count": 2,
        "first": [
            {"repo": "gin", "query": "skcaac", "type": "abbr2",
             "source": "skip_#{callback}_action", "line": 3},
            {"repo": "gin", "query": "cntxt", "type": "consonants",
             "source": "ContextNoSuchName", "line": 5},
        ],
    }  # fmt: skip
    (run,) = report["runs"]
    assert run["n"] == 4 and run["found"] == 2
    missed = {m["source"]: m["rank"] for m in report["misses"]}
    assert missed["skip_#{callback}_action"] is None and missed["ContextNoSuchName"] is None
    assert report["ceiling"]["n"] == 4  # the ceiling covers the rows run; these at chance 0
    assert report["ceiling"]["first"] <= 2
    text = run_cli(*proc.args[:-1]).stdout
    lines = text.splitlines()
    at = lines.index(
        "Unknown sources: 2 rows whose source is not a name of their corpus at its pin, "
        "counted as not found (by every finder and by the ceiling)"
    )
    assert lines[at + 2].split() == ["3", "gin", "skcaac", "abbr2", "skip_#{callback}_action"]
    assert "candidate not comparable" not in text

    strict = run_cli(*proc.args, "--strict-queries")
    assert strict.returncode == 2 and strict.stdout == ""
    assert strict.stderr.strip() == (
        f"recall: {path}:3: source 'skip_#{{callback}}_action' is not a name of gin at its pin"
    )


# The split is by whole corpora, each pin's `split` in corpus.json (docs/queries.md).
SIDES = {"gin": TUNE, "rails": HOLDOUT, "fmt": SEEN}


def test_a_split_runs_whole_corpora_by_their_pins_side_the_holdout_fresh_and_seen():
    assert split_repos(SIDES, TUNE) == {"gin"}
    assert split_repos(SIDES, HOLDOUT) == {"rails", "fmt"}
    assert split_repos(SIDES, None) is None
    with pytest.raises(
        RecallError, match="--split: unknown split 'seen' \\(one of tune, holdout\\)"
    ):
        split_repos(SIDES, SEEN)


def test_a_selection_keeps_every_row_of_a_corpus_on_its_side_hand_rows_too_in_file_order():
    rows = [
        QueryRow("gin", "ctx", "hand", ""),
        QueryRow("rails", "hasma", "abbr2", "has_many"),
        QueryRow("gin", "ctxjs", "abbr3", "ContextJSON"),
        QueryRow("fmt", "frmt", "consonants", "format"),
    ]
    assert select(rows, None, None, split_repos(SIDES, HOLDOUT)) == [rows[1], rows[3]]
    assert select(rows, None, None, split_repos(SIDES, TUNE)) == [rows[0], rows[2]]
    assert select(rows, None, None) == rows
    assert select(rows, ["rails"], ["abbr2"], split_repos(SIDES, HOLDOUT)) == [rows[1]]


def test_the_committed_pins_tune_the_six_first_corpora_and_hold_out_the_others():
    """issue 43: the four corpora pinned with issue 34 were read while fixing unseen-code
    losses (issue 35), so they are the seen holdout; okio and telescope, pinned held out
    from the start, are the fresh one."""
    sides = {name: pin.split for name, pin in load_pins(ROOT / "corpus.json").items()}
    assert sides == {
        "rails": TUNE, "tokio": TUNE, "ripgrep": TUNE, "gin": TUNE, "pytest": TUNE,
        "vue": TUNE, "redis": SEEN, "commons-lang": SEEN, "jquery": SEEN, "fmt": SEEN,
        "okio": HOLDOUT, "telescope": HOLDOUT,
    }  # fmt: skip


@pytest.mark.parametrize("name", ["queries.tsv", "typed.tsv", "paths.tsv"])
def test_every_row_of_a_committed_set_is_on_its_corpus_side_and_both_sides_hold_rows(name):
    pins = load_pins(ROOT / "corpus.json")
    sides = {repo: pin.split for repo, pin in pins.items()}
    rows = read_queries(ROOT / name, set(pins))
    tune = select(rows, None, None, split_repos(sides, TUNE))
    holdout = select(rows, None, None, split_repos(sides, HOLDOUT))
    assert len(tune) + len(holdout) == len(rows) and not set(tune) & set(holdout)
    assert {r.repo for r in holdout} == {repo for repo, side in sides.items() if side != TUNE}
    assert {r.repo for r in tune} == {repo for repo, side in sides.items() if side == TUNE}
