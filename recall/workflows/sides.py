"""Choosing the two sides of a run: the candidates (the working tree's build, --engine and
--bin in the order given) and the baseline (--base built from a commit, --base-bin),
each with what its results are known by, refused before any work when two would run
one program or one tree, or a finder's needs are not met."""

from __future__ import annotations

import dataclasses
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from recall.errors import RecallError
from recall.finders.engine import (
    Engine,
    preset_names,
    refuse_unfit,
    resolve_engine,
)
from recall.finders.requirements import require
from recall.inputs.paths import domain_of
from recall.inputs.queryset import (
    QueryRow,
)
from recall.inputs.suite import Located
from recall.running.build import (
    base_binary,
    finder_root,
    own_tree,
    resolve_commit,
    run_build,
    same_tree,
    tree_identity,
    with_bin,
)
from recall.running.identity import file_identity, unseen_code
from recall.running.interpreter import finder_python
from recall.running.results_cache import (
    WORKING_TREE,
    Flags,
)
from recall.running.values import FinderBuild
from recall.workflows.options import (
    RunOptions,
)

LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


@dataclass(frozen=True)
class Side:
    """A binary to run and what its results are known by; only a cacheable identity
    (a commit, a file's content) says everything that could change them."""

    binary: FinderBuild
    identity: str
    cacheable: bool
    explain: Flags  # the flags that make `recall explain` run this same binary
    content: str | None = None  # a working tree's content, which keeps its index alone

    @property
    def index_identity(self) -> str | None:
        """What a kept index of this binary is known by: its identity where that says
        everything (a commit, a program's content), else the working tree's content."""
        return self.identity if self.cacheable else self.content


def split_label(raw: str) -> tuple[str | None, str]:
    """`LABEL=VALUE` into its parts; anything else (a path with a slash, no `=`) is unlabeled."""
    label, sep, value = raw.partition("=")
    if sep and value and LABEL.fullmatch(label):
        return label, value
    return None, raw


def same_file(a: Path, b: Path) -> bool:
    """One file by path (after links and `..`) or, when both exist, by inode."""
    if a.resolve() == b.resolve():
        return True
    try:
        return a.samefile(b)
    except OSError:
        return False


def _with_found_engine(
    specs: list[tuple[str, str | None, str]], config: Path | None, root: Path
) -> list[tuple[str, str | None, str]]:
    """The recall.toml found from the current folder up (suite.locate) is the default
    engine, also where it is not at the repo's top (a finder in a monorepo's folder)."""
    if config is None or _default_engine(specs) is not None:
        return specs
    if config.absolute() == (root / "recall.toml").absolute():
        return specs  # resolve_engine reads it
    return [("engine", None, str(config.absolute())), *specs]


def check_distinct_programs(
    options: RunOptions, engine: Engine, specs: list[tuple[str, str | None, str]]
) -> None:
    """A baseline that runs the very program the candidate runs shows no change whatever
    the commits hold: an engine whose commands name nothing in the tree (bin = ["fzy"], a
    program on PATH) runs that program for --base REF as for the working tree. Refused,
    before anything is built, unless --same-program-ok says that is what is meant."""
    if uses_tree(engine) or not engine.bin:
        return
    program = shutil.which(engine.bin[0])
    where = f" ({program})" if program else ""
    name = Path(engine.bin[0]).name
    fix = (
        f"; make bin the program its build makes in the tree (as {{tree}}/{name}; `recall "
        "init` writes one), or give --same-program-ok"
    )
    if options.base:
        raise RecallError(
            f"--base {options.base}: the engine runs {engine.bin[0]}{where}, not a program "
            f"built from the tree, so the base and the candidate are one program{fix}"
        )
    has_tree_candidate = not any(kind == "bin" for kind, _label, _value in specs)
    if (
        options.base_bin
        and has_tree_candidate
        and program
        and same_file(Path(options.base_bin), Path(program))
    ):
        raise RecallError(
            f"--base-bin {options.base_bin}: the candidate runs that same program "
            f"({engine.bin[0]} from PATH){fix}"
        )


def _with_tree(
    specs: list[tuple[str, str | None, str]], no_candidate: bool
) -> list[tuple[str, str | None, str]]:
    """The working tree's own build stays in the report when labeled engines are added
    (first, as `candidate`: the first diff is its), unless a --bin takes its place, an
    unlabeled --engine places it, or no_candidate leaves it out."""
    has_bins = any(kind == "bin" for kind, _label, _value in specs)
    placed = _default_engine(specs) is not None
    if no_candidate:
        if placed or has_bins:
            raise RecallError(
                "--no-candidate leaves the working tree's build out: it goes with labeled "
                "--engine LABEL=E alone, not with an unlabeled --engine or a --bin"
            )
        if not specs:
            raise RecallError("--no-candidate: give the engines to measure, --engine LABEL=E")
        return specs
    if specs and not (placed or has_bins):
        return [("engine", None, ""), *specs]  # the unlabeled engine: `engine`, as resolved
    return specs


