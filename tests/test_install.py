"""recall as its users install it (issue 32): a wheel built from the working tree, installed
in a fresh venv outside the checkout by the CI recipe's own steps (docs/ci.md), run from
other folders and in a clone of a real finder; and `make recall ARGS=--json`, whose stdout
must be the report alone.

These build a wheel, download its dependencies' wheels once (the versions this venv has)
and build fzy: about a minute, so `make test` leaves them to `make test-install`, which
CI runs (.ci/run)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import git
import pytest
from conftest import ROOT, mirror_dir, needs_ctags, needs_mirror

from recall import __version__

pytestmark = [pytest.mark.install, needs_mirror, needs_ctags]

DIST = "recall-harness"
CI_DOC = ROOT / "docs" / "ci.md"


@dataclass(frozen=True)
class Job:
    """One job of a workflow in docs/ci.md: its environment (the workflow's and its own;
    None for a value GitHub fills in from an expression, `${{ ... }}`) and the shell of
    each named `run:` step, in order, as GitHub Actions runs it."""

    env: dict[str, str | None]
    steps: dict[str, str]

    def environment(self, supplied: dict[str, str]) -> dict[str, str]:
        """The job's variables with those GitHub fills in supplied, as it would supply
        them: the doc and the test must agree on which those are."""
        filled = {name for name, value in self.env.items() if value is None}
        assert filled == set(supplied), f"{CI_DOC}: the job's filled-in variables are {filled}"
        return {name: supplied.get(name, value or "") for name, value in self.env.items()}


def workflows() -> list[dict[str, Job]]:
    """Each yaml block of docs/ci.md as its jobs: the doc is what the tests run, so they
    cannot drift apart."""
    doc = CI_DOC.read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert blocks, f"{CI_DOC}: no yaml block"
    return [_jobs(block.splitlines()) for block in blocks]


def _jobs(lines: list[str]) -> dict[str, Job]:
    """A workflow's jobs, read by indentation: the `env:` maps at the top and in each job,
    each job's named `run: |` steps."""
    top_env: dict[str, str | None] = {}
    jobs: dict[str, tuple[dict[str, str | None], dict[str, str]]] = {}
    job = None
    in_jobs = False
    for i, line in enumerate(lines):
        if line == "jobs:":
            in_jobs = True
        named = re.match(r"  ([\w-]+):$", line)
        if in_jobs and named:
            job = named.group(1)
            jobs[job] = ({}, {})
        env = re.match(r"(\s*)env:$", line)
        if env:
            into = top_env if not env.group(1) else jobs[job or ""][0]
            for text in lines[i + 1 :]:
                if len(text) - len(text.lstrip()) <= len(env.group(1)):
                    break
                if text.strip().startswith("#"):
                    continue
                key, value = text.strip().split(":", 1)
                value = re.sub(r"\s+#.*$", "", value).strip().strip('"')
                into[key] = None if "${{" in value else value
        run = re.match(r"(\s*)run: \|$", line)
        if not run:
            continue
        name = re.match(r"\s*- name: (.+)$", lines[i - 1])
        assert name and job, f"{CI_DOC}: a run step without a name before it: {line!r}"
        indent = len(run.group(1))
        body = []
        for text in lines[i + 1 :]:
            if text.strip() and len(text) - len(text.lstrip()) <= indent:
                break
            body.append(text[indent + 2 :])
        jobs[job][1][name.group(1)] = "\n".join(body).strip() + "\n"
    return {name: Job({**top_env, **env}, steps) for name, (env, steps) in jobs.items()}


def workflow_steps() -> dict[str, str]:
    """The pull request workflow's steps (the first yaml block's one job)."""
    (job,) = workflows()[0].values()
    return job.steps


