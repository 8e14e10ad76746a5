"""Where the suite files and recall.toml are found: beside the finder's recall.toml, else in
the current folder, else the default suite packaged with recall (issue 32 item 1)."""

from __future__ import annotations

import json
import os

import git
import pytest
from conftest import (
    ROOT,
    SUBSEQUENCE_ENGINE,
    SUBSEQUENCE_FINDER,
    make_repo,
    needs_ctags,
    needs_mirror,
    run_cli,
    tiny_suite,
)

from recall.errors import RecallError
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


# Configs found by walking up are trusted as git trusts a repository (issue 42 item 1) ----

OTHER_USER = 65534  # nobody: a uid that is neither the caller (root, in the tests) nor root
MARKING_BUILD = """[engine]
build = ["{python}", "-c", "import pathlib; pathlib.Path('{tree}/built').write_text('yes')"]
bin = ["{python}", "{tree}/finder.py"]
query = ["{bin}", "{query}", "{names}"]
output = "lines"
"""


def _hostile(tmp_path):
    """A recall.toml in a world-writable sticky folder (as /tmp is) above the folder a
    user runs recall in, with a build that leaves a mark, and the tiny corpus to run."""
    suite = tiny_suite(tmp_path, ["alfu\tabbr2\talpha_function"], {"x.txt": ""})
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "recall.toml").write_text(MARKING_BUILD)
    (shared / "finder.py").write_text(SUBSEQUENCE_FINDER)
    (shared / "mine").mkdir()
    return suite, shared


def _run_in(suite: dict, cwd, *extra: str):
    return run_cli(
        "--corpus", str(suite["corpus"]), "--queries", str(suite["queries"]),
        "--cache", str(suite["cache"]), "--no-regress", "--json", *extra, cwd=cwd,
        env={"RECALL_MIRROR": ""},
    )  # fmt: skip


@needs_ctags
def test_a_recall_toml_above_owned_by_another_user_is_refused_and_its_build_never_runs(
    tmp_path,
):
    """Issue 42 item 1: a recall.toml owned by another user in a world-writable folder
    above was found by the walk up, its build run as the caller, and the run named no
    file. Named on purpose (--finder), it runs, and the report's meta names it."""
    suite, shared = _hostile(tmp_path)
    config = shared / "recall.toml"
    os.chown(config, OTHER_USER, OTHER_USER)
    proc = _run_in(suite, shared / "mine")
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr == (
        f"recall: {config}: found from {shared / 'mine'} up, but it is owned by uid "
        f"{OTHER_USER}, not by you (uid {os.geteuid()}) or root; recall runs what a "
        "recall.toml says, so it uses one found by walking up only when it is yours: name "
        f"it on purpose with --finder {shared} to use it anyway\n"
    )
    assert not (shared / "built").exists()

    named = _run_in(suite, shared / "mine", "--finder", str(shared))
    assert named.returncode == 0, named.stderr
    assert (shared / "built").exists()
    assert json.loads(named.stdout)["meta"]["config"] == str(config)


