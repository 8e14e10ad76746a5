"""What each workflow is asked, as typed, frozen values: the options of `recall run`,
`merge`, `history`, `bisect`, `explain`, `pin`, `init`, `derive` and `results`.

The commands (recall/commands/) turn their flags into these, and a Python program builds
them directly (docs/api.md); below the commands no code reads a flag by its name. Each
default is written once, here, and the commands' --help shows it from here. A suite file
left None (the corpus, the query set, the finder's repo) is looked up as the CLI looks
it up (recall/inputs/suite.py), from the current folder.

Each checks itself when made (`__post_init__`): a value of the wrong type (`jobs=1.5`,
`timeout="5"`, `candidates=("fzf",)`), a value not one of a Literal's, or a number out of
its range is one RecallError line before any work, not a TypeError after the corpora are
fetched. The command line's flags pass the same checks, so both say the same.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from dataclasses import dataclass
from typing import Literal

from recall.analysis.codec import named
from recall.errors import RecallError
from recall.inputs.derive import DEFAULT_SEED
from recall.inputs.languages import Language
from recall.inputs.sides import Split
from recall.running.build import BUILD_TIMEOUT_S, check_build_timeout
from recall.running.session import check_timeout

DEFAULT_REGRESS = "regress.tsv"  # the regress cases a run reads when present
QUERY_TIMEOUT_S = 30.0  # seconds a query may take before it counts as an error
CORES = os.cpu_count() or 1  # parallel queries: the cores


Metric = Literal["first_pct"]  # what `recall bisect --metric` watches
# A query set's recipes (inputs/recipes.py's RECIPE_SETS, and the path set's)
RecipeSet = Literal["default", "typed", "paths"]
Candidate = tuple[Literal["engine", "bin"], str]  # an --engine or --bin value, in order


def listed(values: tuple[str, ...] | None) -> list[str] | None:
    """A selection as the query set's functions take it (None: every one)."""
    return None if values is None else list(values)


def check_fields(options: object) -> None:
    """Every field of a frozen options value against its type hint, or one RecallError
    naming the class, the field and what it holds."""
    hints = typing.get_type_hints(type(options))
    for field in dataclasses.fields(options):  # type: ignore[arg-type]
        value = getattr(options, field.name)
        if not _fits(value, hints[field.name]):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise RecallError(
                f"{type(options).__name__}.{field.name}: expected {named(hints[field.name])}, "
                f"got {shown}"
            )


def _fits(value: object, hint: object) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in args)
    if origin is Literal:
        return any(type(value) is type(arg) and value == arg for arg in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(item, args[0]) for item in value)
        return len(value) == len(args) and all(map(_fits, value, args))
    if hint is type(None):
        return value is None
    if hint is float:  # a whole number is a number of seconds too; a bool is no number
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(hint, type) and isinstance(value, hint)


def _check_jobs(jobs: int) -> None:
    if jobs < 1:
        raise RecallError(f"--jobs {jobs}: give 1 or more")


@dataclass(frozen=True)
class Data:
    """Where the data is: the pinned corpora, the query set, the caches, and which of the
    set's rows are asked. None: looked up or every one, as the CLI does."""

    corpus: str | None = None
    queries: str | None = None
    cache: str | None = None
    mirror: str | None = None
    repos: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class RunOptions:
    """`recall run`: which binaries to measure over which rows, and what the report is
    judged against. `candidates` are the --engine and --bin values in the order given
    (("engine", "[LABEL=]E") or ("bin", "[LABEL=]PATH")): the report's runs keep it, after
    the working tree's own build unless a --bin or `no_candidate` takes its place."""

    data: Data = Data()
    split: Split | None = None
    strict_queries: bool = False
    finder: str | None = None
    candidates: tuple[Candidate, ...] = ()
    no_candidate: bool = False  # labeled engines alone: the working tree's build left out
    base: str | None = None
    base_bin: str | None = None
    against: str | None = None
    same_program_ok: bool = False
    jobs: int = CORES
    timeout: float = QUERY_TIMEOUT_S
    build_timeout: float = BUILD_TIMEOUT_S
    no_cache: bool = False
    allow_empty: bool = False
    bench: int | None = None
    accept: str | None = None
    regress: str | None = None
    no_regress: bool = False
    misses: bool = False
    save: str | None = None
    shard: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        check_fields(self)
        _check_jobs(self.jobs)
        check_timeout(self.timeout)
        check_build_timeout(self.build_timeout)
        if self.bench is not None and self.bench < 1:
            raise RecallError(f"--bench {self.bench}: give 1 or more reps")
        if self.shard is not None and not 1 <= self.shard[0] <= self.shard[1]:
            raise RecallError(f"--shard {self.shard[0]}/{self.shard[1]}: give K/N with 1 <= K <= N")

    @property
    def has_baseline(self) -> bool:
        return bool(self.base or self.base_bin or self.against)


