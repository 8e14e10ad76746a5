"""docs/RESULTS.md: the reference finder and its peers over the same query set.

Each finder runs through the real CLI (`recall run --engine E --json`), exactly as a user
would run it, so the page measures what the harness measures and nothing special-cased.
Rendering is a pure function of those JSON reports and a few facts about the machine, so
the page can be re-rendered from saved reports and tested without running any finder.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import git
import orjson

from recall import __version__
from recall.analysis.codec import decode
from recall.analysis.model import SCHEMA, Report
from recall.errors import RecallError
from recall.files import read_input, write_atomic
from recall.finders.engine import Engine, columns, load_preset, needs_corpus
from recall.finders.kinds.node import TREE_FOLDER, locked_version
from recall.finders.registry import Column
from recall.inputs.corpus import load_pins
from recall.inputs.queryset import JUDGED, NAMES, PATHS, query_set_path, read_queries
from recall.inputs.suite import locate
from recall.render.judgments_results import PATH_MODE
from recall.render.results_entry import Entry
from recall.running.build import finder_root, own_tree
from recall.terminal import progress
from recall.workflows.options import ResultsOptions

TAIL = 400


def bundled_program(package: str, program: str) -> str | None:
    """A program bundled inside a PyPI package's folder (fzf in the iterfzf wheel), found
    without importing the package (iterfzf's Python API deadlocks on large outputs; only
    the binary is used)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / program
    return str(path) if path.is_file() else None


def column_bin(column: Column, engine: Engine) -> str | None:
    """The --bin a column runs: its bundled program (`package/program` where the package is
    not installed, which a run refuses), or None for the preset's own."""
    if column.bundled is None:
        return None
    program = Path(engine.bin[0]).name
    return bundled_program(column.bundled, program) or f"{column.bundled}/{program}"


def debian_version(package: str) -> str:
    """A Debian package's version, as dpkg has it installed: Debian's gopls prints
    "golang.org/x/tools/gopls master" for `gopls version`, which names no release."""
    line = _first_line(["dpkg-query", "-W", "-f", "${Version}\\n", package])
    return f"{package} {line} (Debian)"


def page_columns(domain: str) -> list[Column]:
    """The columns of a domain's page, read from the presets' [[results]] tables in their
    order; the judgments page's are every names column whose preset reads a names list,
    then every paths column in its path mode, so labelled (a language server needs a
    corpus, which the judgments set has not)."""
    if domain != JUDGED:
        return columns(domain)
    names = [c for c in columns(NAMES) if not needs_corpus(load_preset(c.preset))]
    paths = [dataclasses.replace(c, label=c.label + PATH_MODE) for c in columns(PATHS)]
    return names + paths


def _first_line(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RecallError(f"{' '.join(argv)}: cannot run: {exc}") from None
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RecallError(f"{' '.join(argv)}: exit {proc.returncode}")
    return lines[0]


def finder_version(column: Column, engine: Engine, root: Path) -> str:
    """What exactly ran, as the column names it: the commit, the package or the program's
    own version line."""
    if column.commit:
        tree = own_tree(engine, root)  # recall's own tree where root holds none
        try:
            with git.Repo(tree) as repo:
                dirty = " with uncommitted changes" if repo.is_dirty() else ""
                return f"recall commit {repo.head.commit.hexsha[:12]}{dirty}"
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            return f"recall {__version__} (installed, no git checkout)"
    if column.debian:
        return debian_version(column.debian)
    if column.pypi:
        return f"{column.pypi} {importlib.metadata.version(column.pypi)} (PyPI)"
    if column.npm:  # the versions the tree's lock installs, which is what the adapter loads
        folder = root.joinpath(*TREE_FOLDER)
        shown = " + ".join(f"{p} {locked_version(p, folder)}" for p in column.npm)
        return f"{shown} (npm)"
    program = column_bin(column, engine) or shutil.which(engine.bin[0]) or engine.bin[0]
    line = _first_line([program, "--version"])
    name = Path(program).name
    line = line.removeprefix(program).removeprefix(name).strip()  # fzy prints its argv[0]
    return f"{name} {line}"


def command_line(column: Column, engine: Engine) -> str:
    """The argv the harness runs for a query, as the engine file spells it."""
    template = engine.batch or engine.query
    # A bundled --bin is shown by its package folder, not this machine's path.
    program = Path(engine.bin[0]).name
    binary = [f"{column.bundled}/{program}"] if column.bundled else list(engine.bin)
    argv: list[str] = []
    for part in template:
        argv += binary if part == "{bin}" else [part]
    text = " ".join(argv)
    if engine.stdin:
        text += f" < {engine.stdin}"
    if engine.batch:
        text += " (one process per corpus, JSON lines)"
    return text


def machine() -> dict[str, str]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": str(os.cpu_count() or 1),
        "cpu_model": model,
        "system": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
    }


