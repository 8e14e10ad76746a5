"""docs/RESULTS.md: the reference finder and its peers over the same query set.

Each finder runs through the real CLI (`recall run --engine E --json`), exactly as a user
would run it, so the page measures what the harness measures and nothing special-cased.
Rendering is a pure function of those JSON reports and a few facts about the machine, so
the page can be re-rendered from saved reports and tested without running any finder.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import git
import orjson

from recall.build import finder_root
from recall.corpus import load_pins
from recall.engine import Engine, load_preset
from recall.errors import RecallError
from recall.peers.node import TREE_FOLDER, locked_version
from recall.queryset import DERIVED_TYPES, TYPED_TYPES
from recall.symbols import write_atomic

GROUPS = (("by_type", "type"), ("by_language", "language"))
TAIL = 400
REFERENCE = "reference"


@dataclass(frozen=True)
class Peer:
    """One column of the page: a preset, optionally with another binary (--bin)."""

    label: str
    preset: str
    note: str
    bin: str | None = None
    package: str | None = None  # the PyPI distribution a library peer runs
    npm: str | None = None  # the npm package a kind = "node" peer runs
    # What runs when neither a PyPI nor one npm package says it: a callable given the
    # finder's tree (gopls's Debian package, typescript-language-server with typescript).
    version: Callable[[Path], str] | None = None
    # A peer that rightly finds (almost) nothing, as a prefix matcher given typed queries:
    # its run needs --allow-empty, which would hide a broken engine anywhere else.
    allow_empty: bool = False


def iterfzf_fzf() -> str | None:
    """The fzf binary bundled inside the iterfzf wheel, found without importing iterfzf
    (its Python API deadlocks on large outputs; only the binary is used)."""
    spec = importlib.util.find_spec("iterfzf")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "fzf"
    return str(path) if path.is_file() else None


def debian_version(package: str) -> Callable[[Path], str]:
    """A Debian package's version, as dpkg has it installed: Debian's gopls prints
    "golang.org/x/tools/gopls master" for `gopls version`, which names no release."""

    def version(_root: Path) -> str:
        line = _first_line(["dpkg-query", "-W", "-f", "${Version}\\n", package])
        return f"{package} {line} (Debian)"

    return version


def npm_versions(*packages: str) -> Callable[[Path], str]:
    """The versions the tree's lock installs for a server made of several npm packages."""

    def version(root: Path) -> str:
        folder = root.joinpath(*TREE_FOLDER)
        shown = " + ".join(f"{p} {locked_version(p, folder)}" for p in packages)
        return f"{shown} (npm)"

    return version


def default_peers() -> list[Peer]:
    bundled = iterfzf_fzf() or "iterfzf/fzf"
    return [
        Peer("reference", "reference", "this repo's finder (`recall/finder`), batch mode"),
        Peer("fzf (Debian)", "fzf", "default scheme, one process per query"),
        Peer("fzf (iterfzf)", "fzf", "the binary inside the iterfzf wheel", bundled),
        Peer("fzy", "fzy", "one process per query"),
        Peer(
            "frizbee",
            "frizbee",
            "`max_typos=0`, other options frizbee's defaults",
            package="frizbee",
        ),
        Peer(
            "frizbee typo",
            "frizbee-typo",
            "`max_typos=1`, other options frizbee's defaults",
            package="frizbee",
        ),
        Peer(
            "RapidFuzz",
            "rapidfuzz",
            "`process.extract`, its defaults (scorer `WRatio`, no processor)",
            package="rapidfuzz",
        ),
        Peer(
            "RapidFuzz partial",
            "rapidfuzz-partial",
            "`process.extract`, scorer `fuzz.partial_ratio`",
            package="rapidfuzz",
        ),
        Peer(
            "thefuzz",
            "thefuzz",
            "`process.extract`, its defaults (`WRatio`, `full_process`)",
            package="thefuzz",
        ),
        Peer(
            "Fuse.js",
            "fusejs",
            "`new Fuse(names, {includeScore: true}).search(q)`, its defaults (threshold 0.6)",
            npm="fuse.js",
        ),
        Peer(
            "fuzzysort",
            "fuzzysort",
            "`fuzzysort.go(q, prepared, {limit})`, its defaults",
            npm="fuzzysort",
        ),
        Peer("fzf for JS", "fzf-js", "`new Fzf(names).find(q)`, its defaults", npm="fzf"),
        Peer(
            "match-sorter",
            "match-sorter",
            "`matchSorter(names, q)`, its defaults",
            npm="match-sorter",
        ),
        Peer(
            "fast-fuzzy",
            "fast-fuzzy",
            "`new Searcher(names).search(q)`, its defaults (threshold 0.6)",
            npm="fast-fuzzy",
        ),
        Peer(
            "uFuzzy",
            "ufuzzy",
            '`filter`/`info`/`sort` with `{intraIns: 1}` (its README\'s "fuzzier")',
            npm="@leeoniya/ufuzzy",
        ),
        Peer(
            "jedi-language-server",
            "jedi-lsp",
            "`workspace/symbol`, the server's defaults (module-level names that start with "
            "the query, at most 20 an answer)",
            package="jedi-language-server",
            allow_empty=True,
        ),
        Peer(
            "basedpyright",
            "basedpyright",
            "`workspace/symbol`, the server's defaults",
            package="basedpyright",
        ),
        Peer(
            "gopls",
            "gopls",
            "`workspace/symbol`, the server's defaults, GOPATH mode offline (the root package "
            "and its imports), names unqualified, at most 100 an answer",
            version=debian_version("gopls"),
        ),
        Peer(
            "typescript-language-server",
            "tsserver",
            "`workspace/symbol` with the first `.ts` file open, the server's defaults",
            version=npm_versions("typescript-language-server", "typescript"),
            allow_empty=True,  # tsserver matches no typed query but glob (docs/engines.md)
        ),
    ]


