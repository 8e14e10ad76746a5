"""The default command's work: build the binaries, run them, and make their report (the
command prints it and chooses the exit status)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import platform
import re
import shutil
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import git
import orjson

from recall import __version__
from recall.analysis import ceiling, path_ceiling
from recall.analysis.accept import Key, in_selection, read_accepted
from recall.analysis.judgments_report import NO_CEILING, judgments_report
from recall.analysis.model import (
    UNKNOWN_SHOWN,
    BenchSummary,
    CeilingSummary,
    QueryResult,
    RegressSection,
    Report,
    RunResult,
    UnknownSource,
    UnknownSources,
)
from recall.analysis.regress import Case, read_cases
from recall.analysis.report import analyse
from recall.analysis.typing_report import prompt_answers, typing_report
from recall.cache import keep_file, read_file, warn
from recall.errors import RecallError
from recall.files import file_sha256, target
from recall.finders.engine import (
    Engine,
    key_line,
    preset_names,
    refuse_unfit,
    resolve_engine,
)
from recall.finders.requirements import require
from recall.inputs import derive, keystrokes, path_recipes, recipes, symbols
from recall.inputs.corpus import Pin, cache_root, load_pins, mirror_root
from recall.inputs.judgments import (
    Judgment,
    is_judgments_file,
    judged_rows,
    lists_of,
    on_side,
    read_judgments,
)
from recall.inputs.keystrokes import TypingRow
from recall.inputs.paths import PATHS, domain_of
from recall.inputs.queryset import (
    HAND,
    JUDGED,
    QUERY_SETS,
    QUERY_SETS_DEFAULT,
    QueryRow,
    query_set_path,
    read_queries,
    select,
    split_repos,
)
from recall.inputs.suite import CORPUS, Located, locate, packaged
from recall.inputs.symbols import checkout_symbols, ctags_identity, ctags_version
from recall.render.commandline import option
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
from recall.running.identity import data_key, file_identity, unseen_code
from recall.running.interpreter import finder_python
from recall.running.measure import (
    check_answered,
    check_sources,
    names_corpora,
    open_corpus,
    run_binary,
    unknown_sources,
)
from recall.running.probe import probe
from recall.running.results_cache import (
    WORKING_TREE,
    Flags,
    cached_run,
    load_against,
    run_key,
    save_runs,
    store_run,
)
from recall.running.values import Corpus, FinderBuild
from recall.workflows.bench import run_bench
from recall.workflows.merge import merge_saved
from recall.workflows.options import (
    DEFAULT_REGRESS,
    Data,
    MergeOptions,
    Output,
    RunOptions,
    listed,
)

NOTHING_PRINTED = Output()  # the API's: it returns the report
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


@dataclass(frozen=True)
class Measured:
    """One binary's results as run (the query set's rows, then the regress cases') and
    the key they are stored under."""

    whole: RunResult
    key: dict
    n_rows: int
    explain: Flags | None  # None: a saved run, which explain cannot run again

    @cached_property
    def run(self) -> RunResult:
        """The query set's part: what recall counts."""
        return dataclasses.replace(self.whole, results=self.whole.results[: self.n_rows])

    @property
    def cases(self) -> tuple[QueryResult, ...]:
        return self.whole.results[self.n_rows :]


def split_label(raw: str) -> tuple[str | None, str]:
    """`LABEL=VALUE` into its parts; anything else (a path with a slash, no `=`) is unlabeled."""
    label, sep, value = raw.partition("=")
    if sep and value and LABEL.fullmatch(label):
        return label, value
    return None, raw


def run(options: RunOptions) -> Report:
    """Measure the binaries the options name over the selected rows and report on them:
    the Python API's `recall.run`, and `recall run` without --shard."""
    check_run(options)
    if options.shard:
        raise RecallError("--shard: a shard makes no report; measure() saves its runs")
    return report(measure(options))


