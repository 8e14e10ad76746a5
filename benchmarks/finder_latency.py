"""Latency of the reference finder as a person would feel it: index time per corpus and
the time one batch query takes on the largest corpus.

The harness's own query_s counts its process pool and result parsing; this measures the
finder alone: one `query --batch` process per corpus, one request written, the answer
line read back, timed from the write to the newline. Requests ask for every plausible
name (limit 0), as the harness does, so serialising long lists is part of the figure.

    python3 benchmarks/finder_latency.py [--ref REF] [--repo rails] [--reps 1]

--ref measures the finder of another commit (its `git archive`), so a decision can show
the figure before and after its change on the same machine.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import git
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recall.corpus import cache_root, fetch, load_pins, mirror_root  # noqa: E402
from recall.queryset import read_queries  # noqa: E402


def finder_tree(ref: str | None, scratch: Path) -> Path:
    """The tree whose recall.finder runs: this checkout, or REF's archive."""
    if ref is None:
        return ROOT
    data = io.BytesIO()
    with git.Repo(ROOT) as repo:
        repo.archive(data, ref)
    data.seek(0)
    tree = scratch / "tree"
    with tarfile.open(fileobj=data) as tar:
        tar.extractall(tree, filter="data")
    return tree


def finder_env(tree: Path, scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(PYTHONPATH=str(tree), HOME=str(scratch), LC_ALL="C.UTF-8", TZ="UTC")
    return env


def index(corpus: Path, language: str, db: Path, env: dict[str, str]) -> float:
    """Seconds for one `index` process, start-up included."""
    start = time.perf_counter()
    argv = [sys.executable, "-m", "recall.finder", "index", str(corpus), "--language", language]
    subprocess.run([*argv, "--db", str(db)], env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def batch_latencies(db: Path, queries: list[str], env: dict[str, str]) -> list[float]:
    """Milliseconds per query through one batch process, after one untimed warm-up."""
    argv = [sys.executable, "-m", "recall.finder", "query", "--batch", "--db", str(db)]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    out: list[float] = []
    try:
        for n, query in enumerate([queries[0], *queries]):
            line = orjson.dumps({"query": query, "limit": 0}) + b"\n"
            start = time.perf_counter()
            proc.stdin.write(line)
            proc.stdin.flush()
            answer = proc.stdout.readline()
            took = (time.perf_counter() - start) * 1000.0
            if not answer.startswith(b"["):
                raise SystemExit(f"query {query!r}: {answer[:200]!r}")
            if n:
                out.append(took)
    finally:
        proc.stdin.close()
        proc.wait()
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", help="measure this commit's finder instead of the checkout")
    parser.add_argument("--repo", default="rails", help="corpus whose queries are timed")
    parser.add_argument("--reps", type=int, default=1, help="passes over the queries")
    parser.add_argument("--cache", help="corpus cache (default: $RECALL_CACHE)")
    parser.add_argument("--mirror", help="offline mirror of the pins")
    args = parser.parse_args()
    pins = load_pins(ROOT / "corpus.json")
    cache = cache_root(args.cache)
    mirror = mirror_root(args.mirror)
    rows = [r.query for r in read_queries(ROOT / "queries.tsv", set(pins)) if r.repo == args.repo]
    with tempfile.TemporaryDirectory(prefix="finder-latency-") as tmp:
        scratch = Path(tmp)
        env = finder_env(finder_tree(args.ref, scratch), scratch)
        total = 0.0
        dbs: dict[str, Path] = {}
        for name, pin in pins.items():
            checkout = fetch(pin, cache, mirror)
            dbs[name] = scratch / f"{name}.db"
            took = index(checkout.path, pin.language, dbs[name], env)
            total += took
            print(f"index {name:<8} {took:6.2f} s")
        print(f"index all      {total:6.2f} s")
        times: list[float] = []
        for _ in range(args.reps):
            times += batch_latencies(dbs[args.repo], rows, env)
    print(
        f"batch {args.repo}: {len(rows)} queries x {args.reps}, per query "
        f"median {statistics.median(times):.2f} ms, p90 {percentile(times, 0.9):.2f} ms, "
        f"max {max(times):.2f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
