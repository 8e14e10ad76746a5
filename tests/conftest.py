"""Shared fixtures: real git repositories in tmp_path and the real mirrored corpora."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import git
import pytest

from recall.errors import RecallError
from recall.inputs.corpus import Checkout, Pin, fetch, load_pins
from recall.inputs.symbols import checkout_symbols, ctags_version, distinct_names

ROOT = Path(__file__).resolve().parents[1]

# A finder script for fixture finder repos: names holding the query as a subsequence,
# shortest first, one per line; and the recall.toml that runs it.
SUBSEQUENCE_FINDER = r"""
import sys
query, names = sys.argv[1].lower(), open(sys.argv[2]).read().splitlines()
def subseq(q, n):
    it = iter(n.lower())
    return all(c in it for c in q)
hits = sorted((n for n in names if subseq(query, n)), key=lambda n: (len(n), n))
print("\n".join(hits))
"""
SUBSEQUENCE_ENGINE = """[engine]
bin = ["{python}", "{tree}/finder.py"]
query = ["{bin}", "{query}", "{names}"]
output = "lines"
"""


def mirror_dir() -> Path | None:
    for candidate in (os.environ.get("RECALL_MIRROR"), ROOT.parent / "shared" / "corpora"):
        if candidate and (Path(candidate) / "github.com").is_dir():
            return Path(candidate)
    return None


def pytest_configure(config: pytest.Config) -> None:
    """The commands under test find the mirrors that the tests find, under a plain `pytest`
    too (`make test` passes RECALL_MIRROR): a test needing them then runs or skips, and
    never fails trying the network."""
    mirror = mirror_dir()
    if mirror is not None:
        os.environ.setdefault("RECALL_MIRROR", str(mirror))
    # The reference finder's compiled kernel, built once for every run of every test (the
    # preset passes RECALL_KERNEL_CACHE): else each run compiles it anew in its own folder.
    kernels = Path(tempfile.gettempdir()) / f"recall-tests-kernel-{os.getuid()}"
    os.environ.setdefault("RECALL_KERNEL_CACHE", str(kernels))


# The fixtures whose users are slow by what the fixture does (index a real corpus with
# ctags, copy and build fzy): their tests get the slow mark here, so a new test that asks
# for one is left out of `make test-fast` without remembering to say so.
SLOW_FIXTURES = frozenset({"gin", "all_names", "gin_source", "fzy_origin", "fzy"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


needs_mirror = pytest.mark.skipif(
    mirror_dir() is None, reason="the offline corpus mirrors (../shared/corpora) are absent"
)


def _ctags_works() -> bool:
    try:
        ctags_version()
    except RecallError:
        return False
    return True


# What a test needs beyond Python and git, each skip saying what is missing: make test
# passes on a machine with only the README's prerequisites, and CI installs the rest.
HAVE_CTAGS = _ctags_works()
needs_ctags = pytest.mark.skipif(
    not HAVE_CTAGS, reason="Universal Ctags is not installed (apt-get install universal-ctags)"
)


def needs_tool(program: str, package: str | None = None) -> pytest.MarkDecorator:
    """Skip unless program is on PATH (package: the Debian package that brings it)."""
    return pytest.mark.skipif(
        shutil.which(program) is None,
        reason=f"{program} is not installed (apt-get install {package or program}; "
        ".ci/run installs it)",
    )


needs_chromium = needs_tool("chromium")


def make_repo(path: Path, files: dict[str, str], message: str = "init") -> git.Repo:
    """A real git repository with the given files committed."""
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "test")
        config.set_value("user", "email", "test@example.com")
    commit_files(repo, files, message)
    return repo


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of that size mounted at path (made here) for the block, for a full disk that
    is real; the test is skipped where nothing can be mounted (not root, no mount)."""
    path.mkdir()
    if (
        shutil.which("mount") is None
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
        ).returncode
    ):
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)])


# A tiny Python corpus of four names, for tests that need a real pin but no real corpus.
TINY_CORPUS_FILES = {
    "lib/alpha.py": "def alpha_function():\n    pass\n\n\nclass BetaClass:\n    pass\n",
    "lib/gamma.py": "def gamma_delta():\n    pass\n\n\ndef epsilon_value():\n    pass\n",
}