@dataclass(frozen=True)
class Measurement:
    """What a run measured, before any report: the plan, each binary's results (the
    baseline first), what the report's header says they ran with, and the timing of
    the hand queries (--bench)."""

    plan: Plan
    measured: list[Measured]
    has_base: bool
    meta: dict
    ceiling: CeilingSummary | None  # None for a shard, which makes no report
    bench: BenchSummary | None = None


def report(measurement: Measurement) -> Report:
    """The report of what was measured: analysis alone, no file read and no process run."""
    if measurement.ceiling is None:
        raise RecallError("--shard: a shard makes no report; recall merge makes it")
    return _analyse(
        measurement.plan, measurement.measured, has_base=measurement.has_base,
        meta=measurement.meta, ceiling=measurement.ceiling, bench=measurement.bench,
    )  # fmt: skip


def measure(options: RunOptions) -> Measurement:
    """Build and run every binary the options name (the baseline first), from the
    results cache where it holds them, and save the runs when asked (a shard's go to
    `recall merge`); check_run has checked the options.

    Why it is one long function: the order of its steps is the contract. Every finder's
    requirements are met, before a corpus is fetched or a base built, so a mistyped flag
    or a missing program costs nothing; a run answered wholly from the results cache
    fetches no corpus and builds nothing but the working tree (a strict query set's
    sources are checked against the corpora only when a binary actually runs); the
    baseline is measured first, so that every later run is diffed against it; and each
    run is refused as empty before it is saved or reported, so that no number from a
    finder that answered nothing is ever shown."""
    found = locate("run", finder=options.finder, corpus=options.data.corpus,
                   queries=options.data.queries)  # fmt: skip
    corpus_path, queries_path = Path(found.corpus), query_set_path(found.queries or "")
    pins = load_pins(corpus_path)
    for repo in options.data.repos or []:
        if repo not in pins:
            raise RecallError(f"--repo {repo}: not a pin in {corpus_path}")
    repos, types = listed(options.data.repos), listed(options.data.types)
    selected = selected_rows(
        queries_path, pins, repos, types, options.split, bench=bool(options.bench)
    )
    all_rows, rows, steps = selected.all_rows, selected.rows, selected.steps
    if selected.judgments:
        check_judged(queries_path, accept=options.accept, regress=options.regress,
                     misses=options.misses)  # fmt: skip
    strict = options.strict_queries or found.committed
    hand = [r for r in select(all_rows, repos, None) if r.type == HAND]
    if options.bench and not hand:
        raise RecallError(f"--bench: {queries_path} has no hand rows in the selected repos")
    if not rows:
        raise RecallError(f"{queries_path}: no rows match the selection")
    if options.shard:
        rows = shard_rows(rows, *options.shard)
        hand = [r for r in hand if r.repo in {row.repo for row in rows}]
    cases, skipped = _regress_cases(
        options.no_regress, options.regress, found.default_regress, pins, rows
    )
    asked = rows + [case.row for case in cases]
    accepted = (
        in_selection(read_accepted(Path(options.accept)), all_rows, rows)
        if options.accept
        else None
    )
    cache, mirror = cache_root(options.data.cache), mirror_root(options.data.mirror)
    root = finder_root(Path(found.finder))

    specs = _with_found_engine(
        [(kind, *split_label(raw)) for kind, raw in options.candidates], found.config, root
    )
    domain = domain_of(rows, str(queries_path))
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
    asked_key = data_key(pins, asked)
    selection = {"repo": repos, "type": types, "split": options.split}
    base: Measured | None = None
    if options.against:
        saved_run, saved_key = load_against(Path(options.against), asked, asked_key, selection)
        base = Measured(saved_run, saved_key, len(rows), None)
    elif options.base or options.base_bin:
        if not options.base_bin:  # a base built from the engine's own argv
            require(engine, python, known, engine.source)
        sides.insert(0, _baseline(options, engine, root, cache, python, engine_flag))
    sides = [dataclasses.replace(s, explain=pasteable(s.explain, root)) for s in sides]

    corpora: dict[str, Corpus] = names_corpora(lists_of(rows), cache) if selected.judgments else {}
    unknown: tuple[UnknownSource, ...] = ()
    if not strict:  # a foreign file's unknown sources are listed, cached runs or not
        _fetch_corpora(rows, pins, cache, mirror, corpora)
        unknown = unknown_sources(rows, corpora, all_rows)
    check_steps(steps, rows, pins, cache, mirror, corpora, queries_path)
    measured = [base] if base else []
    for side in sides:
        key = run_key(side.identity, side.binary.engine, asked_key, options.timeout)
        if options.save and not side.cacheable and not side.identity.startswith("commit:"):
            key["tree"] = tree_code(side)  # the code a shard ran, known by content
        run: RunResult | None = None
        if side.cacheable and not options.no_cache:
            run = cached_run(cache, key, side.binary.label, asked)
        if run is None:
            _fetch_corpora(asked, pins, cache, mirror, corpora)
            if strict:
                check_sources(rows, corpora, queries_path, all_rows)
            kept = None if options.no_cache else side.index_identity
            run = run_binary(
                side.binary, asked, corpora, jobs=options.jobs, timeout=options.timeout,
                build=kept,
            )  # fmt: skip
            if side.cacheable and not options.no_cache:  # --no-cache neither reads nor writes
                store_run(cache, key, run)
        result = Measured(run, key, len(rows), side.explain)
        try:
            check_answered(result.run, allow_empty=options.allow_empty)
        except RecallError as exc:  # say how: the finder's own words on one query
            seen = _probed(side.binary, rows, result.run, pins, cache, mirror, corpora, options)
            raise RecallError(f"{exc}; {seen}") from None
        measured.append(result)

    has_base = options.has_baseline
    meta = _meta(engine, corpus_path, queries_path, found.config)
    if options.save:
        save_runs(
            Path(options.save), meta, asked, [(m.whole, m.key) for m in measured],
            baseline=has_base, explain=[m.explain for m in measured], selection=selection,
        )  # fmt: skip
    data = data_flags(options.data, found, found.config)
    regress_file = options.regress or DEFAULT_REGRESS
    plan = Plan(
        pins, rows, cases, skipped, accepted, cache, mirror, corpora, unknown, data,
        regress_file, options.split, options.misses, steps, selected.judgments,
    )  # fmt: skip
    if options.shard:
        return Measurement(plan, measured, has_base, meta, None)
    bench = None
    if options.bench:
        _fetch_corpora(hand, pins, cache, mirror, corpora)
        binaries = [side.binary for side in sides]
        bench = run_bench(binaries, hand, corpora, options.bench, options.timeout)
    return Measurement(plan, measured, has_base, meta, _ceiling(plan), bench)


