"""Engine descriptions: how to build, index and query a finder, as argv templates.

A finder is data, not code: a TOML table of argv lists with placeholders, validated on
load so that a typo in a key fails at once with the file and key named, not as a run in
which every query quietly misses.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from recall.errors import RecallError
from recall.files import read_input
from recall.finders.registry import Column, ordered, parse_columns
from recall.inputs.languages import LANGUAGES
from recall.inputs.queryset import JUDGED, NAMES, PATHS

PLACEHOLDERS = (
    "tree", "bin", "python", "db", "corpus", "names", "language", "query", "limit",
    "node_modules",
)  # fmt: skip
# {node_modules}: the tree's pinned npm packages (recall/finders/kinds/node), installed in the
# cache when an engine names it, so that a kind = "lsp" server can be an npm package
# (typescript-language-server) run by the Node on PATH; see session.Session.
NODE_MODULES = "{node_modules}"
_FIELD = re.compile(r"\{([a-z_]+)\}")
_ARGV_KEYS = ("build", "bin", "index", "index_names", "query", "batch", "profile")
# What each command may refer to: {query} and {limit} only exist per query.
_ALLOWED = {
    "build": {"tree", "python"},
    "bin": {"tree", "python"},
    "index": {"tree", "bin", "python", "db", "corpus", "names", "language"},
    # the index of a names list alone (the judgments set's candidates): no corpus to read
    "index_names": {"tree", "bin", "python", "db", "names"},
    "query": set(PLACEHOLDERS),
    "batch": {"tree", "bin", "python", "db", "corpus", "names", "language", "node_modules"},
    "profile": set(PLACEHOLDERS),
    "cwd": {"tree", "db", "corpus"},
    "stdin": {"tree", "db", "corpus", "names"},
    "env": {"tree", "bin", "python", "db", "corpus", "names", "language", "node_modules"},
}
OUTPUTS = ("json", "lines")
# Engine kinds other than "process", each the module whose process_table(table, source)
# turns that kind's keys into a process engine's table (an adapter in recall/finders/kinds).
KIND_MODULES = {
    "python": "recall.finders.kinds.python",
    "node": "recall.finders.kinds.node",
    "lsp": "recall.finders.kinds.lsp",
}


@dataclass(frozen=True)
class Engine:
    source: str  # where it was read from: a file path or preset:NAME
    digest: str  # sha256 of the description's bytes, part of every cache key
    bin: tuple[str, ...]
    query: tuple[str, ...]
    build: tuple[str, ...] = ()
    index: tuple[str, ...] = ()
    # how the finder indexes a names list with no corpus behind it (the judgments set's
    # candidates), in place of `index`: what a finder whose index reads the corpus declares
    # to be judged on names lists (docs/engines.md)
    index_names: tuple[str, ...] = ()
    batch: tuple[str, ...] = ()
    profile: tuple[str, ...] = ()
    cwd: str = "{corpus}"
    stdin: str = ""
    env: tuple[tuple[str, str], ...] = ()
    output: str = "json"
    no_match_exit: tuple[int, ...] = field(default=())
    # up to --jobs batch processes per corpus drawing from its rows, sharing {db} read-only;
    # false for a finder that writes into {db} while it answers, or that is costly to start
    batch_jobs: bool = True
    # the index argv writes the same {db} every time for the same build, corpus and names
    # (and nothing in it depends on where {db} is): kept under the cache and reused
    index_cache: bool = False
    # files or globs (relative to {tree}) holding every file of the tree the index argv
    # reads: a kept index is then known by their content, not the whole tree's
    index_inputs: tuple[str, ...] = ()
    kind: str = "process"  # as written: process, python, node or lsp
    languages: tuple[str, ...] = ()  # the corpus languages it serves; () for all
    # names whose values the caller's environment gives the finder and its build; nothing
    # else of the caller's reaches them (see finder_env)
    pass_env: tuple[str, ...] = ()
    # files or globs (relative to folder) holding code the finder runs that no argv names
    inputs: tuple[str, ...] = ()
    # argv lists whose output says which toolchain builds it (`rustc --version`)
    toolchain: tuple[tuple[str, ...], ...] = ()
    # programs on PATH that compile code the finder runs (`cc`), each known by its content
    compilers: tuple[str, ...] = ()
    folder: str = ""  # the engine file's folder, which relative inputs start from
    # a preset's columns on the results pages, its [[results]] tables (finders/registry.py)
    columns: tuple[Column, ...] = ()


def uses_node_modules(engine: Engine) -> bool:
    """Whether an engine's processes need the tree's npm packages installed: a node
    engine always, any other when a command or variable names {node_modules}."""
    if engine.kind == "node":
        return True
    parts = [*engine.query, *engine.batch, *engine.profile, *(v for _, v in engine.env)]
    return any(NODE_MODULES in part for part in parts)


def preset_names() -> list[str]:
    folder = resources.files("recall.finders") / "presets"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def columns(domain: str) -> list[Column]:
    """The results page's columns of a domain (names or paths): every preset's
    [[results]] tables of that domain, in their `order`."""
    return ordered([c for name in preset_names() for c in load_preset(name).columns], domain)


# The finder that runs where no --engine and no recall.toml name one: the reference
# finder, in its path mode for the path set (it has a mode for each domain), and in its
# name mode over each judgments query's own candidates.
DEFAULT_PRESETS = {NAMES: "reference", PATHS: "reference-paths", JUDGED: "reference"}


def resolve_engine(spec: str | None, finder_root: Path, domain: str = NAMES) -> Engine:
    """--engine as a preset name or a file; else recall.toml in the finder's repo; else
    the reference finder, in the mode of the query set's domain (names or paths)."""
    if spec is None:
        local = finder_root / "recall.toml"
        return load_engine(local) if local.is_file() else load_preset(DEFAULT_PRESETS[domain])
    if spec in preset_names():
        return load_preset(spec)
    path = Path(spec)
    if not path.exists():  # what is there, a pipe or a folder, read_input judges
        raise RecallError(
            f"--engine {spec}: no such file or preset (presets: {', '.join(preset_names())})"
        )
    return load_engine(path)


