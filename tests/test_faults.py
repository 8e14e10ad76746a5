"""Faults produced for real: signals at each stage, a finder that dirties the corpus,
awkward queries, an unwritable cache, and nothing written outside the cache and tmp, by
any kind of finder's adapter, whatever the corpus holds."""

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import git
import pytest
from conftest import ROOT, commit_files, needs_ctags, run_cli, run_recall, tmpfs
from helpers import (
    FAULT_ENGINE,
    FAULT_FINDER,
    FAULT_ROWS,
    fault_args,
    fault_env,
    fault_world,
)

from recall.inputs.corpus import Pin, checkout_path, fetch, is_clean, load_pins


@pytest.fixture
def world(tmp_path: Path) -> dict:
    return fault_world(tmp_path)


def _checkout(world: dict) -> Path:
    return checkout_path(world["cache"], load_pins(world["corpus"])["tiny"])


def _start(world: dict, fault: str, *extra: str) -> subprocess.Popen:
    """The CLI in a session of its own, as a terminal's foreground process group: with
    SIGINT at its default, as a terminal gives it, even when the suite itself was started
    in the background (where the shell ignores SIGINT, and children inherit that)."""
    return subprocess.Popen(
        [sys.executable, "-m", "recall", *fault_args(world, *extra)], cwd=world["finder"],
        env={**os.environ, **fault_env(world, fault)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"never reached {path.name}"
        time.sleep(0.05)


def _leftovers(world: dict) -> list[str]:
    cache = [str(p) for p in world["cache"].rglob(".tmp-*")]
    return sorted(os.listdir(world["tmp"])) + cache


def _assert_dead(mark: Path) -> None:
    """Every process whose pid the fault wrote into mark has ended (a zombie has, too)."""
    deadline = time.monotonic() + 10
    for pid in mark.read_text().split():
        proc = Path(f"/proc/{pid}")
        while proc.exists() and _state(proc) != "Z":
            assert time.monotonic() < deadline, f"process {pid} of {mark.name} still runs"
            time.sleep(0.05)


def _state(proc: Path) -> str:
    with contextlib.suppress(OSError):
        return (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    return "Z"


def _run_ok(world: dict, *extra: str) -> dict:
    proc = run_cli(*fault_args(world, *extra), cwd=world["finder"], env=fault_env(world))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("stage", ["build", "basebuild", "index", "query"])
@needs_ctags
@pytest.mark.slow
def test_ctrl_c_at_each_stage_leaves_no_temporary_folder_and_the_next_run_works(world, stage):
    extra = ("--base", "HEAD", "--same-program-ok") if "build" in stage else ()
    proc = _start(world, stage, *extra)
    _wait_for(world["marks"] / stage, proc)
    started = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    _out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "recall: interrupted"
    assert _leftovers(world) == []
    assert not list(world["cache"].glob("builds/*/.recall-built"))
    _assert_dead(world["marks"] / stage)  # a build too, though it runs in a group of its own
    report = _run_ok(world, *extra)
    assert report["runs"][-1]["first"] == len(FAULT_ROWS)


@pytest.mark.parametrize("stage", ["build", "basebuild", "index", "query", "batch"])
@needs_ctags
@pytest.mark.slow
def test_sigterm_at_each_stage_kills_what_it_started_cleans_up_and_exits_143(world, stage):
    extra = ("--base", "HEAD", "--same-program-ok") if "build" in stage else ()
    engine = world["finder"] / "recall.toml"
    if stage == "batch":  # a batch process per corpus, in flight when the signal comes
        engine.write_text(FAULT_ENGINE + 'batch = ["{bin}", "batch", "{names}"]\n')
    proc = _start(world, stage, *extra)
    _wait_for(world["marks"] / stage, proc)
    started = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)  # what `timeout` and CI runners send, to recall alone
    _out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "recall: terminated" and "Traceback" not in err
    assert _leftovers(world) == []
    assert not list(world["cache"].glob("builds/*/.recall-built"))
    _assert_dead(world["marks"] / stage)
    engine.write_text(FAULT_ENGINE)
    assert _run_ok(world, *extra)["runs"][-1]["first"] == len(FAULT_ROWS)


@pytest.mark.parametrize("stage", ["build", "basebuild"])
@pytest.mark.slow
def test_a_build_past_build_timeout_is_killed_with_its_group_one_line_exit_2(world, stage):
    """The build that hangs hangs for ever, and it is the only build under the limit (the
    base's is tried with a candidate given by --bin, which builds nothing), so a loaded
    machine cannot push a healthy build past the limit."""
    extra = (
        ("--base", "HEAD", "--same-program-ok", "--bin", sys.executable)
        if stage == "basebuild"
        else ()
    )
    started = time.monotonic()
    proc = run_recall(
        *fault_args(world, "--build-timeout", "1", *extra), cwd=world["finder"],
        env=fault_env(world, stage),
    )  # fmt: skip
    assert time.monotonic() - started < 30
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("recall: build timed out after 1 s: ")
    assert proc.stderr.count("\n") == 1 and "build.py" in proc.stderr
    assert proc.stdout == ""
    _assert_dead(world["marks"] / stage)
    assert _leftovers(world) == []
    assert not list(world["cache"].glob("builds/*/.recall-built"))


@pytest.mark.slow
def test_explain_bounds_the_build_by_build_timeout_too(world):
    proc = run_recall(
        "explain", "alpha", "--repo", "tiny", "--finder", str(world["finder"]),
        "--corpus", str(world["corpus"]), "--queries", str(world["queries"]),
        "--cache", str(world["cache"]), "--build-timeout", "1",
        cwd=world["finder"], env=fault_env(world, "build"),
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("recall: build timed out after 1 s: ")
    _assert_dead(world["marks"] / "build")


@pytest.mark.parametrize("command", ["run", "explain"])
def test_a_build_timeout_of_zero_is_a_usage_error(world, command):
    args = ("explain", "alpha", "--repo", "tiny") if command == "explain" else ("run",)
    proc = run_cli(
        *args, "--finder", str(world["finder"]), "--corpus", str(world["corpus"]),
        "--queries", str(world["queries"]), "--cache", str(world["cache"]),
        "--build-timeout", "0", cwd=world["finder"], env=fault_env(world),
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == "recall: --build-timeout must be above 0\n"


@pytest.mark.parametrize("stage", ["build", "basebuild", "index", "query"])
@needs_ctags
@pytest.mark.slow
def test_sigkill_at_each_stage_is_recovered_by_the_next_run(world, stage):
    extra = ("--base", "HEAD", "--same-program-ok") if "build" in stage else ()
    proc = _start(world, stage, *extra)
    _wait_for(world["marks"] / stage, proc)
    proc.kill()
    proc.communicate(timeout=30)
    # SIGKILL leaves the finder or build it was waiting on orphaned: end it, as a reboot would
    for pid in (world["marks"] / stage).read_text().split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    report = _run_ok(world, *extra)
    assert report["runs"][-1]["first"] == len(FAULT_ROWS)
    assert _leftovers(world) == []  # the killed run's folders were swept


@needs_ctags
@pytest.mark.slow
def test_sigint_after_the_fetch_leaves_a_clean_checkout(world, tmp_path):
    """Interrupted just after the fetch (in the index stage): the checkout stays clean."""
    pin = json.loads(world["corpus"].read_text())["tiny"]
    proc = _start(world, "index")
    _wait_for(world["marks"] / "index", proc)  # the fetch is done by the index stage
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=30)
    checkout = fetch(Pin("tiny", pin["url"], pin["sha"], "python"), world["cache"])
    assert is_clean(checkout)


@needs_ctags
@pytest.mark.slow
def test_finder_that_writes_into_the_checkout_is_named_and_the_checkout_rebuilt(world):
    proc = run_cli(*fault_args(world), cwd=world["finder"], env=fault_env(world, "dirty"))
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)["runs"][0]
    assert run["dirtied"] == ["tiny"]
    checkout = _checkout(world)
    assert not (checkout / "lib" / "written-by-finder.txt").exists()
    assert git.Repo(checkout).git.status("--porcelain", "--ignored") == ""
    text = run_cli(
        *[a for a in fault_args(world) if a != "--json"], cwd=world["finder"],
        env=fault_env(world, "dirty"),
    )  # fmt: skip
    assert "candidate wrote into the checkout of tiny; it was rebuilt" in text.stdout
    assert _run_ok(world)["runs"][0]["dirtied"] == []


AWKWARD = ["a b", 'it\'s "q"', "$HOME", "`id`", "x;y", "-rf", "--output=x", "naïve", "\\n*"]


@needs_ctags
@pytest.mark.slow
def test_awkward_queries_reach_the_finder_unchanged_never_through_a_shell(world):
    hand = [f"tiny\t{q}\thand\t" for q in AWKWARD]
    with world["queries"].open("a", encoding="utf-8") as queries:
        queries.write("\n".join(hand) + "\n")
    proc = run_cli(*fault_args(world), cwd=world["finder"], env=fault_env(world, "echo"))
    assert proc.returncode == 0, proc.stderr
    received = (world["marks"] / "queries").read_text(encoding="utf-8").splitlines()
    sent = [query for query, _source in FAULT_ROWS] + AWKWARD
    assert sorted(json.loads(line) for line in received) == sorted(sent)
    assert json.loads(proc.stdout)["runs"][0]["errors"] == 0
    assert not (world["finder"] / "x").exists()


def _snapshot(folder: Path) -> list[tuple[str, int]]:
    return sorted((str(p), p.stat().st_size) for p in folder.rglob("*"))


@needs_ctags
@pytest.mark.slow
def test_nothing_is_written_outside_the_cache_the_temporary_folder_and_the_report(world):
    repo = git.Repo(world["finder"])
    before = repo.git.status("--porcelain", "--ignored")
    home = _snapshot(world["home"])
    html = world["tmp"].parent / "report.html"
    _run_ok(world, "--base", "HEAD", "--same-program-ok", "--html", str(html))
    assert repo.git.status("--porcelain", "--ignored") == before
    assert _snapshot(world["home"]) == home
    assert os.listdir(world["tmp"]) == []
    assert html.is_file()


@needs_ctags
def test_html_to_a_fifo_is_refused_before_any_work_and_the_fifo_stays(world):
    fifo = world["tmp"].parent / "report.html"
    os.mkfifo(fifo)
    proc = run_cli(
        *fault_args(world, "--html", str(fifo)), cwd=world["finder"], env=fault_env(world)
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"recall: {fifo}: is a FIFO, not a regular file; refusing to replace it\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and proc.stdout == ""


@needs_ctags
@pytest.mark.slow
def test_save_and_html_through_a_symlink_write_its_target_and_keep_the_link_and_mode(world):
    kept = world["tmp"].parent / "kept"
    kept.mkdir()
    links = {}
    for name in ("run.json", "report.html"):
        (kept / name).write_text("old")
        (kept / name).chmod(0o644)
        links[name] = world["tmp"].parent / name
        links[name].symlink_to(kept / name)
    _run_ok(world, "--save", str(links["run.json"]), "--html", str(links["report.html"]))
    for name, link in links.items():
        assert link.is_symlink() and os.readlink(link) == str(kept / name)
        assert stat.S_IMODE((kept / name).stat().st_mode) == 0o644
    assert json.loads((kept / "run.json").read_text())["kind"] == "recall-saved-run"
    assert (kept / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_a_file_where_the_cache_folder_should_be_is_one_line_exit_2(world):
    world["cache"].rmdir()
    world["cache"].write_text("not a folder")
    proc = run_cli(*fault_args(world), cwd=world["finder"], env=fault_env(world))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("recall: ") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tiny tmpfs needs root")
@pytest.mark.slow
def test_a_full_cache_disk_is_one_line_exit_2(world, tmp_path):
    with tmpfs(tmp_path / "full", "64k") as mount:
        (mount / "filler").write_bytes(b"\0" * 60_000)
        args = [a if a != str(world["cache"]) else str(mount / "cache") for a in fault_args(world)]
        proc = run_recall(*args, cwd=world["finder"], env=fault_env(world))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("recall: ") and proc.stderr.count("\n") == 1
        assert "Traceback" not in proc.stderr


@needs_ctags
@pytest.mark.slow
def test_two_runs_at_once_on_one_fresh_cache_agree(world):
    procs = [_start(world, "", "--base", "HEAD", "--same-program-ok") for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    first, second = (json.loads(out)["runs"] for out, _err in outs)
    assert [r["first"] for r in first] == [r["first"] for r in second] == [6, 6]
    assert _leftovers(world) == []


@pytest.mark.parametrize(
    ("build", "bin_", "message"),
    [
        ('["{python}", "-c", "import sys; sys.exit(4)"]', '["{tree}/finder.py"]',
         "build failed (exit 4)"),
        ('["{python}", "-c", "pass"]', '["{tree}/never-built"]', "did not produce"),
    ],
)  # fmt: skip
def test_a_build_that_fails_or_produces_no_binary_is_one_line_exit_2(world, build, bin_, message):
    engine = world["finder"] / "recall.toml"
    text = FAULT_ENGINE.replace('["{python}", "{tree}/build.py"]', build)
    engine.write_text(text.replace('["{python}", "{tree}/finder.py"]', bin_))
    proc = run_cli(*fault_args(world), cwd=world["finder"], env=fault_env(world))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert proc.stderr.startswith("recall: ") and proc.stderr.count("\n") == 1
    assert proc.stdout == ""


@needs_ctags
@pytest.mark.slow
def test_names_holding_a_tab_or_newline_never_break_the_report(world):
    finder = 'import json\nprint(json.dumps([{"name": "bad\\tna\\nme"}, {"name": "BetaClass"}]))\n'
    (world["finder"] / "finder.py").write_text(finder)
    (world["finder"] / "recall.toml").write_text(
        FAULT_ENGINE.replace('output = "lines"', 'output = "json"').replace(
            'index = ["{bin}", "index"]\n', ""
        )
    )
    args = [a for a in fault_args(world) if a != "--json"]
    proc = run_cli(*args, "--misses", cwd=world["finder"], env=fault_env(world))
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if "bad" in line]
    assert len(rows) == len(FAULT_ROWS) and all("bad\\tna\\nme" in row for row in rows)
    proc = run_cli(*fault_args(world), "--misses", cwd=world["finder"], env=fault_env(world))
    assert json.loads(proc.stdout)["misses"][0]["first"] == "bad\tna\nme"


@needs_ctags
@pytest.mark.slow
def test_a_query_that_errors_in_the_candidate_counts_as_a_loss(world):
    repo = git.Repo(world["finder"])
    crash = FAULT_FINDER.replace(
        'if mode == "dirty":', 'if query == "beta":\n    sys.exit(5)\nif mode == "dirty":'
    )
    commit_files(repo, {"finder.py": crash}, "crash on beta")
    proc = run_cli(
        *fault_args(world, "--base", "HEAD~1", "--fail-on-loss"),
        cwd=world["finder"],
        env=fault_env(world),
    )
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    base, candidate = report["runs"]
    assert (base["errors"], candidate["errors"]) == (0, 1)
    assert [e["query"] for e in candidate["error_rows"]] == ["beta"]
    assert candidate["error_rows"][0]["error"].startswith("exit 5")
    assert [e["query"] for e in report["diffs"][0]["new_errors"]] == ["beta"]


@needs_ctags
@pytest.mark.slow
def test_a_checkout_edited_by_hand_is_rebuilt_before_the_first_query(world):
    _run_ok(world)
    alpha = _checkout(world) / "lib" / "alpha.py"
    alpha.write_text(alpha.read_text() + "# edited by hand\n")
    proc = run_cli(*fault_args(world), cwd=world["finder"], env=fault_env(world, "peek"))
    assert proc.returncode == 0, proc.stderr
    assert "tiny: the checkout no longer matches its pin" in proc.stderr
    assert set((world["marks"] / "peek").read_text().split()) == {"pin"}
    assert json.loads(proc.stdout)["runs"][0]["dirtied"] == []


@needs_ctags
def test_a_source_that_is_no_name_of_its_corpus_is_a_bad_row_with_its_line(world):
    with world["queries"].open("a") as queries:
        queries.write("tiny\talfun\texact\talpha_function \n")
    proc = run_cli(
        *fault_args(world, "--strict-queries"), cwd=world["finder"], env=fault_env(world)
    )
    assert proc.returncode == 2 and proc.stdout == ""
    line = len(FAULT_ROWS) + 2
    assert f"queries.tsv:{line}: source 'alpha_function ' is not a name of tiny" in proc.stderr


@pytest.mark.parametrize(
    ("finder", "bin_", "message"),
    [
        ("import sys\nsys.exit(3)\n", None, "failed on 6 of 6 queries, so it cannot be measured"),
        ("", None, "returned nothing for 6 of 6 queries"),
        ("", '["{tree}"]', "is not an executable file"),
        ("", '["{tree}/finder.py"]', "is not an executable file"),
    ],
    ids=["every-query-errors", "answers-nothing", "a-directory", "not-executable"],
)
@needs_ctags
def test_an_engine_that_answers_nothing_is_exit_2_with_the_reason(world, finder, bin_, message):
    (world["finder"] / "finder.py").write_text(finder)
    engine = FAULT_ENGINE.replace('index = ["{bin}", "index"]\n', "")
    if bin_:
        engine = engine.replace('bin = ["{python}", "{tree}/finder.py"]', f"bin = {bin_}")
    (world["finder"] / "recall.toml").write_text(engine)
    args = [a for a in fault_args(world) if a != "--allow-empty"]
    proc = run_cli(*args, cwd=world["finder"], env=fault_env(world))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1


SILENT_FINDER = r"""
import json, sys
if sys.argv[1:2] == ["index"]:
    sys.exit(0)
print("finder: unrecognized option '--nosuchflag'", file=sys.stderr)
print("usage: finder query QUERY NAMES", file=sys.stderr)
if sys.argv[1:2] == ["batch"]:  # answers every request with nothing
    for line in sys.stdin:
        print(json.dumps({"id": json.loads(line)["id"], "results": []}), flush=True)
"""


@pytest.mark.parametrize("mode", ["per-query", "batch"])
@needs_ctags
def test_a_finder_that_answers_nothing_is_shown_with_its_stderr_and_a_command_to_run(world, mode):
    """Issue 44 item 3: `candidate returned nothing for 84 of 84 queries: the engine
    description is probably wrong`, and never the finder's own stderr. The error now runs
    one such query alone and quotes its stderr, the engine file's line, and a command
    that runs it again, as printed, from any folder, once the run's folders are gone."""
    (world["finder"] / "finder.py").write_text(SILENT_FINDER)
    if mode == "batch":
        engine = FAULT_ENGINE.replace('output = "lines"', 'batch = ["{bin}", "batch"]')
        (world["finder"] / "recall.toml").write_text(engine)
    args = [a for a in fault_args(world) if a != "--allow-empty"]
    proc = run_cli(*args, cwd=world["finder"], env=fault_env(world))
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("recall: candidate returned nothing for 6 of 6 queries")
    said = "finder: unrecognized option '--nosuchflag' | usage: finder query QUERY NAMES"
    assert f"one query (tiny 'alpha') alone: exit 0, no names listed; its stderr: {said}" in line
    key = "batch" if mode == "batch" else "query"
    toml = world["finder"] / "recall.toml"
    number = toml.read_text().splitlines().index(next(
        text for text in toml.read_text().splitlines() if text.startswith(f"{key} ")
    )) + 1  # fmt: skip
    assert line.endswith(f"; the engine's line: {toml}:{number}: {key} = " + (
        '["{bin}", "batch"]' if mode == "batch" else '["{bin}", "query", "{query}", "{names}"]'
    ))  # fmt: skip
    command = line.split("; run it yourself: ")[1].split("; the engine's line: ")[0]
    assert str(world["tmp"]) not in command  # nothing of the run's folders, which are gone
    assert os.listdir(world["tmp"]) == []
    again = subprocess.run(["bash", "-c", command], cwd=world["home"], capture_output=True,
                           text=True)  # fmt: skip
    assert again.returncode == 0 and again.stderr.startswith("finder: unrecognized option")
    if mode == "batch":
        assert json.loads(again.stdout) == {"id": 0, "results": []}
        assert command.startswith("cd ") and "printf '%s\\n' '{\"id\":0," in command


BANNER_FINDER = r"""
import json, sys
print("index loaded", flush=True)  # one stray line: every answer after it is one late
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], "results": [{"name": request["query"]}]}), flush=True)
"""


@needs_ctags
def test_a_batch_finder_out_of_step_is_one_line_exit_2_and_no_report(world):
    (world["finder"] / "batch.py").write_text(BANNER_FINDER)
    (world["finder"] / "recall.toml").write_text(
        '[engine]\nbin = ["{python}", "{tree}/batch.py"]\nquery = ["{bin}", "{query}"]\n'
        'batch = ["{bin}"]\n'
    )
    proc = run_cli(*fault_args(world), cwd=world["finder"], env=fault_env(world))
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr.startswith("recall: batch finder candidate (") and " on tiny: " in proc.stderr
    )
    assert "the answer for id 1 (query 'beta') carries id 0" in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""
    assert _leftovers(world) == []


# No write outside: every kind of finder, on corpora whose content points out ------------

SENTINEL = {"s.c": "int sentinel_c(void) { return 0; }\n", "s.h": "int sentinel_h(void);\n",
            "deep/keep.txt": "the sentinel tree: nothing may appear in it\n"}  # fmt: skip
HOSTILE_FILES = {
    "a.go": "package tiny\n\nfunc AlphaFunction() {}\n\nfunc GammaDelta() {}\n",
    "lib/gamma.py": "def gamma_delta():\n    pass\n\n\ndef alpha_function():\n    pass\n",
    "src/server.h": "int gamma_delta(void);\n",
    "src/server.c": '#include "server.h"\n#include "escape.h"\n\n'
    "int alpha_function(void) { return gamma_delta(); }\n",
    "src/odd\nname.c": "int odd_name(void) { return 2; }\n",
    "src/c.ts": "export function alphaFunction(): number {\n  return 1\n}\n",
    "tsconfig.json": '{"include": ["src"]}\n',
}
# go.mod module lines, each a pin of its own: a quoted absolute path, a bare one, `..` out
# of GOPATH/src, and a plain module path (that corpus still holds links pointing out)
GO_MODS = {
    "go-quoted": 'module "{sentinel}/LINK"',
    "go-absolute": "module {sentinel}/LINK",
    "go-dots": 'module "example.com/../../../../../LINK"',
    "go-ok": "module example.com/tiny",
}
# a query each server finds (jedi's answers start with the query), and its source
ROWS = {"go": ("alpha", "AlphaFunction"), "python": ("alpha", "alpha_function"),
        "c": ("alpha", "alpha_function"), "typescript": ("alpha", "alphaFunction")}  # fmt: skip
PINS = {**{name: "go" for name in GO_MODS}, "c": "c", "py": "python", "ts": "typescript"}


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def _hostile_suite(tmp_path: Path) -> dict:
    """A sentinel tree, and pins of one corpus repository whose content points at it: links
    out of the checkout (a folder, a header, a source file), a file name with a newline,
    and a go.mod per pin (GO_MODS); a query file of a row per pin."""
    sentinel = tmp_path / "sentinel"
    upstream = tmp_path / "upstream"
    for name, text in SENTINEL.items():
        (sentinel / name).parent.mkdir(parents=True, exist_ok=True)
        (sentinel / name).write_text(text)
    for name, text in HOSTILE_FILES.items():
        (upstream / name).parent.mkdir(parents=True, exist_ok=True)
        (upstream / name).write_text(text)
    (upstream / "out").symlink_to(sentinel, target_is_directory=True)
    (upstream / "src" / "escape.h").symlink_to(sentinel / "s.h")
    (upstream / "src" / "escape.c").symlink_to(sentinel / "s.c")
    _git(tmp_path, "init", "-q", "-b", "main", str(upstream))
    shas = {}
    for name, line in GO_MODS.items():
        (upstream / "go.mod").write_text(line.format(sentinel=sentinel) + "\n\ngo 1.19\n")
        _git(upstream, "add", "-A")
        _git(upstream, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", name)
        shas[name] = _git(upstream, "rev-parse", "HEAD")
    pins = {
        name: {"url": upstream.as_uri(), "sha": shas.get(name, shas["go-ok"]), "language": lang}
        for name, lang in PINS.items()
    }  # fmt: skip
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(pins))
    queries = tmp_path / "queries.tsv"
    queries.write_text("repo\tquery\ttype\tsource\n" + "".join(
        f"{name}\t{ROWS[lang][0]}\texact\t{ROWS[lang][1]}\n" for name, lang in PINS.items()
    ))  # fmt: skip
    for folder in ("home", "tmp", "finder"):
        (tmp_path / folder).mkdir()
    return {"corpus": corpus, "queries": queries, "sentinel": sentinel}


def _tree(root: Path) -> dict[str, tuple]:
    """Every path under root (links not followed) with its kind, its content's digest or
    its link's target; git's own index (which `git status` may refresh) left out."""
    found: dict[str, tuple] = {}
    for path in [root, *root.rglob("*")]:
        if path.name == "index" and path.parent.name == ".git":
            continue
        if path.is_symlink():
            found[str(path)] = ("link", os.readlink(path))
        elif path.is_file():
            found[str(path)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
        else:
            found[str(path)] = ("folder",)
    return found


# A process finder whose index is a copy of the names in {db}, and whose answer is the
# names holding the query.
PROCESS_FINDER = """
import sys
stage, db, arg = sys.argv[1:4]
if stage == "index":
    open(db, "w").write(open(arg).read())
else:
    print("\\n".join(n for n in open(db).read().split("\\n") if arg in n))
"""
PROCESS_ENGINE = """[engine]
bin = ["{python}", "{tree}/finder.py"]
index = ["{bin}", "index", "{db}/index.txt", "{names}"]
query = ["{bin}", "query", "{db}/index.txt", "{query}"]
output = "lines"
"""

FINDER_KINDS = {
    # kind: (engine, the finder's files, pins run, what must be installed)
    "process": (None, {"recall.toml": PROCESS_ENGINE, "finder.py": PROCESS_FINDER}, ("py",), ()),
    "reference": (None, "recall", ("py",), ()),
    "python": (
        None,
        {"recall.toml": '[engine]\nkind = "python"\ncallable = "rapidfuzz.process:extract"\n'},
        ("py",),
        (),
    ),
    "node": ("fusejs", {}, ("py",), ("node", "npm")),
    "lsp-gopath": ("gopls", {}, tuple(GO_MODS), ("gopls", "go")),
    "lsp-compile-commands": ("clangd", {}, ("c",), ("clangd",)),
    "lsp-open": ("tsserver", {}, ("ts",), ("node", "npm")),
    "lsp-plain": ("jedi-lsp", {}, ("py",), ()),
}


@needs_ctags
@pytest.mark.slow
@pytest.mark.parametrize("kind", list(FINDER_KINDS))
def test_no_finder_kind_writes_outside_the_run_s_folders_and_the_cache(kind, tmp_path, real_cache):
    """The mechanism behind a quoted absolute module path in a go.mod that made a folder
    and a link outside {db} (exit 0), and a compile_commands.dir of {tree} that overwrote
    the finder's own file: each kind of finder, with each lsp workspace option, runs on
    corpora that point outside the checkout (go.mod module paths quoted, absolute or with
    `..`; links to a sentinel tree; a file name with a newline), and nothing appears,
    changes or is left anywhere but in the cache: not in the sentinel tree, the finder's
    tree, the corpus's repository, HOME or the temporary folder, nor in the checkout."""
    engine, files, repos, programs = FINDER_KINDS[kind]
    missing = [program for program in programs if shutil.which(program) is None]
    if missing or (
        kind == "lsp-plain" and importlib.util.find_spec("jedi_language_server") is None
    ):
        pytest.skip(f"{', '.join(missing) or 'jedi-language-server'} is not installed")
    suite = _hostile_suite(tmp_path)
    finder = tmp_path / "finder"
    if files == "recall":  # the reference finder, from a tree of its own
        shutil.copytree(ROOT / "recall", finder / "recall", symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    else:
        for name, text in files.items():
            (finder / name).write_text(text)
    _git(finder, "init", "-q", "-b", "main")
    _git(finder, "add", "-A")
    _git(
        finder,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@e",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "finder",
    )
    before = _tree(tmp_path)
    args = ["--finder", str(finder), "--corpus", str(suite["corpus"]), "--queries",
            str(suite["queries"]), "--cache", str(real_cache), "--json", "--no-regress",
            "--allow-empty", "--timeout", "120"]  # fmt: skip
    args += [part for repo in repos for part in ("--repo", repo)]
    env = {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"), "RECALL_MIRROR": ""}
    proc = run_cli(*args, *(("--engine", engine) if engine else ()), cwd=finder, env=env)
    assert _tree(tmp_path) == before
    assert _git(finder, "status", "--porcelain", "--ignored") == ""
    assert not list((tmp_path / "tmp").iterdir())
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)["runs"][0]
    assert run["dirtied"] == [] and run["found"] >= 1, run
    if kind == "lsp-gopath":  # the three go.mods that point out: their query's error
        errors = {row["repo"]: row["error"] for row in run["error_rows"]}
        assert set(errors) == set(GO_MODS) - {"go-ok"}
        assert all("no module line naming a Go module path" in e for e in errors.values())


def test_faults_md_says_how_many_faults_its_tables_hold():
    """The header's count is the tables' rows (a header and a rule line each aside), so a
    row added without its count, or a count edited by hand, fails here."""
    lines = (ROOT / "docs" / "faults.md").read_text().splitlines()
    header = "| fault or input | behaviour | exit | test |"
    tables = sum(line == header for line in lines)
    rows = sum(line.startswith("| ") and line != header for line in lines)
    assert re.search(rf"^{rows} faults in {tables} tables ", "\n".join(lines), re.MULTILINE)
