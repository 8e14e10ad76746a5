"""Symbol extraction with Universal Ctags: the definitions a person navigates to.

Both the query generator and the reference finder read a corpus through `extract`, so
the names a query is derived from and the names a finder can return come from one rule.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import orjson

from recall.cache import memoised
from recall.errors import RecallError
from recall.inputs.corpus import Checkout
from recall.inputs.languages import LANGUAGES
from recall.inputs.recipes import is_searchable

INSTALL_HINT = "install Universal Ctags (Debian: apt-get install universal-ctags)"

# Kinds that are not navigation targets, per ctags language: import aliases, package
# clauses, and (for TypeScript) `const`s local to a function body. docs/queries.md says
# why, per language, with the counts.
_DROPPED_KINDS = {
    "Go": {"package", "packageName"},
    "Java": {"package"},
    "Kotlin": {"package"},
    "Python": {"namespace", "unknown"},
}
_LOCAL_SCOPES = {"function", "method"}
_DROPPED_LOCAL_KINDS = {
    "TypeScript": {"constant", "variable"},
    "JavaScript": {"constant"},
    "Kotlin": {"constant", "variable"},  # a function's `val` and `var`
}
# Kotlin: ctags tags a lambda as a method named `<lambda>`, and a lambda's parameters as
# methods inside it (`allocator` of `withScopedMemoryAllocator { allocator -> ... }`):
# neither is a definition anyone navigates to, so both are dropped.
_LAMBDA_NAMED = {"Kotlin"}
_LAMBDA = "<lambda>"
_IN_LAMBDA = re.compile(r"(?:^|\.)<lambda>$")
# Lua: ctags names a function by what stands between `function` and `(`, its table path
# included (`actions.move_selection_next`, `histories.History:new`): the name is its last
# part and the rest its scope, as ctags gives a method and its class in the other
# languages. What is no path of identifiers there (`mod[k]`, a table index assigned a
# function, or a slip of the parser such as `end]`) is no name.
_PATH_NAMED = {"Lua"}
_NAME_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.:][A-Za-z_][A-Za-z0-9_]*)*")
_PATH_PARTS = re.compile(r"[.:]")
# Options of one language's calls, for the languages pinned after the first six (whose
# names they would change): no tag for what has no name (ctags calls an anonymous function
# `AnonymousFunction2edac5330800`, an anonymous struct `__anon...`: no one types those);
# ctags maps `.h` to C++ alone, so a C corpus's headers, where its structs, fields and
# macros live, are read as C; and a JavaScript property whose value is a function, which
# ctags's parser does not tag inside a call's argument (`jQuery.extend({ Deferred:
# function ...`, how jQuery defines most of its API), is a method. docs/queries.md has
# the counts.
_NO_ANONYMOUS = "--extras=-{anonymous}"
# What ctags calls what has no name, in the scope of a name inside it: such a name has no
# owner anyone types (its `qualified` query would be `__anon3ef696e90e08.file_name`).
_ANONYMOUS_SCOPE = re.compile(r"(?:^|[.:])(?:__anon|AnonymousFunction)[0-9a-f]+$")
_LANGUAGE_OPTIONS = {
    "C": (_NO_ANONYMOUS, "--langmap=C:+.h"),
    "C++": (_NO_ANONYMOUS,),
    "Java": (_NO_ANONYMOUS,),
    "JavaScript": (
        _NO_ANONYMOUS,
        r"--regex-JavaScript=/^[ \t]*([A-Za-z_$][A-Za-z0-9_$]*)[ \t]*:[ \t]*function[ \t]*\("
        r"/\1/m,method/",
    ),
}


@dataclass(frozen=True, order=True, slots=True)
class Symbol:
    path: str
    line: int
    name: str
    kind: str
    scope: str


# Every ctags call starts with these: `--options=NONE` first (ctags honours it only
# there), so no option file (~/.ctags.d, ./.ctags.d, ctags.d, $XDG_CONFIG_HOME/ctags) and
# no environment variable adds a regex or drops a kind behind the keys' back. They are part
# of ctags_identity(), so a change to them is a change of every key that holds it.
CTAGS_OPTIONS = ("--options=NONE", "--output-format=json", "--fields=+nKZ", "--fields=-P")


@dataclass(frozen=True)
class CtagsProgram:
    path: str  # as found on PATH (run as is: argv[0] decides ctags or etags mode)
    version: str
    sha256: str  # of the program's bytes: a wrapper or a rebuild changes it, not the version


def ctags_program() -> CtagsProgram:
    """The ctags on PATH, checked to be a Universal Ctags with JSON output; looked up on
    every call (a test or a user may change PATH) and probed once per file version."""
    found = shutil.which("ctags")
    if found is None:
        raise RecallError(f"ctags not found or not working: {INSTALL_HINT}")
    found = os.path.abspath(found)
    try:
        stat = os.stat(found)
    except OSError:
        raise RecallError(f"ctags not found or not working: {INSTALL_HINT}") from None
    return _probe(found, stat.st_ino, stat.st_size, stat.st_mtime_ns)


@cache
def _probe(path: str, _inode: int, _size: int, _mtime_ns: int) -> CtagsProgram:
    """What ctags_program() says of one version of a file (its stat is the cache key)."""
    with tempfile.TemporaryDirectory(prefix="recall-ctags-") as home:
        try:
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            out, features = (
                subprocess.run(
                    [path, "--options=NONE", flag], capture_output=True, text=True,
                    check=True, cwd=home, env=ctags_environment(home),
                ).stdout
                for flag in ("--version", "--list-features")
            )  # fmt: skip
        except (OSError, subprocess.CalledProcessError):
            raise RecallError(f"ctags not found or not working: {INSTALL_HINT}") from None
    first = out.splitlines()[0] if out else ""
    if not first.startswith("Universal Ctags"):
        raise RecallError(f"ctags is not Universal Ctags ({first!r}): {INSTALL_HINT}")
    if "json" not in features.split():
        raise RecallError(f"ctags has no JSON output: {INSTALL_HINT} built with libjansson")
    version = first.split(",")[0].removeprefix("Universal Ctags").strip()
    return CtagsProgram(path, version, digest)


def ctags_version() -> str:
    """The Universal Ctags version string, for people (meta, doctor); keys hold
    ctags_identity(). A missing, foreign or JSON-less ctags is an error."""
    return ctags_program().version


def ctags_identity() -> dict[str, object]:
    """Everything of ctags that decides the names it lists: its version, its program's
    content and the options every call gets. The symbols, ceiling and results keys hold it."""
    program = ctags_program()
    return {"version": program.version, "sha256": program.sha256, "options": list(CTAGS_OPTIONS)}


def ctags_environment(home: str) -> dict[str, str]:
    """The whole environment ctags runs in: no CTAGS variable or other of the caller's, and
    HOME and XDG_CONFIG_HOME in an empty folder of the harness's (belt and braces with
    --options=NONE), so that no configuration of the user's reaches it."""
    return {
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "PATH": os.defpath,
        "LC_ALL": "C",
        "TMPDIR": tempfile.gettempdir(),
    }