def key_line(engine: Engine, key: str) -> str | None:
    """Where an engine file sets key, `FILE:LINE: the line`, for an error to point at the
    line to edit; None for a preset, or a file that no longer reads so."""
    if engine.source.startswith("preset:"):
        return None
    try:
        lines = Path(engine.source).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for number, line in enumerate(lines, start=1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line):
            return f"{engine.source}:{number}: {line.strip()}"
    return None


def load_preset(name: str) -> Engine:
    data = (resources.files("recall.finders") / "presets" / f"{name}.toml").read_bytes()
    return parse_engine(data, f"preset:{name}")


# What `recall init` puts after each line of its blank template that it could only guess
# (the program, the query's argv): an engine file still holding one is refused by name.
TEMPLATE_MARK = "# EDIT: recall init's guess"


def load_engine(path: Path) -> Engine:
    data = read_input(path)
    engine = parse_engine(data, str(path))
    _check_edited(path, data)
    return engine


def _check_edited(path: Path, data: bytes) -> None:
    """An engine file that still holds the template's guesses would run a program and a
    query argv no finder was described by (a generic `{query} --limit {limit}` fails on
    fzy, answering nothing): refused with the lines to edit."""
    marked = [
        (number, line.split("=", 1)[0].strip())
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1)
        if TEMPLATE_MARK in line and not line.lstrip().startswith("#")
    ]
    if marked:
        lines = ",".join(str(number) for number, _key in marked)
        keys = ", ".join(key for _number, key in marked)
        raise RecallError(
            f"{path}:{lines}: `recall init`'s template, unedited ({keys}): edit "
            f"{'these lines' if len(marked) > 1 else 'this line'} for your finder and remove "
            f"the `{TEMPLATE_MARK}` mark"
        )


