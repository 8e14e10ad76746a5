import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import git
import pytest
from conftest import ROOT, make_repo, mirror_dir, needs_ctags, needs_mirror, run_cli
from helpers import DEEP, DEEP_OBJECT, fault_args, fault_env, fault_world, one_line_exit_2, tiny_pin

from recall.cache import locked, release_in_use, try_exclusive
from recall.errors import RecallError
from recall.inputs.corpus import (
    FROZEN_EPOCH,
    MARKER,
    Pin,
    checkout_key,
    checkout_path,
    fetch,
    is_clean,
    load_pins,
)


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[Path, str]:
    repo = make_repo(tmp_path / "upstream", {"a.py": "def alpha():\n    pass\n"})
    (tmp_path / "upstream" / "sub").mkdir()
    (tmp_path / "upstream" / "sub" / "b.py").write_text("class Beta:\n    pass\n")
    os.symlink("a.py", tmp_path / "upstream" / "link.py")
    repo.index.add(["sub/b.py", "link.py"])
    sha = repo.index.commit("second").hexsha
    return tmp_path / "upstream", sha


def pin_for(path: Path, sha: str, name: str = "demo") -> Pin:
    return Pin(name=name, url=path.as_uri(), sha=sha, language="python")


def test_checkout_is_one_frozen_commit_holding_the_pinned_tree(upstream, tmp_path):
    path, sha = upstream
    checkout = fetch(pin_for(path, sha), tmp_path / "cache")
    repo = git.Repo(checkout.path)
    commits = list(repo.iter_commits("main"))
    assert len(commits) == 1
    head = commits[0]
    assert head.authored_date == head.committed_date == FROZEN_EPOCH
    assert (head.author.name, head.author.email) == ("recall", "recall@localhost")
    assert head.tree.hexsha == repo.commit(sha).tree.hexsha
    assert repo.git.config("remote.origin.url") == path.as_uri()
    assert repo.git.rev_parse("refs/recall/pin") == sha
    for folder, dirs, files in os.walk(checkout.path):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            assert os.lstat(os.path.join(folder, name)).st_mtime == FROZEN_EPOCH
    assert os.readlink(checkout.path / "link.py") == "a.py"
    assert is_clean(checkout)


def test_reuse_does_not_touch_the_remote(upstream, tmp_path):
    path, sha = upstream
    cache = tmp_path / "cache"
    first = fetch(pin_for(path, sha), cache)
    path.rename(tmp_path / "gone")
    again = fetch(pin_for(path, sha), cache)
    assert again.path == first.path


def test_unreachable_url_names_the_repo_and_leaves_nothing(tmp_path):
    pin = Pin("ghost", (tmp_path / "nowhere").as_uri(), "a" * 40, "python")
    with pytest.raises(RecallError, match=r"ghost.*nowhere"):
        fetch(pin, tmp_path / "cache")
    corpora = tmp_path / "cache" / "corpora"
    left = sorted(p.name for p in corpora.iterdir())
    assert left == ["ghost-aaaaaaaaaaaa.inuse", "ghost-aaaaaaaaaaaa.lock"]  # and no folder
    with try_exclusive(corpora / "ghost-aaaaaaaaaaaa.inuse") as free:
        assert free  # this process holds no in-use mark of a checkout it has not got


