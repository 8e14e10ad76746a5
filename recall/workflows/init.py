"""`recall init`'s work: a starter recall.toml in a finder's repo (the command,
recall/commands/init.py, parses its flags into InitOptions and prints what this returns).

The starter is either a preset's own table (to adapt) or a blank engine whose every key
is written out with what it means, so that a first engine description is edited, not
looked up. Either way its `build` and `bin` build and run the program of this tree, found
from the build file the repo has (Makefile, Cargo.toml, go.mod, package.json,
pyproject.toml): a preset's `bin = ["fzy"]` runs the fzy on PATH, the same program for
every ref, so `--base` would compare it with itself. It is created without ever replacing
a file: an existing recall.toml is somebody's work.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from recall.errors import RecallError
from recall.files import stage
from recall.finders.engine import TEMPLATE_MARK, parse_engine, preset_names
from recall.running.build import finder_root
from recall.workflows.options import InitOptions

FILENAME = "recall.toml"

BLANK = """\
# recall.toml: how recall builds, indexes and queries this finder.
# Every command is an argv list (never a shell string); `{bin}` as an element splices
# the `bin` list. Placeholders: {tree} (the source tree built from), {bin}, {python}
# (the harness's interpreter), {db} (an empty folder of the run's own), {corpus} (the
# frozen checkout), {names} (the corpus's distinct names, one per line), {language},
# {query}, {limit} (0 = unlimited).
[engine]

# Required: the program, and one query. Edit both (a run refuses a line still marked).
bin = ["{tree}/my-finder"]  MARK
query = ["{bin}", "{query}", "--limit", "{limit}"]  MARK

# How to build it, run in the source tree (the repo, or a base's extracted archive).
# build = ["make"]

# Index a corpus once, into {db}; omitted: the harness only writes {names}.
# index = ["{bin}", "--index", "{corpus}", "--db", "{db}/index"]

# Many queries through one process: reads {"id": I, "query": Q, "limit": N} lines (I
# counts from 0 in each process) and answers one JSON line each, in order: {"id": I,
# "results": [...]} or {"id": I, "error": "..."} (or, echoing no id, the bare list or
# {"error": "..."}). A wrong id, or a line more than it was asked for, fails the run.
# batch = ["{bin}", "--batch", "--db", "{db}/index"]

# A query run with timing output, for --bench.
# profile = ["{bin}", "{query}", "--limit", "{limit}", "--profile"]

# Where the finder runs (default: the corpus).
# cwd = "{corpus}"

# A file fed on stdin to every query (fzf-style finders read candidates there).
# stdin = "{names}"

# The finder's environment is declared: PATH, its own HOME/XDG/TMPDIR, LC_ALL, TZ, then
# these. Extra variables, and the names whose values come from your shell (in the key).
# env = { MY_FINDER_DB = "{db}/index", MY_FINDER_JOBS = "1" }
# pass_env = ["MY_FINDER_MODEL"]

# Code the finder runs that no argv names (an interpreter's modules): hashed into the key,
# and what lets an engine whose program is python3, node or sh be cached at all.
# inputs = ["finder/**/*.py"]

# What else decides the build: each argv's output joins the build's key.
# toolchain = [["rustc", "--version"]]

# "json": a list of {"name", "file", "line"} objects; "lines": one name per line.
# output = "json"

