"""`recall run --shard K/N --save F` and `recall merge F...`: shards of a run, merged into
the report the unsharded run prints, and every mix-up of files refused."""

import json
from pathlib import Path

import git
import orjson
import pytest
from conftest import (
    ROOT,
    SUBSEQUENCE_ENGINE,
    SUBSEQUENCE_FINDER,
    mirror_dir,
    needs_ctags,
    run_cli,
    tiny_suite,
)

from recall.inputs.queryset import QueryRow
from recall.workflows.run import shard_rows

SELECTION = ("--repo", "gin", "--repo", "pytest", "--repo", "tokio", "--type", "abbr3")
SPLIT_SELECTION = ("--repo", "gin", "--repo", "jquery", "--repo", "fmt", "--type", "abbr3")


def test_every_repo_lands_in_exactly_one_shard_the_same_on_every_machine():
    rows = [QueryRow(repo, f"q{i}", "abbr3", "S") for i, repo in enumerate("cabcab")]
    shards = [shard_rows(rows, k, 2) for k in (1, 2)]
    assert [{r.repo for r in shard} for shard in shards] == [{"a", "c"}, {"b"}]
    assert sorted(shards[0] + shards[1], key=rows.index) == rows
    with pytest.raises(Exception, match="--shard 4/4: the selection has 3 repos"):
        shard_rows(rows, 4, 4)


def _without_seconds(report: dict) -> dict:
    for run in report["runs"]:
        for key in ("index_s", "query_s", "cached"):
            run.pop(key, None)
    return report


@pytest.fixture(scope="module")
def shards(tmp_path_factory, real_cache) -> dict:
    if mirror_dir() is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    tmp = tmp_path_factory.mktemp("shards")
    flags = (*SELECTION, "--base", "HEAD", "--same-program-ok", "--cache", str(real_cache))
    whole = run_cli("run", *flags, "--json", "--save", str(tmp / "whole.json"))
    assert whole.returncode == 0, whole.stderr
    for k in (1, 2):
        proc = run_cli("run", *flags, "--shard", f"{k}/2", "--save", str(tmp / f"{k}.json"))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"recall: shard {k}/2 (")
    return {"whole": json.loads(whole.stdout), "tmp": tmp, "cache": str(real_cache)}


def _merge(shards: dict, *files: str, extra: tuple[str, ...] = ()):
    paths = [str(shards["tmp"] / f) for f in files]
    return run_cli("merge", *paths, *SELECTION, "--cache", shards["cache"], *extra)


@needs_ctags
@pytest.mark.slow
def test_merged_shards_report_what_the_unsharded_run_does_but_the_seconds(shards):
    merged = _merge(shards, "2.json", "1.json", extra=("--json",))
    assert merged.returncode == 0, merged.stderr
    report = json.loads(merged.stdout)
    assert _without_seconds(report) == _without_seconds(shards["whole"])
    assert report["diff"]["explain_flags"].startswith("--finder /")  # runs from any folder
    assert f"--base {git.Repo(ROOT).head.commit.hexsha} " in report["diff"]["explain_flags"]
    assert report["runs"][1]["n"] == shards["whole"]["runs"][1]["n"] > 200


@needs_ctags
@pytest.mark.slow
def test_a_merge_takes_the_repo_and_type_selection_from_the_shard_files(shards):
    paths = [str(shards["tmp"] / f) for f in ("1.json", "2.json")]
    merged = run_cli("merge", *paths, "--cache", shards["cache"], "--json")
    assert merged.returncode == 0, merged.stderr
    assert _without_seconds(json.loads(merged.stdout)) == _without_seconds(shards["whole"])
    data = orjson.loads((shards["tmp"] / "2.json").read_bytes())
    data["selection"]["type"] = ["glob"]
    (shards["tmp"] / "glob.json").write_bytes(orjson.dumps(data))
    other = run_cli("merge", paths[0], str(shards["tmp"] / "glob.json"), "--cache", shards["cache"])
    assert other.returncode == 2 and "another --repo/--type/--split selection" in other.stderr


@needs_ctags
@pytest.mark.parametrize(
    ("files", "message"),
    [
        (("1.json",), "no file has repo pytest: give every shard's file"),
        (("1.json", "1.json"), "is in"),
        (("1.json", "2.json", "whole.json"), "is in"),
    ],
)
@pytest.mark.slow
def test_a_shard_missing_or_given_twice_is_refused(shards, files, message):
    proc = _merge(shards, *files)
    assert proc.returncode == 2 and message in proc.stderr and proc.stdout == ""


