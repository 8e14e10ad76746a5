"""recall/analysis/judgments_report.py's report of a judgments run, held end to end: `recall
--queries judgments` through the real CLI and real finders, the reference finder, fzf, fzy
and fuzzysort over the committed set (fzf's agreement checked against fzf run by hand on
each query's candidates), a file of judgments the tests did not write, a self-diff with no
change, a weaker reference finder that loses judgments and fails on loss, --shard and
merge, --save and --against, the results cache, --jobs, one process a query for a per-query
finder, and the finders that need a corpus refused."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import git
import jsonschema
import pytest
from conftest import ROOT, make_repo, needs_tool, run_cli
from helpers import weaker_clone

from recall.analysis.model import Report
from recall.inputs.judgments import candidates, read_judgments
from recall.render.html import render_html

pytestmark = pytest.mark.slow  # every test here runs real finders over many names lists

SCHEMA = jsonschema.Draft202012Validator(
    json.loads((ROOT / "docs" / "report.schema.json").read_text())
)
MUST_SHOW = (
    "--queries", "judgments", "--engine", "reference=reference", "--engine", "fzf=fzf",
    "--engine", "fzy=fzy", "--engine", "fuzzysort=fuzzysort",
)  # fmt: skip
FOREIGN = ROOT / "tests" / "fixtures" / "zerobrane-judgments.tsv"  # ZeroBrane Studio's tests
COLUMNS = ["finder", "pairs", "agree", "95% CI", "neither", "symbol", "path"]


def _overall(text: str) -> dict[str, list[str]]:
    """The agreement table of a text report: each finder's cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["finder", "pairs"])
    assert re.split(r"\s{2,}", lines[start]) == COLUMNS
    rows: dict[str, list[str]] = {}
    for line in lines[start + 1 :]:
        if not line:
            break
        cells = re.split(r"\s{2,}", line)
        rows[cells[0]] = cells[1:]
    return rows


def _fzf_agreement(path: Path) -> int:
    """fzf's agreement on a judgments file, by hand: `fzf --filter` of each query over its
    sorted candidates, each pair's ranks read off its output."""
    judgments = read_judgments(path)
    ranked = {}
    for (domain, query), names in candidates(judgments).items():
        out = subprocess.run(
            ["fzf", f"--filter={query}"], input="".join(f"{n}\n" for n in names),
            capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
        ).stdout  # fmt: skip
        ranked[(domain, query)] = [line for line in out.split("\n") if line]
    agree = 0
    for j in judgments:
        order = ranked[(j.domain, j.query)]
        if j.preferred in order and (j.other not in order or
                                     order.index(j.preferred) < order.index(j.other)):  # fmt: skip
            agree += 1
    return agree


@needs_tool("fzf")
@needs_tool("fzy")
@needs_tool("node", "nodejs")
@needs_tool("npm")
def test_the_must_show_command_reports_each_finder_s_agreement_and_fzf_s_is_fzf_s_own(real_cache):
    proc = run_cli("--cache", str(real_cache), *MUST_SHOW)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert text.startswith(
        "Judgments: 547 pairs from 25 projects (342 symbol, 205 path), 216 queries over 183 "
        "candidate lists; 0 contested\n"
    )
    rows = _overall(text)
    assert list(rows) == ["candidate", "reference", "fzf", "fzy", "fuzzysort"]
    assert rows["candidate"] == rows["reference"]  # the working tree's code, twice
    assert all(cells[0] == "547" for cells in rows.values())
    assert rows["fzf"][1].startswith(f"{_fzf_agreement(ROOT / 'judgments.tsv')} (")
    projects = text[text.index("\nBy source project\n") : text.index("\nBy domain\n")]
    rows_of_projects = projects.strip().splitlines()[3:]  # after the title, note and header
    assert len(rows_of_projects) == 25 and rows_of_projects[0].startswith("amjith/fuzzyfinder ")
    assert "\nContested pairs: 0 (" in text and "\nSeconds\n" in text
    assert "sourced queries" not in text and "\nBy type\n" not in text


