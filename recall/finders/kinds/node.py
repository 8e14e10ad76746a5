"""kind = "node": an npm package as a finder, driven by recall's Node adapter.

An engine names `package = "fuse.js"` and optionally `options`, a table the adapter passes
to the package as JSON; a package the adapter has no driver for names `function` (its
export to call), `arguments` and `name_key`. The engine runs the adapter as its batch
process, once per corpus, so the package builds its index once: the adapter of the tree
under test when it has one (recall's own tree, so a base runs its own adapter, as a python
engine runs the worker of `PYTHONPATH={tree}`), else the harness's own.

The packages come from the same tree (lock_folder): recall's own pins in
recall/finders/kinds/node, a finder's own package.json and package-lock.json at its root. The
lock is installed with
`npm ci --ignore-scripts` into recall's cache, `<cache>/node/<sha256 of the lock>/`,
never into the repo, and the adapter finds them through RECALL_NODE_MODULES. An engine
table cannot know the cache (it is parsed before any cache is chosen, and `recall
doctor` parses presets without one), so the install happens where a binary starts on a
corpus (session.Session, through `session_env`), and the cache is the one its `{python}`
was made in (interpreter.cache_of): the placeholder that already points into the cache,
and the one every path that runs a finder (run, explain, bench, history) has resolved.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from recall.cache import FolderEntry
from recall.errors import RecallError
from recall.finders.engine import Engine
from recall.finders.kinds.adapter import json_argument, kind_tables

KIND = "node"  # the cache folder of installed packages
MARKER = ".recall-installed"
FOLDER = Path(__file__).with_suffix("")  # recall/finders/kinds/node: the adapter and the pins
TREE_FOLDER = ("recall", "finders", "kinds", "node")
ADAPTER = "adapter.js"
MANIFEST, LOCK = "package.json", "package-lock.json"
MODULES_ENV = "RECALL_NODE_MODULES"
NPM_CACHE = ".npm"  # npm's own cache and logs, inside the install's temporary folder
INSTALL_TIMEOUT_S = 600.0
_NPM_NOISE = ("code ", "errno ", "syscall ", "path ", "dest ", "A complete log of this run")


def pinned(folder: Path = FOLDER) -> dict[str, str]:
    """The npm packages a tree pins, by name, with their exact versions."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RecallError(f"{folder / MANIFEST}: cannot read: {exc}") from None
    return dict(manifest.get("dependencies", {}))