def run_step(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """A step as GitHub Actions runs `run:` with its default shell."""
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _source_copy(dest: Path) -> Path:
    """What a checkout of recall holds for a build: the package, the metadata and the
    top-level suite files that recall/suite/ links to."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    for link in (ROOT / "recall" / "suite").iterdir():
        shutil.copy(ROOT / link.name, dest / link.name)
    shutil.copytree(
        ROOT / "recall", dest / "recall", symlinks=True,
        ignore=shutil.ignore_patterns("__pycache__"),
    )  # fmt: skip
    return dest


EPOCH = "1700000000"  # SOURCE_DATE_EPOCH, as `make wheel` sets it from the last commit


def _build_wheel(source: Path, *args: str) -> None:
    """`make wheel`'s build (offline, with this venv's setuptools), in source."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         *args, "."], cwd=source, env={**os.environ, "SOURCE_DATE_EPOCH": EPOCH},
        check=True, capture_output=True, text=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A wheel of recall built from the working tree (offline, with this venv's
    setuptools), and beside it its dependencies' wheels at the versions installed here."""
    source = _source_copy(tmp_path_factory.mktemp("source") / "recall")
    house = tmp_path_factory.mktemp("wheelhouse")
    _build_wheel(source, "-w", str(house))
    (wheel,) = house.glob("recall_harness-*.whl")
    pins = house / "constraints.txt"
    installed = {d.metadata["Name"]: d.version for d in metadata.distributions()}
    pins.write_text("".join(f"{n}=={v}\n" for n, v in sorted(installed.items()) if n != DIST))
    got = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "-c",
         str(pins), "-d", str(house), str(wheel)], capture_output=True, text=True,
    )  # fmt: skip
    if got.returncode != 0:
        pytest.skip(f"the dependencies' wheels cannot be downloaded: {got.stderr[-300:]}")
    return wheel, house


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory, wheelhouse, real_cache) -> dict[str, str]:
    """A runner's environment after docs/ci.md's "Install recall" step: `python` on PATH,
    RECALL_SPEC naming the wheel, pip offline with the wheelhouse, and the venv's bin
    added to PATH through $GITHUB_PATH."""
    wheel, house = wheelhouse
    temp = tmp_path_factory.mktemp("runner")
    shim = temp / "shim"
    shim.mkdir()
    (shim / "python").symlink_to(sys.executable)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))},
        "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
        "RUNNER_TEMP": str(temp), "GITHUB_PATH": str(temp / "github_path"),
        "GITHUB_STEP_SUMMARY": str(temp / "summary.md"), "RECALL_SPEC": str(wheel),
        "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(house), "RECALL_CACHE": str(real_cache),
        "RECALL_MIRROR": str(mirror_dir()),
    }  # fmt: skip
    proc = run_step(workflow_steps()["Install recall"], temp, env)
    assert proc.returncode == 0, proc.stderr
    added = Path(env["GITHUB_PATH"]).read_text().split()
    env["PATH"] = os.pathsep.join([*added, env["PATH"]])
    return env


def test_two_builds_of_the_wheel_are_the_same_bytes_and_leave_only_ignored_files(
    wheelhouse, tmp_path
):
    """Issue 44 item 10: `pip wheel` twice gave two different wheels, and the wheel it
    leaves in the tree was not git-ignored. A second copy of the source, its files dated
    otherwise, built as `make wheel` builds, gives the fixture's very bytes; and every file
    the build leaves in the tree (the wheel, build/, the egg-info) is ignored. (The files'
    modes are the checkout's: package data keeps them, so a clone made under umask 077
    builds another wheel.)"""
    wheel, _house = wheelhouse
    source = _source_copy(tmp_path / "recall")
    before = {p.relative_to(source) for p in source.rglob("*")}
    for path in source.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, (946684800, 946684800))  # 2000-01-01: not the first copy's times
    _build_wheel(source)
    (again,) = source.glob("recall_harness-*.whl")
    assert again.read_bytes() == wheel.read_bytes()
    made = {p.relative_to(source) for p in source.rglob("*")} - before
    # each new folder once, named as a folder: a pattern such as `build/` matches only a
    # folder, and the clone holding .gitignore may have none of that name to tell git so
    left = sorted(
        str(p) + ("/" if (source / p).is_dir() else "") for p in made if p.parent not in made
    )
    assert "recall_harness-0.1.0-py3-none-any.whl" in left
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", *left], cwd=ROOT, capture_output=True, text=True
    )  # fmt: skip
    assert sorted(ignored.stdout.split()) == left