def parse_engine(data: bytes, source: str) -> Engine:
    """The Engine an engine TOML's bytes describe, from `source` (a path, or `preset:NAME`),
    every key checked here, in one place, and any fault refused as one line naming the
    file and the key: an engine is the only input that says what the harness will run,
    so a typo (an unknown key, a missing {query}, a NUL in an argument, a name both set
    and passed) must stop a run before any build rather than measure the wrong program.
    The keys every kind may declare (pass_env, inputs, toolchain, compilers) are read first, and a
    kind other than "process" then rewrites its own keys into a process table
    (_kind_table), so that every kind ends in the same checked argv lists; the digest is
    of the bytes as written, which the results cache keys runs by."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RecallError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise RecallError(f"{source}: not valid TOML: nested too deeply") from None
    # a preset's columns on the results pages; a copied preset (recall init) keeps them
    if set(doc) - {"results"} != {"engine"} or not isinstance(doc["engine"], dict):
        raise RecallError(f"{source}: expected exactly one [engine] table")
    shown = parse_columns(doc["results"], source) if "results" in doc else ()
    table = dict(doc["engine"])
    kind = table.pop("kind", "process")
    languages = _languages(table.pop("languages", None), source)
    declared = _declared(table, source)  # every kind's: read before a kind's own keys
    if kind != "process":
        table = _kind_table(kind, table, source)
    known = {
        *_ARGV_KEYS, "cwd", "stdin", "env", "output", "no_match_exit", "batch_jobs", "index_cache",
        "index_inputs",
    }  # fmt: skip
    for key in table:
        if key not in known:
            raise RecallError(f"{source}: [engine] unknown key {key!r}")
    for key in ("bin", "query"):
        if key not in table:
            raise RecallError(f"{source}: [engine] missing key {key!r}")
    values: dict[str, object] = {}
    for key in _ARGV_KEYS:
        if key in table:
            argv = tuple(_string_list(table[key], source, key))
            for element in argv:
                _check_fields(element, source, key)
            values[key] = argv
    if not values["bin"]:
        raise RecallError(f"{source}: [engine] bin must not be empty: it names the program")
    for key in ("cwd", "stdin"):
        if key in table:
            if not isinstance(table[key], str):
                raise RecallError(f"{source}: [engine] {key} must be a string")
            _no_nul(table[key], source, key)
            _check_fields(table[key], source, key)
            values[key] = table[key]
    if "env" in table:
        env = table["env"]
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise RecallError(f"{source}: [engine] env must be a table of strings")
        for name, value in env.items():
            if not name or "=" in name or "\0" in name:
                raise RecallError(
                    f"{source}: [engine] env: name {name!r} must be non-empty, without '=' or NUL"
                )
            _no_nul(value, source, f"env: {name}")
            _check_fields(value, source, "env")
        values["env"] = tuple(sorted(env.items()))
    _check_passed(declared["pass_env"], values, source)
    output = table.get("output", "json")
    if output not in OUTPUTS:
        raise RecallError(f"{source}: [engine] output must be one of {', '.join(OUTPUTS)}")
    values["output"] = output
    codes = table.get("no_match_exit", [])
    if not isinstance(codes, list) or not all(
        isinstance(c, int) and not isinstance(c, bool) for c in codes
    ):
        raise RecallError(f"{source}: [engine] no_match_exit must be a list of integers")
    values["no_match_exit"] = tuple(codes)
    batch_jobs = table.get("batch_jobs", True)
    if not isinstance(batch_jobs, bool):
        raise RecallError(f"{source}: [engine] batch_jobs must be true or false")
    values["batch_jobs"] = batch_jobs
    index_cache = table.get("index_cache", False)
    if not isinstance(index_cache, bool):
        raise RecallError(f"{source}: [engine] index_cache must be true or false")
    if index_cache and not values.get("index") and not values.get("index_names"):
        raise RecallError(f"{source}: [engine] index_cache = true needs an index command")
    values["index_cache"] = index_cache
    index_inputs = _string_list(table.get("index_inputs", []), source, "index_inputs")
    for pattern in index_inputs:
        if not pattern or os.path.isabs(pattern) or ".." in Path(pattern).parts or "{" in pattern:
            raise RecallError(
                f"{source}: [engine] index_inputs: {pattern!r} must be a path or glob inside "
                "{tree}, relative to it"
            )
    if index_inputs and not index_cache:
        raise RecallError(f"{source}: [engine] index_inputs needs index_cache = true")
    values["index_inputs"] = tuple(index_inputs)
    query = values["query"]
    if not (isinstance(query, tuple) and any("{query}" in element for element in query)):
        raise RecallError(f"{source}: [engine] query must contain the placeholder {{query}}")
    digest = hashlib.sha256(data).hexdigest()
    values["kind"], values["languages"] = kind, languages
    values.update(declared)
    values["folder"] = "" if source.startswith("preset:") else str(Path(source).parent.absolute())
    return Engine(source=source, digest=digest, columns=shown, **values)  # type: ignore[arg-type]


def _declared(table: dict, source: str) -> dict[str, object]:
    """pass_env, inputs, toolchain and compilers, which every kind of engine may declare,
    taken out of table and checked."""
    found: dict[str, object] = {}
    names = table.pop("pass_env", [])
    for name in _string_list(names, source, "pass_env"):
        if not name or "=" in name:
            raise RecallError(
                f"{source}: [engine] pass_env: name {name!r} must be non-empty, without '='"
            )
        if name in FIXED_NAMES:
            raise RecallError(
                f"{source}: [engine] pass_env: {name} is set by the harness for every finder "
                "(docs/engines.md, the fixed base), it cannot be passed"
            )
    found["pass_env"] = tuple(dict.fromkeys(names))
    inputs = _string_list(table.pop("inputs", []), source, "inputs")
    if any(not pattern for pattern in inputs):
        raise RecallError(f"{source}: [engine] inputs: an empty path names no file")
    found["inputs"] = tuple(inputs)
    probes = table.pop("toolchain", [])
    if not isinstance(probes, list) or not all(isinstance(p, list) and p for p in probes):
        raise RecallError(f"{source}: [engine] toolchain must be a list of argv lists")
    found["toolchain"] = tuple(tuple(_string_list(p, source, "toolchain")) for p in probes)
    compilers = _string_list(table.pop("compilers", []), source, "compilers")
    if any(not name or "/" in name for name in compilers):
        raise RecallError(
            f'{source}: [engine] compilers: each must be a program\'s name on PATH, like "cc"'
        )
    found["compilers"] = tuple(dict.fromkeys(compilers))
    return found


def _check_passed(names: object, values: dict[str, object], source: str) -> None:
    """A name both set by `env` and passed from the caller would leave the reader guessing
    which wins: refused."""
    env = {name for name, _value in values.get("env", ())}  # type: ignore[attr-defined]
    for name in names if isinstance(names, tuple) else ():
        if name in env:
            raise RecallError(f"{source}: [engine] {name} is in both env and pass_env")


# The declared environment ----------------------------------------------------------------

# Every finder process (index, query, batch) gets these and nothing else of the caller's
# but its pass_env names: PATH to find the programs it starts; a HOME, XDG folders and
# TMPDIR of the run's own ({run} is the session's temporary folder, removed after it),
# so that it reads no index or configuration of the user's and leaves nothing behind;
# one locale and time zone, so that sorting, case folding and dates do not change with
# the machine; and no bytecode written into the tree it runs from (a kept build would
# no longer match its digest).
INHERITED = ("PATH",)
RUN_FOLDERS = {
    "HOME": "home", "XDG_CACHE_HOME": "cache", "XDG_CONFIG_HOME": "config",
    "XDG_DATA_HOME": "data", "TMPDIR": "tmp",
}  # fmt: skip
FIXED = {"LC_ALL": "C.UTF-8", "TZ": "UTC", "PYTHONDONTWRITEBYTECODE": "1"}
FIXED_NAMES = frozenset({*INHERITED, *RUN_FOLDERS, *FIXED})
# A build gets the user's HOME and TMPDIR instead: toolchains live under HOME (~/.cargo,
# ~/.rustup, ~/go, ~/.npm) with their caches, and a build reads no index of the user's.
BUILD_INHERITED = ("PATH", "HOME", "TMPDIR")


def passed_env(engine: Engine, environ: Mapping[str, str]) -> dict[str, str]:
    """The caller's values of the engine's pass_env names (an unset name is not passed)."""
    return {name: environ[name] for name in engine.pass_env if name in environ}


def finder_env(engine: Engine, environ: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of the finder's processes, as declared: the fixed base, the
    caller's pass_env values, then the engine's env (its placeholders unfilled, `{run}`
    the session's own folder). What a session runs with and what every key holds."""
    env = {name: environ[name] for name in INHERITED if name in environ}
    env.update({name: f"{{run}}/{folder}" for name, folder in RUN_FOLDERS.items()})
    env.update(FIXED)
    env.update(passed_env(engine, environ))
    env.update(engine.env)
    return env