def check_steps(
    steps: tuple[TypingRow, ...], rows: list[QueryRow], pins: dict[str, Pin], cache: Path,
    mirror: Path | None, corpora: dict[str, Corpus], queries: Path,
) -> None:  # fmt: skip
    """A typing set's steps whose source is no name of its corpus are refused before any
    finder runs (or a merge reports): the corpora are fetched for its report's ceiling
    anyway. A shard checks the steps of its own repos, whose corpora it fetches."""
    ran = {row.repo for row in rows}  # a shard's repos: it runs only their steps
    steps = tuple(step for step in steps if step.repo in ran)
    if not steps:
        return
    _fetch_corpora(rows, pins, cache, mirror, corpora)
    names = {repo: corpus.names for repo, corpus in corpora.items()}
    keystrokes.check_typing_sources(steps, names, str(queries))


def tree_code(side: Side) -> str | None:
    """The content of the tree a side's engine runs, for a saved file to prove which code
    it ran (a working tree's path says nothing of its edits): before it runs, so an edit
    made during the run is not taken for the code that ran. None: not a tree git lists."""
    return side.content or tree_identity(side.binary.tree, side.binary.engine)


def _probed(
    binary: FinderBuild, rows: list[QueryRow], run: RunResult, pins: dict[str, Pin],
    cache: Path, mirror: Path | None, corpora: dict[str, Corpus], options: RunOptions,
) -> str:  # fmt: skip
    """The first query the run got nothing from (an error, no answer, or one naming
    nothing in the corpus), run again alone: its outcome, its stderr, the engine file's
    line that makes its argv, and the command that runs it (running/probe.py)."""
    picked = next(
        (row for row, r in zip(rows, run.results, strict=True)
         if r.error or not r.top or r.off_corpus),
        rows[0],
    )  # fmt: skip
    _fetch_corpora([picked], pins, cache, mirror, corpora)
    seen = probe(binary, corpora[picked.repo], picked, options.timeout, cache)
    line = key_line(binary.engine, "batch" if binary.engine.batch else "query")
    return seen.said() + (f"; the engine's line: {line}" if line else "")


