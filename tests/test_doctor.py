import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, fzy_clone, make_repo, mirror_dir, needs_mirror, run_cli

from recall.inputs.corpus import Pin, checkout_path
from recall.workflows.doctor import (
    FAIL,
    OK,
    WARN,
    check_cache,
    check_corpora,
    check_sources,
    healthy,
)


def _doctor(cache: Path, *extra: str, env: dict | None = None):
    return run_cli(
        "doctor", "--cache", str(cache), "--corpus", str(ROOT / "corpus.json"),
        "--queries", str(ROOT / "queries.tsv"), *extra, env=env,
    )  # fmt: skip


def _line(stdout: str, name: str) -> str:
    return next(line for line in stdout.splitlines() if line[6:].startswith(name + " "))


def _check(stdout: str, name: str) -> tuple[str, str]:
    """A check's status and detail, without the columns' padding."""
    line = _line(stdout, name)
    return line[:4].strip(), line[6:].removeprefix(name).strip()


def test_doctor_passes_with_a_mirror_and_names_each_corpus(real_cache, gin, pins):
    proc = _doctor(real_cache, "--mirror", str(mirror_dir()))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _line(proc.stdout, "corpus gin").startswith("ok ")
    assert f"{gin.pin.sha[:12]} fetched, frozen" in _line(proc.stdout, "corpus gin")
    assert f"has {len(pins)} of {len(pins)} pins" in _line(proc.stdout, "mirror")
    assert len(pins) == 12
    assert "JSON output" in _line(proc.stdout, "ctags")
    spawn = _line(proc.stdout, "process start")
    assert spawn.startswith("ok ") and "posix_spawn (glibc " in spawn  # not Popen
    assert proc.stdout.splitlines()[-1].startswith("recall doctor: the default run has")