def tiny_suite(
    tmp_path: Path, rows: list[str], finder_files: dict[str, str], message: str = "init"
) -> dict:
    """A pin of the tiny corpus (a real repository), a query file of `rows` (each
    `query<TAB>type<TAB>source` of repo tiny), and a finder repository of finder_files: the
    paths a run of that finder on that corpus takes (corpus, queries, finder, cache)."""
    upstream = make_repo(tmp_path / "upstream", TINY_CORPUS_FILES)
    corpus = tmp_path / "corpus.json"
    pin = {"url": (tmp_path / "upstream").as_uri(), "sha": upstream.head.commit.hexsha}
    corpus.write_text(json.dumps({"tiny": {**pin, "language": "python"}}))
    queries = tmp_path / "queries.tsv"
    queries.write_text("repo\tquery\ttype\tsource\n" + "".join(f"tiny\t{r}\n" for r in rows))
    finder = tmp_path / "finder"
    make_repo(finder, finder_files, message=message)
    return {"corpus": corpus, "queries": queries, "finder": finder, "cache": tmp_path / "cache"}


def commit_files(repo: git.Repo, files: dict[str, str], message: str) -> str:
    root = Path(repo.working_tree_dir)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    repo.index.add(list(files))
    return repo.index.commit(message).hexsha


def run_recall(*args: str, cwd: Path = ROOT, env: dict | None = None):
    """`python -m recall ARGS` as a process of its own: for what only a process shows (its
    exit by a signal, a fault of the harness process, what a terminal sees). Every other
    test calls run_cli, which spares the second of imports each process costs."""
    import subprocess

    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "recall", *args], cwd=cwd, env=full_env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@dataclass(frozen=True)
class Ran:
    """What run_cli's call left, in the shape tests read of run_recall's CompletedProcess."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, cwd: Path = ROOT, env: dict | None = None) -> Ran:
    """`recall ARGS` through `recall.cli.main` in this process, as run_recall would run it:
    the same environment (PYTHONPATH included, for the processes recall starts), working
    folder, and file descriptors 1 and 2 captured, so the output of the programs recall
    starts lands where it would."""
    import traceback

    from recall import cli

    with _captured() as (out, err), _as_a_new_process(cwd, env):
        try:
            returncode = cli.main(list(args))
        except SystemExit as exc:  # argparse's usage errors, --help and --version
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
            returncode = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except Exception:  # what the interpreter prints and exits 1 for
            traceback.print_exc()
            returncode = 1
    return Ran(list(args), returncode, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _as_a_new_process(cwd: Path, env: dict | None) -> Iterator[None]:
    """The environment and working folder set for one call, and what a new process would
    not carry over reset around it: the functools caches of recall's modules (ctags looked
    up on another PATH), tempfile's remembered TMPDIR, and the in-use locks a run holds
    until its process exits."""
    import tempfile

    from recall import cache

    saved_env, saved_cwd, saved_tempdir = dict(os.environ), os.getcwd(), tempfile.tempdir
    held = len(cache._HELD)
    _clear_recall_caches()
    try:
        os.environ.clear()
        os.environ.update({**saved_env, "PYTHONPATH": str(ROOT), **(env or {})})
        tempfile.tempdir = None
        os.chdir(cwd)
        yield
    finally:
        while len(cache._HELD) > held:
            cache._HELD.pop().close()
        os.chdir(saved_cwd)
        tempfile.tempdir = saved_tempdir
        os.environ.clear()
        os.environ.update(saved_env)
        _clear_recall_caches()


@dataclass
class _Output:
    """A captured descriptor's text, read once the call is over."""

    text: str = ""

    def getvalue(self) -> str:
        return self.text


@contextlib.contextmanager
def _captured() -> Iterator[tuple[_Output, _Output]]:
    """Descriptors 1 and 2 into files, and sys.stdout and sys.stderr writing to them as
    Python sets them up for a pipe (stdout block-buffered, stderr line-buffered), so that
    what recall prints and what its children print keep their order."""
    import io
    import tempfile

    saved_streams, saved_fds = (sys.stdout, sys.stderr), (os.dup(1), os.dup(2))
    outputs = (_Output(), _Output())
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        files = (out_file, err_file)
        try:
            for fd, file in zip((1, 2), files, strict=True):
                os.dup2(file.fileno(), fd)
            with (
                open(1, "wb", closefd=False) as out_fd,
                open(2, "wb", closefd=False) as err_fd,
            ):
                sys.stdout = io.TextIOWrapper(out_fd, encoding="utf-8")
                sys.stderr = io.TextIOWrapper(
                    err_fd, encoding="utf-8", errors="backslashreplace", line_buffering=True
                )
                try:
                    yield outputs
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    sys.stdout.detach()
                    sys.stderr.detach()
        finally:
            sys.stdout, sys.stderr = saved_streams
            for fd, saved in zip((1, 2), saved_fds, strict=True):
                os.dup2(saved, fd)
                os.close(saved)
        for output, file in zip(outputs, files, strict=True):
            file.seek(0)
            output.text = file.read().decode("utf-8")