@dataclass(frozen=True)
class Plan:
    """What a report is over: the rows and regress cases measured, and where the corpora
    are when the ceiling needs their names."""

    pins: dict[str, Pin]
    rows: list[QueryRow]
    cases: list[Case]
    skipped: int  # the default regress file's cases for repos the corpus does not pin
    accepted: list[Key] | None
    cache: Path
    mirror: Path | None
    corpora: dict[str, Corpus]
    unknown: tuple[UnknownSource, ...] = ()  # a foreign file's rows whose source is no name
    data: Flags = ()  # the data flags with which `recall explain` reads what the run read
    regress_file: str = DEFAULT_REGRESS  # the regress file the report names
    split: str | None = None  # the side of the tune/holdout split the rows are
    show_misses: bool = False  # list every source not ranked #1
    steps: tuple[TypingRow, ...] = ()  # a typing set's steps, whose prompts `rows` are
    judgments: tuple[Judgment, ...] = ()  # a judgments file's pairs; `rows`: its split's candidates


def _ceiling(plan: Plan) -> CeilingSummary:
    """The ceiling of the plan's rows, a foreign file's unknown sources not found; a
    judgments set has none (no recipe makes a judgment)."""
    if plan.judgments:
        return NO_CEILING
    unknown = [QueryRow(u.repo, u.query, u.type, u.source) for u in plan.unknown]
    return query_set_ceiling(plan.rows, plan.pins, plan.cache, plan.mirror, plan.corpora, unknown)


def _analyse(
    plan: Plan, measured: list[Measured], *, has_base: bool, meta: dict,
    ceiling: CeilingSummary, bench: BenchSummary | None,
) -> Report:  # fmt: skip
    """The plan's part of the analysis: the regress file, the explain flags of each diff,
    the rows no finder can be judged on; `report.analyse` does the rest. Shared by a run
    and by `recall merge` of its shards, so both report the same."""
    rows, cases = plan.rows, plan.cases
    if plan.judgments:
        ran = [m.run for m in measured]
        return judgments_report(
            meta, list(plan.judgments), rows, ran, baseline=has_base, split=plan.split
        )
    regress = (
        RegressSection(plan.regress_file, len(cases), plan.skipped)
        if cases or plan.skipped
        else None
    )
    explain_flags = (
        [_explain_flags(measured[0].explain, m.explain, plan.data) for m in measured[1:]]
        if has_base
        else []
    )
    unknown = [QueryRow(u.repo, u.query, u.type, u.source) for u in plan.unknown]
    report = analyse(
        meta, plan.pins, rows, [not_found(m.run, rows, unknown) for m in measured],
        baseline=has_base, cases=cases, case_results=[m.cases for m in measured],
        regress=regress, accepted=plan.accepted, explain_flags=explain_flags,
        ceiling=ceiling,
        bench=bench, show_misses=plan.show_misses, split=plan.split,
        unknown_sources=UnknownSources(len(plan.unknown), plan.unknown[:UNKNOWN_SHOWN]),
    )  # fmt: skip
    if not plan.steps:
        return report
    _fetch_corpora(rows, plan.pins, plan.cache, plan.mirror, plan.corpora)
    runs = [(m.run.label, prompt_answers(rows, m.run)) for m in measured]
    names = {repo: corpus.names for repo, corpus in plan.corpora.items()}
    languages = {name: pin.language for name, pin in plan.pins.items()}
    return typing_report(report, plan.steps, runs, names, languages, baseline=has_base)