def check_distinct_trees(options: RunOptions, root: Path, found: Located) -> None:
    """A working tree that holds exactly the base's code (`--base HEAD` on a clean tree,
    or a ref of the same tree) measures one program twice: a minute of work for a diff
    that can only show no change. Refused before anything is built, unless
    --same-program-ok says the self-diff is meant (it then runs both sides for real). The
    files recall itself reads from the tree (the engine file, the suite files and
    --accept/--regress) are read alike for both sides, so they do not make two programs."""
    if not options.base or options.base_bin:
        return
    commit = resolve_commit(root, options.base)
    own = [Path(f) for f in (found.corpus, found.queries, found.default_regress) if f]
    own += [Path(f) for f in (options.accept, options.regress) if f]
    if found.config is not None:
        own.append(found.config)
    tree = same_tree(root, commit, own)
    if tree is not None:
        raise RecallError(
            f"--base {options.base}: the working tree holds the same code as {commit[:12]} "
            f"(tree {tree[:12]}, nothing changed), so both sides would run one program and "
            "show no change; give another ref, change the tree, or --same-program-ok to "
            "measure it twice"
        )


def _default_engine(specs: list[tuple[str, str | None, str]]) -> str | None:
    """The one unlabeled --engine: the engine of the baseline and of every --bin."""
    plain = [value for kind, label, value in specs if kind == "engine" and label is None]
    if len(plain) > 1:
        raise RecallError("--engine without a label may be given once; label the others")
    return plain[0] if plain else None


def _engine_flag(specs: list[tuple[str, str | None, str]]) -> Flags:
    default = _default_engine(specs)
    return (("--engine", default),) if default else ()


def _candidates(
    specs: list[tuple[str, str | None, str]],
    engine: Engine,
    root: Path,
    python: str,
    engine_flag: Flags,
    build_timeout: float,
) -> list[Side]:
    """The binaries to measure, in the order given: labeled engines built from the working
    tree, binaries run with the default engine; with neither, the working tree's engine.
    The unlabeled engine (`engine`) is measured too, where it stands (_with_tree puts it
    first when no flag placed it), unless --bin binaries take it."""
    sides: list[Side] = []
    has_bins = any(kind == "bin" for kind, _label, _value in specs)
    for kind, label, value in specs:
        if kind == "engine" and label is None:
            if not has_bins:
                side = _tree_side("candidate", engine, root, python, engine_flag, build_timeout)
                sides.append(side)
            continue
        if kind == "bin":
            explain = (*engine_flag, ("--bin", value))
            side = _bin_side(label or "candidate", engine, value, "--bin", root, python, explain)
        else:
            labeled = resolve_engine(value, root)
            flags = (("--engine", value),)
            tree = own_tree(labeled, root)  # a preset of recall's own code: recall's tree
            side = _tree_side(label or "candidate", labeled, tree, python, flags, build_timeout)
        sides.append(side)
    if not sides:
        sides.append(_tree_side("candidate", engine, root, python, engine_flag, build_timeout))
    labels = [side.binary.label for side in sides]
    for label in labels:
        if labels.count(label) > 1:
            raise RecallError(f"two binaries are labeled {label!r}: give each its own LABEL=")
    return sides


def _tree_side(
    label: str, engine: Engine, root: Path, python: str, explain: Flags, build_timeout: float
) -> Side:
    """The engine as built from the finder's working tree. Its results are cached only when
    all it runs is a program outside the tree (a preset's installed finder), known by its
    content; an engine that names `{tree}` anywhere may run the tree's files, whose edits
    no key of ours sees, so it runs every time; but an engine whose index is
    deterministic keeps it by the tree's content (build.tree_identity)."""
    run_build(engine, root, python, build_timeout)
    binary = FinderBuild(label, engine, root, python)
    seen = not uses_tree(engine) and unseen_code(engine) is None
    if engine.bin and not any("{" in part for part in engine.bin) and seen:
        program = shutil.which(engine.bin[0])
        if program:
            return Side(binary, file_identity(Path(program)), True, explain)
    keeps = engine.index_cache and unseen_code(engine) is None
    content = tree_identity(root, engine) if keeps else None
    return Side(binary, f"{WORKING_TREE}{root.absolute()}", False, explain, content)


