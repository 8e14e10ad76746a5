"""Baselines run their own tree's code and nothing else: archives unpacked the same on every
supported Python, members that leave the tree refused, a tree's missing module never
served from the working tree or an editable install."""

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT, SUBSEQUENCE_FINDER, commit_files, make_repo, needs_mirror, run_cli

from recall.cache import release_in_use
from recall.errors import RecallError
from recall.finders.engine import load_engine, load_preset, preset_names
from recall.running import identity
from recall.running.build import (
    build_base,
    extract_archive,
    own_tree,
    python_module,
    run_build,
    tree_identity,
    unsafe_member,
)
from recall.running.interpreter import finder_python


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize(
    "member",
    [
        _member("/etc/passwd"),
        _member("a/../../x"),
        _member("link", tarfile.SYMTYPE, "/etc/passwd"),
        _member("a/link", tarfile.SYMTYPE, "../../outside"),
        _member("hard", tarfile.LNKTYPE, "../outside"),
        _member("dev", tarfile.CHRTYPE),
        _member("fifo", tarfile.FIFOTYPE),
    ],
    ids=["absolute", "dotdot", "abs-symlink", "climbing-symlink", "hardlink-out", "dev", "fifo"],
)
def test_members_that_could_write_outside_the_tree_are_refused(member):
    assert unsafe_member(member) is not None


@pytest.mark.parametrize(
    "member",
    [
        _member("a/b.py"),
        _member("a", tarfile.DIRTYPE),
        _member("a/link", tarfile.SYMTYPE, "../b.py"),
        _member("a/b/link", tarfile.SYMTYPE, "./../c/./d"),
        _member("hard", tarfile.LNKTYPE, "a/b.py"),
    ],
    ids=["file", "dir", "sibling-symlink", "dotted-symlink", "hardlink-in"],
)
def test_members_inside_the_tree_are_kept(member):
    assert unsafe_member(member) is None


def test_a_real_archive_unpacks_files_modes_and_inner_links(tmp_path):
    repo = make_repo(tmp_path / "repo", {"src/a.py": "x = 1\n", "run.sh": "#!/bin/sh\n"})
    root = tmp_path / "repo"
    (root / "run.sh").chmod(0o755)
    os.symlink("src/a.py", root / "alias.py")
    repo.index.add(["run.sh", "alias.py"])
    sha = repo.index.commit("links").hexsha
    extract_archive(root, sha, tmp_path / "out")
    assert (tmp_path / "out" / "src" / "a.py").read_text() == "x = 1\n"
    assert os.access(tmp_path / "out" / "run.sh", os.X_OK)
    assert os.readlink(tmp_path / "out" / "alias.py") == "src/a.py"