def not_found(run: RunResult, rows: list[QueryRow], unknown: list[QueryRow]) -> RunResult:
    """The run with every row whose source is no name of its corpus not found: whatever a
    finder answered, the harness cannot tell such a name from one the corpus lacks."""
    if not unknown:
        return run
    gone = set(unknown)
    results = tuple(
        dataclasses.replace(result, rank=None) if row in gone else result
        for row, result in zip(rows, run.results, strict=True)
    )
    return dataclasses.replace(run, results=results)


def merge(options: MergeOptions) -> Report:
    """The report of a run from the files its shards saved, as the unsharded run makes
    it (the seconds are the shards' sums): the Python API's `recall.merge`."""
    found = locate("merge", corpus=options.data.corpus, queries=options.data.queries)
    corpus_path, queries_path = Path(found.corpus), query_set_path(found.queries or "")
    pins = load_pins(corpus_path)
    selected = selected_rows(
        queries_path, pins, listed(options.data.repos), listed(options.data.types),
        options.split,
    )  # fmt: skip
    all_rows, rows, steps = selected.all_rows, selected.rows, selected.steps
    if selected.judgments:
        check_judged(queries_path, accept=options.accept, regress=options.regress,
                     misses=options.misses)  # fmt: skip
    if not rows:
        raise RecallError(
            f"merge: {queries_path} has no rows of the shards' selection "
            "(give the --queries the shards ran with)"
        )
    cases, skipped = _regress_cases(
        options.no_regress, options.regress, found.default_regress, pins, rows
    )
    files = [Path(f) for f in options.files]
    ran = {"corpus_sha256": corpus_path, "queries_sha256": queries_path}
    merged = merge_saved(files, rows + [case.row for case in cases], ran)
    if (options.needs_baseline or options.accept) and not merged.baseline:
        raise RecallError("--fail-on-loss and --accept need shards run with a baseline")
    accepted = (
        in_selection(read_accepted(Path(options.accept)), all_rows, rows)
        if options.accept
        else None
    )
    explain = merged.explain or [None] * len(merged.runs)
    measured = [
        Measured(run, key, len(rows), flags)
        for (run, key), flags in zip(merged.runs, explain, strict=True)
    ]
    cache, mirror = cache_root(options.data.cache), mirror_root(options.data.mirror)
    corpora: dict[str, Corpus] = {}
    unknown: tuple[UnknownSource, ...] = ()
    if not (options.strict_queries or found.committed):
        _fetch_corpora(rows, pins, cache, mirror, corpora)
        unknown = unknown_sources(rows, corpora, all_rows)
    check_steps(steps, rows, pins, cache, mirror, corpora, queries_path)
    data = data_flags(options.data, found, found.config)
    plan = Plan(
        pins, rows, cases, skipped, accepted, cache, mirror, corpora, unknown, data,
        options.regress or DEFAULT_REGRESS, options.split, options.misses, steps,
        selected.judgments,
    )  # fmt: skip
    return _analyse(
        plan, measured, has_base=merged.baseline, meta=merged.meta, ceiling=_ceiling(plan),
        bench=None,
    )  # fmt: skip


@dataclass(frozen=True)
class Selected:
    """A query file's rows and the selection's; for a typing set its selected steps, whose
    distinct prompts are the rows that run (each once); for a judgments set every pair of
    the file, the rows that run being the candidates of the --split side's pairs
    (recall/inputs/judgments.py), so that its report can name both sides' projects."""

    all_rows: list[QueryRow]
    rows: list[QueryRow]
    steps: tuple[TypingRow, ...] = ()
    judgments: tuple[Judgment, ...] = ()


