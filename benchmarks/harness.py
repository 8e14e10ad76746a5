"""`make bench`: what the harness itself costs, as ratios measured side by side in one run.

Each figure is paired with its reference measured in the same run, in alternating
rounds (harness, reference, harness, ...), and the median round is kept, so a busy
minute on a shared machine lands on both sides. The null finder is a small C program
built here into a temporary folder (never committed): per query it prints `[]` and
exits; with `--batch` it answers `[]` to every request line. It answers at once, so
what is left is the harness.

    python benchmarks/harness.py [--mirror DIR] [--cache DIR] [ITEM ...]

ITEM is any of spawn, batch, reference, base, scaling, shards, typing (default: all of them).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recall.finders.engine import load_engine  # noqa: E402
from recall.inputs.corpus import cache_root, fetch, load_pins, mirror_root  # noqa: E402
from recall.inputs.queryset import QueryRow, format_queries, read_queries  # noqa: E402
from recall.inputs.symbols import checkout_symbols, distinct_names  # noqa: E402
from recall.running.build import extract_archive, resolve_commit  # noqa: E402
from recall.running.interpreter import finder_python  # noqa: E402
from recall.running.measure import run_binary  # noqa: E402
from recall.running.proc import Spawner, reap  # noqa: E402
from recall.running.session import AHEAD  # noqa: E402
from recall.running.values import Corpus, FinderBuild  # noqa: E402
from recall.workflows import results_page as results  # noqa: E402

ROUNDS = 3
# main when issue 20 asked for verdicts in seconds: the harness item 6 is measured against
TODAY = "27514e2"
NULL_C = r"""
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    static char line[1 << 16];
    if (argc > 1 && strcmp(argv[1], "--batch") == 0) {
        while (fgets(line, sizeof line, stdin)) {
            fputs("[]\n", stdout);
            fflush(stdout);
        }
        return 0;
    }
    fputs("[]\n", stdout);
    return 0;
}
"""
PER_QUERY_TOML = '[engine]\nbin = ["{null}"]\nquery = ["{{bin}}", "{{query}}"]\n'
BATCH_TOML = PER_QUERY_TOML + 'batch = ["{{bin}}", "--batch"]\n'
ITEMS = ("spawn", "batch", "reference", "base", "scaling", "shards", "typing")


class Bench:
    """The temporary folder, the null finder and the corpora every item shares."""

    def __init__(self, tmp: Path, cache: Path, mirror: Path | None) -> None:
        self.tmp, self.cache, self.mirror = tmp, cache, mirror
        self.null = tmp / "null"
        subprocess.run(
            ["gcc", "-O2", "-o", str(self.null), "-x", "c", "-"],
            input=NULL_C.encode(), check=True,
        )  # fmt: skip
        self.per_query = self._engine("per-query.toml", PER_QUERY_TOML)
        self.batch = self._engine("batch.toml", BATCH_TOML)
        self.pins = load_pins(ROOT / "corpus.json")
        self.rows = read_queries(ROOT / "queries.tsv", set(self.pins))
        self.corpora: dict[str, Corpus] = {}

    def _engine(self, name: str, text: str) -> Path:
        path = self.tmp / name
        path.write_text(text.format(null=self.null))
        return path

    def corpus(self, repos: set[str]) -> dict[str, Corpus]:
        for repo in sorted(repos - set(self.corpora)):
            checkout = fetch(self.pins[repo], self.cache, self.mirror)
            names = distinct_names(checkout_symbols(checkout, self.cache))
            self.corpora[repo] = Corpus(checkout, names)
        return self.corpora

    def binary(self, engine: Path) -> FinderBuild:
        return FinderBuild("null", load_engine(engine), ROOT, finder_python(self.cache))

    def recall(
        self, *args: str, harness: Path = ROOT, cache: Path | None = None
    ) -> tuple[float, int, dict | None]:
        """The CLI as a child: wall seconds, its peak RSS in MB, the JSON report if any.
        harness is the tree whose recall runs; whichever it is, the finder measured is
        this tree's (--finder), so two harnesses are timed on the same finder's code."""
        env = {**os.environ, "PYTHONPATH": str(harness)}
        argv = [sys.executable, "-m", "recall", "--cache", str(cache or self.cache)]
        argv += ["--mirror", str(self.mirror)] if self.mirror else []
        argv += ["--finder", str(ROOT)]
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            started = time.perf_counter()
            proc = subprocess.Popen([*argv, *args], cwd=harness, env=env, stdout=out, stderr=err)
            _pid, status, usage = os.wait4(proc.pid, 0)  # its own rusage, not all children's
            wall = time.perf_counter() - started
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        if proc.returncode != 0:
            raise SystemExit(f"bench: recall {' '.join(args)} failed: {stderr.decode()[-500:]}")
        report = orjson.loads(stdout) if stdout.startswith(b"{") else None
        return wall, usage.ru_maxrss // 1024, report


def cycled(rows: list[QueryRow], n: int) -> list[QueryRow]:
    """The set repeated to n rows; each repeat's queries get a ~k suffix to stay distinct."""
    out = []
    for i in range(n):
        row, k = rows[i % len(rows)], i // len(rows)
        out.append(row if k == 0 else QueryRow(row.repo, f"{row.query}~{k}", row.type, row.source))
    return out


