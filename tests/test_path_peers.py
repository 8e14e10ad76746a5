import dataclasses

import pytest
from conftest import ROOT, mirror_dir, needs_tool, run_cli
from helpers import META, kept_entries

from recall.finders.engine import load_preset
from recall.inputs.queryset import NAMES, PATHS
from recall.render.results_page import WORDS, Words, render_results
from recall.workflows.results_page import page_columns


def _counts(n: int, first: int) -> dict:
    pct = round(100.0 * first / n, 1)
    return {
        "n": n, "first": first, "top10": first, "found": first, "errors": 0,
        "first_pct": pct, "top10_pct": pct, "found_pct": pct, "mrr": 0.5, "ndcg10": 0.5,
    }  # fmt: skip


def _entry(label: str, first: int) -> dict:
    """A finder's entry as `recall results` keeps it: one gin report of 4 basecase rows."""
    counts = _counts(4, first)
    run = {
        "label": "candidate", "bin": "x", "index_s": 0.0, "query_s": 0.1, **counts,
        "by_type": {"basecase": counts}, "by_repo": {"gin": counts},
        "by_language": {"go": counts}, "error_rows": [],
    }  # fmt: skip
    report = {
        "schema": 2,
        "meta": META.to_json() | {"queries_sha256": "ab" * 32},
        "corpus": {"gin": {"url": "u", "sha": "0" * 40, "language": "go"}},
        "queries": 4, "sourced": 4, "runs": [run],
    }  # fmt: skip
    return {"label": label, "version": f"{label} 1.0", "command": f"{label} {{query}}",
            "note": "defaults", "report": report}  # fmt: skip


ENTRIES = [_entry("reference", 3), _entry("fzf (Debian)", 1)]
HOST = {"cpus": "2", "cpu_model": "Test CPU", "system": "Linux", "python": "3.11.7", "jobs": "1"}


def test_the_paths_page_has_every_file_picker_and_no_language_server():
    columns = page_columns(PATHS)
    assert {c.preset for c in columns} == {
        "reference-paths", "fzf-paths", "fzy-paths", "frizbee-paths", "fusejs-paths",
        "fuzzysort-paths",
    }  # fmt: skip
    assert len(columns) == 7  # fzf twice: Debian's and iterfzf's
    assert not any(load_preset(c.preset).kind == "lsp" for c in columns)


def test_the_page_says_paths_where_the_names_page_says_names():
    page = render_results(kept_entries(ENTRIES), HOST, PATHS)
    names = render_results(kept_entries(ENTRIES), HOST, NAMES)
    assert page.startswith("# Results on paths:")
    assert "Rank is by path" in page and "Rank is by name" not in page
    for field in dataclasses.fields(Words):
        said, instead = getattr(WORDS[NAMES], field.name), getattr(WORDS[PATHS], field.name)
        if field.name != "item":  # "name" is in every page's table headers
            assert said in names and said not in page and instead in page, field.name


@needs_tool("fzy")
def test_results_over_a_path_set_runs_the_path_presets_and_words_the_page(tmp_path, real_cache):
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    queries = tmp_path / "p.tsv"
    rows = [r for r in (ROOT / "paths.tsv").read_text().splitlines() if r.startswith("gin\t")]
    queries.write_text("repo\tquery\ttype\tsource\n" + "\n".join(rows[:30]) + "\n")
    ran = run_cli(
        "results", "--only", "reference-paths", "--only", "fzy-paths", "--queries", str(queries),
        "--cache", str(real_cache), "--mirror", str(mirror), "--out", str(tmp_path / "p.md"),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    page = (tmp_path / "p.md").read_text()
    assert "| reference | 30 |" in page and "| fzy | 30 |" in page
    assert "| ceiling | 30 |" in page
    assert "Rank is by path" in page and "recall commit" in page
    assert "recall/finders/reference/paths.py" in page


# Each package called with keys as its README shows, apart from the adapter: argv is the
# node_modules folder, the package, a paths file and a queries file (a JSON string a line).
DIRECT_KEYS = r"""
const fs = require("fs");
const path = require("path");
const [modules, pkg, pathsFile, queriesFile] = process.argv.slice(2);
const paths = fs.readFileSync(pathsFile, "utf8").split("\n").filter((n) => n !== "");
const records = paths.map((p) => ({ path: p, base: p.split("/").pop() }));
const queries = fs.readFileSync(queriesFile, "utf8").split("\n").filter((q) => q).map(JSON.parse);
let search;
if (pkg === "fuse.js") {
  const Fuse = require(path.join(modules, "fuse.js"));
  const keys = [{ name: "base", weight: 2 }, { name: "path", weight: 1 }];
  const fuse = new Fuse(records, { includeScore: true, keys });
  search = (q) => fuse.search(q).map((r) => r.item.path);
} else {
  const fuzzysort = require(path.join(modules, "fuzzysort"));
  const keys = ["base", "path"];
  search = (q) => fuzzysort.go(q, records, { keys, limit: 0 }).map((r) => r.obj.path);
}
for (const q of queries) process.stdout.write(JSON.stringify(search(q)) + "\n");
"""


@needs_tool("node", "nodejs")
@needs_tool("npm")
@pytest.mark.parametrize(
    ("preset", "package"), [("fusejs-paths", "fuse.js"), ("fuzzysort-paths", "fuzzysort")]
)
def test_the_keyed_node_presets_rank_paths_as_the_package_called_with_keys(
    preset, package, real_cache, gin, tmp_path
):
    import json
    import subprocess

    from recall.finders.kinds.node import FOLDER, node_modules
    from recall.inputs.paths import checkout_paths

    modules = node_modules(FOLDER, real_cache)
    saved = tmp_path / "saved.json"
    proc = run_cli(
        "--engine", preset, "--queries", "paths", "--repo", "gin", "--type", "fragment",
        "--type", "basecase", "--cache", str(real_cache), "--save", str(saved),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    document = json.loads(saved.read_text())
    results = document["runs"][-1]["results"]
    script, queries = tmp_path / "direct.js", tmp_path / "queries.jsonl"
    script.write_text(DIRECT_KEYS)
    queries.write_text("".join(json.dumps(row[1]) + "\n" for row in document["rows"]))
    paths = tmp_path / "paths.txt"
    paths.write_text("".join(f"{p}\n" for p in checkout_paths(gin, real_cache)))
    ran = subprocess.run(
        ["node", str(script), str(modules), package, str(paths), str(queries)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    direct = [json.loads(line) for line in ran.stdout.splitlines()]
    assert len(direct) == len(results) == 62
    for (_repo, query, _type, source), (rank, top, error, _off), hits in zip(
        document["rows"], results, direct, strict=True
    ):
        assert error is None
        assert rank == (hits.index(source) + 1 if source in hits else None), query
        assert [row[0] for row in top] == hits[:10], query