@needs_ctags
@pytest.mark.slow
def test_shards_that_ran_other_code_or_another_selection_are_refused(shards):
    data = orjson.loads((shards["tmp"] / "2.json").read_bytes())
    data["meta"]["engine"]["sha256"] = "0" * 64
    (shards["tmp"] / "other.json").write_bytes(orjson.dumps(data))
    proc = _merge(shards, "1.json", "other.json")
    assert proc.returncode == 2 and "ran other code or data than" in proc.stderr
    paths = [str(shards["tmp"] / f) for f in ("1.json", "2.json")]
    narrower = run_cli("merge", *paths, *SELECTION, "--type", "glob", "--cache", shards["cache"])
    assert narrower.returncode == 2 and "its rows of" in narrower.stderr


@pytest.fixture(scope="module")
def holdout_shards(tmp_path_factory, real_cache) -> dict:
    """The selection's holdout rows (jquery's and fmt's, seen holdout corpora both), run
    whole and in two shards (no baseline: cheaper)."""
    if mirror_dir() is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    tmp = tmp_path_factory.mktemp("holdout-shards")
    flags = (*SPLIT_SELECTION, "--split", "holdout", "--no-regress", "--cache", str(real_cache))
    whole = run_cli("run", *flags, "--json")
    assert whole.returncode == 0, whole.stderr
    for k in (1, 2):
        proc = run_cli("run", *flags, "--shard", f"{k}/2", "--save", str(tmp / f"{k}.json"))
        assert proc.returncode == 0, proc.stderr
    return {"whole": json.loads(whole.stdout), "tmp": tmp, "cache": str(real_cache)}


@needs_ctags
@pytest.mark.slow
def test_merged_shards_of_a_split_run_report_that_split_as_the_unsharded_run_does(
    holdout_shards,
):
    tmp, cache, whole = holdout_shards["tmp"], holdout_shards["cache"], holdout_shards["whole"]
    paths = [str(tmp / f) for f in ("1.json", "2.json")]
    assert orjson.loads(Path(paths[0]).read_bytes())["selection"]["split"] == "holdout"
    merged = run_cli("merge", *paths, "--no-regress", "--cache", cache, "--json")
    assert merged.returncode == 0, merged.stderr
    report = json.loads(merged.stdout)
    assert report["split"] == whole["split"] == "holdout"
    assert _without_seconds(report) == _without_seconds(whole)
    assert set(report["runs"][0]["by_repo"]) == {"jquery", "fmt"}  # gin is a tune corpus
    assert report["holdout"]["seen"]["corpora"] == ["jquery", "fmt"]
    assert report["holdout"]["fresh"] == {"corpora": [], "n": 0, "margin": None}

    other = run_cli("merge", *paths, *SPLIT_SELECTION, "--split", "tune", "--cache", cache)
    assert other.returncode == 2 and other.stdout == ""  # the tune side is gin's rows alone
    assert other.stderr == "recall: merge: no file has repo gin: give every shard's file\n"
    data = orjson.loads(Path(paths[1]).read_bytes())
    data["selection"]["split"] = "tune"
    (tmp / "tune.json").write_bytes(orjson.dumps(data))
    mixed = run_cli("merge", paths[0], str(tmp / "tune.json"), "--cache", cache)
    assert mixed.returncode == 2 and "another --repo/--type/--split selection" in mixed.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--shard", "1/2"), "--shard needs --save FILE"),
        (("--shard", "1/2", "--save", "x.json", "--json"), "a shard prints no report"),
        (("--shard", "3/2", "--save", "x.json"), "give K/N with 1 <= K <= N"),
    ],
)
def test_a_shard_that_could_only_print_a_partial_report_is_refused(flags, message, tmp_path):
    proc = run_cli("run", *flags, "--cache", str(tmp_path))
    assert proc.returncode == 2 and message in proc.stderr
    assert not Path(tmp_path, "x.json").exists()


