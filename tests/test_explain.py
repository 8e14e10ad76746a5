import json
import shlex
from pathlib import Path

import git
import pytest
from conftest import (
    SUBSEQUENCE_ENGINE,
    SUBSEQUENCE_FINDER,
    commit_files,
    make_repo,
    needs_ctags,
    needs_mirror,
    run_cli,
)

from recall.analysis.model import Hit, QueryResult
from recall.inputs.queryset import QueryRow
from recall.workflows.explain import Side, pick_row, render

FINDER, ENGINE = SUBSEQUENCE_FINDER, SUBSEQUENCE_ENGINE
CORPUS = "".join(
    f"def {name}():\n    pass\n\n"
    for name in ("parse_config", "parse_config_file", "print_config", "pack_context")
)


@pytest.fixture
def setup(tmp_path: Path):
    """A finder repo whose HEAD ranks longest first, a fixture corpus pin, a query set."""
    finder = make_repo(tmp_path / "finder", {"finder.py": FINDER, "recall.toml": ENGINE})
    commit_files(finder, {"finder.py": FINDER.replace("(len(n), n)", "(-len(n), n)")}, "worse")
    upstream = make_repo(tmp_path / "upstream", {"src/conf.py": CORPUS})
    pins = {"demo": {"url": (tmp_path / "upstream").as_uri(),
                     "sha": upstream.head.commit.hexsha, "language": "python"}}  # fmt: skip
    (tmp_path / "corpus.json").write_text(json.dumps(pins))
    (tmp_path / "queries.tsv").write_text(
        "repo\tquery\ttype\tsource\ndemo\tpcfg\tabbr2\tparse_config\ndemo\tpc\thand\t\n"
    )
    return tmp_path


def _explain(where: Path, *extra: str):
    return run_cli(
        "explain", *extra, "--finder", str(where / "finder"),
        "--corpus", str(where / "corpus.json"), "--queries", str(where / "queries.tsv"),
        "--cache", str(where / "cache"), cwd=where / "finder",
    )  # fmt: skip


def _table(text: str) -> str:
    """The top-10 table of explain's output, without the environment lines after it."""
    table, sep, environment = text.partition("environment ({run}: the session's folder):\n")
    assert sep and "  LC_ALL=C.UTF-8\n" in environment
    return table


@needs_ctags
def test_explain_shows_both_sides_and_where_the_query_sets_source_stands(setup):
    proc = _explain(setup, "pcfg", "--repo", "demo", "--base", "HEAD~1")
    assert proc.returncode == 0, proc.stderr
    lines = _table(proc.stdout).splitlines()
    assert "source parse_config" in lines[0] and "type abbr2" in lines[0]
    assert lines[3].split()[0] == "base" and "candidate" in lines[3]
    # the base ranks shortest first: parse_config #1; HEAD longest first: parse_config_file
    assert lines[4].split()[:3] == ["1*", "parse_config", "-"]
    assert lines[4].split()[3:6] == ["1", "parse_config_file", "-"]
    assert lines[-1].split() == ["parse_config", "is", "#1", "parse_config", "is", "#2"]


@needs_ctags
def test_explain_json_is_the_same_as_one_object(setup):
    proc = _explain(setup, "pcfg", "--repo", "demo", "--base", "HEAD~1", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["repo"], data["query"], data["source"]) == ("demo", "pcfg", "parse_config")
    base, new = data["sides"]
    assert (base["rank"], new["rank"]) == (1, 2)
    assert [t["name"] for t in base["top"]] == ["parse_config", "print_config", "parse_config_file"]
    assert [t["name"] for t in new["top"]] == ["parse_config_file", "parse_config", "print_config"]
    assert base["top"][0] == {"rank": 1, "name": "parse_config", "file": None, "line": None}