def extract(root: Path, language: str) -> list[Symbol]:
    """Every definition under root in the corpus language, sorted so the order never
    depends on the file system's directory order."""
    ctags_lang = LANGUAGES[language]
    argv = [
        ctags_program().path, *CTAGS_OPTIONS, *_LANGUAGE_OPTIONS.get(ctags_lang, ()), "-R",
        f"--languages={ctags_lang}", "-f", "-", ".",
    ]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="recall-ctags-") as home:
        proc = subprocess.run(argv, cwd=root, capture_output=True, env=ctags_environment(home))
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        raise RecallError(f"ctags failed in {root}: {' '.join(tail) or proc.returncode}")
    dropped = _DROPPED_KINDS.get(ctags_lang, set())
    dropped_local = _DROPPED_LOCAL_KINDS.get(ctags_lang, set())
    no_anonymous = _NO_ANONYMOUS in _LANGUAGE_OPTIONS.get(ctags_lang, ())
    symbols = set()
    # one str for each path, kind and scope: a corpus's definitions name far fewer files
    # than they number (a million names in a hundred files: ~150 MB less at the peak)
    shared: dict[str, str] = {}
    for raw in io.BytesIO(proc.stdout):  # a line at a time, not a list of them all
        try:
            tag = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if tag.get("_type") != "tag":
            continue
        name, kind = tag.get("name", ""), tag.get("kind", "")
        scope = tag.get("scope", "")
        if ctags_lang in _PATH_NAMED:
            if not _NAME_PATH.fullmatch(name):
                continue
            *owners, name = _PATH_PARTS.split(name)
            scope = ".".join(owners) or scope
        if kind in dropped or not is_searchable(name):
            continue
        if kind in dropped_local and tag.get("scopeKind") in _LOCAL_SCOPES:
            continue
        if ctags_lang in _LAMBDA_NAMED and (name == _LAMBDA or _IN_LAMBDA.search(scope)):
            continue
        path = tag.get("path", "").removeprefix("./")
        if no_anonymous and _ANONYMOUS_SCOPE.search(scope):
            scope = ""
        path, kind, scope = (shared.setdefault(t, t) for t in (path, kind, scope))
        symbols.add(Symbol(path, int(tag.get("line", 0)), name, kind, scope))
    return sorted(symbols)