@needs_tool("fzf")
@needs_tool("fzy")
@needs_tool("node", "nodejs")
@needs_tool("npm")
def test_a_judgments_file_the_tests_did_not_write_runs_with_the_same_columns(real_cache, tmp_path):
    page = tmp_path / "report.html"
    flags = ("--cache", str(real_cache), "--queries", str(FOREIGN), *MUST_SHOW[2:])
    text = run_cli(*flags)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("Judgments: 8 pairs from 1 project (5 symbol, 3 path), 8 ")
    rows = _overall(text.stdout)  # the committed set's columns
    assert list(rows) == ["candidate", "reference", "fzf", "fzy", "fuzzysort"]
    assert rows["fzf"][1].startswith(f"{_fzf_agreement(FOREIGN)} (")
    assert "\npkulchenko/ZeroBraneStudio      8  " in text.stdout
    report = json.loads(run_cli(*flags, "--json", "--html", str(page)).stdout)
    SCHEMA.validate(report)
    judged = report["judgments"]
    assert [r["label"] for r in judged["runs"]] == list(rows)
    assert [p["line"] for p in judged["pairs"]] == list(range(2, 10))
    assert page.read_text() == render_html(Report.from_json(report))
    markdown = run_cli(*flags, "--markdown").stdout
    assert "## By source project" in markdown and "| finder | pairs | agree |" in markdown


def test_a_self_diff_on_the_judgments_shows_no_change(real_cache):
    flags = ("--cache", str(real_cache), "--queries", "judgments", "--base", "HEAD")
    proc = run_cli(*flags, "--same-program-ok", "--fail-on-loss", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    SCHEMA.validate(report)
    (diff,) = report["judgments"]["diffs"]
    assert (diff["lost"], diff["gained"], diff["same"]) == ([], [], 547)
    assert diff["verdict"]["agreement"]["outcome"] == "no significant change"
    base, candidate = report["judgments"]["runs"]
    assert base["ranks"] == candidate["ranks"]
    assert "judgments: 0 lost, 0 gained, 547 the same" in proc.stderr


@pytest.fixture(name="weaker")
def weaker_fixture(tmp_path: Path) -> Path:
    return weaker_clone(tmp_path)


def test_a_weaker_reference_finder_loses_judgments_and_fails_on_loss(real_cache, weaker):
    flags = ("--cache", str(real_cache), "--queries", "judgments", "--finder", str(weaker),
             "--base", "HEAD~1")  # fmt: skip
    proc = run_cli(*flags, "--fail-on-loss")
    assert proc.returncode == 1, proc.stderr
    diff = proc.stdout[proc.stdout.index("\nDiff: candidate against base HEAD~1") :]
    lost = int(re.search(r"\nLost judgments: (\d+)\n", diff).group(1))
    assert lost > 0
    assert re.search(r"judgments: \d+ lost, \d+ gained, \d+ the same", diff)
    assert f"candidate: {lost} judgments lost" in proc.stderr.splitlines()[-1]
    report = json.loads(run_cli(*flags, "--json").stdout)
    SCHEMA.validate(report)
    (changes,) = report["judgments"]["diffs"]
    assert len(changes["lost"]) == lost
    for change in changes["lost"]:  # agreed in the base, not now: the ranks say so
        base, new = (change["base_preferred"], change["base_other"]), (
            change["new_preferred"], change["new_other"])  # fmt: skip
        assert base[0] is not None and (base[1] is None or base[0] < base[1])
        assert new[0] is None or (new[1] is not None and new[1] < new[0])


@needs_tool("fzf")
def test_a_judgments_run_shards_and_merges_to_the_unsharded_report(real_cache, tmp_path):
    flags = ("--cache", str(real_cache), "--queries", "judgments", "--engine", "fzf")
    whole = run_cli(*flags, "--json")
    assert whole.returncode == 0, whole.stderr
    files = []
    for k in (1, 2, 3):
        files.append(str(tmp_path / f"shard-{k}.json"))
        shard = run_cli(*flags, "--shard", f"{k}/3", "--save", files[-1])
        assert shard.returncode == 0, shard.stderr
        assert "of the judgments' candidate lists" in shard.stdout
    merged = run_cli("merge", "--queries", "judgments", *files, "--json")
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout)["judgments"] == json.loads(whole.stdout)["judgments"]