def selected_rows(
    path: Path, pins: dict[str, Pin], repos: list[str] | None, types: list[str] | None,
    split: str | None, *, bench: bool = False,
) -> Selected:  # fmt: skip
    """The query set's rows and the selection's, of whichever kind its header says."""
    if is_judgments_file(path):
        for flag, given in (("--repo", repos), ("--type", types)):
            if given:
                raise RecallError(
                    f"{flag}: {path} is a judgments set, whose queries run over their own "
                    "candidates: it has no corpora or types to select (--split selects "
                    "source projects)"
                )
        if bench:
            raise RecallError(f"--bench: {path} is a judgments set, with no hand rows to time")
        judgments = read_judgments(path)
        pairs = on_side(judgments, split)
        if not pairs:
            raise RecallError(
                f"--split {split}: {path} holds no judgment of a project on the {split} side "
                "(a project's side is a hash of its owner/repo: docs/queries.md, the "
                "judgments set)"
            )
        rows = judged_rows(pairs)
        return Selected(rows, rows, judgments=tuple(judgments))
    side = split_repos({name: pin.split for name, pin in pins.items()}, split)
    if not keystrokes.is_typing_file(path):
        all_rows = read_queries(path, set(pins))
        return Selected(all_rows, select(all_rows, repos, types, side))
    if bench:
        raise RecallError(f"--bench: {path} is a typing set, with no hand rows to time")
    steps = keystrokes.select_typing(keystrokes.read_typing(path, set(pins)), repos, types, side)
    rows = keystrokes.prompts(steps)
    return Selected(rows, rows, tuple(steps))


def check_judged(queries: Path, *, accept: str | None, regress: str | None, misses: bool) -> None:
    """Flags that speak of sourced rows, refused with a judgments set in one line each:
    its losses are judgments (its diff lists them), and no regress case runs on a names
    list."""
    for flag, given in (("--accept", accept), ("--regress", regress), ("--misses", misses)):
        if given:
            raise RecallError(
                f"{flag}: {queries} is a judgments set, whose report lists the judgments each "
                "finder disagrees with (--json) and the ones a diff lost, not sourced rows"
            )


def shard_rows(rows: list[QueryRow], k: int, n: int) -> list[QueryRow]:
    """Shard k of n: the rows of every n-th repo of the selection (repos in sorted order,
    so every machine given the same selection makes the same split)."""
    repos = sorted({row.repo for row in rows})
    mine = {repo for i, repo in enumerate(repos) if i % n == k - 1}
    if not mine:
        raise RecallError(
            f"--shard {k}/{n}: the selection has {len(repos)} repos, so shard {k} has none"
        )
    return [row for row in rows if row.repo in mine]


def check_run(options: RunOptions, output: Output = NOTHING_PRINTED) -> None:
    """Refuse options that contradict each other or name no sane value, before any work;
    `output` is how the CLI prints the report (the API returns it instead)."""
    if options.shard:
        if not options.save:
            raise RecallError("--shard needs --save FILE: a shard's runs go to recall merge")
        given = {
            "against": options.against, "json": output.json, "markdown": output.markdown,
            "html": output.html, "fail_on_loss": output.fail_on_loss,
            "misses": options.misses, "bench": options.bench,
        }  # fmt: skip
        for flag, value in given.items():
            if value:
                raise RecallError(
                    f"--shard and --{flag.replace('_', '-')}: a shard prints no report; "
                    f"give --{flag.replace('_', '-')} to recall merge"
                )
    if output.fail_on_loss and not options.has_baseline:
        raise RecallError(
            "--fail-on-loss needs a baseline (--base REF, --base-bin PATH or --against FILE)"
        )
    if options.accept and not options.has_baseline:
        raise RecallError("--accept needs a baseline: accepted losses are losses against one")
    if options.against and options.save and _same_file(Path(options.against), Path(options.save)):
        raise RecallError(
            f"--against and --save name one file ({options.save}): saving would overwrite the "
            "baseline it is read from; save to another file"
        )
    for named in (output.html, options.save):
        if named:
            target(Path(named))  # a FIFO or a device there is refused before any work