def symbols_key(tree: str, language: str, ctags: dict[str, object]) -> str:
    """The symbols cache entry of a tree's names in language, listed by ctags (an identity
    as ctags_identity() gives it): `recall cache prune` tells live entries by it too."""
    identity = orjson.dumps(ctags, option=orjson.OPT_SORT_KEYS).decode()
    rule = _language_rule(language)
    return hashlib.sha256(f"{tree}\0{language}\0{identity}\0{rule}".encode()).hexdigest()[:24]


def _language_rule(language: str) -> str:
    """What this module adds to ctags for one language (its options and dropped kinds): a
    cache of names listed under another rule is never read."""
    ctags_lang = LANGUAGES.get(language, "")
    rule = {
        "options": list(_LANGUAGE_OPTIONS.get(ctags_lang, ())),
        "dropped": sorted(_DROPPED_KINDS.get(ctags_lang, ())),
        "dropped_local": sorted(_DROPPED_LOCAL_KINDS.get(ctags_lang, ())),
        "anonymous_scope": _ANONYMOUS_SCOPE.pattern,
    }
    if ctags_lang in _LAMBDA_NAMED:  # only the languages it applies to: the others' keys stay
        rule["lambda"] = _IN_LAMBDA.pattern
    if ctags_lang in _PATH_NAMED:
        rule["path_named"] = _NAME_PATH.pattern
    return orjson.dumps(rule, option=orjson.OPT_SORT_KEYS).decode()


def cached_symbols(root: Path, language: str, tree: str, cache: Path) -> list[Symbol]:
    """extract(), memoised in the cache by the checkout's tree and ctags's identity."""
    return memoised(
        cache / "symbols" / f"{symbols_key(tree, language, ctags_identity())}.json",
        lambda: extract(root, language),
        _decode_symbols,
        lambda symbols: [[s.path, s.line, s.name, s.kind, s.scope] for s in symbols],
        "symbols",
        "not a list of [path, line, name, kind, scope]",
    )


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


def distinct_names(symbols: list[Symbol]) -> list[str]:
    return sorted({s.name for s in symbols})


def checkout_symbols(checkout: Checkout, cache: Path) -> list[Symbol]:
    return cached_symbols(checkout.path, checkout.pin.language, checkout.tree, cache)