@needs_mirror
@pytest.mark.slow
def test_doctor_without_ctags_fails_with_the_install_command_and_fzf_only_warns(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(shutil.which("git"), bin_dir / "git")
    os.symlink(shutil.which("cc"), bin_dir / "cc")  # the reference finder's kernel
    proc = _doctor(
        tmp_path / "cache", "--mirror", str(mirror_dir() or tmp_path),
        env={"PATH": str(bin_dir)},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    ctags = lines.index(_line(proc.stdout, "ctags"))
    assert lines[ctags].startswith("FAIL")
    assert lines[ctags + 1].strip() == "fix: apt-get install universal-ctags"
    assert _line(proc.stdout, "preset fzf").startswith("warn")
    assert _line(proc.stdout, "preset reference").startswith("ok ")
    assert "1 problem(s)" in lines[-1]


def test_unwritable_cache_is_a_failure_naming_the_folder(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    check = check_cache(blocker / "cache")
    assert check.status == FAIL and str(blocker / "cache") in check.detail
    assert check_cache(tmp_path / "fresh").status == OK


def test_unfetched_corpus_warns_while_reachable_and_fails_when_not(tmp_path):
    upstream = make_repo(tmp_path / "up", {"a.py": "def alpha():\n    pass\n"})
    good = Pin("demo", (tmp_path / "up").as_uri(), upstream.head.commit.hexsha, "python")
    gone = Pin("gone", (tmp_path / "nowhere").as_uri(), "a" * 40, "python")
    pins = {"demo": good, "gone": gone}
    checks, reachable = check_sources({"demo": good}, None)
    assert [c.status for c in checks] == [OK] and reachable == {"demo"}
    checks, reachable = check_sources(pins, tmp_path / "empty-mirror")
    assert checks[0].detail.endswith("has 0 of 2 pins; lacks demo, gone")
    assert [c.status for c in checks] == [WARN, OK, WARN] and reachable == {"demo"}
    cache = tmp_path / "cache"
    checkout_path(cache, good).mkdir(parents=True)
    result = check_corpora(pins, cache, {"demo"})
    assert [(c.status, c.detail.split(";")[0]) for c in result] == [
        (WARN, "checkout incomplete"),
        (FAIL, "not fetched"),
    ]
    assert result[1].fix == "recall fetch gone"
    assert not healthy(result) and healthy(result[:1])


def _cut_path(tmp_path: Path, *programs: str) -> str:
    """A PATH of one folder holding only the named programs of this machine."""
    bin_dir = tmp_path / "-".join(("bin", *programs))
    bin_dir.mkdir()
    for program in programs:
        os.symlink(shutil.which(program), bin_dir / program)
    return str(bin_dir)


@pytest.mark.slow
def test_doctor_without_gopls_and_go_says_missing_with_the_install_command(tmp_path):
    path = _cut_path(tmp_path, "git", "ctags")
    proc = _doctor(tmp_path / "cache", "--mirror", str(tmp_path), env={"PATH": path})
    lines = proc.stdout.splitlines()
    gopls = lines.index(_line(proc.stdout, "preset gopls"))
    assert lines[gopls].startswith("warn") and "ok  preset gopls" not in proc.stdout
    assert lines[gopls].endswith("not on PATH: gopls, go (gopls needs go)")
    assert lines[gopls + 1].strip() == "fix: apt-get install gopls golang-go"
    tsserver = _line(proc.stdout, "preset tsserver")
    assert tsserver.startswith("warn") and "not on PATH: node, npm" in tsserver


def test_a_run_of_an_engine_whose_programs_are_missing_refuses_before_fetching(tmp_path):
    path = _cut_path(tmp_path, "git", "ctags")
    cache = tmp_path / "cache"
    proc = run_cli(
        "--engine", "gopls", "--repo", "gin", "--cache", str(cache), "--mirror", str(tmp_path),
        env={"PATH": path},
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "recall: preset:gopls: not on PATH: gopls, go (gopls needs go); "
        "install: apt-get install gopls golang-go\n"
    )
    assert not (cache / "corpora").exists()  # nothing fetched


@pytest.mark.slow
def test_a_python_engine_whose_module_is_not_importable_gets_the_pip_line_not_a_traceback(
    tmp_path,
):
    finder = tmp_path / "finder"
    make_repo(finder, {"recall.toml": '[engine]\nkind = "python"\ncallable = "nosuchlib.x:find"\n'})
    cache = tmp_path / "cache"
    proc = run_cli(
        "--repo", "gin", "--cache", str(cache), "--finder", str(finder),
        "--corpus", str(ROOT / "corpus.json"), "--queries", str(ROOT / "queries.tsv"), cwd=finder,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    first = proc.stderr.splitlines()
    assert len(first) == 1 and first[0].startswith(f"recall: {finder / 'recall.toml'}: ")
    assert "cannot import nosuchlib; install: " in first[0]
    assert first[0].endswith(" -m pip install 'nosuchlib'")
    assert not (cache / "corpora").exists()


@pytest.mark.slow
def test_a_language_server_without_its_python_package_is_refused_with_the_pip_line(tmp_path):
    """Without the peers extra, a server started as `{python} -c "from PKG... import"` used
    to fail every query with a traceback's text; now the run refuses up front."""
    engine = tmp_path / "lsp.toml"
    engine.write_text(
        '[engine]\nkind = "lsp"\nlanguages = ["python"]\n'
        'server = ["{python}", "-c", "from nosuch_server.cli import cli; cli()"]\n'
    )
    cache = tmp_path / "cache"
    proc = run_cli("--engine", str(engine), "--repo", "pytest", "--cache", str(cache))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"recall: {engine}: ") and proc.stderr.count("\n") == 1
    assert "cannot import nosuch_server; install: " in proc.stderr
    assert not (cache / "corpora").exists()


def test_doctor_in_fzys_clone_probes_its_engine_and_names_a_broken_query_line(
    real_cache, gin, fzy_origin, tmp_path
):
    """Issue 44 item 3: `recall doctor` in a finder's repo never read its recall.toml and
    said all was well. It reads it, builds nothing (an unbuilt program is said as such),
    and runs one probe query through it: ok, or fzy's own error and the line to edit."""
    clone = fzy_clone(fzy_origin, tmp_path / "fzy")
    pins = json.loads((ROOT / "corpus.json").read_text())
    (clone / "corpus.json").write_text(json.dumps({"gin": pins["gin"]}))  # a quick probe
    rows = (ROOT / "queries.tsv").read_text().splitlines(keepends=True)
    (clone / "queries.tsv").write_text(rows[0] + "".join(r for r in rows if r.startswith("gin\t")))
    toml = clone / "recall.toml"
    toml.write_text(toml.read_text().replace("--show-matches={query}", "--nosuchflag={query}"))
    flags = ("doctor", "--cache", str(real_cache), "--mirror", str(mirror_dir()))
    unbuilt = run_cli(*flags, cwd=clone)
    assert unbuilt.returncode == 2
    assert _check(unbuilt.stdout, "engine probe") == (
        "FAIL",
        f"{clone / 'fzy'}: not built (the doctor builds nothing)",
    )
    assert not (clone / "fzy").exists()
    subprocess.run(["make"], cwd=clone, check=True, capture_output=True)
    broken = run_cli(*flags, cwd=clone)
    assert broken.returncode == 2
    status, line = _check(broken.stdout, "engine probe")
    number = toml.read_text().splitlines().index('query = ["{bin}", "--nosuchflag={query}"]') + 1
    assert status == "FAIL" and line.startswith("gin '")
    assert f"{clone / 'fzy'}: unrecognized option '--nosuchflag=" in line
    assert line.endswith(
        f'the line: {toml}:{number}: query = ["{{bin}}", "--nosuchflag={{query}}"]'
    )
    assert _check(broken.stdout, "engine") == ("ok", f"{toml} (kind process)")
    toml.write_text(toml.read_text().replace("--nosuchflag=", "--show-matches="))
    fixed = run_cli(*flags, cwd=clone)
    assert fixed.returncode == 0, fixed.stdout
    status, line = _check(fixed.stdout, "engine probe")
    assert status == "ok"
    assert re.fullmatch(
        r"gin '\w+' \(source \w+\): exit 0, \d+ names? listed, the source #\d+", line
    )