@needs_ctags
def test_explain_source_flag_overrides_and_a_query_outside_the_set_has_no_source(setup):
    given = json.loads(_explain(setup, "pcfg", "--repo", "demo", "--source",
                                "parse_config_file", "--json").stdout)  # fmt: skip
    assert given["source"] == "parse_config_file" and given["sides"][0]["rank"] == 1
    assert len(given["sides"]) == 1
    proc = _explain(setup, "pcon", "--repo", "demo")
    assert proc.returncode == 0, proc.stderr
    assert "type hand, source -" in proc.stdout.splitlines()[0]
    assert _table(proc.stdout).splitlines()[-1] == "no source (a hand row)"


def test_explain_unknown_repo_is_one_line_exit_2(setup):
    proc = _explain(setup, "pcfg", "--repo", "nope")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"recall: {setup / 'corpus.json'}: no pin named 'nope'"
    ]


def test_pick_row_prefers_a_sourced_row_and_source_flag_keeps_its_type():
    rows = [QueryRow("r", "q", "hand", ""), QueryRow("r", "q", "abbr3", "name")]
    assert pick_row(rows, "r", "q", None) == rows[1]
    assert pick_row(rows, "r", "q", "name") == rows[1]
    assert pick_row(rows, "r", "q", "other").type == "given"
    assert pick_row(rows, "x", "q", None) == QueryRow("x", "q", "hand", "")


def test_render_marks_the_source_and_reports_errors_per_side():
    ok = Side("base", "b", 0.0, QueryResult(2, (Hit("a", "a.go", 3), Hit("src", "s.go", None))))
    bad = Side("candidate", "c", 0.0, QueryResult(None, (), "exit 3: boom"))
    data = {"query": "q x", "repo": "r", "type": "abbr3", "source": "src"}
    text = render(data, [ok, bad])
    assert text.splitlines()[0].startswith("recall explain 'q x' --repo r")
    assert " 1  a  a.go:3" in text and " 2* src  s.go" in text
    assert text.splitlines()[-1].split("   ")[0].strip() == "src is #2"
    assert text.splitlines()[-1].endswith("error: exit 3: boom")