# Exit codes that mean "no match", not an error (fzf exits 1).
# no_match_exit = [1]
""".replace("MARK", TEMPLATE_MARK)


@dataclass(frozen=True)
class Build:
    """How the tree's program is built and run, as found from its build file: each line
    of recall.toml that it writes, with the comment that goes beside it."""

    found: str  # the build file it was found from
    build: tuple[str, ...]
    bin: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()

    def lines(self) -> list[str]:
        where = "in the tree, or in a base's extracted archive, before a run"
        lines = [
            f"build = {_toml(self.build)}  # from {self.found}: run {where}"
            if self.build
            else f"build = []  # from {self.found}: nothing to build, the tree's code runs",
            f"bin = {_toml(self.bin)}  # the tree's program, as its build leaves it: check it",
        ]
        if self.env:
            pairs = ", ".join(f"{key} = {json.dumps(value)}" for key, value in self.env)
            lines.append(f"env = {{ {pairs} }}  # the tree's own code, not an installed copy")
        return lines


def _toml(argv: tuple[str, ...]) -> str:
    return "[" + ", ".join(json.dumps(part) for part in argv) + "]"


def _name(text: str) -> str:
    """A program name: the last part of a module path (before a /v2 major version)."""
    parts = [part for part in text.strip().split("/") if part]
    if len(parts) > 1 and re.fullmatch(r"v\d+", parts[-1]):
        parts.pop()
    return parts[-1] if parts else "finder"


def detect_build(root: Path, program: str | None) -> Build | None:
    """The build the repo's files show, first found of Makefile, Cargo.toml, go.mod,
    package.json, pyproject.toml; program: the name a preset runs (else the folder's)."""
    name = program or root.name
    if (root / "Makefile").is_file() or (root / "makefile").is_file():
        return Build("Makefile", ("make",), (f"{{tree}}/{name}",))
    if (root / "Cargo.toml").is_file():
        package = _toml_table(root / "Cargo.toml").get("package", {})
        crate = program or str(package.get("name") or name)
        return Build(
            "Cargo.toml", ("cargo", "build", "--release"), (f"{{tree}}/target/release/{crate}",)
        )
    if (root / "go.mod").is_file():
        module = _go_module(root)
        command = program or (_name(module) if module else name)
        main = f"./cmd/{command}" if (root / "cmd" / command).is_dir() else "."
        return Build("go.mod", ("go", "build", "-o", command, main), (f"{{tree}}/{command}",))
    if (root / "package.json").is_file():
        return _node_build(root, program)
    if (root / "pyproject.toml").is_file():
        project = _toml_table(root / "pyproject.toml").get("project", {})
        package = (program or str(project.get("name") or name)).replace("-", "_")
        path = "{tree}/src" if (root / "src" / package).is_dir() else "{tree}"
        return Build(
            "pyproject.toml", (), ("{python}", "-P", "-m", package), (("PYTHONPATH", path),)
        )
    return None


def _node_build(root: Path, program: str | None) -> Build:
    try:
        package = json.loads((root / "package.json").read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        package = {}
    package = package if isinstance(package, dict) else {}
    bins = package.get("bin")
    if isinstance(bins, dict) and bins:
        script = str(bins.get(program) or next(iter(bins.values())))
    else:
        script = str(bins or package.get("main") or "index.js")
    scripts = package.get("scripts")
    has_build = isinstance(scripts, dict) and "build" in scripts
    build = ("sh", "-c", "npm ci && npm run build") if has_build else ("npm", "ci")
    return Build("package.json", build, ("node", f"{{tree}}/{script.removeprefix('./')}"))


def _toml_table(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


PATH_BIN_NOTE = (
    "# bin runs {program} from PATH, the same program for every ref: `recall --base REF`\n"
    "# refuses it (--same-program-ok to mean it). To measure this repo's code, add a build\n"
    "# and make bin the program it builds in the tree ({{tree}}/...).\n"
)


def starter(preset: str | None, root: Path | None = None) -> bytes:
    """The text to write: a preset's table under a header, or the blank engine, with the
    build and bin found in root's build files where the starter's bin is no program of
    the tree."""
    if preset is None:
        found = detect_build(root, None) if root else None
        if found is None:
            return BLANK.encode()
        build, *rest = found.lines()
        guess = f'bin = ["{{tree}}/my-finder"]  {TEMPLATE_MARK}\n'
        text = BLANK.replace(guess, "\n".join(rest) + "\n")
        return text.replace('# build = ["make"]\n', build + "\n").encode()
    text = (resources.files("recall.finders") / "presets" / f"{preset}.toml").read_text("utf-8")
    # a preset's [[results]] tables (its columns on recall's own results pages) come last,
    # and say nothing about a finder of the user's own
    body = text.split("\n[[results]]\n", 1)[0].rstrip("\n") + "\n"
    header = (
        f"# recall.toml, started from recall's preset {preset!r}: adapt it to this repo.\n"
        "# Keys and placeholders: `recall init` without --preset writes them all out.\n"
    )
    engine = parse_engine(body.encode(), f"preset:{preset}")
    if not engine.bin or _names_tree(engine.bin) or engine.kind != "process":
        return (header + body).encode()
    found = detect_build(root, Path(engine.bin[0]).name) if root else None
    if found is None:
        return (header + PATH_BIN_NOTE.format(program=engine.bin[0]) + body).encode()
    kept = [line for line in body.splitlines() if not re.match(r"(build|bin)\s*=", line)]
    table = kept.index("[engine]") + 1
    return (header + "\n".join([*kept[:table], *found.lines(), *kept[table:]]) + "\n").encode()


def fitting_preset(root: Path) -> tuple[str, str] | None:
    """A preset made for the finder this repo is, and what shows it: a Makefile beside
    NAME.c (fzy's src/fzy.c), a Cargo.toml whose package is NAME, or a go.mod whose module
    ends in NAME, for a preset NAME. The blank template's guessed query fails on such a
    finder; its preset runs it as its users do."""
    presets = [name for name in preset_names() if "-" not in name]  # not the -paths ones
    has_make = (root / "Makefile").is_file() or (root / "makefile").is_file()
    cargo = _toml_table(root / "Cargo.toml").get("package", {})
    module = _go_module(root)
    for name in presets:
        for source in (root / f"{name}.c", root / "src" / f"{name}.c"):
            if has_make and source.is_file():
                return name, f"a Makefile and {source.relative_to(root)}"
        if isinstance(cargo, dict) and cargo.get("name") == name:
            return name, f"Cargo.toml's package {name}"
        if module and _name(module) == name:
            return name, f"go.mod's module {name}"
    return None


def _go_module(root: Path) -> str | None:
    """The module path go.mod declares, if there is a go.mod that declares one."""
    if not (root / "go.mod").is_file():
        return None
    found = re.search(r"^module\s+(\S+)", (root / "go.mod").read_text("utf-8"), re.M)
    return found.group(1) if found else None


def _names_tree(argv: tuple[str, ...]) -> bool:
    return any("{tree}" in part or "{python}" in part for part in argv)


def write_new(path: Path, data: bytes) -> None:
    """Create path with data in one step, refusing to replace anything already there."""
    parse_engine(data, str(path))
    if path.exists() or path.is_symlink():
        raise RecallError(f"{path}: already exists; not overwriting it")
    try:
        staged = stage(path, data)  # the umask's mode, as any new file gets
    except OSError as exc:
        raise RecallError(f"{path}: cannot write: {exc.strerror}") from None
    try:
        os.link(staged.temp, path)
    except FileExistsError:
        raise RecallError(f"{path}: already exists; not overwriting it") from None
    except OSError as exc:
        raise RecallError(f"{path}: cannot write: {exc.strerror}") from None
    finally:
        staged.discard()


def next_step(
    path: Path, preset: str | None, cwd: Path, fits: tuple[str, str] | None = None
) -> str:
    """The run to try first: one corpus and one type, in the finder's repo (recall finds
    its recall.toml from there, and the suite it ships); for a blank template in a repo a
    preset fits, that preset first."""
    what = "edit the lines marked EDIT" if preset is None else "check its build and bin"
    run = "recall --repo gin --type abbr3"
    finder = path.parent
    inside = cwd.absolute() == finder or finder in cwd.absolute().parents
    command = run if inside else f"cd {finder} && {run}"
    said = f"wrote {path}: {what}, then run: {command} (and --base REF to diff a ref)"
    if preset is None and fits is not None:
        name, shown = fits
        said += (
            f"; this repo looks like {name}'s ({shown}): the preset fits it, `rm {path} && "
            f"recall init --preset {name}`"
        )
    return said


@dataclass(frozen=True)
class Started:
    """A recall.toml written: where, from which preset (None: the blank engine), and, for
    a blank one, the preset that fits the repo and what shows it."""

    path: Path
    preset: str | None
    fits: tuple[str, str] | None


def init(options: InitOptions) -> Started:
    """The starter recall.toml written at the top of the options' finder repo (the Python
    API's `recall.init`, and `recall init`)."""
    root = finder_root(Path(options.finder))
    path = root / FILENAME
    write_new(path, starter(options.preset, root))
    fits = fitting_preset(root) if options.preset is None else None
    return Started(path, options.preset, fits)


def render(started: Started, cwd: Path) -> str:
    """What `recall init` prints: the file written and the run to try first from cwd."""
    return next_step(started.path, started.preset, cwd, started.fits) + "\n"
