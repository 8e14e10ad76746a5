"""What an engine needs on this machine before it can answer a query, and how to get it.

A preset whose program is missing used to pass `recall doctor` and then fail a run after
its corpora were fetched and indexed (`cannot start gopls: No such file or directory`, 21 s
in), and a Python language server without its package failed with the text of a traceback.
So the needs are read from the engine itself, the same way for the doctor and for a run:
the programs its argv starts from PATH (and what those need: gopls runs go), node and npm
for an engine of npm packages (and its package in the tree's lock), and the Python
modules that `{python}` must import (a library's callable, a language server's `-c` code,
an adapter's library). Each missing
part comes with the command that installs it, and a run refuses up front with the line
the doctor prints.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from recall.errors import RecallError
from recall.finders.engine import Engine, fill, uses_node_modules
from recall.finders.kinds.node import engine_package, pin_command, required

# Programs that start another one from PATH: gopls runs `go list` and `go env`, and without
# go it answers nothing.
PROGRAM_NEEDS = {"gopls": ("go",)}
# The Debian package of each program a preset starts (.ci/run installs the same).
APT_PACKAGES = {
    "fzf": "fzf", "fzy": "fzy", "gopls": "gopls", "go": "golang-go", "node": "nodejs",
    "npm": "npm", "clangd": "clangd", "cc": "gcc",
}  # fmt: skip
# A module a preset runs through an adapter of recall's (`-m recall.finders.kinds.frizbee`) whose
# library is not in its argv.
ADAPTER_MODULES = {"recall.finders.kinds.frizbee": ("frizbee",)}
# A module run with `-m` that starts programs of its own: the reference finder compiles
# its kernel (kernel.c) with cc when it indexes.
MODULE_PROGRAMS = {"recall.finders.reference": ("cc",)}
# A module's distribution where the names differ.
DISTRIBUTIONS = {"jedi_language_server": "jedi-language-server"}
PROBE_TIMEOUT_S = 20.0
_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(==\s*[^;\s,]+)?")
# Prints the modules of argv that {python} cannot find, one a line; finds, never imports.
_FIND = (
    "import importlib.util, sys\n"
    "for m in sys.argv[1:]:\n"
    "    try:\n"
    "        found = importlib.util.find_spec(m) is not None\n"
    "    except (ImportError, ValueError):\n"
    "        found = False\n"
    "    if not found:\n"
    "        print(m)\n"
)


@dataclass(frozen=True)
class Needs:
    programs: tuple[str, ...]  # started from PATH, in the order found
    modules: tuple[str, ...]  # top-level modules `{python}` must import


@dataclass(frozen=True)
class Missing:
    """What an engine lacks, as one line (detail) and the command that installs it."""

    detail: str
    fix: str

    def line(self, source: str) -> str:
        return f"{source}: {self.detail}; install: {self.fix}"


def engine_needs(engine: Engine) -> Needs:
    argvs = [engine.bin, engine.index, engine.query, engine.batch, engine.profile]
    programs: list[str] = []
    modules: list[str] = []
    starts = [engine.bin]
    for argv in argvs:  # a server after `--` (the lsp kind's adapter runs it)
        starts += [argv[i + 1 :] for i, part in enumerate(argv[:-1]) if part == "--"]
    for argv in starts:
        if not argv:
            continue
        if argv[0] == "{python}":
            modules += _python_modules(argv[1:])
            programs += MODULE_PROGRAMS.get(_flag(argv, "-m") or "", ())
        elif _on_path(argv[0]):
            programs.append(argv[0])
    if engine.kind == "python":
        target = _flag(engine.batch, "--callable")
        if target:
            modules.append(target.partition(":")[0].split(".")[0])
    if uses_node_modules(engine):
        programs += ["node", "npm"]
    for program in list(programs):
        programs += PROGRAM_NEEDS.get(program, ())
    return Needs(tuple(dict.fromkeys(programs)), tuple(dict.fromkeys(modules)))


def _on_path(program: str) -> bool:
    """A bare name looked up on PATH; a path or a placeholder is the build's to make."""
    return bool(program) and "/" not in program and "{" not in program


def _flag(argv: tuple[str, ...], flag: str) -> str | None:
    for i, part in enumerate(argv[:-1]):
        if part == flag:
            return argv[i + 1]
    return None