@needs_mirror
def test_explain_on_gin_gives_locations_that_define_the_names(gin, real_cache):
    proc = run_cli(
        "explain", "tstcnt", "--repo", "gin", "--engine", "reference", "--json",
        "--cache", str(real_cache),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (side,) = json.loads(proc.stdout)["sides"]
    assert side["rank"] is not None and len(side["top"]) == 10
    for hit in side["top"]:
        text = (gin.path / hit["file"]).read_text().splitlines()[hit["line"] - 1]
        assert hit["name"] in text


@needs_ctags
@pytest.mark.slow
def test_a_lost_rows_explain_line_runs_as_printed_from_another_folder_and_marks_its_source(
    setup,
):
    # issue 32 item 4: the line dropped --finder (run elsewhere it failed: "--base HEAD~1:
    # not a commit") and --source (explain marked the query's first row's source instead)
    (setup / "queries.tsv").write_text(
        "repo\tquery\ttype\tsource\ndemo\tpcfg\tabbr3\tprint_config\n"
        "demo\tpcfg\tabbr2\tparse_config\ndemo\tpc\thand\t\n"
    )
    proc = run_cli(
        "--base", "HEAD~1", "--corpus", str(setup / "corpus.json"),
        "--queries", str(setup / "queries.tsv"), "--cache", str(setup / "cache"),
        "--allow-empty", "--json", cwd=setup / "finder",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (lost,) = json.loads(proc.stdout)["diff"]["lost_first"]
    assert (lost["source"], lost["base_rank"], lost["new_rank"]) == ("parse_config", 1, 2)
    text = run_cli(*proc.args[:-1], cwd=setup / "finder").stdout
    (line,) = [line.strip() for line in text.splitlines() if "recall explain" in line]
    assert line.startswith("recall explain pcfg --repo demo --source parse_config --type abbr2 ")
    elsewhere = setup / "elsewhere"
    elsewhere.mkdir()
    again = run_cli(*shlex.split(line)[1:], cwd=elsewhere)
    assert again.returncode == 0, again.stderr
    out = _table(again.stdout).splitlines()
    assert "type abbr2, source parse_config" in out[0]
    assert out[4].split()[:2] == ["1*", "parse_config"]  # the base's #1, marked
    assert out[-1].split() == ["parse_config", "is", "#1", "parse_config", "is", "#2"]


@needs_ctags
@pytest.mark.slow
def test_an_explain_line_leaves_out_the_suite_files_the_finder_finds_by_itself(setup):
    """Issue 44 item 10: each explain line repeated the default --corpus and --queries
    (309 to 347 characters on fzy). Suite files beside the finder's recall.toml are what
    explain --finder finds by itself: the line leaves them out and still runs as printed
    from another folder; a file named by a flag keeps its absolute path."""
    finder = setup / "finder"
    for name in ("corpus.json", "queries.tsv"):
        (finder / name).write_bytes((setup / name).read_bytes())
    args = ("--base", "HEAD~1", "--cache", str(setup / "cache"), "--allow-empty", "--no-regress")
    proc = run_cli(*args, cwd=finder)
    assert proc.returncode == 0, proc.stderr
    (line,) = [line.strip() for line in proc.stdout.splitlines() if "recall explain" in line]
    assert line == (
        f"recall explain pcfg --repo demo --source parse_config --type abbr2 --finder {finder} "
        f"--base {git.Repo(finder).commit('HEAD~1').hexsha} --cache {setup / 'cache'}"
    )
    elsewhere = setup / "elsewhere"
    elsewhere.mkdir()
    again = run_cli(*shlex.split(line)[1:], cwd=elsewhere)
    assert again.returncode == 0, again.stderr
    assert _table(again.stdout).splitlines()[-1].split() == [
        "parse_config", "is", "#1", "parse_config", "is", "#2",
    ]  # fmt: skip
    named = run_cli(*args, "--corpus", str(setup / "corpus.json"), cwd=finder)
    (line,) = [line.strip() for line in named.stdout.splitlines() if "recall explain" in line]
    assert f" --corpus {setup / 'corpus.json'}" in line and "--queries" not in line


@needs_ctags
@pytest.mark.slow
def test_explain_refuses_a_source_that_is_not_a_name_of_the_corpus_as_run_does(setup):
    """Issue 31 class 11: `explain --source` took a name the corpus lacks (and showed it as
    not found), where run refuses such a source."""
    proc = _explain(setup, "pcfg", "--repo", "demo", "--source", "parse_konfig")
    assert proc.returncode == 2 and proc.stdout == ""
    # (after the line saying the fixture pin is fetched from its url, not the mirror)
    assert proc.stderr.endswith(
        "\nrecall: --source 'parse_konfig' is not a name of demo at its pin\n"
    )
    # a foreign set's row (a file named by --queries) is explained as run counts it: its
    # source is not found on either side, never a rank of another name's
    (setup / "queries.tsv").write_text("repo\tquery\ttype\tsource\ndemo\tpcfg\tabbr2\tparse_cfg\n")
    proc = _explain(setup, "pcfg", "--repo", "demo")
    assert proc.returncode == 0, proc.stderr
    assert _table(proc.stdout).splitlines()[-1].split()[:3] == ["parse_cfg", "not", "found"]


@needs_mirror
def test_explain_of_the_path_set_through_a_names_finder_refuses_as_run_does(gin, real_cache):
    """Issue 42, also seen: `explain --queries paths` through the reference finder's name
    mode showed `.gitignore not found` where `run` refuses: one check (engine.refuse_unfit)
    serves both, before anything runs; with no --engine both take the path mode."""
    common = ("--repo", "gin", "--queries", "paths", "--cache", str(real_cache))
    names = ("--engine", "reference")
    run = run_cli(*common, "--type", "baseprefix", *names)
    explained = run_cli("explain", ".gitigno", *common, *names)
    assert (run.returncode, explained.returncode, run.stdout, explained.stdout) == (2, 2, "", "")
    assert run.stderr == explained.stderr
    (line,) = explained.stderr.splitlines()
    assert line.startswith("recall: --engine reference: the reference finder's name mode ranks")
    paths = run_cli("explain", ".gitigno", *common)
    assert paths.returncode == 0 and ".gitignore is #1" in paths.stdout