def locked_version(package: str, folder: Path = FOLDER) -> str:
    """The version a tree's package-lock.json installs for package: what actually runs,
    which an exact pin in package.json only repeats."""
    try:
        lock = json.loads((folder / LOCK).read_text(encoding="utf-8"))
        return lock["packages"][f"node_modules/{package}"]["version"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RecallError(f"{folder / LOCK}: no locked version of {package}: {exc}") from None


# Starts the adapter of the tree under test when it has one (recall's own tree: a base runs
# its own), else the harness's own; argv: {tree}, the harness's adapter, then the adapter's
# flags, so the adapter reads its flags where it always does.
BOOT = (
    "const fs = require('fs'), path = require('path');"
    "const own = path.join(process.argv[1], 'recall', 'finders', 'kinds', 'node', 'adapter.js');"
    "const adapter = fs.existsSync(own) ? own : process.argv[2];"
    "process.argv.splice(1, 2, adapter); require(adapter);"
)
# The packages the adapter knows how to call (DRIVERS in adapter.js); any other package
# names its `function`.
DRIVERS = ("fuse.js", "fuzzysort", "fzf", "match-sorter", "fast-fuzzy", "@leeoniya/ufuzzy")
ARGUMENTS = ("query", "names", "options")


def process_table(table: dict, source: str) -> dict:
    """A kind = "node" [engine] as the process engine that runs the adapter for it. Which
    packages may be named is a matter of the tree's lock (`required`), known once the tree
    is; here: a package the adapter has a driver for, or any package with the `function`
    that says how to call it."""
    known = {"package", "options", "env", "function", "arguments", "name_key"}
    tables = kind_tables(table, source, "node", known, ("options", "env"))
    package = table.get("package")
    if not isinstance(package, str) or not package:
        raise RecallError(
            f"{source}: [engine] kind 'node' needs package = an npm package, got {package!r}"
        )
    call = _call(table, source, package)
    env = tables["env"]
    adapter = ["{bin}", "--package", package, "--options", json_argument(tables["options"])]
    if call:
        adapter += ["--call", json_argument(call)]
    adapter += ["--names", "{names}"]
    return {
        "bin": ["node", "-e", BOOT, "{tree}", str(FOLDER / ADAPTER)],
        "query": [*adapter, "--query", "{query}", "--limit", "{limit}"],
        "batch": adapter,
        "env": env,
        "output": "json",
    }


def _call(table: dict, source: str, package: str) -> dict:
    """How the adapter calls a package it has no driver for: `function`, the export to
    call ("" for the module itself), `arguments`, the order of query, names and options
    (default that order), `name_key`, where an object hit holds its name."""
    if "function" not in table:
        if package not in DRIVERS:
            raise RecallError(
                f"{source}: [engine] kind 'node': package {package!r} has no driver in the "
                f"adapter (drivers: {', '.join(DRIVERS)}): say how to call it with function = "
                '"its export" (and arguments, name_key)'
            )
        for key in ("arguments", "name_key"):
            if key in table:
                raise RecallError(f"{source}: [engine] {key} goes with function")
        return {}
    function, arguments = table["function"], table.get("arguments", list(ARGUMENTS))
    name_key = table.get("name_key", "")
    if not isinstance(function, str):
        raise RecallError(f"{source}: [engine] function must be the export to call (a string)")
    valid = isinstance(arguments, list) and all(isinstance(a, str) for a in arguments)
    if not (
        valid
        and len(set(arguments)) == len(arguments)
        and {"query", "names"} <= set(arguments) <= set(ARGUMENTS)
    ):
        raise RecallError(
            f"{source}: [engine] arguments must order query, names and (optionally) options, "
            f"got {arguments!r}"
        )
    if not isinstance(name_key, str):
        raise RecallError(f"{source}: [engine] name_key must be the key of a hit's name")
    return {"function": function, "arguments": arguments, "name_key": name_key}


def lock_folder(tree: Path, package: str | None = None) -> Path:
    """Where the npm packages a tree's engine runs are pinned: recall's own tree pins them
    beside its adapter (recall/finders/kinds/node, so a base installs its own); another finder's
    tree in its own package.json and package-lock.json at its root, when they name the
    package; else the harness's own pins (a preset, run from any repo)."""
    own = tree.joinpath(*TREE_FOLDER)
    if (own / ADAPTER).is_file():
        return own
    if package is not None and (tree / LOCK).is_file() and package in pinned(tree):
        return tree
    if package is None or package in pinned(FOLDER):
        return FOLDER
    raise RecallError(f"{unpinned(package, tree)}; install: {pin_command(package)}")


def unpinned(package: str, tree: Path) -> str:
    """The line for a package that no lock lock_folder could choose names."""
    own = tree.joinpath(*TREE_FOLDER)
    if (own / ADAPTER).is_file():
        return f"package {package} is not pinned in {own / MANIFEST}"
    theirs = f"{tree / MANIFEST}" if (tree / LOCK).is_file() else f"{tree} (no {LOCK})"
    return f"package {package} is in neither {theirs} nor recall's own pins"


def pin_command(package: str) -> str:
    return f"npm install --package-lock-only --save-exact {package} (in the finder's repo)"


def required(package: str, tree: Path) -> str | None:
    """Why package cannot run from tree (None: it can): a dependency of the package.json
    of its lock folder, and locked in that folder's package-lock.json."""
    try:
        locked_version(package, lock_folder(tree, package))
    except RecallError:
        return unpinned(package, tree)
    return None


def engine_package(engine: Engine) -> str | None:
    """The package a node engine runs (its adapter's --package), None for another kind."""
    argv = engine.batch
    if engine.kind != "node" or "--package" not in argv[:-1]:
        return None
    return argv[argv.index("--package") + 1]


def session_env(tree: Path, cache: Path, engine: Engine | None = None) -> dict[str, str]:
    """RECALL_NODE_MODULES for a node engine's processes (or a server's {node_modules}):
    the packages of lock_folder, installed in the cache on first use."""
    package = engine_package(engine) if engine is not None else None
    return {MODULES_ENV: str(node_modules(lock_folder(tree, package), cache))}


def install_folder(folder: Path, cache: Path) -> Path:
    """Where folder's package-lock.json is (or will be) installed: one folder per lock."""
    return cache / KIND / _lock_key(_read(folder / LOCK))


def _lock_key(lock: bytes) -> str:
    return hashlib.sha256(lock).hexdigest()[:24]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise RecallError(f"{path}: cannot read: {exc.strerror}") from None


def node_modules(folder: Path, cache: Path) -> Path:
    """The node_modules folder of folder's package-lock.json, installed once per lock.
    npm ci runs in a temporary folder of the cache that is renamed into place once
    complete, under a lock, so a killed or concurrent install never leaves a half
    folder that looks installed. npm's own cache and logs go in that temporary folder
    and are removed with it: nothing is written outside recall's cache, and each entry of
    <cache>/node is one lock's install, which `recall cache` lists and prunes."""
    lock, manifest = _read(folder / LOCK), _read(folder / MANIFEST)

    def make(tmp: Path) -> None:
        (tmp / MANIFEST).write_bytes(manifest)
        (tmp / LOCK).write_bytes(lock)
        _npm_ci(tmp, tmp / NPM_CACHE)
        shutil.rmtree(tmp / NPM_CACHE, ignore_errors=True)

    entry = FolderEntry(cache, KIND, _lock_key(lock), MARKER)  # of the bytes installed, read once
    return entry.get(make, str(folder / LOCK)) / "node_modules"


def _npm_ci(folder: Path, npm_cache: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RecallError(
            "npm not found on PATH: kind 'node' installs its packages with npm ci "
            "(apt-get install npm)"
        )
    env = {**os.environ, "npm_config_cache": str(npm_cache), "npm_config_update_notifier": "false"}
    argv = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
    try:
        proc = subprocess.run(
            argv, cwd=folder, env=env, stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=INSTALL_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RecallError(f"npm ci timed out after {INSTALL_TIMEOUT_S:g} s in {folder}") from None
    except OSError as exc:
        raise RecallError(f"cannot run {npm}: {exc.strerror}") from None
    if proc.returncode != 0:
        raise RecallError(f"npm ci failed (exit {proc.returncode}): {npm_reason(proc.stderr)}")


def npm_reason(stderr: str) -> str:
    """npm's own line for why it failed. npm ends every failure with the path of its
    debug log and splits the error into code/errno/syscall lines and a stack, so its
    literal last line says nothing; the first line that is none of those does."""
    lines = [_strip_npm(line) for line in stderr.splitlines()]
    useful = [line for line in lines if line and not line.startswith(_NPM_NOISE)]
    return (useful or ["no message on stderr"])[0]


def _strip_npm(line: str) -> str:
    return line.removeprefix("npm error").removeprefix("npm ERR!").strip()