@needs_tool("fzf")
def test_split_tune_runs_the_tune_projects_pairs_and_every_report_names_both_sides(
    real_cache, tmp_path
):
    page = tmp_path / "report.html"
    flags = ("--cache", str(real_cache), "--queries", "judgments", "--engine", "fzf",
             "--split", "tune")  # fmt: skip
    text = run_cli(*flags)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("Judgments: 410 pairs from 17 projects (245 symbol, 165 path)")
    sides = text.stdout.splitlines()[1]
    assert sides.startswith("the tune split of the judgments, by source project: tune 17 (")
    assert sides.endswith(
        "; holdout 8 (garybernhardt/selecta, KDE/kcoreaddons, kovidgoyal/kitty, krisk/Fuse, "
        "mawww/kakoune, superhuman/command-score, vim/vim, wincent/command-t)"
    )
    assert all(cells[0] == "410" for cells in _overall(text.stdout).values())
    report = json.loads(run_cli(*flags, "--json", "--html", str(page)).stdout)
    SCHEMA.validate(report)
    judged = report["judgments"]
    assert report["split"] == judged["split"] == "tune" and len(judged["pairs"]) == 410
    assert len(judged["sides"]["tune"]) == 17 and len(judged["sides"]["holdout"]) == 8
    assert sides in page.read_text() and page.read_text() == render_html(Report.from_json(report))
    assert f"\n{sides}\n" in run_cli(*flags, "--markdown").stdout
    whole = json.loads(run_cli(*flags[:-2], "--json").stdout)["judgments"]
    assert whole["split"] is None and len(whole["pairs"]) == 547
    files = [str(tmp_path / f"shard-{k}.json") for k in (1, 2)]
    for k, file in enumerate(files, 1):
        assert run_cli(*flags, "--shard", f"{k}/2", "--save", file).returncode == 0
    merged = run_cli("merge", "--queries", "judgments", *files, "--json")
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout)["judgments"] == judged


@needs_tool("fzf")
@needs_tool("fzy")
def test_a_saved_judgments_run_is_a_baseline_and_the_results_cache_keys_its_rows(
    real_cache, tmp_path
):
    saved = tmp_path / "fzf.json"
    flags = ("--cache", str(real_cache), "--queries", str(FOREIGN))
    first = run_cli(*flags, "--engine", "fzf", "--save", str(saved), "--json")
    assert first.returncode == 0, first.stderr
    again = json.loads(run_cli(*flags, "--engine", "fzf", "--json").stdout)
    assert (
        again["runs"][0]["cached"] and again["judgments"] == json.loads(first.stdout)["judgments"]
    )
    against = run_cli(*flags, "--engine", "fzy", "--against", str(saved), "--json")
    assert against.returncode == 0, against.stderr
    (diff,) = json.loads(against.stdout)["judgments"]["diffs"]
    assert diff["base"] == "saved fzf.json (candidate)" and diff["new"] == "candidate"
    more = tmp_path / "more.tsv"
    more.write_text(FOREIGN.read_text() + "symbol\tmtv\tmtv_x\tm_t_v\tthe/tests more\n")
    grown = json.loads(run_cli("--cache", str(real_cache), "--queries", str(more), "--engine",
                               "fzf", "--json").stdout)  # fmt: skip
    assert not grown["runs"][0]["cached"] and len(grown["judgments"]["pairs"]) == 9
    refused = run_cli("--cache", str(real_cache), "--queries", str(more), "--engine", "fzf",
                      "--against", str(saved))  # fmt: skip
    assert refused.returncode == 2 and "--against" in refused.stderr


def test_a_judgments_run_gives_the_same_verdicts_with_one_job_or_two(real_cache):
    flags = ("--cache", str(real_cache), "--queries", str(FOREIGN), "--engine", "reference",
             "--json", "--no-cache")  # fmt: skip
    one = json.loads(run_cli(*flags, "--jobs", "1").stdout)["judgments"]
    two = json.loads(run_cli(*flags, "--jobs", "2").stdout)["judgments"]
    assert one == two and one["runs"][0]["agree"] > 0


# One process a query, one HOME a run: a finder of our own that logs each process --------

LOGGING_FINDER = r"""
import os, sys
query, names, log = sys.argv[1], sys.argv[2], sys.argv[3]
with open(log, "a") as out:
    out.write(f"{os.environ['HOME']}\t{query}\n")
for name in sorted(open(names).read().split("\n")):
    if name and all(c in name for c in query):
        print(name)
"""