@dataclass(frozen=True)
class Output:
    """How the CLI prints a run's report (the Python API returns the Report instead):
    checked with the run's options, since a shard prints none."""

    json: bool = False
    markdown: bool = False
    html: str | None = None
    fail_on_loss: bool = False

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class MergeOptions:
    """`recall merge` of a run's shards: the files they saved, the selection they ran
    (None: as the files say), and what the report is judged against."""

    files: tuple[str, ...]
    data: Data = Data()
    split: Split | None = None
    strict_queries: bool = False
    accept: str | None = None
    regress: str | None = None
    no_regress: bool = False
    misses: bool = False
    needs_baseline: bool = False  # refuse shards run without one (the CLI's --fail-on-loss)

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class CommitOptions:
    """How `recall history` and `recall bisect` measure each commit of the finder's repo:
    one engine, read from the working tree, over one selection of sourced rows."""

    data: Data = Data()
    finder: str | None = None
    engine: str | None = None
    jobs: int = CORES
    timeout: float = QUERY_TIMEOUT_S
    build_timeout: float = BUILD_TIMEOUT_S
    no_cache: bool = False
    allow_empty: bool = False

    def __post_init__(self) -> None:
        check_fields(self)
        _check_jobs(self.jobs)
        check_timeout(self.timeout)
        check_build_timeout(self.build_timeout)


@dataclass(frozen=True)
class HistoryOptions:
    """`recall history`: which commits (a range, refs, or the tags matching a pattern),
    every Nth of them, each measured as `commits` says; or one shard of them, saved."""

    commits: CommitOptions = CommitOptions()
    revs: tuple[str, ...] = ()
    tags: str | None = None
    first_parent: bool = False
    every: int = 1
    shard: tuple[int, int] | None = None  # measure shard K of N only, saved to `save`
    save: str | None = None

    def __post_init__(self) -> None:
        check_fields(self)
        if self.every < 1:
            raise RecallError(f"--every {self.every}: give 1 or more")
        if self.shard is not None and not 1 <= self.shard[0] <= self.shard[1]:
            raise RecallError(f"--shard {self.shard[0]}/{self.shard[1]}: give K/N with 1 <= K <= N")
        if self.save and not self.shard:
            raise RecallError("--save goes with --shard K/N: a shard's results go to recall merge")
        if self.shard and not self.save:
            raise RecallError("--shard needs --save FILE: a shard's results go to recall merge")


@dataclass(frozen=True)
class BisectOptions:
    """`recall bisect`: the first commit between good and bad where the query's rank
    changed (query "REPO:QUERY"), or the #1 rate fell by `drop` points (metric)."""

    good: str
    bad: str
    commits: CommitOptions = CommitOptions()
    query: str | None = None
    source: str | None = None
    metric: Metric | None = None
    drop: float | None = None

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class ExplainOptions:
    """`recall explain`: one query of one pin through each binary (the working tree's
    engine, a --bin, and a baseline), its source looked up in the query set unless given
    (with its type). Of `data`, the suite files and caches serve; the pin is `repo`."""

    query: str
    repo: str
    data: Data = Data()
    source: str | None = None
    type: str | None = None
    finder: str | None = None
    engine: str | None = None
    bin: str | None = None
    base: str | None = None
    base_bin: str | None = None
    timeout: float = QUERY_TIMEOUT_S
    build_timeout: float = BUILD_TIMEOUT_S

    def __post_init__(self) -> None:
        check_fields(self)
        check_timeout(self.timeout)
        check_build_timeout(self.build_timeout)


