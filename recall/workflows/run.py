"""The default command's work: build the binaries, run them, and make their report (the
command prints it and chooses the exit status)."""

from __future__ import annotations

import dataclasses
import platform
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import git

from recall import __version__
from recall.analysis.accept import Key, in_selection, read_accepted
from recall.analysis.judgments_report import NO_CEILING, judgments_report
from recall.analysis.model import (
    UNKNOWN_SHOWN,
    BenchSummary,
    CeilingSummary,
    EngineMeta,
    Meta,
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
from recall.errors import RecallError
from recall.files import file_sha256, target
from recall.finders.engine import (
    Engine,
    key_line,
)
from recall.inputs import keystrokes
from recall.inputs.corpus import Pin, cache_root, load_pins, mirror_root
from recall.inputs.judgments import (
    Judgment,
    is_judgments_file,
    judged_rows,
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
from recall.inputs.sides import Split
from recall.inputs.suite import CORPUS, Located, locate, packaged
from recall.inputs.symbols import ctags_version
from recall.render.commandline import option
from recall.running.identity import data_key
from recall.running.measure import (
    Corpora,
    check_answered,
    check_sources,
    run_binary,
    unknown_sources,
)
from recall.running.probe import probe
from recall.running.results_cache import (
    Flags,
    cached_or_run,
    load_against,
    run_key,
    save_runs,
)
from recall.running.values import FinderBuild
from recall.workflows.bench import run_bench
from recall.workflows.ceiling import query_set_ceiling
from recall.workflows.options import (
    DEFAULT_REGRESS,
    Data,
    Output,
    RunOptions,
    listed,
)
from recall.workflows.sides import Side, choose_sides, same_file, tree_code

NOTHING_PRINTED = Output()  # the API's: it returns the report


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
    meta: Meta
    ceiling: CeilingSummary | None  # None for a shard, which makes no report
    bench: BenchSummary | None = None


def report(measurement: Measurement) -> Report:
    """The report of what was measured: analysis alone, no file read and no process run."""
    if measurement.ceiling is None:
        raise RecallError("--shard: a shard makes no report; recall merge makes it")
    return analyse_plan(
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
    cases, skipped = regress_cases(
        options.no_regress, options.regress, found.default_regress, pins, rows
    )
    asked = rows + [case.row for case in cases]
    accepted = (
        in_selection(read_accepted(Path(options.accept)), all_rows, rows)
        if options.accept
        else None
    )
    cache, mirror = cache_root(options.data.cache), mirror_root(options.data.mirror)
    chosen = choose_sides(options, found, rows, queries_path, cache)
    engine, sides = chosen.engine, list(chosen.sides)
    asked_key = data_key(pins, asked)
    selection = {"repo": repos, "type": types, "split": options.split}
    base: Measured | None = None
    if options.against:
        saved_run, saved_key = load_against(Path(options.against), asked, asked_key, selection)
        base = Measured(saved_run, saved_key, len(rows), None)

    corpora = Corpora(pins, cache, mirror)
    if selected.judgments:  # every candidate list whole, whichever rows ask first
        corpora.open(rows)
    unknown: tuple[UnknownSource, ...] = ()
    if not strict:  # a foreign file's unknown sources are listed, cached runs or not
        unknown = unknown_sources(rows, corpora.open(rows), all_rows)
    check_steps(steps, rows, corpora, queries_path)
    measured = [base] if base else []
    for side in sides:
        key = run_key(side.identity, side.binary.engine, asked_key, options.timeout)
        if options.save and not side.cacheable and not side.identity.startswith("commit:"):
            key["tree"] = tree_code(side)  # the code a shard ran, known by content

        def run_now(side: Side = side) -> RunResult:
            opened = corpora.open(asked)
            if strict:
                check_sources(rows, opened, queries_path, all_rows)
            kept = None if options.no_cache else side.index_identity
            return run_binary(
                side.binary, asked, opened, jobs=options.jobs, timeout=options.timeout,
                build=kept,
            )  # fmt: skip

        cacheable = side.cacheable and not options.no_cache
        run, _cached = cached_or_run(
            cache, key, side.binary.label, asked, cacheable=cacheable, run=run_now
        )
        result = Measured(run, key, len(rows), side.explain)
        try:
            check_answered(result.run, allow_empty=options.allow_empty)
        except RecallError as exc:  # say how: the finder's own words on one query
            seen = _probed(side.binary, rows, result.run, corpora, options)
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
        rows, cases, skipped, accepted, corpora, unknown, data, regress_file, options.split,
        options.misses, steps, selected.judgments,
    )  # fmt: skip
    if options.shard:
        return Measurement(plan, measured, has_base, meta, None)
    bench = None
    if options.bench:
        binaries = [side.binary for side in sides]
        bench = run_bench(binaries, hand, corpora.open(hand), options.bench, options.timeout)
    return Measurement(plan, measured, has_base, meta, plan_ceiling(plan), bench)


def check_steps(
    steps: tuple[TypingRow, ...], rows: list[QueryRow], corpora: Corpora, queries: Path
) -> None:
    """A typing set's steps whose source is no name of its corpus are refused before any
    finder runs (or a merge reports): the corpora are fetched for its report's ceiling
    anyway. A shard checks the steps of its own repos, whose corpora it fetches."""
    ran = {row.repo for row in rows}  # a shard's repos: it runs only their steps
    steps = tuple(step for step in steps if step.repo in ran)
    if not steps:
        return
    names = {repo: corpus.names for repo, corpus in corpora.open(rows).items()}
    keystrokes.check_typing_sources(steps, names, str(queries))


def _probed(
    binary: FinderBuild, rows: list[QueryRow], run: RunResult, corpora: Corpora,
    options: RunOptions,
) -> str:  # fmt: skip
    """The first query the run got nothing from (an error, no answer, or one naming
    nothing in the corpus), run again alone: its outcome, its stderr, the engine file's
    line that makes its argv, and the command that runs it (running/probe.py)."""
    picked = next(
        (row for row, r in zip(rows, run.results, strict=True)
         if r.error or not r.top or r.off_corpus),
        rows[0],
    )  # fmt: skip
    corpus = corpora.open([picked])[picked.repo]
    seen = probe(binary, corpus, picked, options.timeout, corpora.cache)
    line = key_line(binary.engine, "batch" if binary.engine.batch else "query")
    return seen.said() + (f"; the engine's line: {line}" if line else "")


@dataclass(frozen=True)
class Plan:
    """What a report is over: the rows and regress cases measured, and where the corpora
    are when the ceiling needs their names."""

    rows: list[QueryRow]
    cases: list[Case]
    skipped: int  # the default regress file's cases for repos the corpus does not pin
    accepted: list[Key] | None
    corpora: Corpora  # the pins, and their corpora as the run opened them
    unknown: tuple[UnknownSource, ...] = ()  # a foreign file's rows whose source is no name
    data: Flags = ()  # the data flags with which `recall explain` reads what the run read
    regress_file: str = DEFAULT_REGRESS  # the regress file the report names
    split: Split | None = None  # the side of the tune/holdout split the rows are
    show_misses: bool = False  # list every source not ranked #1
    steps: tuple[TypingRow, ...] = ()  # a typing set's steps, whose prompts `rows` are
    judgments: tuple[Judgment, ...] = ()  # a judgments file's pairs; `rows`: its split's candidates


def plan_ceiling(plan: Plan) -> CeilingSummary:
    """The ceiling of the plan's rows, a foreign file's unknown sources not found; a
    judgments set has none (no recipe makes a judgment)."""
    if plan.judgments:
        return NO_CEILING
    unknown = [QueryRow(u.repo, u.query, u.type, u.source) for u in plan.unknown]
    return query_set_ceiling(plan.rows, plan.corpora, unknown)


def analyse_plan(
    plan: Plan, measured: list[Measured], *, has_base: bool, meta: Meta,
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
        meta, plan.corpora.pins, rows, [not_found(m.run, rows, unknown) for m in measured],
        baseline=has_base, cases=cases, case_results=[m.cases for m in measured],
        regress=regress, accepted=plan.accepted, explain_flags=explain_flags,
        ceiling=ceiling,
        bench=bench, show_misses=plan.show_misses, split=plan.split,
        unknown_sources=UnknownSources(len(plan.unknown), plan.unknown[:UNKNOWN_SHOWN]),
    )  # fmt: skip
    if not plan.steps:
        return report
    runs = [(m.run.label, prompt_answers(rows, m.run)) for m in measured]
    names = {repo: corpus.names for repo, corpus in plan.corpora.open(rows).items()}
    languages = {name: pin.language for name, pin in plan.corpora.pins.items()}
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
    split: Split | None, *, bench: bool = False,
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
    if options.against and options.save and same_file(Path(options.against), Path(options.save)):
        raise RecallError(
            f"--against and --save name one file ({options.save}): saving would overwrite the "
            "baseline it is read from; save to another file"
        )
    for named in (output.html, options.save):
        if named:
            target(Path(named))  # a FIFO or a device there is refused before any work


def regress_cases(
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
    return any(same_file(Path(path), home) for home in homes)


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


def _meta(engine: Engine, corpus: Path, queries: Path, config: Path | None) -> Meta:
    return Meta(
        recall=__version__,
        python=platform.python_version(),
        git=".".join(map(str, git.Git().version_info)),
        ctags=ctags_version(),
        engine=EngineMeta(engine.source, engine.digest),
        corpus_sha256=file_sha256(corpus),
        queries_sha256=file_sha256(queries),
        config=None if config is None else str(config.absolute()),  # the recall.toml read
    )