def served_repos(engine: Engine, corpus: Path) -> list[str]:
    """The corpora of the languages an engine serves (all for an engine of every language):
    a Python language server given gin would only measure that it knows no Go."""
    if not engine.languages:
        return []
    pins = load_pins(corpus)
    return [name for name, pin in pins.items() if pin.language in engine.languages]


def run_peer(
    column: Column, options: ResultsOptions, repos: list[str] | None = None
) -> tuple[dict, list[str | None]]:
    """One `recall run --json` over the query set (of repos only, when given), and the
    name each query got first; a failed run stops the page. It runs with --no-cache: a
    cached run's answers are right for any --jobs, but its seconds were measured with the
    --jobs of another day, and the page prints them as this run's."""
    argv = peer_argv(column, options, repos)
    progress().say(f"recall results: {column.label}: {' '.join(argv[1:])}")
    with tempfile.TemporaryDirectory(prefix="recall-results-") as scratch:
        saved = Path(scratch) / "saved.json"
        proc = subprocess.run([*argv, "--save", str(saved)], capture_output=True)
        if proc.returncode != 0:
            tail = " ".join(proc.stderr.decode("utf-8", "replace").split())[-TAIL:]
            raise RecallError(f"{column.label}: recall run exited {proc.returncode}: {tail}")
        report = orjson.loads(proc.stdout)
        if "judgments" in report:  # its rows are candidates: no query has a name first
            return report, []
        return report, first_names(orjson.loads(saved.read_bytes()), report["queries"])


def peer_argv(column: Column, options: ResultsOptions, repos: list[str] | None) -> list[str]:
    """The `recall run` command line of one column: its preset over the query set (and the
    --split side, when given), measured anew. The options' suite files are located
    already (peer_entries)."""
    argv = [sys.executable, "-m", "recall", "run", "--engine", column.preset, "--json"]
    argv += ["--queries", options.queries, "--corpus", str(options.corpus)]
    argv += ["--jobs", str(options.jobs)]
    argv.append("--no-cache")  # the page's seconds are measured now, with these --jobs
    for repo in repos or ():
        argv += ["--repo", repo]
    if column.allow_empty:
        argv.append("--allow-empty")
    if column.timeout is not None:
        argv += ["--timeout", f"{column.timeout:g}"]
    binary = column_bin(column, load_preset(column.preset))
    for flag, value in (
        ("--bin", binary), ("--mirror", options.mirror), ("--cache", options.cache),
        ("--split", options.split),
    ):  # fmt: skip
        if value:
            argv += [flag, value]
    return argv


def first_names(saved: dict, queries: int) -> list[str | None]:
    """The name each query of the set got first (None: no answer), from a --save file whose
    rows are the set's queries followed by any regress cases."""
    results = saved["runs"][-1]["results"][:queries]
    return [top[0][0] if top else None for _rank, top, *_error in results]


def check_comparable(entries: list[Entry]) -> None:
    """Side by side only means something over the same queries and the same pins; a finder
    of some languages is compared on those languages' rows."""
    first = entries[0].report
    for entry in entries[1:]:
        report = entry.report
        if report.split != first.split:
            raise RecallError(
                f"{entry.label}: its report shows the {report.split or 'whole'} "
                f"set's rows, {entries[0].label}'s the {first.split or 'whole'} set's"
            )

        def rows(of: Report, language: str) -> int | None:
            counts = of.runs[0].by_language.get(language)
            return counts.n if counts else None

        for language in entry.languages:
            if rows(report, language) != rows(first, language):
                raise RecallError(
                    f"{entry.label}: its {language} rows differ from {entries[0].label}'s"
                )
        for key in ("corpus",) if entry.languages else ("queries", "sourced", "corpus"):
            if getattr(report, key) != getattr(first, key):
                raise RecallError(
                    f"{entry.label}: its report's {key} differs from {entries[0].label}'s"
                )
        if report.meta.queries_sha256 != first.meta.queries_sha256:
            raise RecallError(f"{entry.label}: ran a different query set")


# The finders' reports -----------------------------------------------------------------


def _report_path(folder: Path, column: Column) -> Path:
    return folder / (column.label.replace(" ", "-").replace("(", "").replace(")", "") + ".json")


def read_entry(path: Path) -> Entry:
    try:
        entry = orjson.loads(read_input(path, f"kept report {path}"))
    except orjson.JSONDecodeError as exc:
        raise RecallError(f"kept report {path}: not JSON: {exc}") from None
    keys = {"label", "version", "command", "note", "report"}
    if not isinstance(entry, dict) or not keys <= set(entry):
        raise RecallError(f"{path}: not a kept report (needs {', '.join(sorted(keys))})")
    schema = entry["report"].get("schema") if isinstance(entry["report"], dict) else None
    if schema != SCHEMA:
        raise RecallError(
            f"{path}: a kept report of schema {schema}, and this recall reads schema {SCHEMA} "
            "(docs/report-json.md); run recall results without --render-only to make it anew"
        )
    try:
        return decode(Entry, entry, "entry")
    except RecallError as exc:
        raise RecallError(f"{path}: a kept report that does not fit schema 2: {exc}") from None