def test_a_commit_holding_a_link_out_of_the_tree_is_refused_and_leaves_nothing(tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    os.symlink("/etc/passwd", tmp_path / "repo" / "secret")
    repo.index.add(["secret"])
    sha = repo.index.commit("a link out").hexsha
    with pytest.raises(RecallError, match=r"secret.*links outside the tree"):
        extract_archive(tmp_path / "repo", sha, tmp_path / "out")
    assert not any((tmp_path / "out").iterdir())


def test_finder_python_imports_the_packages_but_not_the_harness(tmp_path):
    python = finder_python(tmp_path / "cache")
    probe = "import numpy, orjson, rapidfuzz; import recall"
    proc = subprocess.run([python, "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert "No module named 'recall'" in proc.stderr
    assert "numpy" not in proc.stderr
    again = finder_python(tmp_path / "cache")
    assert again == python and len(list((tmp_path / "cache" / "interpreters").iterdir())) == 3


def _finder_repo(tmp_path: Path):
    """A repo holding this project's own recall package, as a finder repo would."""
    path = tmp_path / "finder"
    files = {
        str(p.relative_to(ROOT)): p.read_text()
        for p in (ROOT / "recall").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    return make_repo(path, files), path


def _run_base(path: Path, cache: Path, ref: str):
    return run_cli(
        "--cache", str(cache), "--finder", str(path), "--base", ref, "--repo", "gin",
        "--no-regress", "--json", "--same-program-ok",
    )  # fmt: skip


@needs_mirror
@pytest.mark.slow
def test_a_base_missing_a_module_fails_rather_than_importing_the_working_tree(tmp_path, real_cache):
    repo, path = _finder_repo(tmp_path)
    (path / "recall" / "errors.py").unlink()
    repo.index.remove(["recall/errors.py"])
    repo.index.commit("drop a module the finder imports")
    proc = _run_base(path, real_cache, "HEAD")
    assert proc.returncode == 2, proc.stdout[-300:]
    assert "No module named 'recall.errors'" in proc.stderr
    assert proc.stderr.count("\n") == 1


@needs_mirror
@pytest.mark.slow
def test_a_base_with_no_finder_at_all_is_one_line_exit_2(tmp_path, real_cache):
    repo, path = _finder_repo(tmp_path)
    shutil.rmtree(path / "recall" / "finders" / "reference")
    repo.git.add("-A")
    repo.index.commit("no finder")
    proc = _run_base(path, real_cache, "HEAD")
    assert proc.returncode == 2
    assert "has no module recall.finders.reference" in proc.stderr and proc.stderr.count("\n") == 1


def test_a_finder_folder_that_is_missing_or_empty_is_refused(tmp_path, real_cache):
    (tmp_path / "empty").mkdir()
    missing = run_cli("--cache", str(real_cache), "--finder", str(tmp_path / "nope"))
    empty = run_cli("--cache", str(real_cache), "--finder", str(tmp_path / "empty"))
    assert missing.returncode == 2 and "no such folder" in missing.stderr
    assert empty.returncode == 2 and "has no module recall.finders.reference" in empty.stderr


def test_a_bin_that_is_not_executable_is_refused(tmp_path, real_cache):
    script = tmp_path / "finder.sh"
    script.write_text("#!/bin/sh\necho '[]'\n")
    proc = run_cli("--cache", str(real_cache), "--bin", str(script), "--repo", "gin")
    assert proc.returncode == 2 and "not executable" in proc.stderr


@needs_mirror
@pytest.mark.slow
def test_a_working_tree_finder_run_by_a_program_on_path_is_measured_again_after_an_edit(
    tmp_path, real_cache
):
    python = Path(sys.executable)
    engine = (
        f'[engine]\nbin = ["{python.name}"]\n'
        'query = ["{bin}", "{tree}/finder.py", "{query}", "{names}"]\noutput = "lines"\n'
    )
    repo = make_repo(tmp_path / "f", {"finder.py": SUBSEQUENCE_FINDER, "recall.toml": engine})
    args = ("--cache", str(real_cache), "--finder", str(tmp_path / "f"), "--repo", "gin")
    args += ("--type", "abbr3", "--no-regress", "--json")
    env = {"PATH": f"{python.parent}:{os.environ['PATH']}"}
    first = run_cli(*args, env=env)
    assert first.returncode == 0, first.stderr
    worse = SUBSEQUENCE_FINDER.replace("key=lambda n: (len(n), n))", "key=lambda n: (-len(n), n))")
    commit_files(repo, {"finder.py": worse}, "rank the longest first")
    second = run_cli(*args, env=env)
    assert second.returncode == 0, second.stderr
    before, after = json.loads(first.stdout)["runs"][0], json.loads(second.stdout)["runs"][0]
    assert after["first"] < before["first"]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_failed_base_build_says_the_same_whoever_started_it(tmp_path, real_cache, monkeypatch):
    """Under `make recall` a finder's make would be a sub-make that names its folder, and a
    base is built in a folder of random name: either would change the message that a
    history keeps and a merge of its shards compares."""
    finder = tmp_path / "finder"
    repo = make_repo(finder, {
        "Makefile": "all:\n\t@echo level=$(MAKELEVEL) flags=$(MAKEFLAGS) in=$(CURDIR) >&2; false\n",
        "recall.toml": '[engine]\nbuild = ["make"]\nbin = ["{tree}/fzy"]\n'
                       'query = ["{bin}", "{query}"]\noutput = "lines"\n',
    })  # fmt: skip
    (finder / "Makefile").write_text("all:\n\tprintf '#!/bin/sh\\n' > fzy; chmod +x fzy\n")
    monkeypatch.setenv("MAKELEVEL", "1")
    monkeypatch.setenv("MAKEFLAGS", "w")
    proc = run_cli("--finder", str(finder), "--base", "HEAD", "--same-program-ok",
                   "--cache", str(real_cache), "--repo", "gin")  # fmt: skip
    assert proc.returncode == 2
    sha = repo.head.commit.hexsha[:12]
    assert f"level=0 flags= in={{tree of {sha}}} |" in proc.stderr
    assert "Entering directory" not in proc.stderr and ".tmp-" not in proc.stderr


def test_a_working_tree_is_known_by_the_content_of_the_files_it_runs(tmp_path):
    """tree_identity, which keeps a working tree's index: every listed file's content and
    mode, untracked ones too, and ignored files only where the engine names them."""
    from recall.finders.engine import load_engine

    root = tmp_path / "finder"
    make_repo(root, {"a.py": "x = 1\n", ".gitignore": "out/\n"})
    (root / "out").mkdir()
    (root / "out" / "fzy").write_text("v1")
    (root / "recall.toml").write_text(
        '[engine]\nbin = ["{tree}/out/fzy"]\nquery = ["{bin}", "{query}"]\noutput = "lines"\n'
    )
    engine = load_engine(root / "recall.toml")
    seen = [tree_identity(root, engine)]
    assert tree_identity(root, engine) == seen[0]  # the same content, the same identity
    (root / "out" / "log.txt").write_text("ignored and not named by the engine")
    assert tree_identity(root, engine) == seen[0]
    for change in (
        lambda: (root / "a.py").write_text("x = 2\n"),  # a tracked file edited
        lambda: (root / "b.py").write_text(""),  # an untracked file
        lambda: (root / "a.py").chmod(0o755),  # a mode
        lambda: (root / "out" / "fzy").write_text("v2"),  # the ignored binary the engine runs
    ):
        change()
        seen.append(tree_identity(root, engine))
    assert len(set(seen)) == len(seen)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert tree_identity(plain, engine) is None
    make_repo(root / "vendored", {"lib.py": ""})  # a nested repository: not listed inside
    assert tree_identity(root, engine) is None


def test_a_working_tree_linking_outside_itself_is_known_by_what_the_link_reaches(tmp_path):
    """A link the tree holds may reach a file outside it, which the finder then runs: its
    content is part of the tree's identity; a linked folder, whose files git does not
    list, leaves the tree with no identity, so its index is never kept."""
    from recall.finders.engine import load_engine

    outside = tmp_path / "shared.py"
    outside.write_text("x = 1\n")
    root = tmp_path / "finder"
    make_repo(
        root,
        {
            "a.py": "",
            "recall.toml": '[engine]\nbin = ["fzy"]\nquery = ["{bin}", "{query}"]\n',
        },
    )
    (root / "shared.py").symlink_to(outside)
    engine = load_engine(root / "recall.toml")
    before = tree_identity(root, engine)
    outside.write_text("x = 2\n")
    assert before is not None and tree_identity(root, engine) != before
    (root / "lib").symlink_to(tmp_path, target_is_directory=True)
    assert tree_identity(root, engine) is None


BUILDER = """#!/bin/sh
echo built >> "$BUILD_LOG_DIR/log"
printf '%s\\n' "cc=${CC:-unset} builder=VERSION" > out.txt
"""


def _world_finder(tmp_path: Path, monkeypatch, extra: str = "") -> tuple[Path, str, Path]:
    """A finder whose build is `fakemake`, a program on a PATH folder of the test's own,
    that records each build and the CC it saw in the tree it builds."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "fakemake").write_text(BUILDER.replace("VERSION", "1"))
    (tools / "fakemake").chmod(0o755)
    (tools / "fakerustc").write_text('#!/bin/sh\ncat "$BUILD_LOG_DIR/rustc-version"\n')
    (tools / "fakerustc").chmod(0o755)
    (tmp_path / "rustc-version").write_text("fakerustc 1.0\n")
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.setenv("BUILD_LOG_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "gcc")
    engine = (
        '[engine]\nbuild = ["fakemake"]\nbin = ["/bin/cat"]\nquery = ["{bin}", "{query}"]\n'
        f'pass_env = ["BUILD_LOG_DIR"{extra}]\ntoolchain = [["fakerustc"]]\n'
    )
    repo = make_repo(tmp_path / "finder", {"recall.toml": engine})
    return tmp_path / "finder", repo.head.commit.hexsha, tools


def _build(root: Path, commit: str, cache: Path) -> str:
    engine = load_engine(root / "recall.toml")
    tree = build_base(root, commit, engine, cache, sys.executable)
    release_in_use()
    return (tree / "out.txt").read_text().strip()


def test_a_base_build_is_kept_by_its_world_not_only_its_commit(tmp_path, monkeypatch):
    """Class 3: the same commit is built again when a passed variable (CC), the program
    its build starts from PATH, or a toolchain probe's output changes; a variable not
    passed never reaches the build and changes nothing."""
    root, commit, tools = _world_finder(tmp_path, monkeypatch, ', "CC"')
    cache = tmp_path / "cache"
    log = tmp_path / "log"
    assert _build(root, commit, cache) == "cc=gcc builder=1"
    assert _build(root, commit, cache) == "cc=gcc builder=1"
    assert log.read_text().count("built") == 1  # kept
    monkeypatch.setenv("CC", "clang")
    assert _build(root, commit, cache) == "cc=clang builder=1"
    (tools / "fakemake").write_text(BUILDER.replace("VERSION", "2"))  # a new make on PATH
    assert _build(root, commit, cache) == "cc=clang builder=2"
    assert log.read_text().count("built") == 3
    (tmp_path / "rustc-version").write_text("fakerustc 2.0\n")  # a new toolchain
    identity._probe.cache_clear()  # probed once per run: this is the next run
    _build(root, commit, cache)
    assert log.read_text().count("built") == 4
    monkeypatch.setenv("RUSTFLAGS", "-O")  # not passed: the build never sees it
    _build(root, commit, cache)
    assert log.read_text().count("built") == 4


def test_a_variable_not_passed_never_reaches_the_build(tmp_path, monkeypatch):
    root, commit, _tools = _world_finder(tmp_path, monkeypatch)
    assert _build(root, commit, tmp_path / "cache") == "cc=unset builder=1"


def test_a_toolchain_probe_that_fails_is_one_error_naming_it(tmp_path, monkeypatch):
    root, commit, tools = _world_finder(tmp_path, monkeypatch)
    (tools / "fakerustc").write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    with pytest.raises(RecallError, match=r"toolchain fakerustc: exit 3: broken"):
        _build(root, commit, tmp_path / "cache")


def test_every_preset_of_recall_s_own_code_runs_recall_s_tree_from_any_folder(tmp_path):
    """Issue 42 item 18: only the `reference` preset ran the installed tree outside a
    checkout; `reference-paths` (and the frizbee adapters) took the current folder for
    their tree and were refused: `DIR: has no module recall.finders.reference.paths`."""
    own = {name: load_preset(name) for name in preset_names()}
    own = {n: e for n, e in own.items() if (python_module(e) or "").startswith("recall.")}
    assert {"reference", "reference-paths", "frizbee"} <= set(own)
    for name, engine in own.items():
        tree = own_tree(engine, tmp_path)
        assert tree == ROOT, name  # the tree this recall runs from
        run_build(engine, tree, sys.executable, 60)  # its module is there: no refusal
    with pytest.raises(RecallError, match=r"^--base HEAD: no recall.toml in "):
        own_tree(own["reference-paths"], tmp_path, base="HEAD")
    assert own_tree(own["reference"], tmp_path, named=True) == tmp_path  # --finder's own
    assert own_tree(load_preset("fzf"), tmp_path) == tmp_path  # not recall's code


@needs_mirror
def test_the_path_mode_and_explain_run_from_a_folder_outside_any_checkout(tmp_path, real_cache):
    paths = run_cli("--engine", "reference-paths", "--queries", "paths", "--repo", "gin",
                    "--cache", str(real_cache), "--json", cwd=tmp_path)  # fmt: skip
    assert paths.returncode == 0, paths.stderr
    assert json.loads(paths.stdout)["runs"][0]["first"] > 0
    explained = run_cli("explain", "tstcnt", "--repo", "gin", "--cache", str(real_cache),
                        cwd=tmp_path)  # fmt: skip
    assert explained.returncode == 0, explained.stderr
    assert "TestContextGetInt16Slice" in explained.stdout
    assert list(tmp_path.iterdir()) == []
