"""What a result or a build is known by: the identity of everything outside the tree and
the engine file that can change a finder's answers or a build's output.

A cached result, a kept index and a base build are reused only when every part of their
key matches, so each key is made here, from one set of functions, and the caches that use
them (results_cache, indexes, build) differ only in which parts they take.
"""

from __future__ import annotations

import functools
import glob as globmod
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from recall.errors import RecallError
from recall.finders.engine import Engine, build_env, finder_env
from recall.finders.kinds import HARNESS_ROOT
from recall.inputs.corpus import Pin
from recall.inputs.paths import LISTING, PATHS, domain_of
from recall.inputs.queryset import JUDGED, QueryRow, queries_digest
from recall.toolchain import compiler_identity

PROBE_TIMEOUT_S = 60.0  # a toolchain probe prints a version; a minute is ample


def environment_key(engine: Engine) -> dict[str, object]:
    """What outside the tree and the engine file can change the answers: the environment
    the finder gets (engine.finder_env: every value that reaches it), the packages that
    `{python}` imports (the reference finder's NumPy and RapidFuzz, a library finder's own
    library, a Python language server), each program the argv starts from PATH (each
    command's first element, and a server given after `--`, as gopls or node), every file
    an argv names by absolute path, and the engine's declared `inputs`, all known by
    content."""
    argvs = _argvs(engine)
    parts = [part for argv in argvs for part in argv]
    env = finder_env(engine, os.environ)
    found: dict[str, object] = {"env": env}
    if any("{python}" in part for part in parts):
        found["{python} packages"] = _packages()
    for name in sorted(_programs(argvs)):
        path = shutil.which(name) if "{" not in name and "/" not in name else None
        if path:
            found[name] = program_identity(path)
    named = sorted({part for part in parts if _names_file(part)})
    found["files"] = {path: program_identity(path) for path in named}
    found["inputs"] = input_files(engine)
    if any(HARNESS_ROOT in value for value in env.values()):
        found["harness code"] = _harness_code()  # a kind's worker of ours, not the tree's
    return found