def alternate(*sides: Callable[[], float], rounds: int = ROUNDS) -> list[float]:
    """Each side's median over rounds, the sides taking turns within a round."""
    samples: list[list[float]] = [[] for _ in sides]
    for _ in range(rounds):
        for i, side in enumerate(sides):
            samples[i].append(side())
    return [statistics.median(s) for s in samples]


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def item_spawn(bench: Bench, jobs: int) -> None:
    """The raw limit is the fastest of three bare loops over the same spawns at the same
    parallelism, each capturing stdout and stderr as the harness does: subprocess.run,
    os.posix_spawn with pipes, and the harness's own spawner (recall.running.proc) with nothing
    of the harness around it."""
    n = 2000
    rows = cycled([r for r in bench.rows if r.repo == "gin"], n)
    corpora = bench.corpus({"gin"})
    binary = bench.binary(bench.per_query)
    devnull = os.open(os.devnull, os.O_RDONLY)

    def harness() -> float:
        return run_binary(binary, rows, corpora, jobs=jobs, timeout=30).query_s

    def run(row: QueryRow) -> None:
        subprocess.run([str(bench.null), row.query], stdin=devnull, capture_output=True,
                       check=True)  # fmt: skip

    def posix_spawn(row: QueryRow) -> None:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, out_w, 1),
                   (os.POSIX_SPAWN_DUP2, err_w, 2)]  # fmt: skip
        pid = os.posix_spawn(bench.null, [str(bench.null), row.query], os.environ,
                             file_actions=actions)  # fmt: skip
        os.close(out_w)
        os.close(err_w)
        drain(out_r, err_r)
        os.waitpid(pid, 0)

    spawner = Spawner(os.getcwd(), os.environb)

    def own_spawner(row: QueryRow) -> None:
        child = spawner.start([str(bench.null), row.query], devnull)
        drain(child.stdout, child.stderr)
        reap(child.pid)

    def raw(spawn: Callable[[QueryRow], None]) -> float:
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(spawn, rows))
        return time.perf_counter() - started

    try:
        harness_s, *raw_s = alternate(
            harness, lambda: raw(run), lambda: raw(posix_spawn), lambda: raw(own_spawner)
        )
    finally:
        os.close(devnull)
    share = min(raw_s) / harness_s
    names = ("subprocess.run", "os.posix_spawn", "recall.running.proc")
    loops = ", ".join(f"{n / s:,.0f}/s ({name})" for name, s in zip(names, raw_s, strict=True))
    print(f"1. per-query mode, null finder, {n} queries, {jobs} jobs: harness {n / harness_s:,.0f} "
          f"queries/s; raw spawn loops {loops}: {100 * share:.0f}% of the fastest "
          f"(target 80% or more: {verdict(share >= 0.8)})")  # fmt: skip


