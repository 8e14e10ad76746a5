"""kind = "node": an npm package as a finder, driven by recall's Node adapter.

An engine names `package = "fuse.js"` (one of those pinned in recall/peers/node/
package.json) and optionally `options`, a table the adapter passes to the package as
JSON. The engine runs `node {tree}/recall/peers/node/adapter.js` as its batch process,
once per corpus, so the package builds its index once and a base runs its own adapter,
as a python engine runs the worker of `PYTHONPATH={tree}`.

The packages come from the same tree: its package-lock.json is installed with
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
from recall.peers.library import json_argument, kind_tables

KIND = "node"  # the cache folder of installed packages
MARKER = ".recall-installed"
FOLDER = Path(__file__).with_suffix("")  # recall/peers/node: the adapter and the pins
TREE_FOLDER = ("recall", "peers", "node")
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


def process_table(table: dict, source: str) -> dict:
    """A kind = "node" [engine] as the process engine that runs the adapter for it."""
    tables = kind_tables(table, source, "node", {"package", "options", "env"}, ("options", "env"))
    package, packages = table.get("package"), pinned()
    if not isinstance(package, str) or package not in packages:
        raise RecallError(
            f"{source}: [engine] kind 'node' needs package = one of {', '.join(sorted(packages))} "
            f"(pinned in recall/peers/node/package.json), got {package!r}"
        )
    env = tables["env"]
    adapter = ["{bin}", "--package", package, "--options", json_argument(tables["options"])]
    adapter += ["--names", "{names}"]
    return {
        "bin": ["node", "{tree}/" + "/".join((*TREE_FOLDER, ADAPTER))],
        "query": [*adapter, "--query", "{query}", "--limit", "{limit}"],
        "batch": adapter,
        "env": env,
        "output": "json",
    }


def session_env(tree: Path, cache: Path) -> dict[str, str]:
    """RECALL_NODE_MODULES for a node engine's processes: the tree's pinned packages,
    installed in the cache on first use. A tree without the adapter is not a tree of
    this finder, said at once rather than as a failure of every query."""
    folder = tree.joinpath(*TREE_FOLDER)
    if not (folder / ADAPTER).is_file():
        raise RecallError(
            f"{tree}: has no {'/'.join((*TREE_FOLDER, ADAPTER))} (kind 'node' runs the "
            "adapter of the tree under test): not a tree of this finder"
        )
    return {MODULES_ENV: str(node_modules(folder, cache))}


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
