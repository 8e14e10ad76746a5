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
from importlib import metadata
from pathlib import Path

import git
import pytest
from conftest import ROOT, mirror_dir, needs_ctags, needs_mirror

from recall import __version__

pytestmark = [pytest.mark.install, needs_mirror, needs_ctags]

DIST = "recall-harness"
CI_DOC = ROOT / "docs" / "ci.md"


def workflow_steps() -> dict[str, str]:
    """The shell of each named `run:` step of docs/ci.md's workflow, in order, as GitHub
    Actions runs it: the doc is what the test runs, so they cannot drift apart."""
    doc = CI_DOC.read_text()
    block = re.search(r"```yaml\n(.*?)```", doc, re.S)
    assert block, f"{CI_DOC}: no yaml block"
    steps: dict[str, str] = {}
    lines = block.group(1).splitlines()
    for i, line in enumerate(lines):
        run = re.match(r"(\s*)run: \|$", line)
        if not run:
            continue
        name = re.match(r"\s*- name: (.+)$", lines[i - 1])
        assert name, f"{CI_DOC}: a run step without a name before it: {line!r}"
        indent = len(run.group(1))
        body = []
        for text in lines[i + 1 :]:
            if text.strip() and len(text) - len(text.lstrip()) <= indent:
                break
            body.append(text[indent + 2 :])
        steps[name.group(1)] = "\n".join(body).strip() + "\n"
    return steps


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
    left = sorted(str(p) for p in made if p.parent not in made)  # each new folder once
    assert left and "recall_harness-0.1.0-py3-none-any.whl" in left
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", *left], cwd=ROOT, capture_output=True, text=True
    )  # fmt: skip
    assert sorted(ignored.stdout.split()) == left


def test_the_workflow_installs_recall_first_and_then_runs_it_against_main():
    steps = workflow_steps()
    assert list(steps) == ["Install recall", "recall against main"]
    assert (
        'recall --base origin/main --fail-on-loss --markdown >> "$GITHUB_STEP_SUMMARY"'
        in (steps["recall against main"])
    )
    assert "${{" not in "".join(steps.values())  # the shell alone: nothing for Actions to fill


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


def test_the_ci_recipe_in_a_clone_of_fzy_reports_against_main_and_fails_on_a_loss(
    runner, fzy_origin, tmp_path
):
    """docs/ci.md's steps in a fresh clone of fzy whose main is 0.5, as a pull request's
    checkout sees it: recall builds the branch and main, writes the Markdown report to
    the step summary, and fails the step on the sources that lost #1 (GetUint8Slice on
    gin). The clone carries a suite of its own beside recall.toml: gin's abbr3 rows."""
    clone = tmp_path / "fzy"
    with git.Repo.clone_from(str(fzy_origin), clone) as repo:
        repo.git.update_ref("refs/remotes/origin/main", "0.5^{commit}")
    init = run_step("recall init --preset fzy", clone, runner)
    assert init.returncode == 0, init.stderr
    pins = json.loads((ROOT / "corpus.json").read_bytes())
    (clone / "corpus.json").write_text(json.dumps({"gin": pins["gin"]}))
    rows = (ROOT / "queries.tsv").read_text().splitlines(keepends=True)
    picked = [r for r in rows[1:] if r.startswith("gin\t") and r.split("\t")[2] == "abbr3"]
    (clone / "queries.tsv").write_text(rows[0] + "".join(picked))

    proc = run_step(workflow_steps()["recall against main"], clone, runner)
    summary = Path(runner["GITHUB_STEP_SUMMARY"]).read_text()
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == f"recall {__version__}\n"  # the report went to the summary alone
    assert summary.startswith("#") and "base origin/main" in summary
    assert re.search(r"\|\s*gin\s*\|\s*getuinsli\s*\|.*GetUint8Slice", summary), summary
    assert f"{len(picked)} sourced queries" in summary


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