def drain(*fds: int) -> None:
    """Read each pipe to its end, then close it."""
    for fd in fds:
        while os.read(fd, 1 << 16):
            pass
        os.close(fd)


def bare_client(null: Path, rows: list[QueryRow], ahead: int) -> float:
    """The null program's own cost: the same request lines, `ahead` of them written before
    their answers are read (1: lockstep; AHEAD: as the harness does), nothing else."""
    proc = subprocess.Popen([str(null), "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    requests = [orjson.dumps({"query": r.query, "limit": 0}) + b"\n" for r in rows]
    fd_in, fd_out = proc.stdin.fileno(), proc.stdout.fileno()
    started = time.perf_counter()
    sent = answered = 0
    while answered < len(requests):
        if sent - answered < ahead and sent < len(requests):
            upto = min(answered + ahead, len(requests))
            os.write(fd_in, b"".join(requests[sent:upto]))
            sent = upto
        answered += os.read(fd_out, 1 << 16).count(b"\n")
    elapsed = time.perf_counter() - started
    proc.stdin.close()
    proc.wait()
    proc.stdout.close()
    return elapsed


def item_batch(bench: Bench) -> None:
    n = 20000
    rows = cycled([r for r in bench.rows if r.repo == "gin"], n)
    corpora = bench.corpus({"gin"})
    binary = bench.binary(bench.batch)
    harness_s, floor_s, lockstep_s = alternate(
        lambda: run_binary(binary, rows, corpora, jobs=1, timeout=30).query_s,
        lambda: bare_client(bench.null, rows, AHEAD),
        lambda: bare_client(bench.null, rows, 1),
    )
    overhead_us = (harness_s - floor_s) / n * 1e6
    ok = verdict(overhead_us < 20)
    print(f"2. batch mode, null finder, {n} queries: harness {harness_s / n * 1e6:.1f} us/query; "
          f"a bare client of the same program keeping {AHEAD} requests ahead as the harness "
          f"does {floor_s / n * 1e6:.1f} us/query, in lockstep {lockstep_s / n * 1e6:.1f}: "
          f"harness overhead {overhead_us:.1f} us/query (target under 20: {ok})")  # fmt: skip


def item_reference(bench: Bench) -> None:
    wall, _rss, report = bench.recall("--no-cache", "--json")  # no kept index either
    assert report is not None
    run = report["runs"][0]
    print(f"3. default run of the reference finder (batch mode), {report['queries']} queries, "
          f"6 corpora, indexing included: {wall:.1f} s wall (index {run['index_s']:.1f} s, "
          f"queries {run['query_s']:.1f} s) (target under 60 s: {verdict(wall < 60)})")  # fmt: skip
    preset = (ROOT / "recall" / "finders" / "presets" / "reference.toml").read_text()
    per_query = bench.tmp / "reference-per-query.toml"
    per_query.write_text("".join(line + "\n" for line in preset.splitlines()
                                 if not line.startswith("batch")))  # fmt: skip
    gin = [r for r in bench.rows if r.repo == "gin"][:60]
    subset = bench.tmp / "gin-60.tsv"
    subset.write_bytes(format_queries(gin))
    args = ("--queries", str(subset), "--json")
    batch_s, pq_s = alternate(
        lambda: _query_s(bench.recall(*args)),
        lambda: _query_s(bench.recall("--engine", str(per_query), *args)),
        rounds=1,
    )
    print(f"   the same finder per query (a process per query) against batch, on the first "
          f"{len(gin)} gin queries: {pq_s:.2f} s against {batch_s:.2f} s of query time, "
          f"{pq_s / batch_s:.0f}x")  # fmt: skip


def _query_s(result: tuple[float, int, dict | None]) -> float:
    report = result[2]
    assert report is not None
    return float(report["runs"][0]["query_s"])


def item_base(bench: Bench, ref: str = "main") -> None:
    """`--base REF` cold (--no-cache: both sides run; a run after it stores them), then
    the candidate alone against `--base REF` warm (the base's results come from the
    cache), in alternating rounds."""
    help_text = subprocess.run(
        [sys.executable, "-m", "recall", "run", "--help"], cwd=ROOT, capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout  # fmt: skip
    if "--no-cache" not in help_text:
        print("4. BASE=main cold against cached: skipped: no results cache")
        return
    cold, _rss, _report = bench.recall("--base", ref, "--no-cache", "--json")
    bench.recall("--base", ref, "--json")  # --no-cache writes nothing: this stores the base
    reports: list[dict | None] = []

    def warm_run() -> float:
        wall, _rss, report = bench.recall("--base", ref, "--json")
        reports.append(report)
        return wall

    alone, warm = alternate(lambda: bench.recall("--json")[0], warm_run)
    report = reports[-1]
    assert report is not None
    cached = [run["label"] for run in report["runs"] if run.get("cached")]
    share = warm / alone
    print(f"4. --base {ref}, reference finder, whole query set: candidate alone {alone:.1f} s, "
          f"cold {cold:.1f} s, with the baseline's results cached {warm:.1f} s "
          f"(cached: {', '.join(cached) or 'none'}): {share:.2f}x the candidate alone "
          f"(target 1.1x or less: {verdict(share <= 1.1)})")  # fmt: skip


def item_scaling(bench: Bench) -> None:
    corpora = bench.corpus(set(bench.pins))
    binary = bench.binary(bench.batch)
    sizes = (1000, 5000, 20000)

    # Each size runs 20,000 queries a round (sets of n, each timed), the sizes taking turns
    # over 5 rounds; its figure is the median over all its sets, so that a short set is
    # not judged on a few milliseconds of a noisy machine.
    samples: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(5):
        for n in sizes:
            rows = cycled(bench.rows, n)
            for _ in range(sizes[-1] // n):
                samples[n].append(run_binary(binary, rows, corpora, jobs=1, timeout=30).query_s / n)
    per_query = {n: statistics.median(samples[n]) for n in sizes}
    for n in sizes:
        rows = cycled(bench.rows, n)
        queries = bench.tmp / f"scaled-{n}.tsv"
        queries.write_bytes(format_queries(rows))
        wall, rss, _report = bench.recall(
            "--engine", str(bench.batch), "--queries", str(queries), "--allow-empty", "--json"
        )
        print(f"5. {n:>6} queries (batch, null finder, 6 corpora): {per_query[n] * 1e6:.1f} "
              f"us/query in the query loop; whole CLI {wall:.2f} s, {wall / n * 1e6:.0f} "
              f"us/query, peak RSS {rss} MB")  # fmt: skip
    drift = per_query[20000] / per_query[1000] - 1
    print(f"   time per query from 1k to 20k: {100 * drift:+.1f}% (target at most +15%: "
          f"{verdict(drift <= 0.15)}); peak RSS at 20k {rss} MB (target under 200 MB: "
          f"{verdict(rss < 200)})")  # fmt: skip


def item_shards(bench: Bench, jobs: int) -> None:
    """The reference finder's whole run, and `--base HEAD` with the base's results cached,
    run by the harness as it was when verdicts in seconds were asked for (TODAY, unpacked
    from git with a cache of its own, its default --jobs) against this one with --jobs 1
    and --jobs N, in alternating rounds. All three run this tree's finder."""
    today = bench.tmp / "today"
    extract_archive(ROOT, resolve_commit(ROOT, TODAY), today)
    cache = bench.tmp / "today-cache"

    def old(*args: str) -> float:
        return bench.recall(*args, "--json", harness=today, cache=cache)[0]

    def new(*args: str) -> float:
        return bench.recall(*args, "--json")[0]

    same = ("--base", "HEAD", "--same-program-ok")  # a clean tree's self-diff, meant
    old("--base", "HEAD")  # the corpora fetched, the base's results cached
    new(*same)
    rounds = {
        "whole run": alternate(lambda: old(), lambda: new("--jobs", "1"),
                               lambda: new("--jobs", str(jobs))),
        "--base HEAD, base cached": alternate(
            lambda: old("--base", "HEAD"), lambda: new(*same, "--jobs", "1"),
            lambda: new(*same, "--jobs", str(jobs))),
    }  # fmt: skip
    for label, (before, one, many) in rounds.items():
        ratio = many / before
        print(f"6. reference finder, {label}: the harness at {TODAY} {before:.1f} s; this one "
              f"with --jobs 1 {one:.1f} s, --jobs {jobs} {many:.1f} s: {ratio:.2f}x the "
              f"harness at {TODAY} (target 0.6x or less: {verdict(ratio <= 0.6)}), "
              f"{many / one:.2f}x --jobs 1")  # fmt: skip


def item_typing(bench: Bench) -> None:
    """The issue's cost bound for keystrokes to the name: a whole typing run (`--queries
    typing`, each distinct prefix once) costs the reference finder at most twice the
    default set's time. Both run afresh (--no-cache: no cached result, no kept index), in
    alternating rounds; the query phase is the figure, the whole CLI's wall time beside
    it (a typing run also maps the answers back to its steps and computes its ceiling)."""
    sets = {"default": (), "typing": ("--queries", "typing")}
    walls: dict[str, list[float]] = {name: [] for name in sets}
    reports: dict[str, dict] = {}

    def side(name: str) -> Callable[[], float]:
        def timed() -> float:
            wall, _rss, report = bench.recall("--no-cache", "--json", *sets[name])
            assert report is not None
            walls[name].append(wall)
            reports[name] = report
            return float(report["runs"][0]["query_s"])

        return timed

    default_s, typing_s = alternate(side("default"), side("typing"))
    default_wall, typing_wall = (statistics.median(walls[name]) for name in sets)
    effort = reports["typing"]["effort"]
    ratio = typing_s / default_s
    print(f"7. reference finder, default set ({reports['default']['queries']} queries) against "
          f"the typing set ({effort['steps']} steps, {effort['prompts']} distinct prompts), "
          f"--no-cache: query time {default_s:.1f} s against {typing_s:.1f} s, {ratio:.2f}x "
          f"(target 2x or less: {verdict(ratio <= 2)}); whole CLI {default_wall:.1f} s "
          f"against {typing_wall:.1f} s")  # fmt: skip


def machine() -> str:
    model = results.machine()["cpu_model"]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"machine: nproc {os.cpu_count()}, {model}, Python {platform.python_version()} "
            f"({sys.executable}), load average {load}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", help="the recall cache (default: as recall chooses)")
    parser.add_argument("--mirror", help="offline corpus mirrors (default: $RECALL_MIRROR)")
    parser.add_argument("items", nargs="*", metavar="ITEM", help=", ".join(ITEMS))
    args = parser.parse_args()
    items = args.items or list(ITEMS)
    for item in items:
        if item not in ITEMS:
            parser.error(f"unknown item {item!r} (one of {', '.join(ITEMS)})")
    print(machine())
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="recall-bench-") as tmp:
        bench = Bench(Path(tmp), cache_root(args.cache), mirror_root(args.mirror))
        jobs = os.cpu_count() or 1
        for item in items:
            if item == "spawn":
                item_spawn(bench, jobs)
            elif item == "batch":
                item_batch(bench)
            elif item == "reference":
                item_reference(bench)
            elif item == "base":
                item_base(bench)
            elif item == "scaling":
                item_scaling(bench)
            elif item == "shards":
                item_shards(bench, jobs)
            elif item == "typing":
                item_typing(bench)
            sys.stdout.flush()
    print(f"bench: {time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