def build_env(engine: Engine, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of the engine's build and toolchain probes: PATH, the user's HOME
    and TMPDIR, one locale and time zone, and the caller's pass_env values. Nothing else (no
    MAKEFLAGS of a make that started recall, no CC or RUSTFLAGS unless passed)."""
    env = {name: environ[name] for name in BUILD_INHERITED if name in environ}
    env.update({k: v for k, v in FIXED.items() if k != "PYTHONDONTWRITEBYTECODE"})
    env.update(passed_env(engine, environ))
    return env


def _languages(value: object, source: str) -> tuple[str, ...]:
    """The corpus languages an engine serves (a language server serves its own); () is
    every language."""
    if value is None:
        return ()
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise RecallError(f"{source}: [engine] languages must be a non-empty list of strings")
    unknown = [v for v in value if v not in LANGUAGES]
    if unknown:
        raise RecallError(
            f"{source}: [engine] languages: {unknown[0]!r} is not a corpus language "
            f"(one of {', '.join(sorted(LANGUAGES))})"
        )
    return tuple(value)


def _kind_table(kind: object, table: dict, source: str) -> dict:
    """An engine of another kind as the process engine that runs it: each kind's module
    turns its own keys (a callable, a package, a server's argv) into the argv templates of
    an adapter that speaks the batch protocol, so every kind is measured by one path."""
    module = KIND_MODULES.get(kind) if isinstance(kind, str) else None
    if module is None:
        kinds = ", ".join(("process", *KIND_MODULES))
        raise RecallError(f"{source}: [engine] kind must be one of {kinds}, got {kind!r}")
    try:
        adapter = importlib.import_module(module)
    except ModuleNotFoundError:
        raise RecallError(f"{source}: [engine] kind {kind!r} is not in this recall") from None
    return adapter.process_table(table, source)


def _string_list(value: object, source: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RecallError(f"{source}: [engine] {key} must be a list of strings (an argv)")
    for element in value:
        _no_nul(element, source, key)
    return value


def _no_nul(text: str, source: str, key: str) -> None:
    """No argv element, path or environment value can carry a NUL byte to exec()."""
    if "\0" in text:
        raise RecallError(f"{source}: [engine] {key} holds a NUL byte in {text!r}")


def _check_fields(text: str, source: str, key: str) -> None:
    for name in _FIELD.findall(text):
        if name not in PLACEHOLDERS:
            raise RecallError(f"{source}: [engine] {key}: unknown placeholder {{{name}}}")
        if name not in _ALLOWED[key]:
            raise RecallError(f"{source}: [engine] {key}: {{{name}}} is not available there")


def expand(template: tuple[str, ...], values: dict[str, str], bin_argv: list[str]) -> list[str]:
    """Fill an argv template: `{bin}` alone splices the bin list, others substitute text."""
    argv: list[str] = []
    for element in template:
        if element == "{bin}":
            argv += bin_argv
        else:
            argv.append(fill(element, values))
    return argv


def fill(text: str, values: dict[str, str]) -> str:
    return _FIELD.sub(lambda m: values[m.group(1)], text)


class QueryArgv:
    """A per-query argv template with everything but {query} and {limit} filled in once:
    a query then costs a join, not a regular-expression pass over every element."""

    def __init__(self, template: tuple[str, ...], values: dict[str, str], bin_argv: list[str]):
        self.elements: list[str | tuple[str | int, ...]] = []
        for element in template:
            if element == "{bin}":
                self.elements += bin_argv
                continue
            pieces: list[str | int] = []
            for i, piece in enumerate(_FIELD.split(element)):
                if i % 2 == 0:
                    pieces.append(piece)
                elif piece in ("query", "limit"):
                    pieces.append(0 if piece == "query" else 1)
                else:
                    pieces.append(values[piece])
            whole = all(isinstance(piece, str) for piece in pieces)
            self.elements.append("".join(pieces) if whole else tuple(pieces))  # type: ignore[arg-type]

    def fill(self, query: str, limit: str) -> list[str]:
        given = (query, limit)
        return [
            e if isinstance(e, str) else "".join(p if isinstance(p, str) else given[p] for p in e)
            for e in self.elements
        ]


def refuse_unfit(engines: list[Engine], domain: str) -> None:
    """A set that an engine given cannot answer is refused before anything runs: a
    language server answers workspace/symbol with names and lists no files, and the
    reference finder's name mode ranks the symbols of its own index of the corpus, so
    the path set applies to neither (docs/engines.md); the reference finder's path mode
    is its own preset. The judgments set gives a finder names lists and no corpus, so an
    engine that needs one is refused too (needs_corpus)."""
    if domain == JUDGED:
        for engine in engines:
            needs = needs_corpus(engine)
            if needs:
                raise RecallError(
                    f"{engine.source}: {needs}: the judgments set gives a finder each query's "
                    "candidates as a names list ({names}) and no corpus (docs/engines.md, "
                    "index_names)"
                )
        return
    if domain != PATHS:
        return
    for engine in engines:
        if engine.kind == "lsp":
            raise RecallError(
                f"{engine.source}: kind lsp ranks symbol names, not file paths: the path set "
                "does not apply to it"
            )
        if engine.source == f"preset:{DEFAULT_PRESETS[NAMES]}":
            raise RecallError(
                f"--engine {DEFAULT_PRESETS[NAMES]}: the reference finder's name mode ranks "
                "the symbols it indexes, not file paths: the path set needs its path mode, "
                f"--engine {DEFAULT_PRESETS[PATHS]} (the default for --queries paths)"
            )


def names_argv(engine: Engine) -> tuple[str, ...]:
    """The index command a names list gets: `index_names` where the engine declares one,
    else its `index` (which then must need no corpus: needs_corpus)."""
    return engine.index_names or engine.index


# What a names list alone does not have: a checkout ({corpus}) and its language.
CORPUS_PLACEHOLDERS = ("{corpus}", "{language}")


def needs_corpus(engine: Engine) -> str | None:
    """Why an engine cannot rank a names list alone, or None: a language server searches
    a corpus's files; an engine whose index (without an `index_names`), query, batch,
    stdin or environment names `{corpus}` or `{language}` reads a checkout; and one that
    names `{names}` nowhere reads no names list at all. The default `cwd` ({corpus}) is no
    need: a names list's session stands an empty folder in for it."""
    if engine.kind == "lsp":
        return "kind lsp answers workspace/symbol over a corpus's files"
    parts = {
        "index_names" if engine.index_names else "index": names_argv(engine),
        "query": engine.query,
        "batch": engine.batch,
        "stdin": (engine.stdin,),
        "env": tuple(value for _name, value in engine.env),
    }
    for key, texts in parts.items():
        for text in texts:
            named = next((p for p in CORPUS_PLACEHOLDERS if p in text), None)
            if named:
                return f"its {key} names {named}, which only a corpus has"
    if engine.cwd not in ("{corpus}", "") and any(p in engine.cwd for p in CORPUS_PLACEHOLDERS):
        return f"its cwd names {engine.cwd}, which only a corpus has"
    if not any("{names}" in text for texts in parts.values() for text in texts):
        return "it reads no names list (no {names} in its commands, stdin or env)"
    return None
