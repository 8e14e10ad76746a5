"""Symbol extraction with Universal Ctags: the definitions a person navigates to.

Both the query generator and the reference finder read a corpus through `extract`, so
the names a query is derived from and the names a finder can return come from one rule.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import orjson

from recall.corpus import LANGUAGES, Checkout
from recall.errors import RecallError
from recall.files import write_atomic

INSTALL_HINT = "install Universal Ctags (Debian: apt-get install universal-ctags)"

# Kinds that are not navigation targets, per ctags language: import aliases, package
# clauses, and (for TypeScript) `const`s local to a function body.
_DROPPED_KINDS = {
    "Go": {"package", "packageName"},
    "Python": {"namespace", "unknown"},
}
_LOCAL_SCOPES = {"function", "method"}
_DROPPED_LOCAL_KINDS = {"TypeScript": {"constant", "variable"}, "JavaScript": {"constant"}}


@dataclass(frozen=True, order=True)
class Symbol:
    path: str
    line: int
    name: str
    kind: str
    scope: str


@cache
def ctags_version() -> str:
    """The Universal Ctags version string; a missing, foreign or JSON-less ctags is an error."""
    try:
        out = subprocess.run(
            ["ctags", "--version"], capture_output=True, text=True, check=True
        ).stdout
        features = subprocess.run(
            ["ctags", "--list-features"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        raise RecallError(f"ctags not found or not working: {INSTALL_HINT}") from None
    first = out.splitlines()[0] if out else ""
    if not first.startswith("Universal Ctags"):
        raise RecallError(f"ctags is not Universal Ctags ({first!r}): {INSTALL_HINT}")
    if "json" not in features.split():
        raise RecallError(f"ctags has no JSON output: {INSTALL_HINT} built with libjansson")
    return first.split(",")[0].removeprefix("Universal Ctags").strip()


def is_searchable(name: str) -> bool:
    """A name a person could type: it holds a letter, and no tab or newline."""
    return (
        any(c.isalpha() for c in name)
        and "\t" not in name
        and "\n" not in name
        and "\r" not in name
        and name != "self"
    )


def extract(root: Path, language: str) -> list[Symbol]:
    """Every definition under root in the corpus language, sorted so the order never
    depends on the file system's directory order."""
    ctags_lang = LANGUAGES[language]
    ctags_version()
    argv = [
        "ctags", "-R", f"--languages={ctags_lang}", "--output-format=json",
        "--fields=+nKZ", "--fields=-P", "-f", "-", ".",
    ]  # fmt: skip
    proc = subprocess.run(argv, cwd=root, capture_output=True)
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        raise RecallError(f"ctags failed in {root}: {' '.join(tail) or proc.returncode}")
    dropped = _DROPPED_KINDS.get(ctags_lang, set())
    dropped_local = _DROPPED_LOCAL_KINDS.get(ctags_lang, set())
    symbols = set()
    for raw in proc.stdout.splitlines():
        try:
            tag = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if tag.get("_type") != "tag":
            continue
        name, kind = tag.get("name", ""), tag.get("kind", "")
        if kind in dropped or not is_searchable(name):
            continue
        if kind in dropped_local and tag.get("scopeKind") in _LOCAL_SCOPES:
            continue
        path = tag.get("path", "").removeprefix("./")
        symbols.add(Symbol(path, int(tag.get("line", 0)), name, kind, tag.get("scope", "")))
    return sorted(symbols)


def cached_symbols(root: Path, language: str, tree: str, cache: Path) -> list[Symbol]:
    """extract(), memoised in the cache by the checkout's tree and the ctags version."""
    key = hashlib.sha256(f"{tree}\0{language}\0{ctags_version()}".encode()).hexdigest()[:24]
    path = cache / "symbols" / f"{key}.json"
    try:
        symbols = _decode_symbols(orjson.loads(path.read_bytes()))
    except FileNotFoundError:
        symbols = None
    except (OSError, orjson.JSONDecodeError) as exc:
        symbols = None
        _warn_corrupt(path, str(exc))
    else:
        if symbols is None:
            _warn_corrupt(path, "not a list of [path, line, name, kind, scope]")
    if symbols is not None:
        return symbols
    symbols = extract(root, language)
    data = orjson.dumps([[s.path, s.line, s.name, s.kind, s.scope] for s in symbols])
    write_atomic(path, data)
    return symbols


def _decode_symbols(rows: object) -> list[Symbol] | None:
    """The symbols of a cache entry, or None if it is not exactly what cached_symbols
    writes: a list of [path, line, name, kind, scope] with a whole-number line."""
    if not isinstance(rows, list):
        return None
    symbols = []
    for row in rows:
        if not isinstance(row, list) or len(row) != 5:
            return None
        path, line, name, kind, scope = row
        if not all(isinstance(v, str) for v in (path, name, kind, scope)):
            return None
        if not isinstance(line, int) or isinstance(line, bool):
            return None
        symbols.append(Symbol(path, line, name, kind, scope))
    return symbols


def _warn_corrupt(path: Path, why: str) -> None:
    print(f"recall: warning: ignoring corrupt symbols cache entry {path} ({why}): listing "
          "the symbols again", file=sys.stderr)  # fmt: skip


def distinct_names(symbols: list[Symbol]) -> list[str]:
    return sorted({s.name for s in symbols})


def checkout_symbols(checkout: Checkout, cache: Path) -> list[Symbol]:
    return cached_symbols(checkout.path, checkout.pin.language, checkout.tree, cache)
