"""Each preset end to end on the real gin corpus, through the real CLI."""

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, make_repo, run_cli

RQ_STANDIN = r'''#!/usr/bin/env python3
"""A stand-in speaking rq's CLI protocol: --index DIR, then QUERY --json --limit N."""
import json, os, subprocess, sys
db = os.environ["RQ_DB"]
assert os.environ["RQ_JOBS"] == "1" and os.environ["RQ_WARM_DETACH"] == "0"
if sys.argv[1] == "--index":
    out = subprocess.run(["ctags", "-R", "--languages=Go", "--output-format=json",
                          "--fields=+n", "-f", "-", sys.argv[2]], capture_output=True, text=True)
    tags = [json.loads(l) for l in out.stdout.splitlines()]
    rows = sorted({(t["name"], os.path.relpath(t["path"], sys.argv[2]), t["line"])
                   for t in tags if t.get("_type") == "tag"})
    json.dump(rows, open(db, "w"))
    sys.exit(0)
query, limit = sys.argv[1].lower(), int(sys.argv[sys.argv.index("--limit") + 1])
rows = [r for r in json.load(open(db)) if query in r[0].lower()]
rows.sort(key=lambda r: (len(r[0]), r))
rows = rows[:limit] if limit else rows
print(json.dumps([{"name": n, "file": f, "line": l} for n, f, l in rows]))
'''


def _queries(tmp_path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path = tmp_path / "q.tsv"
    body = "".join(f"gin\t{q}\t{t}\t{s}\n" for q, t, s in rows)
    path.write_text("repo\tquery\ttype\tsource\n" + body)
    return path


QUERIES = [
    ("shbijs", "abbr3", "ShouldBindJSON"),
    ("context", "exact", "Context"),
    ("-notaflag", "exact", "Context"),
    ("routergroup", "exact", "RouterGroup"),
    ("zzzqqq", "exact", "Context"),
]


@pytest.mark.parametrize("preset", ["fzf", "fzy"])
def test_subsequence_presets_rank_real_names(preset, tmp_path, real_cache, gin):
    if shutil.which(preset) is None:
        pytest.skip(f"{preset} is not installed (.ci/run installs it)")
    queries = _queries(tmp_path, QUERIES)
    proc = run_cli(
        "--engine", preset, "--queries", str(queries), "--cache", str(real_cache), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)["runs"][0]
    assert run["errors"] == 0  # fzf's exit 1 for no match is not an error
    assert run["first"] >= 2 and run["found"] >= 3


def test_rq_preset_through_a_stand_in(tmp_path, real_cache, gin):
    finder = tmp_path / "rq"
    make_repo(finder, {"recall.toml": (ROOT / "recall/finders/presets/rq.toml").read_text()})
    binary = finder / "rq-standin"
    binary.write_text(RQ_STANDIN)
    binary.chmod(0o755)
    queries = _queries(tmp_path, QUERIES)
    proc = run_cli(
        "--finder", str(finder), "--bin", str(binary), "--queries", str(queries),
        "--corpus", str(ROOT / "corpus.json"), "--cache", str(real_cache), "--json",
        "--misses", cwd=finder,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    run = report["runs"][0]
    assert run["errors"] == 0 and run["first"] >= 2
    assert report["misses"][0]["source"] == "ShouldBindJSON"


def test_reference_per_query_and_batch_modes_rank_alike(tmp_path, real_cache, gin):
    text = (ROOT / "recall/finders/presets/reference.toml").read_text()
    per_query = tmp_path / "per-query.toml"
    per_query.write_text("\n".join(ln for ln in text.splitlines() if not ln.startswith("batch")))
    queries = tmp_path / "q.tsv"
    lines = (ROOT / "queries.tsv").read_text().splitlines()
    gin_rows = [ln for ln in lines if ln.startswith("gin\t")][::24]  # 24, every type
    queries.write_text("\n".join([lines[0], *gin_rows]) + "\n")
    reports = []
    for engine in ("reference", str(per_query)):
        proc = run_cli(
            "--engine", engine, "--queries", str(queries), "--cache", str(real_cache),
            "--json", "--misses",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        reports.append(json.loads(proc.stdout))
    batch, single = reports
    assert batch["misses"] == single["misses"]
    for key in ("first", "top10", "found", "by_type"):
        assert batch["runs"][0][key] == single["runs"][0][key]