def _clear_recall_caches() -> None:
    """Forget what recall's functools caches learnt, as a new process would not know it."""
    for name, module in list(sys.modules.items()):
        if name == "recall" or name.startswith("recall."):
            for value in list(vars(module).values()):
                if getattr(value, "__module__", None) == name and hasattr(value, "cache_clear"):
                    value.cache_clear()


@pytest.fixture(scope="session")
def real_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def pins() -> dict[str, Pin]:
    return load_pins(ROOT / "corpus.json")


@pytest.fixture(scope="session")
def gin(real_cache: Path, pins: dict[str, Pin]) -> Checkout:
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    if not HAVE_CTAGS:
        pytest.skip("Universal Ctags is not installed (apt-get install universal-ctags)")
    return fetch(pins["gin"], real_cache, mirror)


@pytest.fixture(scope="session")
def all_names(real_cache: Path, pins: dict[str, Pin]) -> dict[str, list[str]]:
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    if not HAVE_CTAGS:
        pytest.skip("Universal Ctags is not installed (apt-get install universal-ctags)")
    names = {}
    for pin in pins.values():
        checkout = fetch(pin, real_cache, mirror)
        names[pin.name] = distinct_names(checkout_symbols(checkout, real_cache))
    return names


@pytest.fixture(scope="session")
def gin_source(real_cache: Path, gin: Checkout):
    """gin's names as the query generator sees them (with scope owners)."""
    from recall.inputs.derive import name_source

    return name_source(checkout_symbols(gin, real_cache), gin.pin.language)


@pytest.fixture(scope="session")
def subsequence_bin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The fixture finder as a hand-built binary (an executable script) and an engine file
    that runs it as `--bin`: cached by the script's content, as a real finder's build is,
    with nothing to install."""
    folder = tmp_path_factory.mktemp("subsequence-bin")
    script = folder / "finder"
    script.write_text(f"#!{sys.executable}\n{SUBSEQUENCE_FINDER}")
    script.chmod(0o755)
    engine = folder / "engine.toml"
    engine.write_text(
        '[engine]\nbin = ["/bin/false"]\nquery = ["{bin}", "{query}", "{names}"]\n'
        'output = "lines"\n'
    )
    return engine, script


FZY_PATH = Path("finders", "github.com", "jhawthorn", "fzy.git")
FZY_ENGINE = """[engine]
build = {build}
bin = ["{{tree}}/fzy"]
query = ["{{bin}}", "--show-matches={{query}}"]
stdin = "{{names}}"
output = "lines"
"""


@pytest.fixture(scope="session")
def fzy_origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """fzy's real repository (451 commits, tags 0.1 ... 1.1) as a bare repo git accepts:
    the shared mirror lacks its empty refs/ folder, so a copy gets one."""
    corpora = mirror_dir()
    shared = [corpora.parent] if corpora else []
    mirrors = [folder / FZY_PATH for folder in [*shared, ROOT.parent / "shared"]]
    found = [mirror for mirror in mirrors if (mirror / "objects").is_dir()]
    if not found:
        pytest.skip(f"fzy's mirror is absent (looked in {', '.join(map(str, mirrors))})")
    for tool in ("make", "cc"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: fzy cannot be built")
    bare = tmp_path_factory.mktemp("fzy") / "fzy.git"
    shutil.copytree(found[0], bare, symlinks=True)
    for folder, _dirs, files in os.walk(bare):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    (bare / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    (bare / "refs" / "tags").mkdir(parents=True, exist_ok=True)
    return bare


def fzy_clone(origin: Path, dest: Path, build: str = '["make"]') -> Path:
    """A clone of fzy with an uncommitted recall.toml: the engine comes from the working
    tree, as it does for a user of --base, while each commit's archive lacks it."""
    repo = git.Repo.clone_from(str(origin), dest)
    with repo.config_writer() as config:
        config.set_value("user", "name", "test")
        config.set_value("user", "email", "test@example.com")
    repo.close()
    (dest / "recall.toml").write_text(FZY_ENGINE.format(build=build))
    return dest


@pytest.fixture(scope="session")
def fzy(fzy_origin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One clone of fzy shared by the tests that only read it."""
    return fzy_clone(fzy_origin, tmp_path_factory.mktemp("fzy-clone") / "fzy")