PR_STEP = "recall against the target branch"


def test_the_workflow_installs_recall_first_and_then_runs_it_against_the_target_branch():
    (pull_request, matrix) = workflows()
    (job,) = pull_request.values()
    assert list(job.steps) == ["Install recall", PR_STEP]
    run = 'recall --base "origin/$GITHUB_BASE_REF" --fail-on-loss --markdown >> '
    assert run + '"$GITHUB_STEP_SUMMARY"' in job.steps[PR_STEP]
    assert list(matrix) == ["shard", "merge"]
    assert [list(j.steps) for j in matrix.values()] == [
        ["Install recall", "recall shard"],
        ["Install recall", "recall merge"],
    ]
    for workflow in (pull_request, matrix):
        for j in workflow.values():  # the shell alone: nothing for Actions to fill in
            assert "${{" not in "".join(j.steps.values())
            assert j.steps["Install recall"] == job.steps["Install recall"]


def test_the_installed_wheel_runs_from_any_folder_with_its_packaged_suite(runner, tmp_path):
    """Issue 32 item 1: outside recall's checkout, recall said `corpus.json: cannot read`."""
    venv = Path(runner["RUNNER_TEMP"], "recall")
    assert shutil.which("recall", path=runner["PATH"]) == str(venv / "bin" / "recall")
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import recall; print(recall.__file__)"],
        cwd=tmp_path, env=runner, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(venv)
    version = run_step("recall --version", tmp_path, runner)
    assert version.stdout == f"recall {__version__}\n"
    proc = run_step("recall --repo gin --type abbr3 --json", tmp_path, runner)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    for key, name in (("corpus_sha256", "corpus.json"), ("queries_sha256", "queries.tsv")):
        assert report["meta"][key] == hashlib.sha256((ROOT / name).read_bytes()).hexdigest()
    (run,) = report["runs"]
    assert run["n"] == 84 and run["first"] > 0
    assert not list(tmp_path.iterdir())  # nothing written where it ran


GIN_ABBR3 = 84  # gin's abbr3 rows in queries.tsv


