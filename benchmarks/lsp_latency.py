"""Warm per-query latency of a language-server preset: the server started and made ready
as its preset says, then hand queries timed one request at a time.

`recall run --bench` times the per-query argv, one process per sample, which for a
`kind = "lsp"` preset is a cold server: its start, its index (clangd's background index
of redis takes minutes) and then the query. This measures the query alone, through the
adapter's own client (recall/finders/kinds/lsp.py): one workspace/symbol request written,
its answer read, timed from the write to the answer. Reps after a warm-up; the figure is
the median over reps per query, then the median and p90 over the queries.

    python3 benchmarks/lsp_latency.py clangd CHECKOUT proccmd,dictadd,sdsnew
    python3 benchmarks/lsp_latency.py tsserver-js CHECKOUT Deferred,addClass \
        --node-modules CACHE/node/<hash>/node_modules

CHECKOUT is a fetched corpus (`recall fetch` prints its path). It prints one JSON line.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recall.finders.kinds import lsp

CLANGD_SOURCES = [".c", ".cc", ".cpp", ".cxx"]  # as recall/finders/presets/clangd.toml


def ready_server(preset: str, root: Path, db: Path, node_modules: Path | None):
    """The server of the preset on root, ready as the preset makes it ready."""
    if preset == "clangd":
        files = lsp.write_compile_commands(root, db, CLANGD_SOURCES, [])
        argv = ["clangd", f"--compile-commands-dir={db}", "--log=error", "--pch-storage=memory"]
    elif preset == "tsserver-js" and node_modules is not None:
        argv = ["node", str(node_modules / "typescript-language-server/lib/cli.mjs"), "--stdio"]
    else:
        raise SystemExit(f"{preset}: give clangd, or tsserver-js with --node-modules")
    proc = lsp.start(argv, root)
    conn = lsp.Connection(proc, {})
    lsp.initialize(conn, root, {}, 600)
    if preset == "clangd":
        lsp.open_file(conn, files[0])
        conn.wait_progress(3600)
        lsp.wait_ready(conn, lsp.pick_probes(None), 600)
    else:
        lsp.open_first(conn, root, "src/jquery.js")
        lsp.wait_ready(conn, ["Callbacks"], 600)  # as the preset: a name of an import
    return proc, conn


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("preset", choices=["clangd", "tsserver-js"])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("queries", help="comma-separated hand queries")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--node-modules", type=Path)
    args = parser.parse_args()
    queries = args.queries.split(",")
    with tempfile.TemporaryDirectory(prefix="recall-lsp-latency-") as db:
        began = time.monotonic()
        proc, conn = ready_server(args.preset, args.checkout.resolve(), Path(db), args.node_modules)
        ready_s = time.monotonic() - began
        samples: dict[str, list[float]] = {q: [] for q in queries}
        try:
            for rep in range(args.reps + 1):
                for query in queries:
                    started = time.perf_counter()
                    conn.request("workspace/symbol", {"query": query})
                    if rep:  # rep 0 warms up
                        samples[query].append((time.perf_counter() - started) * 1000.0)
        finally:
            lsp.stop(conn, proc)
    medians = sorted(statistics.median(v) for v in samples.values())
    p90 = medians[min(len(medians) - 1, int(0.9 * len(medians)))]
    print(orjson.dumps({
        "preset": args.preset, "checkout": args.checkout.name, "ready_s": round(ready_s, 1),
        "median_ms": round(statistics.median(medians), 2), "p90_ms": round(p90, 2),
        "per_query_ms": {q: round(statistics.median(v), 2) for q, v in samples.items()},
    }).decode())  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