@dataclass(frozen=True)
class PinOptions:
    """`recall pin`: the repo pinned at a full commit of url, its corpus language, and how
    many names to sample (None: its settings file's n). Of `data`, the corpus, the query
    set (a committed set's name stands for its file and derive settings), the cache and
    the mirrors serve."""

    repo: str
    url: str
    sha: str
    language: Language
    data: Data = Data()
    n: int | None = None
    force: bool = False  # pin even when no name of the repo can be sampled
    settings: str | None = None  # the derive settings (None: the set's own, else derive.json)

    def __post_init__(self) -> None:
        if self.language not in typing.get_args(Language):
            raise RecallError(
                f"--language {self.language!r}: not a language recall reads (one of "
                f"{', '.join(typing.get_args(Language))})"
            )
        check_fields(self)
        if self.n is not None and self.n < 0:
            raise RecallError("--n must be zero or more")


@dataclass(frozen=True)
class InitOptions:
    """`recall init`: the finder's repo whose top folder gets a starter recall.toml, and
    the preset it starts from (None: the blank engine, every key explained)."""

    finder: str = "."
    preset: str | None = None

    def __post_init__(self) -> None:
        check_fields(self)
        from recall.finders.engine import preset_names  # the presets folder, read now

        if self.preset is not None and self.preset not in preset_names():
            raise RecallError(
                f"--preset {self.preset}: no such preset (presets: {', '.join(preset_names())})"
            )


@dataclass(frozen=True)
class RecipesOptions:
    """`recall derive recipes`: the queries each name derives with a set's recipes; the
    typed set's `qualified` recipe takes the name's scope owner, and the corpus language."""

    names: tuple[str, ...]
    seed: int = DEFAULT_SEED
    recipe_set: RecipeSet = "default"
    owner: str | None = None
    language: Language | Literal[""] = ""  # "": none given

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class SampleOptions:
    """`recall derive sample`: the rows of n names sampled from one pinned repo. Of
    `data`, the corpus, the cache and the mirrors serve."""

    repo: str
    n: int
    data: Data = Data()
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        check_fields(self)
        if self.n < 0:
            raise RecallError("--n must be zero or more")


@dataclass(frozen=True)
class DeriveOptions:
    """`recall derive all`: the query sets made again from their settings, one named set
    (`settings` and `queries` files) or every named set whose settings are here; with
    `check`, compared with their files and nothing written. Of `data`, the corpus, the
    cache and the mirrors serve."""

    data: Data = Data()
    settings: str | None = None
    queries: str | None = None
    check: bool = False

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class PruneOptions:
    """`recall cache prune`: what is stale besides what no pin of the corpus needs: builds
    past the keep_builds most recently used, entries unused for older_than days. Of
    `data`, the corpus and the cache serve."""

    data: Data = Data()
    older_than: float | None = None
    keep_builds: int | None = None
    dry_run: bool = False  # say what would go; remove nothing

    def __post_init__(self) -> None:
        check_fields(self)
        # written so that NaN, which compares false with every bound, is refused too
        if (self.older_than is not None and not 0 <= self.older_than < float("inf")) or (
            self.keep_builds is not None and self.keep_builds < 0
        ):
            raise RecallError("--older-than and --keep-builds must be zero or more (and finite)")


@dataclass(frozen=True)
class DoctorOptions:
    """`recall doctor`: the finder's repo (None: the folder of the recall.toml found from
    here up, else here), whose engine it probes and where presets look for built
    binaries. Of `data`, the corpus, the query set, the cache and the mirrors serve."""

    data: Data = Data()
    finder: str | None = None

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class FetchOptions:
    """`recall fetch`: the pinned corpora into the cache ahead of a run that needs them;
    `repos` narrows them to these pins (empty: every pin). Of `data`, the corpus, the
    cache and the mirror serve."""

    data: Data = Data()
    repos: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class ResultsOptions:
    """`recall results`: every peer finder and the reference over one query set; `only`
    narrows the peers to these presets, `reports` keeps (or, render_only, reads) each
    finder's JSON report."""

    corpus: str | None = None
    queries: str = "queries.tsv"
    cache: str | None = None
    mirror: str | None = None
    split: Split | None = None
    jobs: int = 1
    reports: str | None = None
    render_only: bool = False
    only: tuple[str, ...] | None = None
    out: str = "docs/RESULTS.md"
    # the judgments page's other sets: each set's name and the folder of its kept reports
    sets: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        check_fields(self)
        _check_jobs(self.jobs)