def _small_suite(where: Path, repos: tuple[str, ...], rows: int | None) -> None:
    """Suite files beside recall.toml in where: the pins of repos, and of every committed
    set their first `rows` rows a repo (None: gin's abbr3 rows of the default set alone;
    a typing set's first sequences whole)."""
    pins = json.loads((ROOT / "corpus.json").read_bytes())
    (where / "corpus.json").write_text(json.dumps({repo: pins[repo] for repo in repos}))
    for name in ("queries.tsv", "typed.tsv", "paths.tsv", "typing.tsv"):
        if rows is None and name != "queries.tsv":
            continue
        head, *body = (ROOT / name).read_text().splitlines(keepends=True)
        kept = []
        for repo in repos:
            mine = [line for line in body if line.split("\t")[0] == repo]
            if rows is None:
                mine = [line for line in mine if line.split("\t")[2] == "abbr3"]
            elif name == "typing.tsv":  # whole sequences: (repo, sequence kind, source)
                first = list(dict.fromkeys((ln.split("\t")[1], ln.split("\t")[4]) for ln in mine))
                picked = set(first[: max(1, rows // 8)])
                mine = [ln for ln in mine if (ln.split("\t")[1], ln.split("\t")[4]) in picked]
            else:
                mine = mine[:rows]
            kept += mine
        (where / name).write_text(head + "".join(kept))


def test_the_ci_recipe_runs_as_written_in_a_clone_of_fzy_whose_only_branch_is_master(
    runner, fzy_origin, tmp_path
):
    """Issue 44 item 1: docs/ci.md ran `recall --base origin/main`; fzy's default branch
    is master, so the job died with `--base origin/main: not a commit`, and this test
    passed only because it made refs/remotes/origin/main itself. Now: a clone of fzy as a
    user makes it (master its only branch), the pull request's head a detached commit as
    actions/checkout leaves it (fzy with its word and capital bonuses 0, the recall.toml
    `recall init --preset fzy` writes, gin's abbr3 rows as its suite), no ref made by the
    test, and GITHUB_BASE_REF=master as GitHub sets it. The step builds master and the
    head, writes the Markdown report to the summary alone, shows the verdict and the
    counts in the log (item 2), and fails on the lost #1."""
    clone = tmp_path / "fzy"
    subprocess.run(["git", "clone", "--quiet", str(fzy_origin), str(clone)], check=True)
    refs = subprocess.run(["git", "for-each-ref", "--format=%(refname)"], cwd=clone,
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert [r for r in refs.split() if not r.startswith("refs/tags/")] == [
        "refs/heads/master", "refs/remotes/origin/HEAD", "refs/remotes/origin/master",
    ]  # fmt: skip
    init = run_step("recall init --preset fzy", clone, runner)
    assert init.returncode == 0, init.stderr
    _small_suite(clone, ("gin",), None)
    config = clone / "src" / "config.def.h"
    text = config.read_text()
    for bonus in ("SCORE_MATCH_WORD 0.8", "SCORE_MATCH_CAPITAL 0.7"):
        assert f"#define {bonus}" in text
        text = text.replace(f"#define {bonus}", f"#define {bonus.split()[0]} 0")
    config.write_text(text)
    who = {"GIT_AUTHOR_NAME": "pr", "GIT_AUTHOR_EMAIL": "pr@example.com",
           "GIT_COMMITTER_NAME": "pr", "GIT_COMMITTER_EMAIL": "pr@example.com"}  # fmt: skip
    for argv in (["checkout", "--quiet", "--detach"], ["add", "-A"],
                 ["commit", "--quiet", "-m", "No word or capital bonus"]):  # fmt: skip
        subprocess.run(["git", *argv], cwd=clone, env={**os.environ, **who}, check=True)
    after = subprocess.run(["git", "for-each-ref", "--format=%(refname)"], cwd=clone,
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert after == refs  # the test made no ref: HEAD is detached, as on a pull request

    env = {**runner, "GITHUB_BASE_REF": "master",
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}  # fmt: skip
    proc = run_step(workflow_steps()[PR_STEP], clone, env)
    summary = (tmp_path / "summary.md").read_text()
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == f"recall {__version__}\n"  # the report went to the summary alone
    assert summary.startswith("#") and "base origin/master" in summary
    assert f"{GIN_ABBR3} sourced queries" in summary
    verdict, counts, failed = proc.stderr.splitlines()[-3:]
    master = git.Repo(clone).commit("master").hexsha[:12]
    head = f"recall: candidate against base origin/master ({master})"
    assert verdict.startswith(f"{head}: verdict (McNemar's exact test, two-sided, alpha 0.05): #1 ")
    lost = re.fullmatch(
        rf"{re.escape(head)}: lost #1 (\d+), lost the top 10 (\d+), gained #1 \d+, entered "
        r"the top 10 \d+",
        counts,
    )
    assert lost and int(lost.group(1)) > 0, counts
    assert failed.startswith(f"recall: --fail-on-loss: exit 1: candidate: {lost.group(1)} lost #1")
    assert re.search(r"## Lost #1: [1-9]", summary)


SHARDS = 3
MATRIX_REPOS = ("gin", "ripgrep", "pytest")  # the three repos every committed set has
MATRIX_TAGS = "0.[5-7]"  # fzy 0.5, 0.6 and 0.7: three commits to build


def _checkout(source: Path, workspace: Path) -> Path:
    """actions/checkout on a fresh runner: the same workspace path for every job (as
    $GITHUB_WORKSPACE is), made anew from the repository."""
    shutil.rmtree(workspace, ignore_errors=True)
    subprocess.run(["git", "clone", "--quiet", str(source), str(workspace)], check=True)
    return workspace


def _without_seconds(data: dict) -> dict:
    """A report or a history without what differs between runs of the same numbers."""
    for item in [*data.get("runs", []), *data.get("commits", [])]:
        for key in ("index_s", "query_s", "cached", "built"):
            item.pop(key, None)
    for run in data.get("effort", {}).get("runs", []):
        run.pop("index_s", None)
    return data


def test_the_matrix_recipe_merges_three_shard_jobs_into_the_unsharded_reports(
    runner, fzy_origin, tmp_path
):
    """docs/ci.md's matrix: a history of three fzy releases and a full run of every
    committed set, over three shard jobs and a merge job, each on a fresh runner (a
    folder, a runner temp and a cache of its own; the checkout at one workspace path, as
    GitHub gives every job), the shard files passed on as artifacts. The merge job's
    reports are the unsharded commands' (seconds aside). recall is installed once, by the
    "Install recall" step that every job of the doc runs alike (the runner fixture)."""
    started = time.monotonic()
    jobs = workflows()[1]
    upstream = tmp_path / "upstream"
    subprocess.run(["git", "clone", "--quiet", str(fzy_origin), str(upstream)], check=True)
    assert run_step("recall init --preset fzy", upstream, runner).returncode == 0
    _small_suite(upstream, MATRIX_REPOS, 8)
    who = {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.com",
           "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.com"}  # fmt: skip
    for argv in (["add", "-A"], ["commit", "--quiet", "-m", "recall in CI"]):
        subprocess.run(["git", *argv], cwd=upstream, env={**os.environ, **who}, check=True)
    workspace = tmp_path / "workspace" / "fzy"

    def machine(name: str, supplied: dict[str, str], job: str) -> tuple[dict[str, str], Path]:
        folder = tmp_path / name
        (folder / "temp").mkdir(parents=True)
        env = {**runner, **jobs[job].environment(supplied), "RUNNER_TEMP": str(folder / "temp"),
               "RECALL_CACHE": str(folder / "cache"),
               "GITHUB_STEP_SUMMARY": str(folder / "summary.md")}  # fmt: skip
        return env, folder

    artifacts = tmp_path / "artifacts"
    for k in range(1, SHARDS + 1):
        env, folder = machine(f"shard-{k}", {"TAGS": MATRIX_TAGS, "SHARD": str(k)}, "shard")
        assert env["SHARDS"] == str(SHARDS)
        checkout = _checkout(upstream, workspace)
        proc = run_step(jobs["shard"].steps["recall shard"], checkout, env)
        assert proc.returncode == 0, proc.stderr
        assert f"recall: history shard {k}/{SHARDS}: " in proc.stdout
        saved = Path(env["RUNNER_TEMP"]) / "shards"  # outside the checkout, whose content
        assert not (checkout / "shards").exists()  # each shard's run digests alike
        shutil.copytree(saved, artifacts / f"recall-shard-{k}")  # upload
        assert sorted(p.name for p in saved.iterdir()) == sorted(
            [f"history-{k}.json", *(f"run-{s}-{k}.json" for s in env["SETS"].split())]
        )

    env, folder = machine("merge", {"TAGS": MATRIX_TAGS}, "merge")
    checkout = _checkout(upstream, workspace)
    for artifact in artifacts.iterdir():  # download-artifact, merge-multiple
        shutil.copytree(artifact, checkout / "shards", dirs_exist_ok=True)
    proc = run_step(jobs["merge"].steps["recall merge"], checkout, env)
    assert proc.returncode == 0, proc.stderr
    summary = (folder / "summary.md").read_text()
    sets = env["SETS"].split()
    assert summary.count("\n## ") >= 1 + len(sets) and "recall history: 3 commits" in summary

    # the same numbers as JSON, merged (in the merge job) and unsharded (on a runner of
    # its own): the history and every set's run
    whole_env, _folder = machine("whole", {"TAGS": MATRIX_TAGS}, "merge")
    whole = _checkout(upstream, tmp_path / "whole-workspace" / "fzy")
    pairs = [("shards/history-*.json", f'history --tags "{MATRIX_TAGS}"')]
    pairs += [(f"--queries {s} shards/run-{s}-*.json", f"--queries {s}") for s in sets]
    for merged_args, whole_args in pairs:
        merged = run_step(f"recall merge {merged_args} --json", checkout, env)
        assert merged.returncode == 0, merged.stderr
        unsharded = run_step(f"recall {whole_args} --json", whole, whole_env)
        assert unsharded.returncode == 0, unsharded.stderr
        a, b = json.loads(merged.stdout), json.loads(unsharded.stdout)
        a, b = _without_seconds(a), _without_seconds(b)
        for data in (a, b):  # where each ran: the workspaces differ
            text = json.dumps(data).replace(str(whole), str(workspace))
            data.clear()
            data.update(json.loads(text))
        assert a == b, merged_args
        if "commits" in a:  # the history: every release measured, on every repo's rows
            assert [c["refs"] for c in a["commits"]] == [["0.5"], ["0.6"], ["0.7"]]
            assert all(c["error"] is None and c["n"] > 0 for c in a["commits"])
        elif "effort" in a:
            assert a["effort"]["sequences"] > 0 and set(a["corpus"]) == set(MATRIX_REPOS)
        else:
            assert a["runs"][0]["n"] > 0 and set(a["runs"][0]["by_repo"]) == set(MATRIX_REPOS)
    print(f"matrix recipe: {time.monotonic() - started:.0f} s")


def test_make_recall_json_writes_the_report_alone_to_stdout(real_cache):
    """Issue 32 item 3: make's echo lines and the fetch's name<TAB>sha<TAB>path lines went
    to stdout before the JSON, so `make recall BASE=main ARGS=--json > x.json` did not
    parse."""
    venv = Path(sys.prefix)
    if not list(venv.glob(".installed-*")):
        pytest.skip(f"{venv} was not made by make: make would make another venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env["RECALL_CACHE"] = str(real_cache)
    proc = subprocess.run(
        ["make", "recall", f"VENV={venv}", f"PYTHON={sys.executable}", "BASE=HEAD",
         "ARGS=--json --repo gin --type abbr3 --no-regress --same-program-ok"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [run["label"].split()[0] for run in report["runs"]] == ["base", "candidate"]
    assert re.search(r"^gin\t[0-9a-f]{12}\t", proc.stderr, re.M)  # the fetch's lines
    assert f"{venv}/bin/recall" in proc.stderr  # and the commands make echoes


def test_the_presets_of_recall_s_own_code_run_from_the_installed_wheel_in_any_folder(
    runner, tmp_path
):
    """Issue 42 item 18: outside a checkout `--engine reference-paths` was refused with a
    line blaming the current folder while `--engine reference` worked: only the reference
    preset ran the installed tree. The path mode, and explain with the default engine."""
    paths = run_step("recall --engine reference-paths --queries paths --repo gin --json",
                     tmp_path, runner)  # fmt: skip
    assert paths.returncode == 0, paths.stderr
    (run,) = json.loads(paths.stdout)["runs"]
    assert run["n"] > 100 and run["first"] > 0
    explained = run_step("recall explain tstcnt --repo gin --json", tmp_path, runner)
    assert explained.returncode == 0, explained.stderr
    assert not list(tmp_path.iterdir())  # nothing written where it ran
