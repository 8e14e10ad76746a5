from conftest import run_cli, run_recall

from recall import __version__
from recall.cli import command_first


def test_version_flag_prints_the_harness_version():
    proc = run_recall("--version")  # the real `python -m recall`, its exit status
    assert proc.returncode == 0
    assert proc.stdout == f"recall {__version__}\n"


def test_global_flags_may_stand_before_the_command():
    assert command_first(["--mirror", "M", "fetch", "gin"]) == ["fetch", "--mirror", "M", "gin"]
    assert command_first(["--cache=C", "--corpus", "c.json", "derive", "all"]) == [
        "derive", "--cache=C", "--corpus", "c.json", "all"
    ]  # fmt: skip
    assert command_first(["--mirror", "M", "--base", "main"]) == [
        "run", "--mirror", "M", "--base", "main"
    ]  # fmt: skip
    assert command_first([]) == ["run"] and command_first(["--help"]) == ["--help"]


def test_fetch_with_the_mirror_flag_before_the_command_runs_fetch(tmp_path):
    proc = run_cli("--cache", str(tmp_path), "--corpus", "nope.json", "fetch")
    assert proc.returncode == 2 and "nope.json" in proc.stderr and "unrecognized" not in proc.stderr