@needs_ctags
def test_a_recall_toml_found_above_that_is_the_caller_s_is_used_and_named(tmp_path):
    suite, shared = _hostile(tmp_path)
    proc = _run_in(suite, shared / "mine")
    assert proc.returncode == 0, proc.stderr
    config = shared / "recall.toml"
    assert proc.stderr == f"recall: using {config}, found from {shared / 'mine'} up\n"
    report = json.loads(proc.stdout)
    assert report["meta"]["config"] == str(config)
    assert report["meta"]["engine"]["source"] == str(config)
    here = _run_in(suite, shared)  # in its own folder: seen, not said again
    assert here.returncode == 0 and here.stderr == ""
    assert json.loads(here.stdout)["meta"]["config"] == str(config)
    nowhere = _run_in(suite, tmp_path, "--engine", "reference")
    assert json.loads(nowhere.stdout)["meta"]["config"] is None


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda c: c.chmod(0o664), "others may write it (mode -rw-rw-r--)"),
        (lambda c: c.chmod(0o646), "others may write it (mode -rw-r--rw-)"),
        (lambda c: os.chown(c.parent, OTHER_USER, OTHER_USER),
         f"its folder is owned by uid {OTHER_USER}, not by you"),
        (lambda c: c.parent.chmod(0o777),
         "anyone may replace it (its folder's mode is drwxrwxrwx)"),
    ],
    ids=["group-writable", "other-writable", "folder-of-another", "folder-writable-by-all"],
)  # fmt: skip
def test_a_recall_toml_found_above_that_others_may_write_is_refused(tmp_path, change, why):
    config = tmp_path / "finder" / CONFIG
    (tmp_path / "finder" / "src").mkdir(parents=True)
    config.write_text(SUBSEQUENCE_ENGINE)
    config.chmod(0o644)
    assert find_config(tmp_path / "finder" / "src") == config
    change(config)
    with pytest.raises(RecallError) as caught:
        find_config(tmp_path / "finder" / "src")
    assert f"{config}: found from {tmp_path / 'finder' / 'src'} up, but {why}" in str(caught.value)
    assert str(caught.value).endswith(f"--finder {config.parent} to use it anyway")
    assert locate("run", finder=str(config.parent)).config == config  # named: used


# A finder's own committed query set is strict from any folder (issue 42 item 16) ---------


@needs_ctags
def test_a_finders_own_query_set_is_strict_at_its_top_and_in_any_folder_below(tmp_path):
    """Issue 42 item 16: the finder repo's own queries.tsv was strict at the repo's top
    and foreign one folder down (exit 2 there, exit 0 with a report in sub/). A copy of it
    elsewhere is a foreign file, and runs."""
    suite = tiny_suite(tmp_path, ["alfu\tabbr2\talpha_function"], {"x.txt": ""})
    rows = (
        "repo\tquery\ttype\tsource\ntiny\talfu\tabbr2\talpha_function\ntiny\tzz\tabbr2\tzeta_nope\n"
    )
    make_repo(
        tmp_path / "finder",
        {"recall.toml": SUBSEQUENCE_ENGINE, "finder.py": SUBSEQUENCE_FINDER,
         "corpus.json": suite["corpus"].read_text(), "queries.tsv": rows, "sub/x.txt": ""},
    )  # fmt: skip
    top, sub = tmp_path / "finder", tmp_path / "finder" / "sub"
    (tmp_path / "copy.tsv").write_text(rows)
    refusal = ":3: source 'zeta_nope' is not a name of tiny at its pin"
    for cwd, given in ((top, ()), (sub, ()), (sub, ("--queries", "../queries.tsv")),
                       (tmp_path, ("--finder", str(top)))):  # fmt: skip
        proc = run_cli("--cache", str(suite["cache"]), "--no-regress", *given, cwd=cwd,
                       env={"RECALL_MIRROR": ""})  # fmt: skip
        assert (proc.returncode, proc.stdout) == (2, ""), (cwd, given, proc.stderr)
        named, _sep, rest = proc.stderr.splitlines()[-1].removeprefix("recall: ").partition(":")
        assert f":{rest}" == refusal, proc.stderr
        assert (cwd / named).samefile(top / "queries.tsv")
    foreign = run_cli("--cache", str(suite["cache"]), "--no-regress", "--json", "--queries",
                      str(tmp_path / "copy.tsv"), cwd=sub, env={"RECALL_MIRROR": ""})  # fmt: skip
    assert foreign.returncode == 0, foreign.stderr
    assert json.loads(foreign.stdout)["unknown_sources"]["count"] == 1


def test_the_committed_sets_are_strict_by_what_the_file_is_not_where_it_is_named_from(
    tmp_path, monkeypatch
):
    foreign = tmp_path / "queries.tsv"
    foreign.write_text("repo\tquery\ttype\tsource\n")
    assert locate("run").committed and locate("run", queries="typed").committed
    assert not locate("run", queries=str(foreign)).committed
    monkeypatch.chdir(tmp_path / "..")
    assert locate("run", queries=str(packaged("typed.tsv"))).committed
    assert locate("run", queries=str(ROOT / "queries.tsv")).committed  # the shipped set
    assert not locate("run", queries=str(foreign)).committed
