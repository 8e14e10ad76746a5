import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, run_recall
from helpers import fault_args, fault_env, fault_world, one_line_exit_2

from recall import __version__
from recall.cli import COMMANDS, build_parser, command_first
from recall.commands import SUMMARIES
from recall.errors import EXIT_INTERRUPTED


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


def test_each_command_summary_is_the_one_its_module_gives():
    for name in COMMANDS:
        sub = next(
            action for action in build_parser(name)._actions
            if isinstance(action, argparse._SubParsersAction)
        )  # fmt: skip
        helps = {action.dest: action.help for action in sub._choices_actions}
        assert helps[name] == SUMMARIES[name], name


def test_version_and_help_import_neither_numpy_nor_gitpython():
    """They answer at once (issue 32 item 8: 0.28 s, 25 times a bare interpreter): the
    heavy modules are imported only by the commands that need them."""
    for flag in ("--version", "--help"):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "recall", flag], cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
        assert "recall.cli" in imported and "argparse" in imported
        heavy = {name for name in imported if name.split(".")[0] in ("numpy", "git", "rapidfuzz")}
        assert not heavy, flag


@pytest.mark.slow
def test_ctrl_c_during_start_up_exits_130_with_one_line_and_no_traceback(tmp_path):
    """Issue 31 class 11: SIGINT while the run's modules are still being imported (here
    during a platformdirs made slow on purpose) gives `recall: interrupted` and 130."""
    slow = tmp_path / "slow" / "platformdirs"
    slow.mkdir(parents=True)
    (slow / "__init__.py").write_text(
        "import sys, time\nprint('importing platformdirs', file=sys.stderr, flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "recall", "--repo", "gin", "--cache", str(tmp_path / "cache")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": f"{tmp_path / 'slow'}{os.pathsep}{ROOT}"},
        # SIGINT at its default, as a terminal gives it, even when the suite was started in
        # the background (where the shell ignores SIGINT, and children inherit that)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == "importing platformdirs\n"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert (proc.returncode, err) == (EXIT_INTERRUPTED, "recall: interrupted\n")


# A signal from inside the process at the import of one module: the audit hook of a
# sitecustomize that the interpreter loads before it runs recall (no timing, no luck).
SIGNAL_AT_IMPORT = """
import os, signal, sys
target, signum = os.environ["SIGNAL_AT"], getattr(signal, os.environ["SIGNAL"])
sent = []
def hook(event, args):
    if event == "import" and args[0] == target and not sent:
        sent.append(target)
        open("signal-sent", "w").close()
        os.kill(os.getpid(), signum)
sys.addaudithook(hook)
"""
# The modules the start-up imports, in order, from the first after the handlers to the
# command's own; orjson's initialisation crashed (a segfault) under a KeyboardInterrupt.
START_UP = (
    "recall.cli", "argparse", "recall.terminal", "recall.commands._flags",
    "recall.commands._output", "numpy", "git", "orjson", "recall.workflows.run", "platformdirs",
)  # fmt: skip


def _console_script() -> list[str]:
    """The command pip writes for pyproject's console script `recall`."""
    import tomllib

    target = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["recall"]
    module, function = target.split(":")
    return ["-c", f"import sys; from {module} import {function}; sys.exit({function}())"]


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["python -m recall", "console script"])
@pytest.mark.parametrize("module", START_UP)
def test_a_signal_at_any_import_of_the_start_up_is_one_line_and_its_exit_status(
    tmp_path, launcher, module
):
    """Issue 42 item 20: Ctrl-C 10 ms after start ended in a KeyboardInterrupt traceback
    (the handler came after `import recall.cli`), and at orjson's import in a segfault."""
    (tmp_path / "sitecustomize.py").write_text(SIGNAL_AT_IMPORT)
    head = ["-m", "recall"] if launcher == "python -m recall" else _console_script()
    for name, status, line in (("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")):
        proc = subprocess.run(
            [sys.executable, *head, "--repo", "gin", "--cache", str(tmp_path / "cache")],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
                 "SIGNAL_AT": module, "SIGNAL": name},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        assert (tmp_path / "signal-sent").exists(), (name, module)  # the hook saw the import
        assert (proc.returncode, proc.stderr) == (status, f"recall: {line}\n"), (name, module)
        assert proc.stdout == "" and not (tmp_path / "cache").exists()
        (tmp_path / "signal-sent").unlink()


@pytest.fixture
def world(tmp_path: Path) -> dict:
    return fault_world(tmp_path)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-3", "1e300"])
def test_a_timeout_that_is_not_a_finite_number_of_seconds_is_one_line_exit_2(world, value):
    proc = run_cli(
        *fault_args(world, f"--timeout={value}"), cwd=world["finder"], env=fault_env(world)
    )
    one_line_exit_2(proc, "--timeout")
    explain = run_cli(
        "explain", "alpha", "--repo", "tiny", "--corpus", str(world["corpus"]),
        "--cache", str(world["cache"]), "--finder", str(world["finder"]), f"--timeout={value}",
        cwd=world["finder"], env=fault_env(world),
    )  # fmt: skip
    one_line_exit_2(explain, "--timeout")


@pytest.mark.parametrize(("flag", "value"), [("--jobs", "0"), ("--jobs", "-2"), ("--bench", "0")])
def test_jobs_and_bench_reps_below_one_are_one_line_exit_2(world, flag, value):
    proc = run_cli(*fault_args(world, flag, value), cwd=world["finder"], env=fault_env(world))
    one_line_exit_2(proc, flag)
