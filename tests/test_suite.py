"""Where the suite files and recall.toml are found: beside the finder's recall.toml, else in
the current folder, else the default suite packaged with recall (issue 32 item 1)."""

from __future__ import annotations

import json
import os

import git
from conftest import ROOT, SUBSEQUENCE_ENGINE, make_repo, needs_ctags, needs_mirror, run_cli

from recall.inputs.suite import CONFIG, find_config, locate, packaged, suite_file


def test_every_top_level_suite_file_is_packaged_as_the_same_bytes():
    with git.Repo(ROOT) as repo:
        top = {p for p in repo.git.ls_files().splitlines() if "/" not in p}
    suite = {p for p in top if p.endswith((".json", ".tsv"))}
    assert {"corpus.json", "queries.tsv", "typed.tsv", "regress.tsv"} <= suite
    for name in suite:
        assert packaged(name).read_bytes() == (ROOT / name).read_bytes(), name


def test_recall_toml_is_found_in_the_folder_or_the_nearest_one_above(tmp_path):
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    assert find_config(tmp_path / "a" / "b" / "c") is None
    (tmp_path / "a" / CONFIG).write_text("")
    (tmp_path / "a" / "b" / "c" / CONFIG).mkdir()  # a folder of that name is no config
    assert find_config(tmp_path / "a" / "b" / "c") == tmp_path / "a" / CONFIG
    (tmp_path / "a" / "b" / CONFIG).write_text("")
    assert find_config(tmp_path / "a" / "b" / "c") == tmp_path / "a" / "b" / CONFIG


def test_a_suite_file_is_the_one_beside_recall_toml_else_here_else_the_packaged_one(
    tmp_path, monkeypatch
):
    here, repo = tmp_path / "here", tmp_path / "repo"
    here.mkdir()
    repo.mkdir()
    config = repo / CONFIG
    monkeypatch.chdir(here)
    assert suite_file("queries.tsv", config) == packaged("queries.tsv")
    assert suite_file("queries.tsv", config, writes=True) == type(config)("queries.tsv")
    (here / "queries.tsv").write_text("")
    assert suite_file("queries.tsv", config).absolute() == here / "queries.tsv"
    (repo / "queries.tsv").write_text("")
    assert suite_file("queries.tsv", config) == repo / "queries.tsv"
    assert suite_file("queries.tsv", None).absolute() == here / "queries.tsv"


@needs_mirror
@needs_ctags
def test_fetch_from_a_folder_outside_any_checkout_reads_the_packaged_pins(
    tmp_path, gin, real_cache
):
    """Issue 32 item 1: anywhere but recall's checkout, recall said `corpus.json: cannot
    read`."""
    proc = run_cli("fetch", "gin", "--cache", str(real_cache), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"gin\t{gin.pin.sha[:12]}\t")


@needs_mirror
@needs_ctags
def test_a_finders_own_suite_beside_its_recall_toml_is_read_from_any_folder_below(
    tmp_path, gin, real_cache
):
    pins = json.loads((ROOT / "corpus.json").read_bytes())
    make_repo(
        tmp_path / "finder",
        {"recall.toml": SUBSEQUENCE_ENGINE, "corpus.json": json.dumps({"gin": pins["gin"]}),
         "src/x.txt": ""},
    )  # fmt: skip
    below = tmp_path / "finder" / "src"
    proc = run_cli("fetch", "--cache", str(real_cache), cwd=below)
    assert proc.returncode == 0, proc.stderr
    assert [line.split("\t")[0] for line in proc.stdout.splitlines()] == ["gin"]
    other = run_cli("fetch", "vue", "--cache", str(real_cache), cwd=below)
    assert other.returncode == 2 and "vue" in other.stderr
    assert str(tmp_path / "finder" / "corpus.json") in other.stderr
    assert os.path.samefile(find_config(below) or "", tmp_path / "finder" / CONFIG)


def test_a_base_with_no_recall_toml_to_name_the_finder_is_refused_in_one_line(tmp_path):
    """Outside recall's checkout, with no recall.toml here or above, the run measures the
    reference finder recall ships, which no ref of this folder's repo builds."""
    make_repo(tmp_path / "repo", {"main.c": "int main;\n"})
    proc = run_cli("--base", "HEAD", "--cache", str(tmp_path / "cache"), cwd=tmp_path / "repo")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"recall: --base HEAD: no recall.toml in {tmp_path / 'repo'} or above to say which "
        "finder to build; `recall init` writes one (without one, recall measures the "
        "reference finder it ships)\n"
    )


def test_a_committed_set_named_by_name_or_file_is_looked_up_like_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = locate("run", queries="typed")
    assert found.queries == str(packaged("typed.tsv"))
    assert found.corpus == str(packaged("corpus.json"))
    assert found.default_regress == str(packaged("regress.tsv"))
    assert locate("run", queries="typed.tsv").queries == str(packaged("typed.tsv"))
    (tmp_path / "mine.tsv").write_text("")
    assert locate("run", queries="mine.tsv").queries == "mine.tsv"  # the user's own: as named