def _python_modules(args: tuple[str, ...] | list[str]) -> list[str]:
    """The top-level modules a `{python}` command line imports first: `-m MODULE` (an
    adapter of recall's counts by its library), or what `-c CODE` imports."""
    args = list(args)
    while args and args[0] in ("-P", "-I", "-E", "-s", "-S", "-u", "-B"):
        args.pop(0)
    if len(args) >= 2 and args[0] == "-m":
        return list(ADAPTER_MODULES.get(args[1], ()))
    if len(args) >= 2 and args[0] == "-c":
        try:
            tree = ast.parse(args[1])
        except SyntaxError:
            return []
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append(node.module.split(".")[0])
        return [m for m in found if m not in sys.stdlib_module_names]
    return []


def missing_parts(engine: Engine, python: str, values: dict[str, str]) -> list[Missing]:
    """What engine needs and this machine lacks; values fill the engine's variables
    ({tree}, {python}) for the probe of {python}'s modules."""
    needs = engine_needs(engine)
    env = {**os.environ, **fillable(engine.env, values)}
    path = env.get("PATH", os.defpath)
    found: list[Missing] = []
    absent = [p for p in needs.programs if shutil.which(p, path=path) is None]
    if absent:
        found.append(_missing_programs(absent, needs.programs))
    modules = _absent_modules(python, needs.modules, env)
    if modules:
        found.append(_missing_modules(modules, python))
    package = engine_package(engine)
    if package is not None and "tree" in values:
        why = required(package, Path(values["tree"]))
        if why:
            found.append(Missing(why, pin_command(package)))
    return found


def fillable(env: tuple[tuple[str, str], ...], values: dict[str, str]) -> dict[str, str]:
    """The engine's variables that need only what is known before a run ({tree},
    {python}): one naming {db} or {node_modules} (a language server's GOPATH, its npm
    packages) concerns a run on a corpus, not whether a part is installed."""
    filled = {}
    for name, value in env:
        try:
            filled[name] = fill(value, values)
        except KeyError:
            continue
    return filled


def _missing_programs(absent: list[str], needed: tuple[str, ...]) -> Missing:
    why = [f"{p} needs {', '.join(n for n in PROGRAM_NEEDS[p] if n in absent)}"
           for p in needed if set(PROGRAM_NEEDS.get(p, ())) & set(absent)]  # fmt: skip
    detail = f"not on PATH: {', '.join(absent)}" + (f" ({'; '.join(why)})" if why else "")
    known = [APT_PACKAGES[p] for p in absent if p in APT_PACKAGES]
    unknown = [p for p in absent if p not in APT_PACKAGES]
    fixes = [f"apt-get install {' '.join(dict.fromkeys(known))}"] if known else []
    fixes += [f"install {p} and put it on PATH" for p in unknown]
    return Missing(detail, "; ".join(fixes))


def _absent_modules(python: str, modules: tuple[str, ...], env: dict[str, str]) -> list[str]:
    if not modules:
        return []
    try:
        proc = subprocess.run(
            [python, "-P", "-c", _FIND, *modules], capture_output=True, text=True, env=env,
            stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RecallError(f"{python}: cannot ask which modules it imports: {exc}") from None
    if proc.returncode != 0:
        return list(modules)
    return [line for line in proc.stdout.splitlines() if line]


def _missing_modules(modules: list[str], python: str) -> Missing:
    pins = peer_pins()
    packages = []
    for module in modules:
        name = DISTRIBUTIONS.get(module, module)
        packages.append(pins.get(_normal(name), name))
    quoted = " ".join(f"'{p}'" for p in packages)
    return Missing(
        f"{python} cannot import {', '.join(modules)}",
        f"{sys.executable} -m pip install {quoted}",
    )


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def peer_pins() -> dict[str, str]:
    """The exact `name==version` recall's own distribution requires, by normalized name
    (its peers extra pins the finders it measures); {} when recall is not installed as a
    distribution."""
    pins: dict[str, str] = {}
    for dist in metadata.packages_distributions().get("recall", []):
        for requirement in metadata.requires(dist) or []:
            match = _REQUIREMENT.match(requirement)
            if match and match.group(2):
                version = match.group(2).replace(" ", "")
                pins[_normal(match.group(1))] = f"{match.group(1)}{version}"
    return pins


def require(engine: Engine, python: str, values: dict[str, str], label: str) -> None:
    """Refuse a run whose engine lacks a part, before anything is fetched or indexed,
    with the line `recall doctor` prints for it."""
    for missing in missing_parts(engine, python, values):
        raise RecallError(missing.line(label))
