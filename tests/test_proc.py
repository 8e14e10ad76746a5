import gc
import os
import signal
import sys
from pathlib import Path

import pytest

from recall.running.proc import Spawner, reap

PROBE = r"""
import json, os, signal, sys
print(json.dumps({
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "env": dict(os.environ),
    "session_leader": os.getsid(0) == os.getpid(),
    "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
    "stdin": sys.stdin.read(),
}))
sys.stderr.write("to stderr")
sys.exit(int(os.environ.get("CODE", "0")))
"""


def _open_descriptors() -> set[str]:
    """This process's open descriptors, once garbage no longer holds any: a test compares
    the ones its code left open with these (a count would also see a file an earlier
    test's garbage closed meanwhile, as CI's second suite once did: 17 against 29)."""
    gc.collect()
    return set(os.listdir("/proc/self/fd"))


def _run(spawner: Spawner, argv: list[str], stdin: int) -> tuple[int, bytes, bytes]:
    child = spawner.start(argv, stdin)
    outputs = []
    for fd in (child.stdout, child.stderr):
        chunks = []
        while data := os.read(fd, 1 << 16):
            chunks.append(data)
        os.close(fd)
        outputs.append(b"".join(chunks))
    return reap(child.pid), outputs[0], outputs[1]


@pytest.fixture(params=["posix_spawn", "popen"])
def make_spawner(request):
    def make(cwd: Path, env: dict[bytes, bytes]) -> Spawner:
        spawner = Spawner(str(cwd), env, use_popen=request.param == "popen")
        # on this project's machines (glibc) the fast path is the one taken
        assert (spawner._native is None) == (request.param == "popen")
        return spawner

    return make


def test_a_child_gets_exactly_its_folder_environment_session_and_stdio(make_spawner, tmp_path):
    import json

    (tmp_path / "probe.py").write_text(PROBE)
    (tmp_path / "in.txt").write_text("from stdin")
    leaked = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(leaked, True)  # a harness fd the finder must not see
    env = {b"PATH": os.environ["PATH"].encode(), b"CODE": b"3", b"ONLY": b"this"}
    spawner = make_spawner(tmp_path, env)
    try:
        with open(tmp_path / "in.txt", "rb") as stdin:
            code, out, err = _run(
                spawner, [sys.executable, "probe.py", "a b", "{x}"], stdin.fileno()
            )
    finally:
        os.close(leaked)
    seen = json.loads(out)
    assert code == 3
    assert err == b"to stderr"
    assert seen["argv"] == ["a b", "{x}"]
    assert seen["cwd"] == str(tmp_path)
    assert {k: v for k, v in seen["env"].items() if k != "LC_CTYPE"} == {
        "PATH": os.environ["PATH"], "CODE": "3", "ONLY": "this",
    }  # fmt: skip
    assert seen["session_leader"]
    assert seen["fds"] == [0, 1, 2, 3]  # stdio, and the listing's own
    assert seen["stdin"] == "from stdin"


def _signal_masks(status: str) -> dict[str, int]:
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    return {name: int(fields[name], 16) for name in ("SigIgn", "SigBlk")}


def test_a_child_inherits_no_ignored_signal_but_the_harnesss_own_and_never_sigpipe(
    make_spawner, tmp_path
):
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        code, out, _err = _run(
            make_spawner(tmp_path, {}), ["/bin/cat", "/proc/self/status"], devnull
        )
    finally:
        os.close(devnull)
    child = _signal_masks(out.decode())
    harness = _signal_masks(Path("/proc/self/status").read_text())
    assert code == 0
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # Python's own choice
    reset = (1 << (signal.SIGPIPE - 1)) | (1 << (signal.SIGXFSZ - 1))
    assert child["SigIgn"] & reset == 0  # as Popen's restore_signals does
    assert child["SigIgn"] & ~harness["SigIgn"] == 0  # nothing ignored the harness does not
    assert child["SigBlk"] == 0


def test_a_bare_name_is_found_on_the_finders_path_not_the_harnesss(make_spawner, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "only-here"
    tool.write_text("#!/bin/sh\necho found\n")
    tool.chmod(0o755)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        spawner = make_spawner(tmp_path, {b"PATH": str(bin_dir).encode()})
        assert _run(spawner, ["only-here"], devnull)[:2] == (0, b"found\n")
        with pytest.raises(FileNotFoundError):
            make_spawner(tmp_path, {b"PATH": b"/nonexistent"}).start(["only-here"], devnull)
    finally:
        os.close(devnull)


def test_a_program_that_cannot_start_is_an_oserror_and_leaks_no_descriptor(make_spawner, tmp_path):
    devnull = os.open(os.devnull, os.O_RDONLY)
    before = _open_descriptors()
    spawner = make_spawner(tmp_path, {})
    try:
        for _ in range(5):
            with pytest.raises(OSError):
                spawner.start([str(tmp_path / "missing")], devnull)
        assert set(os.listdir("/proc/self/fd")) - before == set()
    finally:
        os.close(devnull)


def test_a_killed_child_reports_minus_the_signal(make_spawner, tmp_path):
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        child = make_spawner(tmp_path, {}).start(["/bin/sleep", "30"], devnull)
        os.killpg(child.pid, signal.SIGKILL)  # its own process group
        assert reap(child.pid) == -signal.SIGKILL
        for fd in (child.stdout, child.stderr):
            os.close(fd)
    finally:
        os.close(devnull)


def test_a_piped_child_reads_the_harness_pipe_and_keeps_its_status_once_reaped(
    make_spawner, tmp_path
):
    """A batch finder starts as a per-query one does, with a pipe for its requests; its
    exit status, once seen, is kept (a second waitpid would fail or find another process)."""
    echo = "import sys\nfor line in sys.stdin:\n    print(line.strip().upper(), flush=True)\n"
    (tmp_path / "echo.py").write_text(echo + "sys.exit(5)\n")
    before = _open_descriptors()
    proc = make_spawner(tmp_path, {}).start_piped([sys.executable, "echo.py"])
    try:
        os.write(proc.stdin, b"ab\ncd\n")
        proc.close_stdin()
        out = b""
        while data := os.read(proc.stdout, 1 << 16):
            out += data
        assert out == b"AB\nCD\n"
        assert proc.wait(10) == 5
        assert (proc.poll(), proc.wait(), proc.wait(0)) == (5, 5, 5)
    finally:
        proc.close()
    assert set(os.listdir("/proc/self/fd")) - before == set()


def test_a_piped_child_still_running_at_its_deadline_is_none_until_it_ends(make_spawner, tmp_path):
    proc = make_spawner(tmp_path, {}).start_piped(["/bin/sleep", "30"])
    try:
        assert proc.poll() is None
        assert proc.wait(0.05) is None
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
    finally:
        proc.close()


def test_a_piped_program_that_cannot_start_is_an_oserror_and_leaks_no_descriptor(
    make_spawner, tmp_path
):
    before = _open_descriptors()
    spawner = make_spawner(tmp_path, {})
    for _ in range(5):
        with pytest.raises(OSError):
            spawner.start_piped([str(tmp_path / "missing")])
    assert set(os.listdir("/proc/self/fd")) - before == set()
