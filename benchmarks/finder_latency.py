"""Latency of the reference finder as a person would feel it: index time per corpus and
the time one batch query takes on the largest corpus.

The harness's own query_s counts its process pool and result parsing; this measures the
finder alone: one `query --batch` process per corpus, one request written, the answer
line read back, timed from the write to the newline. Requests ask for every plausible
name (limit 0), as the harness does, so serialising long lists is part of the figure.

    python3 benchmarks/finder_latency.py [--ref REF] [--repo rails] [--reps 1]

--ref REF measures the finder of another commit (its `git archive`) beside this
checkout's, side by side in one run: both batch processes stay up, every query goes to
both in turn (who goes first alternates), and the figure to compare is the median of the
per-query ratios checkout/REF, which load on a shared machine moves far less than either
median.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recall.inputs.corpus import cache_root, fetch, load_pins, mirror_root  # noqa: E402
from recall.inputs.queryset import read_queries  # noqa: E402
from recall.running.build import extract_archive  # noqa: E402
from recall.running.interpreter import finder_python  # noqa: E402


@dataclass(frozen=True)
class Tree:
    """One finder under test: its label, the tree recall.finders.reference is imported from, and a
    scratch folder that is its HOME and working directory (-m puts the working directory
    ahead of PYTHONPATH, so a finder started from this checkout would run the checkout's
    code whatever the tree)."""

    label: str
    path: Path
    scratch: Path
    python: str  # recall.running.interpreter's: no editable hook serves a module the tree lacks

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
        env.update(PYTHONPATH=str(self.path), HOME=str(self.scratch), LC_ALL="C.UTF-8", TZ="UTC")
        return env

    def start(
        self,
        *args: str,
        stdin: int | None = None,
        stdout: int | None = None,
        stderr: int | None = None,
    ) -> subprocess.Popen[bytes]:
        argv = [self.python, "-P", "-m", "recall.finders.reference", *args]
        return subprocess.Popen(
            argv, cwd=self.scratch, env=self.env(), stdin=stdin, stdout=stdout, stderr=stderr
        )


def index(tree: Tree, corpus: Path, language: str) -> tuple[Path, float]:
    """The index file and the seconds one `index` process took, start-up included."""
    db = tree.scratch / f"{corpus.name}.db"
    start = time.perf_counter()
    proc = tree.start(
        "index",
        str(corpus),
        "--language",
        language,
        "--db",
        str(db),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, err = proc.communicate()
    took = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{tree.label}: index {corpus.name} failed: {err.decode()[-500:]}")
    return db, took


def batch_latencies(
    trees: list[Tree], dbs: list[Path], queries: list[str], reps: int
) -> list[list[float]]:
    """Milliseconds per query and tree, one batch process per tree, after one untimed
    warm-up query; query n of pass r goes first to tree (n + r) mod len(trees)."""
    procs = [
        tree.start(
            "query", "--batch", "--db", str(db), stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        for tree, db in zip(trees, dbs, strict=True)
    ]
    times: list[list[float]] = [[] for _ in trees]
    try:
        for rep in range(reps):
            for n, query in enumerate([queries[0], *queries]):
                line = orjson.dumps({"query": query, "limit": 0}) + b"\n"
                first = (n + rep) % len(trees)
                for k in [*range(first, len(trees)), *range(first)]:
                    took = _ask(procs[k], line, f"{trees[k].label}: query {query!r}")
                    if n:
                        times[k].append(took)
    finally:
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()
    return times


def _ask(proc: subprocess.Popen[bytes], line: bytes, what: str) -> float:
    assert proc.stdin is not None and proc.stdout is not None
    start = time.perf_counter()
    proc.stdin.write(line)
    proc.stdin.flush()
    answer = proc.stdout.readline()
    took = (time.perf_counter() - start) * 1000.0
    if not answer.startswith(b"["):
        raise SystemExit(f"{what}: {answer[:200]!r}")
    return took


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", help="also measure this commit's finder, side by side")
    parser.add_argument("--repo", default="rails", help="corpus whose queries are timed")
    parser.add_argument("--reps", type=int, default=1, help="passes over the queries")
    parser.add_argument("--cache", help="corpus cache (default: $RECALL_CACHE)")
    parser.add_argument("--mirror", help="offline mirror of the pins")
    args = parser.parse_args()
    pins = load_pins(ROOT / "corpus.json")
    if args.repo not in pins:
        raise SystemExit(f"--repo {args.repo}: not a pinned corpus ({', '.join(pins)})")
    cache = cache_root(args.cache)
    mirror = mirror_root(args.mirror)
    python = finder_python(cache)
    rows = [r.query for r in read_queries(ROOT / "queries.tsv", set(pins)) if r.repo == args.repo]
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="finder-latency-") as tmp:
        trees: list[Tree] = []
        if args.ref:
            scratch = Path(tmp) / "ref"
            scratch.mkdir()
            extract_archive(ROOT, args.ref, scratch / "tree")
            trees.append(Tree(args.ref, scratch / "tree", scratch, python))
        (Path(tmp) / "checkout").mkdir()
        trees.append(Tree("checkout", ROOT, Path(tmp) / "checkout", python))
        repo_dbs: list[Path] = []
        for tree in trees:
            total = 0.0
            for name, pin in pins.items():
                db, took = index(tree, fetch(pin, cache, mirror).path, pin.language)
                total += took
                if name == args.repo:
                    repo_dbs.append(db)
                print(f"{tree.label}: index {name:<8} {took:6.2f} s")
            print(f"{tree.label}: index all      {total:6.2f} s")
        times = batch_latencies(trees, repo_dbs, rows, args.reps)
    for tree, took in zip(trees, times, strict=True):
        print(
            f"{tree.label}: batch {args.repo}, {len(rows)} queries x {args.reps}, per query "
            f"median {statistics.median(took):.2f} ms, p90 {percentile(took, 0.9):.2f} ms, "
            f"max {max(took):.2f} ms"
        )
    if len(trees) == 2:
        ratios = [new / old for old, new in zip(*times, strict=True)]
        print(
            f"checkout / {args.ref} per query: median {statistics.median(ratios):.3f}, "
            f"p10 {percentile(ratios, 0.1):.3f}, p90 {percentile(ratios, 0.9):.3f}"
        )
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
