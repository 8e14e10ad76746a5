"""A preset's columns on the results pages: its [[results]] tables, read and checked with
the preset, and every page's list of finders read from them in their order."""

import re

import pytest
from conftest import ROOT

from recall.errors import RecallError
from recall.finders.engine import columns, load_preset, parse_engine, preset_names
from recall.finders.registry import Column, ordered
from recall.inputs.queryset import JUDGED, NAMES, PATHS
from recall.workflows.results_page import page_columns

ENGINE = '[engine]\nbin = ["fzf"]\nquery = ["{bin}", "--filter={query}"]\n'
COLUMN = 'domain = "names"\norder = 5\nlabel = "x"\nnote = "y"\n'


def _preset(results: str) -> str:
    return ENGINE + "\n[[results]]\n" + results


@pytest.mark.parametrize(
    ("results", "message"),
    [
        (COLUMN + "colour = 1\n", "[[results]] unknown key 'colour'"),
        ('domain = "names"\norder = 5\nlabel = "x"\n', "[[results]] missing key 'note'"),
        (COLUMN.replace('"names"', '"files"'), "[[results]] domain must be one of names, paths"),
        (COLUMN.replace("5", '"5"'), "[[results]] order must be an integer"),
        (COLUMN.replace('"x"', '""'), "[[results]] label must be a non-empty string"),
        (COLUMN + 'npm = "fuse.js"\n', "[[results]] npm must be a list of package names"),
        (COLUMN + "timeout = 0\n", "[[results]] timeout must be a number of seconds above 0"),
        (COLUMN + 'allow_empty = "yes"\n', "[[results]] allow_empty must be true or false"),
        (
            COLUMN + 'pypi = "a"\ndebian = "b"\n',
            "[[results]] pypi and debian: at most one names the version",
        ),
    ],
)
def test_a_preset_with_a_bad_results_key_is_refused_naming_the_file_and_the_key(results, message):
    with pytest.raises(RecallError) as caught:
        parse_engine(_preset(results).encode(), "preset:x")
    assert str(caught.value).startswith(f"preset:x: {message}")


def test_the_second_of_two_columns_is_named_by_its_place():
    text = _preset(COLUMN) + "\n[[results]]\n" + COLUMN + "colour = 1\n"
    with pytest.raises(RecallError, match=re.escape("preset:x: [[results]] 2 unknown key")):
        parse_engine(text.encode(), "preset:x")


def test_a_bad_results_key_in_an_engine_file_stops_the_cli_with_exit_2(tmp_path):
    """A preset copied as a finder's recall.toml (recall init) keeps its [[results]]
    tables, checked as the preset's; the results pages read the presets' alone."""
    from conftest import run_cli

    engine = tmp_path / "recall.toml"
    engine.write_text(_preset(COLUMN + "colour = 1\n"))
    proc = run_cli("--engine", str(engine), "--repo", "gin", "--type", "abbr3")
    assert proc.returncode == 2
    assert proc.stderr == f"recall: {engine}: [[results]] unknown key 'colour'\n"


def test_a_column_says_what_its_table_says():
    text = _preset(COLUMN + 'npm = ["a", "b"]\nallow_empty = true\ntimeout = 600\n')
    (column,) = parse_engine(text.encode(), "preset:x").columns
    assert column == Column(
        "x", NAMES, 5, "x", "y", npm=("a", "b"), allow_empty=True, timeout=600.0
    )


def test_a_page_lists_its_columns_by_order_not_by_file_name():
    late = parse_engine(_preset(COLUMN).encode(), "preset:a").columns
    early = COLUMN.replace("5", "1").replace('"x"', '"w"')
    early_columns = parse_engine(_preset(early).encode(), "preset:b").columns
    other = parse_engine(_preset(COLUMN.replace("names", "paths")).encode(), "preset:c").columns
    assert [c.preset for c in ordered([*late, *early_columns, *other], NAMES)] == ["b", "a"]
    assert [c.preset for c in ordered([*late, *early_columns, *other], PATHS)] == ["c"]


def test_two_columns_of_one_order_or_one_label_on_a_page_are_refused_naming_both():
    a = parse_engine(_preset(COLUMN).encode(), "preset:a").columns
    b = parse_engine(_preset(COLUMN).encode(), "preset:b").columns
    with pytest.raises(RecallError, match="preset:b: \\[\\[results\\]\\] order 5 is also preset:a"):
        ordered([*a, *b], NAMES)
    c = parse_engine(_preset(COLUMN.replace("5", "6")).encode(), "preset:c").columns
    with pytest.raises(RecallError, match="label 'x' is also preset:a's on the names page"):
        ordered([*a, *c], NAMES)


def _finders_table(page: str) -> list[str]:
    """The labels of a committed results page's "## Finders" table, in its order."""
    table = page.split("## Finders\n")[1].strip().split("\n\n")[0]
    return [line.split(" | ")[0].removeprefix("| ") for line in table.splitlines()[2:]]


def test_each_pages_list_is_the_presets_columns_in_the_order_of_the_committed_pages():
    names = [c.label for c in page_columns(NAMES)]
    assert names == _finders_table((ROOT / "docs" / "RESULTS.md").read_text())
    assert names == _finders_table((ROOT / "docs" / "RESULTS-typed.md").read_text())
    paths = [c.label for c in page_columns(PATHS)]
    assert paths == _finders_table((ROOT / "docs" / "RESULTS-paths.md").read_text())
    every = [c for name in preset_names() for c in load_preset(name).columns]
    assert sorted(c.label for c in every if c.domain == NAMES) == sorted(names)
    assert {c.preset for c in every} == set(preset_names()) - {"rq"}  # rq: no peer installed


def test_the_judgments_page_lists_names_columns_then_paths_columns_in_path_mode():
    labels = [c.label for c in page_columns(JUDGED)]
    readers = [c.label for c in columns(NAMES) if c.label in labels]
    assert labels == readers + [f"{c.label} (path mode)" for c in columns(PATHS)]