@pytest.fixture
def two_pins(tmp_path: Path) -> dict:
    """The tiny corpus pinned twice (two repos, so two shards) and a finder's working tree
    (a real repo, its finder.py committed)."""
    suite = tiny_suite(
        tmp_path,
        ["alfu\tabbr2\talpha_function", "gadel\tabbr3\tgamma_delta", "ta\tabbr2\tgamma_delta"],
        {"finder.py": SUBSEQUENCE_FINDER, "recall.toml": SUBSEQUENCE_ENGINE},
    )  # fmt: skip
    pins = json.loads(suite["corpus"].read_text())
    suite["corpus"].write_text(json.dumps({"tiny": pins["tiny"], "tiny2": pins["tiny"]}))
    rows = suite["queries"].read_text().splitlines()
    suite["queries"].write_text(
        "\n".join([*rows, *(row.replace("tiny\t", "tiny2\t", 1) for row in rows[1:])]) + "\n"
    )
    return suite


def _tiny(suite: dict, *args: str):
    finder = ("--finder", str(suite["finder"])) if args[0] == "run" else ()
    return run_cli(
        *args, *finder, "--corpus", str(suite["corpus"]), "--queries", str(suite["queries"]),
        "--cache", str(suite["cache"]), "--no-regress", env={"RECALL_MIRROR": ""},
    )  # fmt: skip


def test_shards_of_a_working_tree_edited_between_them_are_refused(two_pins, tmp_path):
    """Issue 42 item 5: the candidate was saved as `working tree PATH` with no digest of
    the tree, so a shard run after an edit merged with one run before it (#1 187 where
    either tree gives 190). Shards of one tree merge to the unsharded report."""
    whole = _tiny(two_pins, "run", "--json")
    assert whole.returncode == 0, whole.stderr
    for k in (1, 2):
        proc = _tiny(two_pins, "run", "--shard", f"{k}/2", "--save", str(tmp_path / f"{k}.json"))
        assert proc.returncode == 0, proc.stderr
    same = _tiny(two_pins, "merge", str(tmp_path / "1.json"), str(tmp_path / "2.json"), "--json")
    assert same.returncode == 0, same.stderr
    assert _without_seconds(json.loads(same.stdout)) == _without_seconds(json.loads(whole.stdout))

    finder = two_pins["finder"] / "finder.py"  # longest first: another ranking, not committed
    finder.write_text(SUBSEQUENCE_FINDER.replace("(len(n), n)", "(-len(n), n)"))
    edited = _tiny(two_pins, "run", "--shard", "2/2", "--save", str(tmp_path / "2e.json"))
    assert edited.returncode == 0, edited.stderr
    proc = _tiny(two_pins, "merge", str(tmp_path / "1.json"), str(tmp_path / "2e.json"))
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr == (
        f"recall: merge {tmp_path / '2e.json'}: its run 'candidate' ran a tree of other "
        f"content than {tmp_path / '1.json'}'s (edited between the shards' runs, or "
        "holding a file one of them saved?)\n"
    )

    older = orjson.loads((tmp_path / "2.json").read_bytes())  # as this recall saved before
    for run in older["runs"]:
        del run["key"]["tree"]
    (tmp_path / "2old.json").write_bytes(orjson.dumps(older))
    proc = _tiny(two_pins, "merge", str(tmp_path / "1.json"), str(tmp_path / "2old.json"))
    assert proc.returncode == 2 and "ran a tree of other content" in proc.stderr
    proc = _tiny(two_pins, "merge", str(tmp_path / "2old.json"), str(tmp_path / "1.json"))
    assert proc.returncode == 2 and "saved without the digest of its content" in proc.stderr


def test_a_saved_file_whose_ranks_contradict_its_top_lists_is_refused_by_merge_and_against(
    two_pins, tmp_path
):
    """Issue 42 item 6: a --save file edited to say #1 where its own top list puts another
    name first was used as it was (84 (100.0%) where the run gave 74)."""
    saved = tmp_path / "saved.json"
    assert _tiny(two_pins, "run", "--save", str(saved)).returncode == 0
    data = orjson.loads(saved.read_bytes())
    results = data["runs"][0]["results"]
    i = next(i for i, r in enumerate(results) if r[0] != 1 and r[1])  # not #1, with a list
    results[i][0] = 1
    edited = tmp_path / "edited.json"
    edited.write_bytes(orjson.dumps(data))
    repo, query = data["rows"][i][:2]
    place = [hit[0] for hit in results[i][1]].index(data["rows"][i][3]) + 1
    why = f"runs[0]: results[{i}] ({repo} {query!r}): rank 1, but its top list has the source"
    why += f" at {place}"
    for args in (("merge", str(edited)), ("run", "--against", str(edited))):
        proc = _tiny(two_pins, *args)
        assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
        flag = "merge" if args[0] == "merge" else "--against"
        assert proc.stderr == f"recall: {flag} {edited}: {why}\n"