@functools.cache
def _harness_code() -> str:
    """The harness's own code, by content: a worker of ours that answers for a finder is
    part of what the finder's numbers were made from."""
    digest = hashlib.sha256()
    package = Path(HARNESS_ROOT) / "recall"
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".js") and path.is_file():
            digest.update(str(path.relative_to(package)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _argvs(engine: Engine) -> list[tuple[str, ...]]:
    """Every command the finder runs, `{bin}` spliced in."""
    spliced = []
    for argv in (engine.index, engine.index_names, engine.query, engine.batch, engine.profile):
        spliced.append(
            tuple(p for part in argv for p in (engine.bin if part == "{bin}" else (part,)))
        )
    return [engine.bin, *spliced]


def _programs(argvs: list[tuple[str, ...]]) -> set[str]:
    """The programs the commands start: each one's first element, and one after `--`."""
    programs = {argv[0] for argv in argvs if argv}
    for argv in argvs:
        programs |= {argv[i + 1] for i, part in enumerate(argv[:-1]) if part == "--"}
    return programs


def _names_file(part: str) -> bool:
    """An argv element that names an existing file outside any tree: an absolute path
    with no placeholder (a relative one is the finder's cwd's, a pinned corpus or tree)."""
    return "{" not in part and os.path.isabs(part) and os.path.isfile(part)


def input_files(engine: Engine) -> dict[str, str]:
    """The engine's declared inputs, each file by content; a pattern that names no file is
    refused: the key would silently cover less than the engine says."""
    found: dict[str, str] = {}
    folder = Path(engine.folder or ".")
    for pattern in engine.inputs:
        start = Path(pattern) if os.path.isabs(pattern) else folder / pattern
        matches = sorted(
            Path(p) for p in globmod.glob(str(start), recursive=True) if os.path.isfile(p)
        )
        if not matches:
            raise RecallError(f"{engine.source}: [engine] inputs: {pattern!r} names no file")
        for path in matches:
            found[str(path)] = program_identity(str(path))
    return found


INTERPRETERS = re.compile(
    r"(python|pypy|node|nodejs|deno|bun|ruby|perl|php|lua|luajit|sh|bash|dash|zsh|ksh|fish"
    r"|tclsh|java|Rscript|julia|guile|racket|ocaml|elixir|erl|escript|env|uv|npx|pnpm|yarn)"
    r"[0-9.]*(\.exe)?"
)


_TREES = ("{tree}", "{node_modules}")


def unseen_code(engine: Engine) -> str | None:
    """Why the harness cannot see the whole code the finder runs, or None: a program
    that is a known interpreter (python3, node, sh, env...), which runs a script or `-m`
    module or `-c` code that may import files no argv names. Its results are not cached
    unless the engine declares `inputs`. Not counted: the harness's own `{python}` (its
    packages are in the key) unless an argv names a file outside the tree for it to run;
    a program, or an interpreter's script, in `{tree}` or `{node_modules}` (the tree's
    identity covers them: a commit, or a working tree's content, which is never cached);
    and a program that is itself a script (`#!`), known by its content like any program
    file: what it starts or imports besides is for the engine to declare in `inputs`."""
    if engine.inputs:
        return None
    for argv in filter(None, _argvs(engine)):
        starts = [0] + [i + 1 for i, part in enumerate(argv[:-1]) if part == "--"]
        for start in starts:
            program, script = argv[start], argv[start + 1] if start + 1 < len(argv) else ""
            if any(tree in text for text in (program, script) for tree in _TREES):
                continue
            if program == "{python}":
                outside = [part for part in argv if _names_file(part)]
                if outside:
                    return f"{{python}} runs {outside[0]}, which may import files no key covers"
                continue
            if "{" in program:
                continue
            path = shutil.which(program) if "/" not in program else program
            if INTERPRETERS.fullmatch(os.path.basename(program)) or (
                path and INTERPRETERS.fullmatch(os.path.basename(os.path.realpath(path)))
            ):
                return (
                    f"{program} is an interpreter: the code it runs may import files no key covers"
                )
    return None


def program_identity(path: str) -> str:
    """A file's identity by content, hashed once per run for each version of the file."""
    stat = os.stat(path)
    return _program(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _packages() -> str:
    """The harness's installed distributions, name and version, as one digest."""
    names = sorted(
        f"{dist.metadata['Name']}=={dist.version}" for dist in importlib.metadata.distributions()
    )
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


@functools.cache
def _program(path: str, _mtime_ns: int, _size: int) -> str:
    """A program's identity, once per run for each version of the file."""
    return file_identity(Path(path))


# How a judgments set's rows are made (recall/inputs/judgments.py): a change to it changes
# every key of such a run.
JUDGED_LISTS = "each (domain, query) over its candidates, sorted; a row a candidate; v1"


def data_key(pins: dict[str, Pin], rows: list[QueryRow]) -> dict:
    """The part of a key that says what was asked: the pins of the repos used, the rows.
    A judgments set's rows use no pin: each runs over the candidates its rows name."""
    domain = domain_of(rows)
    used = sorted({r.repo for r in rows}) if domain != JUDGED else []
    key = {
        "pins": {repo: pins[repo].identity() for repo in used},
        "queries": queries_digest(rows),
    }
    if domain == PATHS:  # the candidates are the paths the listing rule keeps
        key["paths"] = LISTING
    if domain == JUDGED:
        key["lists"] = JUDGED_LISTS
    return key


def file_identity(path: Path) -> str:
    """A hand-built binary is known by its content, not its name or mtime."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"file:{digest.hexdigest()}"


def build_world(engine: Engine) -> dict[str, object]:
    """What outside the tree decides a build, or code compiled as the finder runs: its
    environment as declared (engine.build_env), the content of the program the build
    command starts (from PATH: make, cargo, cc; or by its path), the output of the engine's
    `toolchain` probes (`rustc --version`), run in that environment, and the content of
    each of its `compilers` (recall.toolchain). Empty for an engine with none of these."""
    if not engine.build and not engine.toolchain and not engine.compilers:
        return {}
    env = build_env(engine, os.environ)
    programs = {}
    program = engine.build[0] if engine.build else ""
    if program and "{" not in program:  # a program in the tree is the commit's
        path = program if "/" in program else shutil.which(program, path=env.get("PATH"))
        if path and os.path.isfile(path):
            programs[program] = program_identity(path)
    probes = [_probe(argv, tuple(sorted(env.items())), engine.source) for argv in engine.toolchain]
    world: dict[str, object] = {"build env": env, "build programs": programs, "toolchain": probes}
    if engine.compilers:
        world["compilers"] = {
            name: compiler_identity(name, env.get("PATH")) for name in engine.compilers
        }
    return world


def index_input_files(engine: Engine, tree: Path) -> dict[str, str] | None:
    """The engine's declared index_inputs in tree, each file by content (by its path
    relative to tree); None if a pattern names no file there (a tree older than the
    declaration: its index is then known by the whole tree, as without one)."""
    found: dict[str, str] = {}
    for pattern in engine.index_inputs:
        matches = sorted(
            Path(p) for p in globmod.glob(str(tree / pattern), recursive=True) if os.path.isfile(p)
        )
        if not matches:
            return None
        for path in matches:
            found[path.relative_to(tree).as_posix()] = program_identity(str(path))
    return found


@functools.cache
def _probe(argv: tuple[str, ...], env: tuple[tuple[str, str], ...], source: str) -> str:
    """A toolchain probe's stdout, once per run; a probe that cannot run or fails is an
    error: a key without its output would not say which toolchain builds."""
    try:
        proc = subprocess.run(
            argv, env=dict(env), cwd=tempfile.gettempdir(), stdin=subprocess.DEVNULL,
            capture_output=True, timeout=PROBE_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RecallError(
            f"{source}: [engine] toolchain {' '.join(argv)}: cannot run: {exc}"
        ) from None
    if proc.returncode != 0:
        raise RecallError(
            f"{source}: [engine] toolchain {' '.join(argv)}: exit {proc.returncode}: "
            f"{proc.stderr.decode('utf-8', 'replace').strip()[-200:]}"
        )
    return proc.stdout.decode("utf-8", "replace")