def measured_jobs(entries: list[Entry]) -> str:
    """The --jobs the page's seconds were measured with, from the reports themselves (a
    kept report renders with its own, whatever --jobs the rendering is given); reports
    measured with different --jobs are not one table."""
    jobs = {"unknown (a report kept before recall noted it)" if entry.jobs is None
            else str(entry.jobs) for entry in entries}  # fmt: skip
    if len(jobs) > 1:
        raise RecallError(
            f"the reports were measured with different --jobs ({', '.join(sorted(jobs))}): "
            "their seconds are not comparable; run recall results again"
        )
    return jobs.pop()


def is_path_set(queries: str) -> bool:
    """Does --queries name a set of paths (recall.inputs.paths), whose page has the file
    pickers?"""
    from recall.inputs.judgments import is_judgments_file
    from recall.inputs.keystrokes import is_typing_file
    from recall.inputs.paths import domain_of

    path = query_set_path(queries)
    if not path.exists() or is_typing_file(path) or is_judgments_file(path):  # no path rows
        return False
    return domain_of(read_queries(path)) == PATHS


def is_typing_set(queries: str) -> bool:
    """Does --queries name a typing set? Its page compares every finder's sequences with
    one ceiling over them all, so a peer that serves some languages only (a language
    server) is left out of it: its sequences would be a part of the ceiling's."""
    from recall.inputs.keystrokes import is_typing_file

    return is_typing_file(query_set_path(queries))


def is_judgments_set(queries: str) -> bool:
    """Does --queries name a judgments file (its header: recall/inputs/judgments.py)?"""
    from recall.inputs.judgments import is_judgments_file

    path = query_set_path(queries)
    return path.exists() and is_judgments_file(path)


def set_domain(queries: str) -> str:
    """The domain of the page of the set --queries names: judgments, paths or names (the
    default, typed and typing sets, and a file of name queries)."""
    if is_judgments_set(queries):
        return JUDGED
    return PATHS if is_path_set(queries) else NAMES


def peer_entries(options: ResultsOptions) -> list[Entry]:
    """Every peer's entry of the page, run now or read back from options.reports."""
    found = locate("results", corpus=options.corpus, queries=options.queries)
    options = dataclasses.replace(options, corpus=found.corpus, queries=found.queries or "")
    root = finder_root(Path("."))
    only = options.only
    every = page_columns(set_domain(options.queries))
    left_out = ""
    if is_typing_set(options.queries):  # one ceiling over every corpus's sequences
        every = [p for p in every if not load_preset(p.preset).languages]
        left_out = " of a typing set's page (the language servers are left out of it)"
    peers = [p for p in every if not only or p.preset in only]
    if not peers:
        raise RecallError(f"--only {', '.join(only or ())}: no such peer{left_out}")
    folder = Path(options.reports) if options.reports else None
    if options.render_only and folder is None:
        raise RecallError("--render-only needs --reports DIR")
    entries = []
    status = progress()
    with status.task("results", len(peers), "finders") as counted:
        for column in peers:
            entries.append(_peer_entry(column, options, root, folder))
            status.advance(counted)
    return entries


def _peer_entry(column: Column, options: ResultsOptions, root: Path, folder: Path | None) -> Entry:
    """One finder's entry of the page: run now, or read back from --reports."""
    engine = load_preset(column.preset)
    binary = column_bin(column, engine)
    if binary and not options.render_only and not Path(binary).is_file():
        raise RecallError(
            f"{column.label}: {binary} not found: pip install {column.bundled} (make results "
            "installs the version it pins, the peers extra)"
        )
    if options.render_only:
        assert folder is not None
        entry = read_entry(_report_path(folder, column))
        shown = entry.report.split
        if options.split and shown != options.split:
            raise RecallError(
                f"{_report_path(folder, column)}: a kept report of the {shown or 'whole'} set's "
                f"rows, not the {options.split} split's: run recall results --split "
                f"{options.split}"
            )
        return entry
    report, firsts = run_peer(column, options, served_repos(engine, Path(str(options.corpus))))
    entry = Entry(
        column.label, finder_version(column, engine, root), command_line(column, engine),
        column.note,
        Report.from_json(report), tuple(engine.languages), tuple(firsts), options.jobs,
    )  # fmt: skip
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)  # --reports names the folder itself
        data = orjson.dumps(entry.to_json(), option=orjson.OPT_INDENT_2)
        write_atomic(_report_path(folder, column), data)
    return entry
