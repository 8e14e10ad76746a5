"""Baselines: a git ref of the finder's repo, archived, built once and kept by commit."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path, PurePosixPath

import git

from recall.cache import FolderEntry, key_digest
from recall.errors import RecallError
from recall.finders.engine import Engine, build_env, expand, fill
from recall.running.identity import build_world
from recall.running.interpreter import finder_python
from recall.running.proc import kill_group
from recall.running.values import FinderBuild

TAIL_LINES = 15
KIND = "builds"  # <cache>/builds/<key>/tree
MARKER = ".recall-built"
BUILD_TIMEOUT_S = 3600.0  # a cold release build of a large finder, with room to spare


def finder_root(start: Path) -> Path:
    """The finder repo's top folder (the start folder itself outside a git repo)."""
    if not start.is_dir():
        raise RecallError(f"--finder {start}: no such folder")
    try:
        repo = git.Repo(start, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return start.absolute()
    with repo:
        return Path(repo.working_tree_dir or start).absolute()


def resolve_commit(root: Path, ref: str) -> str:
    """REF as a full commit id; a tree, blob or unknown name is refused."""
    try:
        repo = git.Repo(root)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise RecallError(f"--base {ref}: {root} is not a git repository") from None
    with repo:
        try:
            kind = repo.git.cat_file("-t", "--end-of-options", ref)
            sha = repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        except git.GitCommandError:
            raise RecallError(f"--base {ref}: not a commit in {root}") from None
    if kind not in ("commit", "tag") or not sha:
        raise RecallError(f"--base {ref}: names a {kind}, not a commit")
    return sha


def same_tree(root: Path, commit: str, own: list[Path]) -> str | None:
    """The tree id when the working tree at root holds exactly COMMIT's code, else None:
    HEAD's tree is the commit's, and git lists nothing changed or untracked but `own`,
    the files recall reads from the tree for both sides alike (the engine file, the suite
    files beside it). Ignored files (a build's output) are no code of the tree. None
    too where git cannot tell (no commit yet, not a repository)."""
    mine = {path.absolute() for path in own}
    try:
        repo = git.Repo(root)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    with repo:
        try:
            ours = repo.git.rev_parse("--verify", "--quiet", "HEAD^{tree}")
            theirs = repo.git.rev_parse("--verify", "--quiet", f"{commit}^{{tree}}")
            status = repo.git.status("--porcelain", "-z", "--untracked-files=all")
        except git.GitCommandError:
            return None
    if not ours or ours != theirs:
        return None
    for entry in status.split("\0"):
        if entry[3:] and (root / entry[3:]).absolute() not in mine:
            return None
    return ours


def build_key(commit: str, engine: Engine) -> str:
    """A base build is cached by its commit and everything else that decides what the
    build makes: the engine description, and the build's world (build_world)."""
    return key_digest({"commit": commit, "engine": engine.digest, **build_world(engine)}, 24)


def build_base(
    root: Path,
    commit: str,
    engine: Engine,
    cache: Path,
    python: str,
    timeout: float = BUILD_TIMEOUT_S,
) -> Path:
    """The built tree of commit, from the cache or from `git archive` plus the build; marked
    in use by this process, so a concurrent prune leaves it alone."""

    def make(folder: Path) -> None:
        tree = folder / "tree"
        extract_archive(root, commit, tree)
        try:
            run_build(engine, tree, python, timeout)
        except RecallError as exc:  # the folder's random name must not reach a
            # message that a history keeps and a merge compares
            shown = f"{{tree of {commit[:12]}}}"
            raise RecallError(str(exc).replace(str(tree), shown)) from None

    entry = FolderEntry(cache, KIND, build_key(commit, engine), MARKER)
    return entry.get(make, commit) / "tree"


def extract_archive(root: Path, commit: str, dest: Path) -> None:
    """COMMIT's `git archive` of the repository at root, unpacked into dest (created).

    Every member is checked by us rather than by tarfile's `filter="data"`, which only
    Python 3.11.4 and later have: the same archive unpacks alike on every supported Python.
    """
    repo = git.Repo(root)
    with repo:
        data = repo.git.archive("--format=tar", commit, stdout_as_string=False)
    dest.mkdir()
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        members = archive.getmembers()
        for member in members:
            problem = unsafe_member(member)
            if problem:
                raise RecallError(f"--base {commit[:12]}: archive member {member.name!r} {problem}")
        # checked above; "fully_trusted" keeps 3.14's stricter default from changing modes
        if hasattr(tarfile, "fully_trusted_filter"):
            archive.extractall(dest, members=members, filter="fully_trusted")
        else:
            archive.extractall(dest, members=members)


def tree_identity(root: Path, engine: Engine) -> str | None:
    """A working tree known by its content, for keeping its index (`index_cache`): every
    file git lists in it, tracked or untracked but not ignored, with its executable bit,
    and every file under it that the engine's commands name (`{tree}/fzy`, a build's
    ignored output); a link by its target and the target's content. None outside a git
    working tree, or with a submodule, a nested repository or a link to a folder in it,
    whose files git does not list here.

    Only the index is kept by it: the working tree's queries always run, so a self-diff
    runs both sides for real and an edit is measured at once."""
    try:
        listed = git.Git(str(root)).ls_files("-z", "--cached", "--others", "--exclude-standard")
    except git.GitCommandError:
        return None
    paths = {path for path in listed.split("\0") if path}
    for template in (engine.bin, engine.index, engine.index_names, engine.query, engine.batch):
        paths |= {
            p[len("{tree}/") :] for p in template if p.startswith("{tree}/") and p.count("{") == 1
        }
    digest = hashlib.sha256()
    for relative in sorted(paths):
        path = root / relative
        digest.update(relative.encode("utf-8", "surrogateescape") + b"\0")
        if path.is_symlink():  # its target too: it may lie outside the tree
            digest.update(b"link " + os.fsencode(os.readlink(path)) + b"\0")
        if path.is_file():
            digest.update(b"x " if os.access(path, os.X_OK) else b"- ")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        elif path.is_dir():
            return None  # a submodule, a nested repository or a linked folder: unlisted files
        else:
            digest.update(b"absent")
        digest.update(b"\0")
    return f"tree:{digest.hexdigest()}"


def unsafe_member(member: tarfile.TarInfo) -> str | None:
    """Why a member could write outside the folder it is unpacked into, or None: an absolute
    or `..` path, a link whose target leaves the folder, a device or fifo."""
    parts = PurePosixPath(member.name).parts
    if member.name.startswith("/") or ".." in parts:
        return "leaves the tree"
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        return "is not a file, folder or link"
    if member.issym() or member.islnk():
        target = PurePosixPath(member.linkname)
        base = PurePosixPath(*parts[:-1]) if member.issym() else PurePosixPath()
        if target.is_absolute() or _escapes(base / target):
            return f"links outside the tree ({member.linkname!r})"
    return None


def _escapes(path: PurePosixPath) -> bool:
    """Does a relative path climb above its start once `..` is applied in order?"""
    depth = 0
    for part in path.parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return True
    return False


def run_build(engine: Engine, tree: Path, python: str, timeout: float = BUILD_TIMEOUT_S) -> None:
    """Run the engine's build in tree; a failure, or no binary after it, is an error."""
    values = {"tree": str(tree), "python": python}
    if engine.build:
        argv = expand(engine.build, values, [])
        code, output = _build_process(argv, tree, timeout, build_env(engine, os.environ))
        if code != 0:
            tail = " | ".join(output.decode("utf-8", "replace").splitlines()[-TAIL_LINES:])
            raise RecallError(f"build failed (exit {code}): {' '.join(argv)}: {tail}")
    program = fill(engine.bin[0], values)
    if ("/" in program) and not Path(program).exists():
        raise RecallError(f"build in {tree} did not produce {program}")
    if ("/" in program) and not _is_program(Path(program)):
        raise RecallError(f"{engine.source}: {program} is not an executable file")
    if "/" not in program and shutil.which(program) is None:
        hint = (
            " (kind 'node' runs Node.js: apt-get install nodejs npm)"
            if engine.kind == "node"
            else ""
        )
        raise RecallError(f"{engine.source}: program {program!r} not found on PATH{hint}")
    _check_python_module(engine, values, tree)


def python_module(engine: Engine) -> str | None:
    """The module `{python} -m MODULE` runs from the engine's PYTHONPATH, or None."""
    path = dict(engine.env).get("PYTHONPATH")
    if engine.bin[0] != "{python}" or "-m" not in engine.bin[:-1] or path is None:
        return None
    return engine.bin[engine.bin.index("-m") + 1]


def _has_module(folder: Path, module: str) -> bool:
    relative = Path(*module.split("."))
    package, plain = folder / relative, folder / relative.with_suffix(".py")
    return (package / "__main__.py").is_file() or plain.is_file()


def own_tree(
    engine: Engine, root: Path, *, named: bool = False, base: str | None = None,
    base_bin: str | None = None,
) -> Path:  # fmt: skip
    """The tree an engine runs: root, unless the engine is a preset of recall's own code
    (the reference finder, its path mode, the frizbee adapters: `{python} -m recall.*`
    with PYTHONPATH={tree}) that root does not hold (any folder but recall's checkout;
    recall installed from a wheel) and no finder was named (named: by --finder or a
    recall.toml, whose tree it must be): then the tree recall is installed from, whose
    code it is. A baseline (--base REF, --base-bin PATH) of such a run would be no build
    of any finder: refused."""
    module = python_module(engine)
    if named or not engine.source.startswith("preset:") or module is None:
        return root
    if not module.startswith("recall.") or _has_module(root, module):
        return root
    if base or base_bin:
        flag = f"--base {base}" if base else f"--base-bin {base_bin}"
        raise RecallError(
            f"{flag}: no recall.toml in {Path.cwd()} or above to say which finder to build; "
            "`recall init` writes one (without one, recall measures the reference finder it "
            "ships)"
        )
    return Path(__file__).resolve().parents[2]


def _check_python_module(engine: Engine, values: dict[str, str], tree: Path) -> None:
    """`{python} -m MODULE` run from PYTHONPATH folders: the module must be in one of them.
    A tree without it would otherwise import an installed copy, or nothing, and either
    way not the code of the tree named."""
    module = python_module(engine)
    path = dict(engine.env).get("PYTHONPATH")
    if module is None or path is None:
        return
    folders = [Path(f) for f in fill(path, values).split(os.pathsep) if f]
    if any(_has_module(folder, module) for folder in folders):
        return
    raise RecallError(
        f"{tree}: has no module {module} (the engine runs python -m {module} with "
        f"PYTHONPATH={path}): not a tree of this finder"
    )


def _is_program(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def check_build_timeout(seconds: float) -> None:
    """--build-timeout: a build given no time at all could never finish."""
    if not seconds > 0:
        raise RecallError("--build-timeout must be above 0")


def _build_process(
    argv: list[str], tree: Path, timeout: float, env: dict[str, str]
) -> tuple[int, bytes]:
    """The build's exit status and its stdout then stderr. It runs in a process group of
    its own, so that a timeout, Ctrl-C or SIGTERM ends the whole build (a compiler it
    started included) and not only the process the harness started."""
    try:
        proc = subprocess.Popen(
            argv, cwd=tree, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        raise RecallError(f"build in {tree}: cannot run {argv[0]}: {exc.strerror}") from None
    with proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            raise RecallError(f"build timed out after {timeout:g} s: {' '.join(argv)}") from None
        except BaseException:
            kill_group(proc.pid)
            raise
    return proc.returncode, out + err


def with_bin(engine: Engine, path: str, flag: str = "--bin") -> Engine:
    """The engine with a hand-built binary in place of its own build."""
    program = Path(path)
    if not program.is_file():
        raise RecallError(f"{flag} {path}: no such file")
    if not _is_program(program):
        raise RecallError(f"{flag} {path}: not executable (chmod +x, or run it with --engine)")
    return dataclasses.replace(engine, bin=(str(program.absolute()),), build=())


def base_binary(
    root: Path, ref: str, engine: Engine, cache: Path, build_timeout: float = BUILD_TIMEOUT_S
) -> tuple[FinderBuild, str]:
    """--base REF built from `git archive`, and the commit it is."""
    commit = resolve_commit(root, ref)
    python = finder_python(cache)
    tree = build_base(root, commit, engine, cache, python, build_timeout)
    return FinderBuild(f"base {ref} ({commit[:12]})", engine, tree, python), commit


def make_binaries(
    root: Path,
    engine: Engine,
    cache: Path,
    *,
    bin_path: str | None = None,
    base: str | None = None,
    base_bin: str | None = None,
    build_timeout: float = BUILD_TIMEOUT_S,
) -> list[FinderBuild]:
    """The baseline (if any) then the candidate, built and ready, as the default run has them."""
    binaries: list[FinderBuild] = []
    python = finder_python(cache)
    if base_bin:
        binaries.append(FinderBuild("base", with_bin(engine, base_bin, "--base-bin"), root, python))
    elif base:
        binaries.append(base_binary(root, base, engine, cache, build_timeout)[0])
    candidate = with_bin(engine, bin_path) if bin_path else engine
    run_build(candidate, root, python, build_timeout)
    binaries.append(FinderBuild("candidate", candidate, root, python))
    return binaries