def _first_line(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RecallError(f"{' '.join(argv)}: cannot run: {exc}") from None
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RecallError(f"{' '.join(argv)}: exit {proc.returncode}")
    return lines[0]


def finder_version(peer: Peer, engine: Engine, root: Path) -> str:
    """What exactly ran: the program's own version line, the package or the commit."""
    if peer.preset == "reference":
        with git.Repo(root) as repo:
            dirty = " with uncommitted changes" if repo.is_dirty() else ""
            return f"recall commit {repo.head.commit.hexsha[:12]}{dirty}"
    if peer.version is not None:
        return peer.version(root)
    if peer.package:
        return f"{peer.package} {importlib.metadata.version(peer.package)} (PyPI)"
    if peer.npm:  # the version the tree's lock installs, which is what the adapter loads
        folder = root.joinpath(*TREE_FOLDER)
        return f"{peer.npm} {locked_version(peer.npm, folder)} (npm)"
    program = peer.bin or shutil.which(engine.bin[0]) or engine.bin[0]
    line = _first_line([program, "--version"])
    name = Path(program).name
    line = line.removeprefix(program).removeprefix(name).strip()  # fzy prints its argv[0]
    return f"{name} {line}"


def command_line(peer: Peer, engine: Engine) -> str:
    """The argv the harness runs for a query, as the engine file spells it."""
    template = engine.batch or engine.query
    # A --bin under site-packages is shown by its package folder, not this machine's path.
    binary = (
        [f"{Path(peer.bin).parent.name}/{Path(peer.bin).name}"] if peer.bin else list(engine.bin)
    )
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
    peer: Peer, args: argparse.Namespace, repos: list[str] | None = None
) -> tuple[dict, list[str | None]]:
    """One `recall run --json` over the query set (of repos only, when given), and the
    name each query got first; a failed run stops the page."""
    argv = [sys.executable, "-m", "recall", "run", "--engine", peer.preset, "--json"]
    argv += ["--queries", args.queries, "--corpus", args.corpus, "--jobs", str(args.jobs)]
    for repo in repos or ():
        argv += ["--repo", repo]
    if peer.allow_empty:
        argv.append("--allow-empty")
    for flag, value in (("--bin", peer.bin), ("--mirror", args.mirror), ("--cache", args.cache)):
        if value:
            argv += [flag, value]
    print(f"recall results: {peer.label}: {' '.join(argv[1:])}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="recall-results-") as scratch:
        saved = Path(scratch) / "saved.json"
        proc = subprocess.run([*argv, "--save", str(saved)], capture_output=True)
        if proc.returncode != 0:
            tail = " ".join(proc.stderr.decode("utf-8", "replace").split())[-TAIL:]
            raise RecallError(f"{peer.label}: recall run exited {proc.returncode}: {tail}")
        report = orjson.loads(proc.stdout)
        return report, first_names(orjson.loads(saved.read_bytes()), report["queries"])


def first_names(saved: dict, queries: int) -> list[str | None]:
    """The name each query of the set got first (None: no answer), from a --save file whose
    rows are the set's queries followed by any regress cases."""
    results = saved["runs"][-1]["results"][:queries]
    return [top[0][0] if top else None for _rank, top, _error in results]


def agreement(entries: list[dict]) -> list[list[float | None]]:
    """The pairwise top-1 agreement: the percent of the set's queries on which two finders
    put the same name first (a query either answers with nothing is not an agreement);
    None on the diagonal."""
    firsts = [entry["firsts"] for entry in entries]
    matrix: list[list[float | None]] = []
    for a in firsts:
        row: list[float | None] = []
        for b in firsts:
            same = sum(1 for x, y in zip(a, b, strict=True) if x is not None and x == y)
            row.append(None if a is b else 100.0 * same / len(a) if a else 0.0)
        matrix.append(row)
    return matrix


def check_comparable(entries: list[dict]) -> None:
    """Side by side only means something over the same queries and the same pins; a finder
    of some languages is compared on those languages' rows."""
    first = entries[0]["report"]
    for entry in entries[1:]:
        report = entry["report"]
        languages = entry.get("languages") or []
        for language in languages:
            mine = report["runs"][0]["by_language"].get(language, {}).get("n")
            if mine != first["runs"][0]["by_language"].get(language, {}).get("n"):
                raise RecallError(
                    f"{entry['label']}: its {language} rows differ from {entries[0]['label']}'s"
                )
        for key in ("corpus",) if languages else ("queries", "sourced", "corpus"):
            if report[key] != first[key]:
                raise RecallError(
                    f"{entry['label']}: its report's {key} differs from {entries[0]['label']}'s"
                )
        if report["meta"]["queries_sha256"] != first["meta"]["queries_sha256"]:
            raise RecallError(f"{entry['label']}: ran a different query set")


# Rendering ---------------------------------------------------------------------------


def _table(header: list[str], body: list[list[str]], numeric: bool = True) -> list[str]:
    """Markdown; the first column is a label, the rest right-aligned numbers if numeric."""
    rule = "|---|" + ("---:|" if numeric else "---|") * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", rule]
    return lines + ["| " + " | ".join(row) + " |" for row in body]


def _count(c: dict, key: str) -> str:
    return f"{c[key]} ({c[key + '_pct']:.1f}%)"


def latency_ms(report: dict) -> float:
    """The query phase's wall time over the queries run (hand rows included)."""
    run = report["runs"][0]
    return 1000.0 * run["query_s"] / report["queries"] if report["queries"] else 0.0


TYPE_ORDER = (*DERIVED_TYPES, *TYPED_TYPES)


def _keys(counts: dict[str, dict], group: str) -> list[str]:
    """Rows with sources, types in the recipe table's order, languages alphabetically."""
    keys = sorted(k for k, c in counts.items() if c["n"])
    if group == "by_type":
        keys.sort(key=lambda k: TYPE_ORDER.index(k) if k in TYPE_ORDER else len(TYPE_ORDER))
    return keys


def _best(entries: list[dict], group: str, key: str) -> str:
    """The peer(s) with the most sources at #1 in one row, the reference finder left out
    (it has its own column to compare with); ties are all named, none at all is "-"."""
    peers = [e for e in entries if e["label"] != REFERENCE] or entries
    firsts = [(e["label"], e["report"]["runs"][0][group][key]["first"]) for e in peers]
    top = max(first for _, first in firsts)
    if top == 0:
        return "-"
    return ", ".join(label for label, first in firsts if first == top)


def render_results(every: list[dict], host: dict[str, str]) -> str:
    """The page, from each finder's label, version, command, note and JSON report. Finders
    of some languages only (language servers) have a section of their own, beside the
    others' rows for the same languages, since their totals cover fewer queries."""
    entries = [e for e in every if not e.get("languages")]
    servers = [e for e in every if e.get("languages")]
    if not entries:  # --only a language server: its own totals are the page
        entries, servers = every, []
    first = entries[0]["report"]
    labels = [e["label"] for e in entries]
    out = [
        "# Results: the reference finder and its peers",
        "",
        "Generated by `recall results` (make results, make results-typed); do not edit it.",
        f"Every finder ran `recall run --engine E --json` over the committed query set: "
        f"{first['queries']} queries, {first['sourced']} with a source, over the pinned "
        f"corpora {', '.join(sorted(first['runs'][0]['by_repo']))}. "
        "Rank is by name: #1, in the top 10, or found at all (unlimited results), as a "
        "count and percent of the sourced queries; MRR is the mean reciprocal rank "
        "(a miss counts 0).",
        "",
        "## Overall",
        "",
    ]
    body = []
    for entry in entries:
        run = entry["report"]["runs"][0]
        body.append([
            entry["label"], str(run["n"]), _count(run, "first"), _count(run, "top10"),
            _count(run, "found"), f"{run['mrr']:.3f}", str(run["errors"]),
            f"{latency_ms(entry['report']):.2f}", f"{run['index_s']:.1f}",
        ])  # fmt: skip
    bound = first.get("ceiling")
    if bound:
        body.append([
            "ceiling", str(bound["n"]), f"{bound['first']:.1f} ({bound['first_pct']:.1f}%)",
            f"{bound['top10']:.1f} ({bound['top10_pct']:.1f}%)", "-", "-", "-", "-", "-",
        ])  # fmt: skip
    out += _table(
        ["finder", "n", "#1", "top 10", "found", "MRR", "errors", "ms / query", "index s"], body
    )
    if bound:
        out += [
            "",
            "ceiling is the best #1 and top 10 any finder can expect from these queries: "
            "several names can make one query (`tstcnt` from `test_count` and "
            "`TestContent`), and given only the query, a finder can at best rank the likeliest "
            "of them first (docs/queries.md). It is computed from the recipes over every "
            "name of each corpus, with no finder involved.",
        ]
    out += [
        "",
        "ms / query is the time per query: the run's `query_s` (wall time of the query "
        "phase, summed over corpora) divided by the queries run, hand rows included. "
        "Per-query finders pay a process start and a read of the names list on every query; "
        "batch finders answer every query of a corpus from one process, with the harness "
        "keeping up to 16 requests ahead. index s is the engine's index step (none for "
        "finders that read the names list).",
    ]
    for group, title in GROUPS:
        keys = _keys(first["runs"][0][group], group)
        out += ["", f"## By {title}: #1 / top 10 / found, percent of sourced queries", ""]
        body = []
        for key in keys:
            cells = []
            for entry in entries:
                c = entry["report"]["runs"][0][group][key]
                cells.append(f"{c['first_pct']:.1f} / {c['top10_pct']:.1f} / {c['found_pct']:.1f}")
            n = str(first["runs"][0][group][key]["n"])
            body.append([key, n, *cells, _best(entries, group, key)])
            if bound:
                c = bound[group].get(key)
                body[-1].append(f"{c['first_pct']:.1f} / {c['top10_pct']:.1f}" if c else "-")
        ceiling_column = ["ceiling (#1 / top 10)"] if bound else []
        out += _table([title, "n", *labels, "best peer (#1)", *ceiling_column], body)
        out += ["", f"## By {title}: MRR", ""]
        body = [
            [key, *(f"{e['report']['runs'][0][group][key]['mrr']:.3f}" for e in entries)]
            for key in keys
        ]
        out += _table([title, *labels], body)
    if all("firsts" in e and len(e["firsts"]) == first["queries"] for e in entries):
        out += [
            "",
            "## Top-1 agreement: percent of the queries on which two finders put the same "
            "name first",
            "",
        ]
        body = [
            [entries[i]["label"], *("-" if v is None else f"{v:.1f}" for v in row)]
            for i, row in enumerate(agreement(entries))
        ]
        out += _table(["finder", *labels], body)
    out += _by_own_languages(entries, servers)
    out += ["", "## Finders", ""]
    body = [[e["label"], e["version"], f"`{e['command']}`", e["note"]] for e in every]
    out += _table(["finder", "version", "command", "options"], body, numeric=False)
    out += [
        "",
        "Every finder ran isolated as any engine: its own temporary HOME and XDG folders, "
        "`LC_ALL=C.UTF-8`, `TZ=UTC`, over the same `{names}` list (the corpus's distinct "
        "ctags names, sorted) or, for the reference finder, its own index of the corpus. "
        "fzf and fzy treat `*` as a literal character, so glob queries find nothing there; "
        "subsequence matchers (fzf, fzy, frizbee with no typos) never find a transposition.",
        "",
        "## Machine",
        "",
    ]
    meta = first["meta"]
    out += _table(
        ["what", "value"],
        [
            ["CPUs (`nproc`)", host["cpus"]],
            ["CPU model", host["cpu_model"]],
            ["system", host["system"]],
            ["Python", host["python"]],
            ["Universal Ctags", str(meta.get("ctags", "?"))],
            ["recall", str(meta.get("recall", "?"))],
            ["query jobs", host.get("jobs", "1")],
        ],
        numeric=False,
    )
    return "\n".join(out) + "\n"


def _by_own_languages(entries: list[dict], servers: list[dict]) -> list[str]:
    """Each finder of some languages on those languages: its rows by type, then every
    finder's #1 / top 10 / found on the same language rows."""
    out: list[str] = []
    for server in servers:
        run = server["report"]["runs"][0]
        served = ", ".join(server["languages"])
        out += ["", f"## {server['label']} on its languages ({served})", ""]
        body = [
            [key, str(c["n"]), _count(c, "first"), _count(c, "top10"), _count(c, "found"),
             f"{c['mrr']:.3f}", str(c["errors"])]
            for key in _keys(run["by_type"], "by_type")
            for c in [run["by_type"][key]]
        ]  # fmt: skip
        out += _table(["type", "n", "#1", "top 10", "found", "MRR", "errors"], body)
        out += [""]
        body = []
        for language in server["languages"]:
            for entry in [server, *entries]:
                c = entry["report"]["runs"][0]["by_language"].get(language)
                if c and c["n"]:
                    body.append([
                        f"{language}: {entry['label']}", str(c["n"]), _count(c, "first"),
                        _count(c, "top10"), _count(c, "found"), f"{c['mrr']:.3f}",
                    ])  # fmt: skip
        out += _table(["language: finder", "n", "#1", "top 10", "found", "MRR"], body)
        out += ["", f"{server['label']}: {latency_ms(server['report']):.2f} ms / query."]
    return out


# The finders' reports -----------------------------------------------------------------


def _report_path(folder: Path, peer: Peer) -> Path:
    return folder / (peer.label.replace(" ", "-").replace("(", "").replace(")", "") + ".json")


def _read_entry(path: Path) -> dict:
    try:
        entry = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise RecallError(f"{path}: cannot read a kept report: {exc}") from None
    keys = {"label", "version", "command", "note", "report"}
    if not isinstance(entry, dict) or not keys <= set(entry):
        raise RecallError(f"{path}: not a kept report (needs {', '.join(sorted(keys))})")
    return entry


def peer_entries(args: argparse.Namespace) -> list[dict]:
    root = finder_root(Path("."))
    peers = [p for p in default_peers() if not args.only or p.preset in args.only]
    if not peers:
        raise RecallError(f"--only {', '.join(args.only)}: no such peer")
    folder = Path(args.reports) if args.reports else None
    if args.render_only and folder is None:
        raise RecallError("--render-only needs --reports DIR")
    entries = []
    for peer in peers:
        if peer.bin and not args.render_only and not Path(peer.bin).is_file():
            raise RecallError(
                f"{peer.label}: {peer.bin} not found: pip install iterfzf==1.9.0.67.0 "
                "(or make results, which installs the peers extra)"
            )
        if args.render_only:
            assert folder is not None
            entries.append(_read_entry(_report_path(folder, peer)))
            continue
        engine = load_preset(peer.preset)
        report, firsts = run_peer(peer, args, served_repos(engine, Path(args.corpus)))
        entry = {
            "label": peer.label, "version": finder_version(peer, engine, root),
            "command": command_line(peer, engine), "note": peer.note,
            "languages": list(engine.languages),
            "report": report, "firsts": firsts,
        }  # fmt: skip
        if folder is not None:
            write_atomic(
                _report_path(folder, peer), orjson.dumps(entry, option=orjson.OPT_INDENT_2)
            )
        entries.append(entry)
    return entries


if __name__ == "__main__":  # the command's old spelling, kept for scripts
    from recall.cli import main

    sys.exit(main(["results", *sys.argv[1:]]))
