"""Complete identities through the CLI (issue 31): a finder's environment is declared and
in the key (class 1), the code its argv names is in the key or the run is not cached
(class 2), a cache entry edited on disk is dropped and redone (class 5), and a cache that
cannot be written loses no work (class 11)."""

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, tmpfs

from recall.cache import key_digest
from recall.finders.engine import resolve_engine
from recall.inputs.corpus import load_pins
from recall.running.identity import build_world

FINDER = r"""
import os, sys
query, names = sys.argv[1].lower(), open(sys.argv[2]).read().splitlines()
def subseq(q, n):
    it = iter(n.lower())
    return all(c in it for c in q)
hits = sorted((n for n in names if subseq(query, n)), key=lambda n: (len(n), n))
if os.environ.get("FINDER_MODE") == "longest":
    hits.reverse()
print("\n".join(hits))
"""


@pytest.fixture(scope="module")
def few(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six of gin's abbr3 rows: each run here costs six finder processes."""
    lines = (ROOT / "queries.tsv").read_text().splitlines()
    rows = [line for line in lines if line.startswith("gin\t") and "\tabbr3\t" in line][:6]
    path = tmp_path_factory.mktemp("few") / "queries.tsv"
    path.write_text("\n".join([lines[0], *rows]) + "\n")
    return path


def _finder(folder: Path, engine_extra: str = "") -> tuple[Path, Path]:
    """An executable script finder (known by its content, as `--bin`) that ranks the
    longest names first when FINDER_MODE=longest reaches it, and its engine file."""
    folder.mkdir()
    script = folder / "finder"
    script.write_text(f"#!{sys.executable}\n{FINDER}")
    script.chmod(0o755)
    engine = folder / "engine.toml"
    engine.write_text(
        '[engine]\nbin = ["/bin/false"]\nquery = ["{bin}", "{query}", "{names}"]\n'
        f'output = "lines"\n{engine_extra}'
    )
    return engine, script


def _run(
    cache: Path, few: Path, engine: Path, script: Path, *extra: str, env: dict | None = None
) -> dict:
    proc = run_cli(
        "--cache", str(cache), "--queries", str(few), "--no-regress",
        "--engine", str(engine), "--bin", str(script), "--json", *extra, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["runs"][0] | {"stderr": proc.stderr}


def test_a_variable_not_passed_never_reaches_the_finder(
    tmp_path, few, real_cache, gin, monkeypatch
):
    """Class 1: FZF_DEFAULT_OPTS-like variables change nothing unless the engine passes
    them: the finder does not see them, cached or not."""
    monkeypatch.delenv("FINDER_MODE", raising=False)
    engine, script = _finder(tmp_path / "plain")
    plain = _run(real_cache, few, engine, script)
    longest = {"FINDER_MODE": "longest"}
    again = _run(real_cache, few, engine, script, env=longest)
    forced = _run(real_cache, few, engine, script, "--no-cache", env=longest)
    assert again["cached"] and not forced["cached"]
    assert plain["first"] == again["first"] == forced["first"]


def test_a_passed_variable_is_in_the_key_so_a_new_value_is_a_new_run(
    tmp_path, few, real_cache, gin, monkeypatch
):
    """Class 1: with pass_env the finder sees the value, and a changed value misses the
    results cache instead of returning the numbers of the old one."""
    monkeypatch.delenv("FINDER_MODE", raising=False)
    engine, script = _finder(tmp_path / "passed", 'pass_env = ["FINDER_MODE"]\n')
    shortest = _run(real_cache, few, engine, script)
    longest = _run(real_cache, few, engine, script, env={"FINDER_MODE": "longest"})
    assert not longest["cached"]
    assert longest["first"] < shortest["first"]
    back = _run(real_cache, few, engine, script)
    assert back["cached"] and back["first"] == shortest["first"]


def test_doctor_and_explain_show_the_declared_environment(tmp_path, few, real_cache, gin):
    engine, _script = _finder(tmp_path / "shown", 'pass_env = ["FINDER_MODE"]\n')
    env = {"FINDER_MODE": "longest", "NOT_PASSED": "x"}
    doctor = run_cli("doctor", "--cache", str(real_cache), "--finder", str(tmp_path), env=env)
    assert "finder env TZ" in doctor.stdout and "finder env HOME" in doctor.stdout
    assert "NOT_PASSED" not in doctor.stdout
    proc = run_cli(
        "explain", "ctxjs", "--repo", "gin", "--cache", str(real_cache), "--engine", str(engine),
        "--bin", str(tmp_path / "shown" / "finder"), "--finder", str(tmp_path), env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "  FINDER_MODE=longest\n" in proc.stdout and "  LC_ALL=C.UTF-8\n" in proc.stdout
    assert "  HOME={run}/home\n" in proc.stdout and "NOT_PASSED" not in proc.stdout


HELPER = "def order(n):\n    return (len(n), n)\n"
SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[3])
from helper import order
query, names = sys.argv[1].lower(), open(sys.argv[2]).read().splitlines()
def subseq(q, n):
    it = iter(n.lower())
    return all(c in it for c in q)
print("\n".join(sorted((n for n in names if subseq(query, n)), key=order)))
"""


def _interpreted(folder: Path, extra: str = "") -> Path:
    """`python3 /abs/finder.py`: an interpreter running a script that imports a module no
    argv names (helper.py beside it)."""
    folder.mkdir()
    (folder / "finder.py").write_text(SCRIPT)
    (folder / "helper.py").write_text(HELPER)
    engine = folder / "recall.toml"
    query = f'["{{bin}}", "{folder}/finder.py", "{{query}}", "{{names}}", "{folder}"]'
    engine.write_text(
        f'[engine]\nbin = ["{sys.executable}"]\nquery = {query}\noutput = "lines"\n{extra}'
    )
    return engine


def _interpreted_run(cache: Path, few: Path, engine: Path) -> dict:
    proc = run_cli(
        "--cache", str(cache), "--queries", str(few), "--no-regress",
        "--engine", str(engine), "--finder", str(engine.parent), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["runs"][0]


WORSE = "def order(n):\n    return (-len(n), n)\n"


def test_an_interpreter_running_a_script_is_not_cached_without_inputs(
    tmp_path, few, real_cache, gin
):
    """Class 2: the key would cover python3's bytes and finder.py's, not the module it
    imports: such a finder runs every time, so an edit of the module is measured."""
    engine = _interpreted(tmp_path / "f")
    first = _interpreted_run(real_cache, few, engine)
    again = _interpreted_run(real_cache, few, engine)
    assert not first["cached"] and not again["cached"]
    (tmp_path / "f" / "helper.py").write_text(WORSE)
    edited = _interpreted_run(real_cache, few, engine)
    assert edited["first"] < first["first"]


def test_declared_inputs_make_it_cached_and_an_edit_of_one_a_new_run(
    tmp_path, few, real_cache, gin
):
    """Class 2: `inputs` (globs beside the engine file) are hashed into the key."""
    engine = _interpreted(tmp_path / "g", 'inputs = ["*.py"]\n')
    first = _interpreted_run(real_cache, few, engine)
    again = _interpreted_run(real_cache, few, engine)
    assert again["cached"] and again["first"] == first["first"]
    (tmp_path / "g" / "helper.py").write_text(WORSE)
    edited = _interpreted_run(real_cache, few, engine)
    assert not edited["cached"] and edited["first"] < first["first"]


def test_inputs_that_name_no_file_are_one_line_exit_2(tmp_path, real_cache, gin):
    engine = _interpreted(tmp_path / "h", 'inputs = ["missing/*.py"]\n')
    proc = run_cli("--cache", str(real_cache), "--repo", "gin", "--engine", str(engine),
                   "--finder", str(engine.parent))  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert f"recall: {engine}: [engine] inputs: 'missing/*.py' names no file" in proc.stderr


def test_a_results_entry_edited_on_disk_is_dropped_and_the_run_redone(
    tmp_path, few, real_cache, gin
):
    """Class 5: a rank edited in the entry, still well-formed: one warning line naming the
    entry, the run made again, and the right numbers."""
    engine, script = _finder(tmp_path / "edited", "# this test's own key\n")
    before = set((real_cache / "results").glob("*.json"))
    first = _run(real_cache, few, engine, script)
    (entry,) = set((real_cache / "results").glob("*.json")) - before
    head, _, body = entry.read_bytes().partition(b"\n")
    data = json.loads(body)
    missed = next(i for i, r in enumerate(data["results"]) if r[0] != 1 and r[1])
    data["results"][missed][0] = 1  # a #1 while its top list starts with another name
    entry.write_bytes(head + b"\n" + json.dumps(data).encode())
    again = _run(real_cache, few, engine, script)
    assert not again["cached"] and again["first"] == first["first"]
    assert again["stderr"].count("\n") == 1 and str(entry) in again["stderr"]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tiny tmpfs needs root")
def test_a_full_cache_disk_loses_no_work_the_report_is_printed(tmp_path, few, gin):
    """Class 11: when the cache fills while results and the ceiling are written, each
    is one warning line naming the entry, and the report is printed in full, exit 0."""
    with tmpfs(tmp_path / "full", "16m") as mount:
        cache = mount / "cache"
        engine, script = _finder(tmp_path / "full-finder")
        _run(cache, few, engine, script)  # the checkout, its symbols, the interpreter
        shutil.rmtree(cache / "results")
        shutil.rmtree(cache / "ceilings")
        with open(mount / "filler", "wb") as filler, contextlib.suppress(OSError):
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
        proc = run_cli(
            "--cache", str(cache), "--queries", str(few), "--no-regress",
            "--engine", str(engine), "--bin", str(script),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "I/O" not in proc.stderr and "#1" in proc.stdout
        warnings = proc.stderr.splitlines()
        assert warnings and all("No space left on device" in line for line in warnings)
        assert any(f"{cache}/ceilings/" in line for line in warnings)
        assert any(f"{cache}/results/" in line for line in warnings)


def test_the_fixed_base_cannot_be_passed(tmp_path):
    engine = tmp_path / "e.toml"
    engine.write_text(
        '[engine]\nbin = ["fzf"]\nquery = ["{bin}", "{query}"]\npass_env = ["HOME"]\n'
    )
    proc = run_cli("--engine", str(engine), "--finder", str(ROOT), "--repo", "gin")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "pass_env: HOME is set by the harness" in proc.stderr


def test_a_compiler_is_known_by_its_content_in_the_kernel_cache_and_every_harness_key(
    tmp_path, monkeypatch
):
    # the case: cc replaced at the same path, answering --version alike, with
    # other code: the kernel cache, the kept index and the kept results all see another
    # compiler, through the one function recall.toolchain.compiler_identity
    from recall.finders.reference import kernel
    from recall.running.indexes import index_key
    from recall.running.results_cache import run_key
    from recall.toolchain import compiler_identity

    folder = tmp_path / "bin"
    folder.mkdir()
    cc = folder / "cc"
    real = shutil.which("cc")
    cc.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    cc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    engine = resolve_engine("reference", ROOT)
    pin = load_pins(ROOT / "corpus.json")["gin"]

    def keys() -> tuple[str, ...]:
        world = build_world(engine)
        assert world["compilers"] == {"cc": compiler_identity("cc")}
        return (
            compiler_identity("cc"), kernel.cache_key(),
            index_key("commit:x", engine, engine.index, pin, b"a\n", ROOT),
            key_digest(run_key("commit:x", engine, {}, 5.0)),
        )  # fmt: skip

    before = keys()
    version = subprocess.run([str(cc), "--version"], capture_output=True, text=True).stdout
    cc.write_text(f'#!/bin/sh\n# another build of the same release\nexec {real} "$@"\n')
    after = keys()
    assert subprocess.run([str(cc), "--version"], capture_output=True, text=True).stdout == version
    assert all(a != b for a, b in zip(before, after, strict=True)), (before, after)