def test_a_query_s_candidates_share_one_process_and_a_run_s_lists_one_home(tmp_path):
    log = tmp_path / "log.txt"
    finder = tmp_path / "finder"
    make_repo(finder, {"finder.py": LOGGING_FINDER, "recall.toml": (
        "[engine]\n"
        f'bin = ["{sys.executable}", "{{tree}}/finder.py"]\n'
        f'query = ["{{bin}}", "{{query}}", "{{names}}", "{log}"]\n'
        'output = "lines"\n'
    )})  # fmt: skip
    judgments = tmp_path / "mine.tsv"
    judgments.write_text(
        "domain\tquery\tpreferred\tother\tsource\n"
        "symbol\tab\tab\tabc\ta/b t\nsymbol\tab\tab\txab\ta/b t\nsymbol\tab\tabc\txab\ta/b t\n"
        "symbol\tq\tq\tqq\ta/b t\n"
    )
    proc = run_cli("--cache", str(tmp_path / "cache"), "--finder", str(finder), "--queries",
                   str(judgments), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    started = [line.split("\t") for line in log.read_text().splitlines()]
    assert sorted(query for _home, query in started) == ["ab", "q"]  # not one a candidate
    homes = {home for home, _query in started}
    assert len(homes) == 1 and not Path(homes.pop()).exists()  # shared, and gone after
    assert json.loads(proc.stdout)["judgments"]["runs"][0]["agree"] == 4


# Refused before anything runs ----------------------------------------------------------


@pytest.mark.parametrize(
    ("engine", "said"),
    [
        ("jedi-lsp", "preset:jedi-lsp: kind lsp answers workspace/symbol over a corpus's files"),
        ("rq", "preset:rq: its index names {corpus}, which only a corpus has"),
    ],
)
def test_a_finder_that_needs_a_corpus_is_refused_in_one_line(tmp_path, engine, said):
    proc = run_cli("--cache", str(tmp_path), "--queries", "judgments", "--engine", engine)
    assert proc.returncode == 2 and proc.stdout == ""
    line = proc.stderr.strip()
    assert line.startswith(f"recall: {said}: the judgments set gives a finder each query's")
    assert not (tmp_path / "results").exists() and not (tmp_path / "builds").exists()


def test_an_engine_file_that_reads_a_corpus_or_no_names_list_is_refused(tmp_path):
    reads = tmp_path / "corpus.toml"
    reads.write_text('[engine]\nbin = ["grep"]\nquery = ["{bin}", "-r", "{query}", "{corpus}"]\n')
    none = tmp_path / "none.toml"
    none.write_text('[engine]\nbin = ["echo"]\nquery = ["{bin}", "{query}"]\noutput = "lines"\n')
    for path, said in ((reads, "its query names {corpus}"), (none, "it reads no names list")):
        proc = run_cli("--cache", str(tmp_path), "--queries", "judgments", "--engine", str(path))
        assert proc.returncode == 2
        assert proc.stderr.strip().startswith(f"recall: {path}: {said}")


def test_a_base_whose_reference_finder_cannot_index_a_names_list_fails_in_one_line(tmp_path):
    """A base from before `index-names` (here: a commit that renames it) cannot run the
    judgments set: its index fails on the first list, and the run stops in one line."""
    clone = weaker_clone(tmp_path)
    main = clone / "recall" / "finders" / "reference" / "__main__.py"
    main.write_text(main.read_text().replace('"index-names"', '"index-list"'))
    repo = git.Repo(clone)
    repo.index.add([str(main.relative_to(clone))])
    repo.index.commit("no index-names")
    proc = run_cli("--cache", str(tmp_path / "cache"), "--queries", str(FOREIGN), "--finder",
                   str(clone), "--base", "HEAD", "--same-program-ok")  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    line = proc.stderr.strip().splitlines()[-1]
    assert re.match(
        r"recall: index judged-[0-9a-f]{16} with base HEAD \([0-9a-f]{12}\) failed", line
    )
    assert "invalid choice: 'index-names'" in line


@needs_tool("fzf")
def test_a_judgments_file_on_a_pipe_is_read_once_through_the_one_reader(tmp_path):
    """`--queries /dev/stdin` on a pipe: its header, rows and digest all come from the one
    read (files.read_input), so the run sees the file whole."""
    proc = subprocess.run(
        [sys.executable, "-m", "recall", "--cache", str(tmp_path), "--queries", "/dev/stdin",
         "--engine", "fzf", "--json"],
        input=FOREIGN.read_bytes(), capture_output=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert len(report["judgments"]["pairs"]) == 8
    assert report["meta"]["queries_sha256"] == hashlib.sha256(FOREIGN.read_bytes()).hexdigest()


def test_the_default_engine_is_the_reference_finder_and_reference_paths_its_path_mode(real_cache):
    flags = ("--cache", str(real_cache), "--queries", str(FOREIGN), "--json")
    default = json.loads(run_cli(*flags).stdout)
    assert default["meta"]["engine"]["source"] == "preset:reference"
    paths = run_cli(*flags, "--engine", "reference-paths")
    assert paths.returncode == 0, paths.stderr
    report = json.loads(paths.stdout)
    assert report["meta"]["engine"]["source"] == "preset:reference-paths"
    assert report["judgments"]["runs"][0]["by_domain"]["path"]["n"] == 3