def _same_file(a: Path, b: Path) -> bool:
    """One file by path (after links and `..`) or, when both exist, by inode."""
    if a.resolve() == b.resolve():
        return True
    try:
        return a.samefile(b)
    except OSError:
        return False


def _regress_cases(
    no_regress: bool, regress: str | None, default: str, pins: dict[str, Pin],
    rows: list[QueryRow],
) -> tuple[list[Case], int]:  # fmt: skip
    """The regress cases of the repos this run covers, and how many of the default file's
    were skipped because their repo is not a pin of this corpus: the committed regress.tsv
    must not stop a run over a corpus of the user's own. The default file may be absent;
    an explicit --regress FILE naming an unknown repo is refused at its line."""
    if no_regress or (regress is None and domain_of(rows) in (PATHS, JUDGED)):
        return [], 0  # the default regress cases are names of corpora: none applies here
    path = Path(regress or default)
    if regress is None and not path.exists():
        return [], 0
    if regress is None:
        every = read_cases(path, None)
        known = [case for case in every if case.repo in pins]
        skipped = len(every) - len(known)
    else:
        known, skipped = read_cases(path, set(pins)), 0
    repos = {row.repo for row in rows}
    return [case for case in known if case.repo in repos], skipped


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
        and _same_file(Path(options.base_bin), Path(program))
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


def query_set_ceiling(
    rows: list[QueryRow], pins: dict[str, Pin], cache: Path, mirror: Path | None,
    corpora: dict[str, Corpus], unknown: list[QueryRow] | None = None,
) -> CeilingSummary:  # fmt: skip
    """The best #1 and top 10 any finder can expect on these rows (recall/ceiling.py). It
    depends on the pins, the rows, the names ctags finds and the recipes alone, so it is
    kept in the cache under those (ctags's version and the code that extracts, filters and
    derives), and a run from the results cache needs no corpus. A row whose source is no
    name (`unknown`) is not found for the ceiling either: it counts, with chance 0, so
    that the ceiling covers exactly the rows the finders ran. A row the recipes cannot
    make from its source has no ceiling: the summary names it in `left_out`, and the
    report compares the finders with the ceiling without it."""
    code = hashlib.sha256()
    is_paths = domain_of(rows) == PATHS
    for module in (
        ceiling,
        derive,
        recipes,
        symbols,
        *((path_ceiling, path_recipes) if is_paths else ()),
    ):
        code.update(Path(module.__file__ or "").read_bytes())
    key = {"data": data_key(pins, rows), "code": code.hexdigest(), "ctags": ctags_identity()}
    digest = hashlib.sha256(orjson.dumps(key, option=orjson.OPT_SORT_KEYS)).hexdigest()
    path = cache / "ceilings" / f"{digest}.json"
    per_row = None
    kept = read_file(path)
    if kept is not None:
        with contextlib.suppress(orjson.JSONDecodeError):
            per_row = ceiling.decode_rows(rows, orjson.loads(kept))
        if per_row is None:
            warn(f"cache entry {path} is not a ceiling of these rows: dropped, made again")
    if per_row is None:
        _fetch_corpora(rows, pins, cache, mirror, corpora)
        repos = dict.fromkeys(row.repo for row in rows)
        if is_paths:  # the corpora's candidates are their paths
            per_row = path_ceiling.row_ceilings(rows, {r: corpora[r].names for r in repos})
        else:
            checkouts = {repo: corpora[repo].checkout for repo in repos}
            sources = {
                repo: derive.name_source(checkout_symbols(checkout, cache), pins[repo].language)
                for repo, checkout in checkouts.items()
                if checkout is not None  # every pin's; a names list alone has no ceiling
            }
            per_row = ceiling.row_ceilings(rows, sources)
        keep_file(path, orjson.dumps(ceiling.encode_rows(rows, per_row)))
    per_row |= dict.fromkeys(unknown or [], ceiling.RowCeiling(0, 0.0, 0.0))
    return ceiling.summary(rows, per_row, {name: pin.language for name, pin in pins.items()})


