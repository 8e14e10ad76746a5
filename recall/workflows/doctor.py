"""What the harness will use on this machine, and whether it works: `recall doctor`'s
work, and the Python API's `recall.doctor`.

Each check returns a plain record (a `Check`; all of them a `Diagnosis`); only failures of
what the default run (the reference finder over the pinned corpora) needs decide the exit,
so a missing fzf is a warning, not a broken set-up. Every problem carries the command that
fixes it, because "ctags missing" is only useful next to `apt-get install universal-ctags`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import git

from recall import __version__
from recall.errors import RecallError
from recall.finders.engine import (
    Engine,
    build_env,
    fill,
    finder_env,
    key_line,
    load_engine,
    load_preset,
    preset_names,
    resolve_engine,
)
from recall.finders.kinds.node import (
    ADAPTER,
    FOLDER,
    MARKER,
    TREE_FOLDER,
    engine_package,
    install_folder,
    lock_folder,
    locked_version,
    pinned,
)
from recall.finders.requirements import engine_needs, fillable, missing_parts
from recall.inputs.corpus import (
    FROZEN_EPOCH,
    Pin,
    cache_root,
    checkout_path,
    checkout_problem,
    load_pins,
    mirror_root,
    mirror_source,
)
from recall.inputs.queryset import query_set_path, read_queries
from recall.inputs.suite import locate
from recall.inputs.symbols import ctags_version
from recall.running.build import finder_root
from recall.running.interpreter import SUPPORTED, finder_python
from recall.running.measure import open_corpus
from recall.running.probe import probe
from recall.running.proc import method
from recall.running.values import FinderBuild
from recall.workflows.cache import human, size
from recall.workflows.options import QUERY_TIMEOUT_S, DoctorOptions

Status = Literal["ok", "warn", "FAIL"]
OK: Status = "ok"
WARN: Status = "warn"
FAIL: Status = "FAIL"
PACKAGES = ("GitPython", "rapidfuzz", "orjson", "numpy", "platformdirs")
PROBE_TIMEOUT_S = 5.0
NODE_FIX = "apt-get install nodejs npm"


@dataclass(frozen=True)
class Check:
    """One thing the harness uses: its name, ok, a warning or a failure, what was found,
    and the command that fixes it."""

    name: str
    status: Status
    detail: str
    fix: str | None = None


@dataclass(frozen=True)
class Diagnosis:
    """Every check, in the order `recall doctor` prints them; healthy when none failed
    (only what the default run needs can fail)."""

    checks: tuple[Check, ...]

    @property
    def healthy(self) -> bool:
        return healthy(list(self.checks))


def doctor(options: DoctorOptions) -> Diagnosis:
    """Every check of this machine, with the suite files and the finder looked up as a
    run looks them up: the Python API's `recall.doctor`; `recall doctor` prints it
    (`render`) and exits 2 unless it is healthy."""
    data = options.data
    found = locate("doctor", finder=options.finder, corpus=data.corpus, queries=data.queries)
    checks = diagnose(
        cache_root(data.cache), mirror_root(data.mirror), Path(found.corpus),
        query_set_path(found.queries or ""), finder_root(Path(found.finder)), found.config,
    )  # fmt: skip
    return Diagnosis(tuple(checks))


def _probe(argv: list[str], env: dict[str, str] | None = None) -> str | None:
    """First line of a version-style command, or None when it cannot run in time."""
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
            stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0].strip() if lines else ""


def check_python() -> list[Check]:
    version = ".".join(map(str, sys.version_info[:3]))
    good = sys.version_info >= SUPPORTED
    floor = ".".join(map(str, SUPPORTED))
    checks = [
        Check(
            "python",
            OK if good else FAIL,
            f"{version} ({sys.executable})" + ("" if good else f", older than {floor}"),
            None if good else f"install Python {floor} or newer",
        ),
        Check("recall", OK, __version__),
    ]
    for package in PACKAGES:
        try:
            checks.append(Check(package, OK, metadata.version(package)))
        except metadata.PackageNotFoundError:
            checks.append(
                Check(package, FAIL, "not installed", f"python3 -m pip install {package}")
            )
    return checks


def check_git() -> Check:
    version = _probe(["git", "--version"])
    if version is None:
        return Check("git", FAIL, "not found", "apt-get install git")
    return Check("git", OK, version.removeprefix("git version "))


def check_ctags() -> Check:
    try:
        version = ctags_version()
    except RecallError as exc:
        return Check("ctags", FAIL, str(exc).split(":")[0], "apt-get install universal-ctags")
    return Check("ctags", OK, f"{version}, JSON output")


def check_presets(tree: Path, python: str, *, own_engine: bool = False) -> list[Check]:
    """Each preset's needs (recall/finders/requirements.py: its programs on PATH and what they
    need, node and npm, the modules {python} must import), then its program's version.
    Only the reference finder, the default run's engine, fails the doctor, and only where
    it is the default (no recall.toml: own_engine false); the rest are warnings, each
    missing part with the command that installs it, the line a run that needs it refuses
    with."""
    values = {"tree": str(tree), "python": python}
    checks = []
    for name in preset_names():
        engine = load_preset(name)
        argv = [fill(part, values) for part in engine.bin]
        label = f"preset {name}"
        status = FAIL if name == "reference" and not own_engine else WARN
        missing = missing_parts(engine, python, values)
        if missing:
            detail = "; ".join(m.detail for m in missing)
            checks.append(Check(label, status, detail, "; ".join(m.fix for m in missing)))
            continue
        if engine.kind == "node":
            checks.append(_check_node_preset(label, engine, tree))
            continue
        if engine.bin[0] == "{python}":
            check = _check_python_finder(label, argv, engine.env, values, status)
            servers = [shutil.which(p) or p for p in engine_needs(engine).programs]
            if check.status == OK and servers:  # a language server: what it starts
                check = Check(label, OK, f"{check.detail}, runs {', '.join(servers)}")
            checks.append(check)
            continue
        program = argv[0] if os.sep in argv[0] else shutil.which(argv[0])
        if program is None or not os.access(program, os.X_OK):
            hint = f"apt-get install {argv[0]}" if os.sep not in argv[0] else None
            if hint is None and engine.build:
                hint = f"{' '.join(engine.build)} (in the finder's repo)"
            checks.append(Check(label, WARN, f"{argv[0]}: not found", hint))
            continue
        version = _probe([*argv, "--version"])
        if version:
            version = version.removeprefix(os.path.basename(argv[0]) + " ")
        detail = f"{program} {version}" if version else f"{program} (no --version)"
        checks.append(Check(label, OK, detail))
    return checks


def _check_python_finder(
    label: str, argv: list[str], env: tuple[tuple[str, str], ...], values: dict[str, str],
    status: Status,
) -> Check:  # fmt: skip
    full_env = {**os.environ, **fillable(env, values)}
    if _probe([*argv, "--help"], full_env) is None:
        return Check(
            label, status, f"{' '.join(argv)} does not start",
            "python3 -m pip install -e '.[dev]' (or make recall)",
        )  # fmt: skip
    return Check(label, OK, f"{' '.join(argv)} (recall {__version__})")


def _check_node_preset(label: str, engine: Engine, tree: Path) -> Check:
    """A node preset runs node on the tree's adapter (recall's own tree) or the harness's,
    over the packages of lock_folder: its missing parts are found by missing_parts."""
    package = engine_package(engine)
    own = tree.joinpath(*TREE_FOLDER, ADAPTER)
    adapter = own if own.is_file() else FOLDER / ADAPTER
    return Check(label, OK, f"node {adapter} --package {package}")


def check_node(tree: Path, cache: Path) -> list[Check]:
    """node and npm, and the npm packages the tree pins, each with its locked version and
    whether the cache holds them yet (npm ci installs them on a node preset's first run)."""
    checks = []
    for program in ("node", "npm"):
        version = _probe([program, "--version"])
        if version is None:
            checks.append(Check(program, WARN, "not found (the node presets need it)", NODE_FIX))
        else:
            checks.append(Check(program, OK, version.removeprefix("v")))
    try:
        folder = lock_folder(tree)
        packages = pinned(folder)
        installed = (install_folder(folder, cache) / MARKER).is_file()
        where = "installed in the cache" if installed else "npm ci on first use"
        for package in sorted(packages):
            detail = f"{locked_version(package, folder)} ({where})"
            checks.append(Check(f"npm {package}", OK, detail))
    except (RecallError, OSError) as exc:
        checks.append(Check("npm packages", WARN, str(exc), "run from recall's own checkout"))
    return checks


def check_cache(cache: Path) -> Check:
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cache, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check(
            "cache", FAIL, f"{cache}: not writable ({exc.strerror or exc})",
            "recall --cache DIR (or export RECALL_CACHE=DIR) with a writable DIR",
        )  # fmt: skip
    return Check("cache", OK, f"{cache}, writable, {human(size(cache))}")


def check_sources(pins: dict[str, Pin], mirror: Path | None) -> tuple[list[Check], set[str]]:
    """The mirror's coverage and, for pins it lacks, whether the network answers; returns
    the checks and the names of the pins that can be fetched."""
    checks: list[Check] = []
    reachable: set[str] = set()
    need_url = list(pins.values())
    if mirror is not None:
        held = {name for name, pin in pins.items() if mirror_source(mirror, pin.url)}
        reachable |= held
        need_url = [pin for pin in pins.values() if pin.name not in held]
        status = OK if not need_url else WARN
        missing = f"; lacks {', '.join(p.name for p in need_url)}" if need_url else ""
        checks.append(
            Check("mirror", status, f"{mirror} has {len(held)} of {len(pins)} pins{missing}")
        )
    for group in _group_by_host(need_url).values():
        url = group[0].url
        if _ls_remote(url):
            reachable |= {p.name for p in group}
            checks.append(Check("network", OK, f"{url} answers git ls-remote"))
        else:
            checks.append(
                Check(
                    "network",
                    WARN,
                    f"{url} does not answer git ls-remote ({PROBE_TIMEOUT_S:g} s limit)",
                    "recall --mirror DIR (or export RECALL_MIRROR=DIR) with local mirrors",
                )
            )
    return checks, reachable


def _group_by_host(pins: list[Pin]) -> dict[str, list[Pin]]:
    """One probe per host is enough to tell whether the network answers; local urls
    (file://, paths) have no host and are probed one by one."""
    groups: dict[str, list[Pin]] = {}
    for pin in pins:
        parts = urlsplit(pin.url)
        key = f"{parts.scheme}://{parts.netloc}" if parts.netloc else pin.url
        groups.setdefault(key, []).append(pin)
    return groups


def _ls_remote(url: str) -> bool:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    return _probe(["git", "ls-remote", "--heads", "--end-of-options", url], env) is not None


def check_corpora(
    pins: dict[str, Pin], cache: Path, reachable: set[str], mirror: Path | None = None
) -> list[Check]:
    """A pin that is not ready is a warning while the run can still fetch it, a failure
    when neither the mirror nor the network has it."""
    checks = []
    for pin in pins.values():
        path = checkout_path(cache, pin)
        problem = checkout_problem(pin, path) or _unfrozen(path)
        name = f"corpus {pin.name}"
        fix = f"recall fetch {pin.name}" + (f" --mirror {mirror}" if mirror else "")
        if problem is None:
            checks.append(Check(name, OK, f"{pin.sha[:12]} fetched, frozen ({path})"))
        elif pin.name in reachable:
            checks.append(Check(name, WARN, f"{problem}; the run fetches it", fix))
        else:
            checks.append(Check(name, FAIL, f"{problem}; no mirror or network has it", fix))
    return checks


def _unfrozen(path: Path) -> str | None:
    try:
        with git.Repo(path) as repo:
            when = repo.head.commit.committed_date
    except (git.GitError, ValueError, OSError):
        return "checkout unreadable"
    return None if when == FROZEN_EPOCH else "checkout commit is not frozen at 2000-01-01"


def check_environment(tree: Path) -> list[Check]:
    """The declared environment the default engine's finder (and its build) gets, name by
    name: nothing else of this shell's reaches them (docs/engines.md)."""
    try:
        engine = resolve_engine(None, tree)
    except RecallError as exc:
        return [Check("environment", WARN, str(exc))]
    checks = [
        Check(f"finder env {name}", OK, value)
        for name, value in finder_env(engine, os.environ).items()
    ]
    if engine.build:
        checks += [
            Check(f"build env {name}", OK, value)
            for name, value in build_env(engine, os.environ).items()
        ]
    unset = [name for name in engine.pass_env if name not in os.environ]
    if unset:
        checks.append(Check("pass_env", WARN, f"not set here, so not passed: {', '.join(unset)}"))
    return checks


def check_files(corpus: Path, queries: Path) -> tuple[list[Check], dict[str, Pin]]:
    checks = []
    try:
        pins = load_pins(corpus)
        checks.append(Check("corpus.json", OK, f"{corpus}: {len(pins)} pins"))
    except RecallError as exc:
        return [Check("corpus.json", FAIL, str(exc), "recall --corpus FILE")], {}
    try:
        rows = read_queries(queries, set(pins))
        checks.append(Check("queries", OK, f"{queries}: {len(rows)} rows"))
    except RecallError as exc:
        checks.append(Check("queries", FAIL, str(exc), "recall derive all"))
    return checks, pins


def diagnose(
    cache: Path, mirror: Path | None, corpus: Path, queries: Path, tree: Path,
    config: Path | None = None,
) -> list[Check]:  # fmt: skip
    try:
        python = finder_python(cache)
    except RecallError:
        python = sys.executable  # the cache check below says why; the presets still probe
    presets = check_presets(tree, python, own_engine=config is not None)
    checks = [*check_python(), check_git(), check_ctags(), *presets]
    checks += check_node(tree, cache)
    checks.append(Check("process start", OK, method()))
    checks.append(check_cache(cache))
    checks += check_environment(tree)
    file_checks, pins = check_files(corpus, queries)
    checks += file_checks
    if pins:
        source_checks, reachable = check_sources(pins, mirror)
        checks += source_checks
        checks += check_corpora(pins, cache, reachable, mirror)
    return checks + check_engine(config, tree, cache, mirror, corpus, queries)


def check_engine(
    config: Path | None, tree: Path, cache: Path, mirror: Path | None, corpus: Path,
    queries: Path,
) -> list[Check]:  # fmt: skip
    """In a finder's repo: its recall.toml read, what it needs on this machine, whether
    its program is there (the doctor builds nothing), and one probe query through it on a
    corpus already fetched, ok or why not, with the finder's own stderr and the line of
    recall.toml that makes its argv (running/probe.py)."""
    if config is None:
        return []
    try:
        engine = load_engine(config)
    except RecallError as exc:
        return [Check("engine", FAIL, str(exc), f"edit {config}")]
    checks = [Check("engine", OK, f"{config} (kind {engine.kind})")]
    try:
        python = finder_python(cache)
        pins = load_pins(corpus)
        rows = read_queries(queries, set(pins))
    except RecallError as exc:
        return [*checks, Check("engine probe", WARN, f"not run: {exc}")]
    values = {"tree": str(tree), "python": python}
    missing = missing_parts(engine, python, values)
    if missing:
        detail = "; ".join(m.detail for m in missing)
        return [*checks, Check("engine needs", FAIL, detail, "; ".join(m.fix for m in missing))]
    program = fill(engine.bin[0], values) if engine.bin else ""
    if "{tree}" in (engine.bin or ("",))[0] and not os.access(program, os.X_OK):
        build = " ".join(engine.build) if engine.build else "its build"
        return [
            *checks,
            Check(
                "engine probe", FAIL, f"{program}: not built (the doctor builds nothing)",
                f"{build} in {tree}, or any recall run, which builds the tree first",
            ),
        ]  # fmt: skip
    fetched = [p for p in pins.values() if checkout_problem(p, checkout_path(cache, p)) is None]
    sourced = [r for r in rows if r.sourced and r.repo in {p.name for p in fetched}]
    sizes = Counter(r.repo for r in sourced)  # the smallest corpus: a quick probe
    picked = sorted(sourced, key=lambda r: sizes[r.repo])[:1]
    if not picked:
        return [*checks, Check("engine probe", WARN, "no corpus fetched to probe with",
                               "recall fetch gin")]  # fmt: skip
    (row,) = picked
    binary = FinderBuild("candidate", engine, tree, python)
    try:
        seen = probe(
            binary, open_corpus(pins[row.repo], cache, mirror), row, QUERY_TIMEOUT_S, cache
        )
    except RecallError as exc:
        return [*checks, Check("engine probe", FAIL, str(exc), f"edit {config}")]
    asked = f"{row.repo} {row.query!r} (source {row.source})"
    if seen.answered:
        rank = seen.probed.result.rank
        where = f"#{rank}" if rank else "not found"
        return [
            *checks,
            Check("engine probe", OK, f"{asked}: {seen.outcome()}, the source {where}"),
        ]
    line = key_line(engine, "batch" if engine.batch else "query") or f"{config}"
    return [
        *checks,
        Check(
            "engine probe", FAIL,
            f"{asked}: {seen.outcome()}; its stderr: {seen.stderr()}; the line: {line}",
            f"edit {line.split(': ', 1)[0]}; run it yourself: {seen.command}",
        ),
    ]  # fmt: skip


def healthy(checks: list[Check]) -> bool:
    return all(c.status != FAIL for c in checks)


def render(diagnosis: Diagnosis) -> str:
    checks = diagnosis.checks
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        line = f"{c.status:<4}  {c.name:<{width}}  {c.detail}"
        lines.append(f"{line}\n      {'':<{width}}  fix: {c.fix}" if c.fix else line)
    failed = sum(1 for c in checks if c.status == FAIL)
    warned = sum(1 for c in checks if c.status == WARN)
    if failed:
        lines.append(
            f"recall doctor: {failed} problem(s) stop the default run, {warned} warning(s)"
        )
    else:
        lines.append(f"recall doctor: the default run has what it needs ({warned} warning(s))")
    return "\n".join(lines) + "\n"
