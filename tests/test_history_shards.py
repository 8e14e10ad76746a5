"""`recall history --shard K/N --save F` and `recall merge F...` on fzy's real repository:
shards measured from caches of their own (as on machines of their own), merged into the
history the unsharded command prints, and every mix-up of files refused."""

from __future__ import annotations

import json
from pathlib import Path

import git
import orjson
import pytest
from conftest import commit_files, fzy_clone, mirror_dir, needs_ctags, needs_mirror, run_cli

from recall.errors import RecallError
from recall.workflows.history import Commit
from recall.workflows.history_shards import shard_pairs

SELECTION = ("--repo", "gin", "--repo", "ripgrep", "--type", "abbr3")  # 84 + 72 rows


def _recall(clone: Path, cache: Path, *args: str):  # type: ignore[no-untyped-def]
    return run_cli(
        *args, "--finder", str(clone), "--cache", str(cache), "--mirror", str(mirror_dir()),
        *SELECTION,
    )  # fmt: skip


def _merge(tmp: Path, *files: str, extra: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    return run_cli("merge", *(str(tmp / f) for f in files), *SELECTION, *extra)


def _without_seconds(data: dict) -> dict:
    for commit in data["commits"]:
        commit.pop("index_s", None)
        commit.pop("query_s", None)
    return data


@pytest.fixture(scope="module")
def sharded(fzy_origin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Three commits of fzy (master, a Makefile that cannot build, the Makefile back) over
    gin's and ripgrep's abbr3 rows: the history whole, and in two shards, each with a cold
    cache of its own. The six (commit, repo) pairs split three and three, so the broken
    commit is measured in both shards."""
    if mirror_dir() is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    tmp = tmp_path_factory.mktemp("history-shards")
    clone = fzy_clone(fzy_origin, tmp / "fzy")
    makefile = (clone / "Makefile").read_text()
    with git.Repo(clone) as repo:
        master = repo.head.commit.hexsha
        broke = commit_files(repo, {"Makefile": "all:\n\tfalse\n"}, "Break the Makefile")
        mended = commit_files(repo, {"Makefile": makefile}, "Mend the Makefile")
    revs = (master, broke, mended)
    whole = _recall(clone, tmp / "cache", "history", "--json", *revs)
    assert whole.returncode == 0, whole.stderr
    text = _recall(clone, tmp / "cache", "history", "--by", "repo", "--html",
                   str(tmp / "whole.html"), *revs)  # fmt: skip
    assert text.returncode == 0, text.stderr
    for k in (1, 2):
        save = str(tmp / f"{k}.json")
        proc = _recall(clone, tmp / f"cache-{k}", "history", "--shard", f"{k}/2", "--save", save,
                       *revs)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"recall: history shard {k}/2: 3 of 6 (commit, repo) pairs")
    return {
        "tmp": tmp, "clone": clone, "shas": list(revs),
        "whole": json.loads(whole.stdout), "text": text.stdout,
    }  # fmt: skip


def test_history_shards_take_runs_of_consecutive_commit_repo_pairs_oldest_first():
    commits = [Commit(sha, "", "") for sha in ("old", "mid", "new")]
    shards = [shard_pairs(commits, ["vue", "gin"], k, 2) for k in (1, 2)]
    assert [[(c.sha, repos) for c, repos in shard] for shard in shards] == [
        [("old", ("gin", "vue")), ("mid", ("gin",))],
        [("mid", ("vue",)), ("new", ("gin", "vue"))],
    ]
    for n in range(1, 7):
        shards = [shard_pairs(commits, ["vue", "gin"], k, n) for k in range(1, n + 1)]
        pairs = [(c.sha, r) for shard in shards for c, repos in shard for r in repos]
        assert sorted(pairs) == sorted((c.sha, r) for c in commits for r in ("gin", "vue"))
    with pytest.raises(RecallError, match=r"--shard 1/7: the history has 6 \(commit, repo\) pairs"):
        shard_pairs(commits, ["vue", "gin"], 1, 7)


@needs_mirror
@needs_ctags
def test_two_history_shards_merged_print_the_unsharded_history_but_the_seconds(sharded):
    tmp, shas = sharded["tmp"], sharded["shas"]
    parts = [orjson.loads((tmp / f"{k}.json").read_bytes())["parts"] for k in (1, 2)]
    assert [(p["sha"], p["repos"]) for p in parts[0]] == [(shas[0], ["gin", "ripgrep"]),
                                                         (shas[1], ["gin"])]  # fmt: skip
    merged = _merge(tmp, "2.json", "1.json", extra=("--json",))
    assert merged.returncode == 0, merged.stderr
    data = json.loads(merged.stdout)
    data, whole = _without_seconds(data), _without_seconds(sharded["whole"])
    pairs = zip(data["commits"], whole["commits"], strict=True)
    assert [(c["sha"], k, c.get(k), w.get(k)) for c, w in pairs
            for k in c.keys() | w.keys() if c.get(k) != w.get(k)] == []  # fmt: skip
    assert data == whole
    assert [c["sha"] for c in data["commits"]] == shas
    assert data["commits"][1]["error"].startswith("build failed (exit 2): make:")
    assert data["commits"][0]["n"] == data["commits"][2]["n"] == 156
    assert [(c["built"], c["cached"]) for c in data["commits"]] == [(True, False)] * 3

    page = tmp / "merged.html"
    text = _merge(tmp, "1.json", "2.json", extra=("--by", "repo", "--html", str(page)))
    assert text.returncode == 0, text.stderr
    assert text.stdout == sharded["text"]
    assert page.read_bytes() == (tmp / "whole.html").read_bytes()
    assert "repo ripgrep:" in text.stdout and "1 of 3 commits could not be measured" in text.stdout


def test_history_shards_merged_without_a_selection_take_the_files_own(sharded):
    tmp = sharded["tmp"]
    merged = run_cli("merge", str(tmp / "1.json"), str(tmp / "2.json"), "--json")
    assert merged.returncode == 0, merged.stderr
    assert _without_seconds(json.loads(merged.stdout)) == _without_seconds(sharded["whole"])


@needs_mirror
@needs_ctags
@pytest.mark.parametrize(
    ("files", "message"),
    [
        (("1.json",), "merge: no file has commit "),
        (("1.json", "1.json"), " is in "),
        (("1.json", "2.json", "1.json"), " is in "),
    ],
)
def test_a_history_shard_missing_or_given_twice_is_refused(sharded, files, message):
    proc = _merge(sharded["tmp"], *files)
    assert proc.returncode == 2 and message in proc.stderr and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("recall: merge")


@needs_mirror
@needs_ctags
def test_history_shards_of_other_code_or_another_selection_are_refused(sharded):
    tmp = sharded["tmp"]
    data = orjson.loads((tmp / "2.json").read_bytes())
    data["meta"]["engine"]["sha256"] = "0" * 64
    (tmp / "other-code.json").write_bytes(orjson.dumps(data))
    proc = _merge(tmp, "1.json", "other-code.json")
    assert proc.returncode == 2
    assert f"merge {tmp / 'other-code.json'}: ran other code or data than " in proc.stderr

    master, _broke, mended = sharded["shas"]
    fewer = _recall(sharded["clone"], tmp / "cache-2", "history", "--shard", "2/2", "--save",
                    str(tmp / "fewer.json"), f"{master}..{mended}")  # fmt: skip
    assert fewer.returncode == 0, fewer.stderr
    proc = _merge(tmp, "1.json", "fewer.json")
    assert proc.returncode == 2
    assert f"merge {tmp / 'fewer.json'}: measured another selection than " in proc.stderr
    assert "(commits differ)" in proc.stderr

    narrower = _merge(tmp, "1.json", "2.json", extra=("--type", "glob"))
    assert narrower.returncode == 2 and "its rows are not the selection's" in narrower.stderr
    judged = _merge(tmp, "1.json", "2.json", extra=("--fail-on-loss",))
    assert judged.returncode == 2
    assert "--fail-on-loss goes with the files of a run's shards" in judged.stderr
    split = _merge(tmp, "1.json", "2.json", extra=("--split", "holdout"))
    assert split.returncode == 2
    assert "--split goes with the files of a run's shards, not a history's" in split.stderr


@needs_mirror
@needs_ctags
def test_the_files_of_a_run_and_of_a_history_are_not_merged_together(sharded):
    tmp = sharded["tmp"]
    run = _recall(sharded["clone"], tmp / "cache-1", "run", "--save", str(tmp / "run.json"))
    assert run.returncode == 0, run.stderr
    proc = _merge(tmp, "1.json", "run.json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"merge {tmp / 'run.json'}: the file of a run shard, and " in proc.stderr
    by = _merge(tmp, "run.json", extra=("--by", "type"))
    assert by.returncode == 2 and "--by goes with the files of a history's shards" in by.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--shard", "1/2"), "--shard needs --save FILE"),
        (("--save", "x.json"), "--save goes with --shard K/N"),
        (("--shard", "1/2", "--save", "x.json", "--json"), "a shard prints no history"),
        (("--shard", "1/2", "--save", "x.json", "--by", "type"), "give --by to recall merge"),
        (("--shard", "0/2", "--save", "x.json"), "give K/N with 1 <= K <= N"),
    ],
)
def test_a_history_shard_that_could_only_print_a_partial_history_is_refused(
    flags, message, tmp_path
):
    proc = run_cli("history", "--tags", *flags, "--cache", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr
    assert not Path(tmp_path, "x.json").exists()


@needs_mirror
@needs_ctags
def test_a_history_shard_whose_ranks_contradict_its_top_lists_is_refused(sharded):
    """Issue 42 item 6: a shard's file gets the results cache's check on read."""
    tmp = sharded["tmp"]
    data = orjson.loads((tmp / "2.json").read_bytes())
    part = next(p for p in data["parts"] if p["run"] is not None)
    results = part["run"]["results"]
    i = next(i for i, r in enumerate(results) if r[0] != 1 and r[1])
    results[i][0] = 1
    (tmp / "contradicts.json").write_bytes(orjson.dumps(data))
    proc = _merge(tmp, "1.json", "contradicts.json")
    assert (proc.returncode, proc.stdout) == (2, "")
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"recall: merge {tmp / 'contradicts.json'}: parts[")
    assert f"run: results[{i}] (" in line and "rank 1, but its top list has the source at" in line