def uses_tree(engine: Engine) -> bool:
    """Does any command, folder, input or variable of the engine name `{tree}`?"""
    texts = [
        *engine.bin, *engine.index, *engine.query, *engine.batch, *engine.profile,
        engine.cwd, engine.stdin, *(value for _name, value in engine.env),
    ]  # fmt: skip
    return any("{tree}" in text for text in texts)


def _bin_side(
    label: str, engine: Engine, path: str, flag: str, root: Path, python: str, explain: Flags
) -> Side:
    """A binary built by hand, known by its content, unless the engine also runs files of
    the tree (`{tree}` in a command or variable), which its content does not cover."""
    binary = FinderBuild(label, with_bin(engine, path, flag), root, python)
    cacheable = not uses_tree(binary.engine) and unseen_code(binary.engine) is None
    return Side(binary, file_identity(Path(path)), cacheable, explain)


def _baseline(
    options: RunOptions,
    engine: Engine,
    root: Path,
    cache: Path,
    python: str,
    engine_flag: Flags,
) -> Side:
    if options.base_bin:
        explain = (*engine_flag, ("--base-bin", options.base_bin))
        return _bin_side("base", engine, options.base_bin, "--base-bin", root, python, explain)
    assert options.base is not None
    binary, commit = base_binary(root, options.base, engine, cache, options.build_timeout)
    cacheable = unseen_code(engine) is None  # a commit covers the tree, not a script outside it
    return Side(binary, f"commit:{commit}", cacheable, (*engine_flag, ("--base", commit)))


def tree_code(side: Side) -> str | None:
    """The content of the tree a side's engine runs, for a saved file to prove which code
    it ran (a working tree's path says nothing of its edits): before it runs, so an edit
    made during the run is not taken for the code that ran. None: not a tree git lists."""
    return side.content or tree_identity(side.binary.tree, side.binary.engine)


def pasteable(flags: Flags, root: Path) -> Flags:
    """A side's explain flags as they run from any folder: the finder's repo first, and
    every path (a binary, an engine file) absolute; a base is its commit already."""
    presets = set(preset_names())

    def absolute(flag: str, value: str) -> str:
        is_path = flag in ("--bin", "--base-bin") or (flag == "--engine" and value not in presets)
        return str(Path(value).absolute()) if is_path else value

    return (("--finder", str(root.absolute())), *((f, absolute(f, v)) for f, v in flags))


@dataclass(frozen=True)
class Sides:
    """The binaries a run measures, the baseline first when one is built, each with what
    its results are known by; and the engine and finder's repo they were chosen with."""

    engine: Engine  # the working tree's engine (the report's meta names it)
    root: Path  # the finder's repo
    sides: tuple[Side, ...]


def choose_sides(
    options: RunOptions, found: Located, rows: list[QueryRow], queries: Path, cache: Path
) -> Sides:
    """The candidates the options name (--engine and --bin, in order, after the working
    tree's own build unless left out) and the base built from --base or given by
    --base-bin, every one's requirements met: refused before a corpus is fetched, so a
    mistyped flag or a missing program costs nothing."""
    root = finder_root(Path(found.finder))
    specs = _with_found_engine(
        [(kind, *split_label(raw)) for kind, raw in options.candidates], found.config, root
    )
    domain = domain_of(rows, str(queries))
    engine = resolve_engine(_default_engine(specs), root, domain)
    root = own_tree(
        engine, root, named=found.finder_named, base=options.base, base_bin=options.base_bin
    )
    engine_flag = _engine_flag(specs)
    specs = _with_tree(specs, options.no_candidate)
    labeled = [resolve_engine(v, root) for kind, label, v in specs if kind == "engine" and label]
    refuse_unfit([engine, *labeled], domain)
    if not options.same_program_ok:
        check_distinct_programs(options, engine, specs)
        check_distinct_trees(options, root, found)
    python = finder_python(cache)
    sides = _candidates(specs, engine, root, python, engine_flag, options.build_timeout)
    known = {"tree": str(root), "python": python}
    for side in sides:  # before a corpus is fetched or a base built: the doctor's line, exit 2
        require(side.binary.engine, python, known, side.binary.engine.source)
    if not options.against and (options.base or options.base_bin):
        if not options.base_bin:  # a base built from the engine's own argv
            require(engine, python, known, engine.source)
        sides.insert(0, _baseline(options, engine, root, cache, python, engine_flag))
    pasted = tuple(dataclasses.replace(s, explain=pasteable(s.explain, root)) for s in sides)
    return Sides(engine, root, pasted)