def _fetch_corpora(
    rows: list[QueryRow], pins: dict[str, Pin], cache: Path, mirror: Path | None,
    corpora: dict[str, Corpus],
) -> None:  # fmt: skip
    """Fetch and list names only when a binary runs: a run from the cache needs neither.
    A judgments set's lists need no fetch: they are made from every row of each (a plan
    holds them all from the start)."""
    domain = domain_of(rows)
    if domain == JUDGED:
        made = names_corpora(lists_of(rows), cache)
        corpora.update({name: made[name] for name in made if name not in corpora})
        return
    for repo in dict.fromkeys(row.repo for row in rows):
        if repo not in corpora:
            corpora[repo] = open_corpus(pins[repo], cache, mirror, domain)


def pasteable(flags: Flags, root: Path) -> Flags:
    """A side's explain flags as they run from any folder: the finder's repo first, and
    every path (a binary, an engine file) absolute; a base is its commit already."""
    presets = set(preset_names())

    def absolute(flag: str, value: str) -> str:
        is_path = flag in ("--bin", "--base-bin") or (flag == "--engine" and value not in presets)
        return str(Path(value).absolute()) if is_path else value

    return (("--finder", str(root.absolute())), *((f, absolute(f, v)) for f, v in flags))


def data_flags(data: Data, found: Located, config: Path | None) -> Flags:
    """The data flags explain needs to read what this run read, wherever it is pasted
    (its line names the finder with --finder): a suite file that explain finds there by
    itself, as the run found it (beside config, the recall.toml of that finder, or the
    suite recall ships), is left out, so a line is the row and the binaries, not 300
    characters of defaults; a file found in the current folder, or named by a flag, is
    given by its absolute path (a committed set by its name); the cache and the mirrors
    when given."""
    flags: list[tuple[str, str]] = []
    if not _found_anywhere(found.corpus, CORPUS, config):
        flags.append(("--corpus", str(Path(found.corpus).absolute())))
    named = data.queries if data.queries in QUERY_SETS else None
    file = QUERY_SETS[named][0] if named else QUERY_SETS_DEFAULT
    if found.queries and not _found_anywhere(found.queries, file, config):
        flags.append(("--queries", str(Path(found.queries).absolute())))
    elif named and file != QUERY_SETS_DEFAULT:
        flags.append(("--queries", named))
    flags += [(flag, str(Path(value).absolute()))
              for flag, value in (("--cache", data.cache), ("--mirror", data.mirror))
              if value]  # fmt: skip
    return tuple(flags)


def _found_anywhere(path: str, name: str, config: Path | None) -> bool:
    """Is path the suite file `name` that a command finds by itself from any folder for
    the finder of config: the one beside config, else the one recall ships?"""
    homes = [config.parent / name] if config else []
    if not (config and homes[0].is_file()):
        homes.append(packaged(name))
    return any(_same_file(Path(path), home) for home in homes)


def _explain_flags(base: Flags | None, new: Flags | None, data: Flags) -> str | None:
    """`recall explain` flags for a diff's rows; explain takes one engine, so a candidate
    with an engine of its own is explained alone."""
    if base is None or new is None:
        return None
    candidate, baseline = dict(new), dict(base)
    both = (
        candidate if candidate.get("--engine") != baseline.get("--engine") else baseline | candidate
    )
    return " ".join(option(flag, value) for flag, value in (*both.items(), *data))


def _meta(engine: Engine, corpus: Path, queries: Path, config: Path | None) -> dict:
    return {
        "recall": __version__,
        "python": platform.python_version(),
        "git": ".".join(map(str, git.Git().version_info)),
        "ctags": ctags_version(),
        "engine": {"source": engine.source, "sha256": engine.digest},
        **_meta_digests(corpus, queries),
        "config": None if config is None else str(config.absolute()),  # the recall.toml read
    }


def _meta_digests(corpus: Path, queries: Path) -> dict[str, str]:
    return {"corpus_sha256": file_sha256(corpus), "queries_sha256": file_sha256(queries)}