def test_unreachable_url_from_the_cli_exits_2_with_one_line(tmp_path):
    corpus = tmp_path / "corpus.json"
    url = (tmp_path / "nowhere.git").as_uri()
    corpus.write_text(json.dumps({"ghost": {"url": url, "sha": "b" * 40, "language": "go"}}))
    proc = run_cli(
        "fetch", "--corpus", str(corpus), "--cache", str(tmp_path / "cache"),
        env={"RECALL_MIRROR": ""},  # empty is unset to recall: no mirror to fall back on
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "ghost" in proc.stderr and url in proc.stderr
    assert not [p for p in (tmp_path / "cache" / "corpora").iterdir() if p.is_dir()]


def test_tampered_checkout_is_detected_and_rebuilt(upstream, tmp_path, capsys):
    path, sha = upstream
    cache = tmp_path / "cache"
    checkout = fetch(pin_for(path, sha), cache)
    repo = git.Repo(checkout.path)
    (checkout.path / "extra.py").write_text("x = 1\n")
    repo.index.add(["extra.py"])
    repo.index.commit("tamper")
    rebuilt = fetch(pin_for(path, sha), cache)
    assert "rebuilding" in capsys.readouterr().err
    assert not (rebuilt.path / "extra.py").exists()
    assert len(list(git.Repo(rebuilt.path).iter_commits("main"))) == 1


def test_moved_pin_rebuilds_the_checkout(upstream, tmp_path):
    path, sha = upstream
    cache = tmp_path / "cache"
    fetch(pin_for(path, sha), cache)
    first_sha = git.Repo(path).commit("HEAD~1").hexsha
    moved = fetch(pin_for(path, first_sha), cache)
    assert not (moved.path / "sub").exists()


def test_leftover_temporary_folder_is_never_trusted(upstream, tmp_path):
    path, sha = upstream
    corpora = tmp_path / "cache" / "corpora"
    corpora.mkdir(parents=True)
    key = checkout_key(pin_for(path, sha))
    (corpora / f".tmp-{key}-abc").mkdir()
    (corpora / key).mkdir()  # a half-made checkout with no marker
    checkout = fetch(pin_for(path, sha), tmp_path / "cache")
    assert (checkout.path / "a.py").exists()
    assert not (corpora / f".tmp-{key}-abc").exists()


def test_a_fetch_sweeps_what_killed_makers_of_other_checkouts_left_but_not_a_live_one(
    upstream, tmp_path
):
    """The checkout's sweep is every cache entry's (recall.cache): another key's temporary
    or set-aside folder goes once nobody holds that key's lock, a locked key's stays."""
    path, sha = upstream
    corpora = tmp_path / "cache" / "corpora"
    corpora.mkdir(parents=True)
    dead = [corpora / ".tmp-gone-aaaaaaaaaaaa-x1y2", corpora / ".trash-gone-aaaaaaaaaaaa-99"]
    live = corpora / ".tmp-busy-bbbbbbbbbbbb-z3w4"
    for folder in (*dead, live):
        folder.mkdir()
    with locked(corpora / "busy-bbbbbbbbbbbb.lock"):  # a maker of "busy" is at work
        fetch(pin_for(path, sha), tmp_path / "cache")
    assert [folder.exists() for folder in dead] == [False, False]
    assert live.exists()


FETCH_SCRIPT = """
import sys
from pathlib import Path
from recall.inputs.corpus import Pin, fetch
pin = Pin(sys.argv[1], sys.argv[2], sys.argv[3], "python")
print(fetch(pin, Path(sys.argv[4]), None).path)
"""


def _spawn_fetch(pin: Pin, cache: Path) -> subprocess.Popen:
    """A fetch in a process group of its own, as a job started from a shell is."""
    return subprocess.Popen(
        [sys.executable, "-c", FETCH_SCRIPT, pin.name, pin.url, pin.sha, str(cache)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


@pytest.mark.slow
def test_two_concurrent_fetches_end_with_one_good_checkout(upstream, tmp_path):
    path, sha = upstream
    pin = pin_for(path, sha)
    procs = [_spawn_fetch(pin, tmp_path / "cache") for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert outs[0][0] == outs[1][0]
    key = checkout_key(pin)
    assert sorted(p.name for p in (tmp_path / "cache" / "corpora").iterdir()) == [
        key, f"{key}.inuse", f"{key}.lock",
    ]  # fmt: skip


@needs_mirror
@pytest.mark.slow
def test_sigkill_during_a_real_fetch_leaves_nothing_trusted(tmp_path, pins):
    rails = pins["rails"]
    mirror = mirror_dir() / "github.com" / "rails" / "rails.git"
    pin = Pin("rails", mirror.as_uri(), rails.sha, "ruby")
    cache = tmp_path / "cache"
    proc = _spawn_fetch(pin, cache)
    time.sleep(0.4)
    os.killpg(proc.pid, signal.SIGKILL)  # the job, git included: an orphan git would
    proc.wait()  # keep writing into the folder the next fetch sweeps
    assert not (checkout_path(cache, pin) / ".git" / "recall-pin.json").exists()
    checkout = fetch(pin, cache)
    assert is_clean(checkout)
    assert not list((cache / "corpora").glob(".tmp-*"))


# Two clones of a finder project pinning the same repo at two commits, sharing one cache.
MOVING_FINDER = """
import pathlib, re, sys, time
query, corpus = sys.argv[1], pathlib.Path(sys.argv[2])
pathlib.Path(STARTED).write_text("asked")
while not pathlib.Path(GO).exists():  # the run stays in progress until the test says go
    time.sleep(0.05)
for path in sorted(corpus.rglob("*.py")):
    print("\\n".join(re.findall(r"def (\\w+)", path.read_text())))
"""
MOVING_ENGINE = """[engine]
bin = ["{python}", "{tree}/finder.py"]
query = ["{bin}", "{query}", "{corpus}"]
output = "lines"
"""


def _two_pins_of_demo(tmp_path: Path) -> tuple[Path, Path]:
    """corpus.json files of two clones: demo at its first commit (alpha_one) and at its
    second (beta_two), in folders of their own."""
    repo = make_repo(tmp_path / "demo", {"m.py": "def alpha_one():\n    pass\n"})
    first = repo.head.commit.hexsha
    (tmp_path / "demo" / "m.py").write_text("def beta_two():\n    pass\n")
    repo.index.add(["m.py"])
    second = repo.index.commit("rename").hexsha
    clones = []
    for name, sha in (("one", first), ("two", second)):
        (tmp_path / name).mkdir()
        pin = {"url": (tmp_path / "demo").as_uri(), "sha": sha, "language": "python"}
        (tmp_path / name / "corpus.json").write_text(json.dumps({"demo": pin}))
        clones.append(tmp_path / name)
    return clones[0], clones[1]


@needs_ctags
@pytest.mark.slow
def test_a_fetch_of_another_pin_of_the_same_repo_leaves_a_running_run_its_tree(tmp_path):
    """Issue 31 class 6: clone two fetches demo at another commit while clone one's run is
    in progress. The run still answers from its own pin (alpha_one #1, exit 0), and
    `recall fetch` prints the other pin's own checkout."""
    one, two = _two_pins_of_demo(tmp_path)
    started, go = tmp_path / "started", tmp_path / "go"
    finder_text = MOVING_FINDER.replace("STARTED", repr(str(started))).replace("GO", repr(str(go)))
    finder = tmp_path / "finder"
    make_repo(finder, {"finder.py": finder_text, "recall.toml": MOVING_ENGINE})
    (one / "queries.tsv").write_text("repo\tquery\ttype\tsource\ndemo\talpone\tabbr3\talpha_one\n")
    cache = tmp_path / "cache"
    run = subprocess.Popen(
        [sys.executable, "-m", "recall", "--finder", str(finder), "--corpus",
         str(one / "corpus.json"), "--queries", str(one / "queries.tsv"), "--cache", str(cache),
         "--json", "--no-cache"],
        cwd=one, env={**os.environ, "PYTHONPATH": str(ROOT), "RECALL_MIRROR": ""},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not started.exists():  # the run is past its fetch and asking its finder
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.05)
        fetched = run_cli(
            "fetch", "--corpus", str(two / "corpus.json"), "--cache", str(cache), cwd=two,
            env={"RECALL_MIRROR": ""},
        )  # fmt: skip
        go.write_text("go")
        out, err = run.communicate(timeout=120)
    finally:
        go.write_text("go")
        if run.poll() is None:
            run.kill()
            run.wait()
    assert fetched.returncode == 0, fetched.stderr
    pin_two = load_pins(two / "corpus.json")["demo"]
    assert fetched.stdout == f"demo\t{pin_two.sha[:12]}\t{checkout_path(cache, pin_two)}\n"
    assert run.returncode == 0, err
    assert json.loads(out)["runs"][0]["first"] == 1  # answered from alpha_one's tree
    pin_one = load_pins(one / "corpus.json")["demo"]
    assert (checkout_path(cache, pin_one) / "m.py").read_text().startswith("def alpha_one")
    assert (checkout_path(cache, pin_two) / "m.py").read_text().startswith("def beta_two")


HOLD_SCRIPT = """
import sys
from pathlib import Path
from recall.inputs.corpus import Pin, fetch
fetch(Pin(sys.argv[1], sys.argv[2], sys.argv[3], "python"), Path(sys.argv[4]))
print("held", flush=True)
sys.stdin.read()
"""


@pytest.mark.slow
def test_a_checkout_another_process_holds_is_never_rebuilt_under_it(upstream, tmp_path):
    """A run holds its checkout shared for its whole life; a rebuild needs it exclusively,
    so a checkout in use is refused, not rebuilt, and rebuilt once the holder is gone."""
    path, sha = upstream
    pin, cache = pin_for(path, sha), tmp_path / "cache"
    checkout = fetch(pin, cache)
    release_in_use()  # only the holder below uses it now
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_SCRIPT, pin.name, pin.url, pin.sha, str(cache)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "held\n"
        (checkout.path / "a.py").write_text("def tampered():\n    pass\n")
        with pytest.raises(RecallError, match=r"checkout .*: .*but another run is using it"):
            fetch(pin, cache, deep=True)
        assert "tampered" in (checkout.path / "a.py").read_text()  # not rebuilt under it
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    rebuilt = fetch(pin, cache, deep=True)
    assert "alpha" in (rebuilt.path / "a.py").read_text() and is_clean(rebuilt)
    release_in_use()


@pytest.mark.slow
def test_the_check_after_a_run_compares_the_sha_not_only_a_clean_tree(upstream, tmp_path):
    """A checkout folder that now holds another pin's tree, clean and frozen, is not clean
    for the pin the run asked for (the check a run makes after its binary)."""
    path, sha = upstream
    cache = tmp_path / "cache"
    checkout = fetch(pin_for(path, sha), cache)
    other = fetch(pin_for(path, git.Repo(path).commit("HEAD~1").hexsha), tmp_path / "other")
    release_in_use()
    assert is_clean(checkout) and is_clean(other)
    swapped = checkout.path.with_name("swapped")
    checkout.path.rename(swapped)
    other.path.rename(checkout.path)
    assert not is_clean(checkout)


@pytest.mark.parametrize(
    ("name", "fields", "message"),
    [
        ("../x", {"url": "https://h/x.git", "sha": "a" * 40, "language": "go"}, "'../x'.*name"),
        ("/abs", {"url": "https://h/x.git", "sha": "a" * 40, "language": "go"}, "'/abs'.*name"),
        (".git", {"url": "https://h/x.git", "sha": "a" * 40, "language": "go"}, "'.git'.*name"),
        ("ok", {"url": "https://h/x.git", "sha": "abc", "language": "go"}, "'ok'.*'sha'"),
        ("ok", {"url": "ftp://h/x.git", "sha": "a" * 40, "language": "go"}, "'ok'.*'url'"),
        ("ok", {"url": "https://h/x.git", "sha": "a" * 40, "language": "cobol"}, "'language'"),
        ("ok", {"url": "https://h/x.git", "sha": "a" * 40}, "'ok'.*missing field 'language'"),
        ("ok", {"url": "https://h/x.git", "sha": "a" * 40, "language": "go", "x": 1}, "'x'"),
        (
            "ok",
            {"url": "https://h/x.git", "sha": "a" * 40, "language": "go", "split": "test"},
            "'ok': field 'split' must be one of tune, holdout, seen, got 'test'",
        ),
    ],
)
def test_bad_pin_names_the_repo_and_the_field(tmp_path, name, fields, message):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({name: fields}))
    with pytest.raises(RecallError, match=message):
        load_pins(corpus)


def test_corpus_json_that_is_not_json_or_has_duplicates(tmp_path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text("{nope")
    with pytest.raises(RecallError, match="not JSON"):
        load_pins(corpus)
    pin = '{"url": "https://h/x.git", "sha": "' + "a" * 40 + '", "language": "go"}'
    corpus.write_text('{"a": ' + pin + ', "a": ' + pin + "}")
    with pytest.raises(RecallError, match="duplicate key 'a'"):
        load_pins(corpus)


def test_a_pin_without_a_side_predates_the_split_and_is_tune_and_is_written_with_it(tmp_path):
    corpus = tmp_path / "corpus.json"
    fields = {"url": "https://h/x.git", "sha": "a" * 40, "language": "go"}
    corpus.write_text(json.dumps({"old": fields, "new": {**fields, "split": "holdout"}}))
    pins = load_pins(corpus)
    assert (pins["old"].split, pins["new"].split) == ("tune", "holdout")
    assert pins["old"].as_json() == {**fields, "split": "tune"}
    assert pins["new"].identity() == pins["old"].identity() == fields  # no key holds the side


def test_committed_pins_are_the_twelve_mirrored_corpora_in_eleven_languages(pins):
    assert list(pins) == [
        "rails", "tokio", "ripgrep", "gin", "pytest", "vue", "redis", "commons-lang", "jquery",
        "fmt", "okio", "telescope",
    ]  # fmt: skip
    assert pins["vue"].url == "https://github.com/vuejs/core.git"
    assert len({pin.language for pin in pins.values()}) == 11
    assert pins["fmt"].language == "c++" and pins["redis"].language == "c"
    assert pins["okio"].language == "kotlin" and pins["telescope"].language == "lua"


@needs_mirror
def test_fetch_all_ten_from_the_mirror_then_again_quickly(real_cache, all_names):
    proc = run_cli("fetch", "--cache", str(real_cache), "--mirror", str(mirror_dir()))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == list(all_names)
    _name, short, path = lines[0].split("\t")
    assert len(short) == 12 and Path(path).is_dir()


def test_pin_missing_from_the_mirror_falls_back_to_its_url_in_one_line(upstream, tmp_path, capfd):
    path, sha = upstream
    mirror = tmp_path / "mirror"
    (mirror / "github.com").mkdir(parents=True)
    checkout = fetch(pin_for(path, sha), tmp_path / "cache", mirror)
    assert (checkout.path / "sub" / "b.py").is_file()
    err = capfd.readouterr().err
    assert err == f"recall: demo: not in mirror {mirror}; fetching {path.as_uri()}\n"


def test_a_fetch_that_fails_without_a_mirror_says_how_to_give_one(tmp_path):
    """Issue 44 item 9: offline, `cannot fetch ... Could not resolve host` did not mention
    --mirror, the flag that makes recall work there."""
    pin = Pin("demo", "https://host.invalid/owner/demo", "a" * 40, "python")
    with pytest.raises(RecallError) as raised:
        fetch(pin, tmp_path / "cache", None)
    message = str(raised.value)
    assert message.startswith(f"fetch demo: cannot fetch aaaaaaaaaaaa from {pin.url}: ")
    assert message.endswith(
        "; offline, give --mirror DIR (or set RECALL_MIRROR), a folder of bare mirrors laid "
        "out DIR/<host>/<path>"
    )
    assert not checkout_path(tmp_path / "cache", pin).exists()  # nothing half-made


def test_a_fetch_from_a_mirror_that_fails_names_the_mirror(upstream, tmp_path):
    path, _sha = upstream
    mirror = tmp_path / "mirror"
    where = mirror / "example.com" / "owner" / "demo"
    shutil.copytree(path, where)
    pin = Pin("demo", "https://example.com/owner/demo", "b" * 40, "python")
    with pytest.raises(RecallError) as raised:
        fetch(pin, tmp_path / "cache", mirror)
    message = str(raised.value)
    assert f"from {where.as_uri()} (the mirror of {pin.url}): " in message
    assert "--mirror" not in message


@pytest.fixture
def world(tmp_path: Path) -> dict:
    return fault_world(tmp_path)


def test_a_corpus_file_nested_100k_deep_is_one_line_exit_2(world):
    world["corpus"].write_bytes(DEEP)
    proc = run_cli(*fault_args(world), cwd=world["finder"], env=fault_env(world))
    one_line_exit_2(proc, f"{world['corpus']}: not JSON")


@pytest.mark.parametrize(
    "marker",
    [b"[]", b'{"sha": 5}', b'{"tree": "x"}', b'"text"', DEEP, DEEP_OBJECT, b"{"],
)
def test_a_checkout_marker_of_the_wrong_shape_is_rebuilt_with_a_warning(tmp_path, capsys, marker):
    pin = tiny_pin(tmp_path)
    checkout = fetch(pin, tmp_path / "cache")
    (checkout.path / ".git" / MARKER).write_bytes(marker)
    again = fetch(pin, tmp_path / "cache")
    assert "rebuilding the checkout" in capsys.readouterr().err
    assert len(again.tree) == 40
    assert json.loads((again.path / ".git" / MARKER).read_text())["sha"] == pin.sha


def test_load_pins_names_a_file_nested_too_deeply(tmp_path):
    path = tmp_path / "corpus.json"
    path.write_bytes(DEEP_OBJECT)
    with pytest.raises(RecallError, match=f"^{re.escape(str(path))}: not JSON: nested too deeply"):
        load_pins(path)
