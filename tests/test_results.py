"""The results page: rendered from fixed reports, and the peers it runs through the real CLI."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, Ran, mirror_dir, run_cli
from helpers import META, kept_entries

from recall.errors import RecallError
from recall.finders.engine import load_preset
from recall.finders.registry import Column
from recall.render.results_page import agreement, latency_ms, render_results
from recall.workflows.options import ResultsOptions
from recall.workflows.results_page import (
    bundled_program,
    check_comparable,
    command_line,
    page_columns,
    peer_argv,
    served_repos,
)


def _counts(n: int, first: int, top10: int, found: int, mrr: float) -> dict:
    def pct(k: int) -> float:
        return round(100.0 * k / n, 1) if n else 0.0

    return {
        "n": n, "first": first, "top10": top10, "found": found, "errors": 0,
        "first_pct": pct(first), "top10_pct": pct(top10), "found_pct": pct(found),
        "mrr": mrr, "ndcg10": round(min(1.0, mrr + 0.05), 4),  # apart from MRR, to tell them
    }  # fmt: skip


def _report(by_type: dict[str, tuple], query_s: float) -> dict:
    """A report as `recall run --json` shapes it: two types of one go corpus, a hand row."""
    types = {k: _counts(*v) for k, v in by_type.items()}
    total = [sum(v[i] for v in by_type.values()) for i in range(4)]
    overall = _counts(*total, round(sum(v[4] for v in by_type.values()) / len(by_type), 4))
    types["hand"] = _counts(0, 0, 0, 0, 0.0)
    return {
        "schema": 2,
        "meta": META.to_json() | {"queries_sha256": "ab" * 32},
        "corpus": {"gin": {"url": "u", "sha": "0" * 40, "language": "go"}},
        "queries": 9,
        "sourced": 8,
        "runs": [
            {
                "label": "candidate",
                "bin": "x",
                "index_s": 1.25,
                "query_s": query_s,
                **overall,
                "by_type": types,
                "by_repo": {"gin": overall},
                "by_language": {"go": overall},
                "error_rows": [],
            }
        ],
    }


def _entry(label: str, report: dict) -> dict:
    return {"label": label, "version": f"{label} 1.0", "command": f"{label} {{query}}",
            "note": "defaults", "report": report}  # fmt: skip


ENTRIES = [
    _entry("reference", _report({"typo": (4, 4, 4, 4, 1.0), "abbr3": (4, 2, 4, 4, 0.7)}, 0.9)),
    _entry("fzf", _report({"typo": (4, 0, 0, 0, 0.0), "abbr3": (4, 3, 4, 4, 0.8)}, 0.18)),
    _entry("fzy", _report({"typo": (4, 0, 0, 0, 0.0), "abbr3": (4, 3, 3, 4, 0.75)}, 0.045)),
]
HOST = {"cpus": "2", "cpu_model": "Test CPU", "system": "Linux", "python": "3.11.7", "jobs": "1"}


def test_overall_table_has_a_row_per_finder_with_counts_mrr_ndcg_and_latency():
    page = render_results(kept_entries(ENTRIES), HOST)
    assert (
        "| finder | n | #1 | top 10 | found | MRR | nDCG@10 | errors | ms / query | index s |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        "| reference | 8 | 6 (75.0%) | 8 (100.0%) | 8 (100.0%) | 0.850 | 0.900 | 0 | 100.00"
        " | 1.2 |\n"
        "| fzf | 8 | 3 (37.5%) | 4 (50.0%) | 4 (50.0%) | 0.400 | 0.450 | 0 | 20.00 | 1.2 |\n"
        "| fzy | 8 | 3 (37.5%) | 3 (37.5%) | 4 (50.0%) | 0.375 | 0.425 | 0 | 5.00 | 1.2 |\n"
    ) in page


def test_type_rows_follow_the_recipe_order_skip_hand_rows_and_name_the_best_peer():
    page = render_results(kept_entries(ENTRIES), HOST)
    assert (
        "| type | n | reference | fzf | fzy | best peer (#1) | ceiling (#1 / top 10) |\n"
        "|---|---:|---:|---:|---:|---:|---:|\n"
        "| abbr3 | 4 | 50.0 / 100.0 / 100.0 | 75.0 / 100.0 / 100.0 | 75.0 / 75.0 / 100.0"
        " | fzf, fzy | - |\n"
        "| typo | 4 | 100.0 / 100.0 / 100.0 | 0.0 / 0.0 / 0.0 | 0.0 / 0.0 / 0.0 | - | - |\n"
    ) in page
    assert "| hand |" not in page
    assert "| typo | 1.000 | 0.000 | 0.000 |" in page  # the MRR table


def test_page_states_versions_commands_and_the_machine():
    page = render_results(kept_entries(ENTRIES), HOST)
    assert "| fzf | fzf 1.0 | `fzf {query}` | defaults |" in page
    assert "| CPU model | Test CPU |" in page and "| CPUs (`nproc`) | 2 |" in page
    assert "| Universal Ctags | 5.9.0 |" in page
    assert "divided by the queries run" in page


def test_rendering_is_a_pure_function_of_the_reports():
    assert render_results(kept_entries(ENTRIES), HOST) == render_results(
        kept_entries(json.loads(json.dumps(ENTRIES))), HOST
    )


def test_latency_is_query_seconds_over_queries_run():
    assert latency_ms(kept_entries(ENTRIES)[1].report) == pytest.approx(20.0)


def test_reports_over_different_query_sets_are_refused():
    other = json.loads(json.dumps(ENTRIES[1]))
    other["report"]["meta"]["queries_sha256"] = "cd" * 32
    with pytest.raises(RecallError, match="fzf: ran a different query set"):
        check_comparable(kept_entries([ENTRIES[0], other]))
    other["report"]["queries"] = 10
    with pytest.raises(RecallError, match="queries differs"):
        check_comparable(kept_entries([ENTRIES[0], other]))
    check_comparable(kept_entries(ENTRIES))


def test_a_page_of_one_split_says_so_and_reports_of_other_splits_are_not_one_page():
    holdout = json.loads(json.dumps(ENTRIES))
    views = {
        "fresh": {"corpora": ["okio", "telescope"], "n": 8, "margin": None},
        "seen": {"corpora": [], "n": 0, "margin": None},
    }
    for entry in holdout:
        entry["report"]["split"] = "holdout"
        entry["report"]["holdout"] = views
    check_comparable(kept_entries(holdout))
    page = render_results(kept_entries(holdout), HOST)
    assert (
        "over the committed query set (its holdout split, `--split holdout`: docs/queries.md; "
        "fresh holdout okio, telescope; seen holdout none):"
    ) in page
    assert "split" not in render_results(kept_entries(ENTRIES), HOST).split("## Overall")[0]
    with pytest.raises(RecallError, match="fzf: its report shows the whole set's rows"):
        check_comparable(kept_entries([holdout[0], ENTRIES[1]]))


def test_kept_reports_of_another_split_are_not_rendered_as_the_split_asked(tmp_path):
    kept = dataclasses.replace(kept_entries(ENTRIES)[1], label="fzy", firsts=(), jobs=1)
    (tmp_path / "fzy.json").write_text(json.dumps(kept.to_json()))
    flags = ("results", "--render-only", "--reports", str(tmp_path), "--only", "fzy")
    proc = run_cli(*flags, "--split", "holdout", "--out", str(tmp_path / "page.md"))
    assert proc.returncode == 2 and not (tmp_path / "page.md").exists()
    assert f"{tmp_path / 'fzy.json'}: a kept report of the whole set's rows, not the " in (
        proc.stderr
    )
    assert run_cli(*flags, "--out", str(tmp_path / "page.md")).returncode == 0


def test_a_kept_report_that_does_not_fit_schema_2_is_refused_naming_its_key(tmp_path):
    kept = dataclasses.replace(kept_entries(ENTRIES)[1], label="fzy").to_json()
    kept["report"]["runs"][0]["first"] = "three"
    (tmp_path / "fzy.json").write_text(json.dumps(kept))
    proc = run_cli("results", "--render-only", "--reports", str(tmp_path), "--only", "fzy",
                   "--out", str(tmp_path / "page.md"))  # fmt: skip
    assert proc.returncode == 2 and not (tmp_path / "page.md").exists()
    assert proc.stderr == (
        f"recall: {tmp_path / 'fzy.json'}: a kept report that does not fit schema 2: "
        "entry.report.runs[0].first: expected int, got 'three'\n"
    )


def test_results_split_runs_each_peer_on_that_split():
    peer = Column("fzf", "names", 20, "fzf", "defaults")
    options = ResultsOptions(corpus="corpus.json", split="holdout")
    argv = peer_argv(peer, options, None)
    assert argv[argv.index("--split") + 1] == "holdout"
    assert "--split" not in peer_argv(peer, dataclasses.replace(options, split=None), None)


def _server_entry(queries: int = 4) -> dict:
    """A language server of go, run on the go corpus only: fewer queries than the rest."""
    entry = _entry("golsp", _report({"typo": (4, 0, 1, 2, 0.1), "abbr3": (4, 1, 2, 2, 0.3)}, 0.4))
    entry["report"]["queries"], entry["languages"] = queries, ["go"]
    return entry


def test_a_finder_of_some_languages_has_its_own_section_beside_the_others_on_them():
    page = render_results(kept_entries([*ENTRIES, _server_entry()]), HOST)
    assert "| golsp |" not in page.split("## golsp on its languages (go)")[0].split("## Finders")[0]
    section = page.split("## golsp on its languages (go)")[1].split("## Finders")[0]
    assert "| abbr3 | 4 | 1 (25.0%) | 2 (50.0%) | 2 (50.0%) | 0.300 | 0.350 | 0 |" in section
    assert "| go: golsp | 8 | 1 (12.5%) | 3 (37.5%) | 4 (50.0%) | 0.200 | 0.250 | 0 |" in section
    assert "| go: reference | 8 | 6 (75.0%) |" in section
    assert "| golsp | golsp 1.0 |" in page  # in the finders table with the others


def test_a_finder_of_some_languages_is_compared_on_those_languages_rows():
    check_comparable(kept_entries([*ENTRIES, _server_entry(queries=4)]))
    other = _server_entry()
    other["report"]["runs"][0]["by_language"]["go"]["n"] = 7
    with pytest.raises(RecallError, match="golsp: its go rows differ"):
        check_comparable(kept_entries([ENTRIES[0], other]))


def test_the_language_servers_run_on_the_corpora_of_their_languages_only():
    corpus = ROOT / "corpus.json"
    assert served_repos(load_preset("jedi-lsp"), corpus) == ["pytest"]
    assert served_repos(load_preset("basedpyright"), corpus) == ["pytest"]
    assert served_repos(load_preset("gopls"), corpus) == ["gin"]
    assert served_repos(load_preset("tsserver"), corpus) == ["vue"]
    assert served_repos(load_preset("tsserver-js"), corpus) == ["jquery"]
    assert served_repos(load_preset("clangd"), corpus) == ["redis", "fmt"]
    assert served_repos(load_preset("fzf"), corpus) == []  # every corpus, no --repo


def test_clangd_runs_with_a_timeout_that_holds_its_wait_for_the_index():
    (clangd,) = [peer for peer in page_columns("names") if peer.preset == "clangd"]
    options = ResultsOptions(corpus="corpus.json")
    argv = peer_argv(clangd, options, ["redis", "fmt"])
    assert argv[argv.index("--timeout") + 1] == "3600"
    assert argv.count("--repo") == 2
    fzf = Column("fzf", "names", 20, "fzf", "defaults")
    assert "--timeout" not in peer_argv(fzf, options, None)


def test_a_bundled_binary_is_shown_by_its_package_folder_not_this_machines_path():
    peer = Column("fzf", "names", 21, "fzf (iterfzf)", "bundled", bundled="iterfzf")
    assert command_line(peer, load_preset("fzf")) == "iterfzf/fzf --filter={query} < {names}"
    batch = command_line(Column("frizbee", "names", 40, "frizbee", "x"), load_preset("frizbee"))
    assert batch.startswith(
        "{python} -P -m recall.finders.kinds.frizbee --names {names} --max-typos 0"
    )


def _gin_abbr3(real_cache: Path, *extra: str) -> dict:
    proc = run_cli(
        "--engine", "fzf", *extra, "--repo", "gin", "--type", "abbr3", "--type", "consonants",
        "--cache", str(real_cache), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["runs"][0]


def test_iterfzf_binary_through_the_fzf_preset_ranks_as_debian_fzf(real_cache, gin):
    bundled = bundled_program("iterfzf", "fzf")
    if bundled is None or shutil.which("fzf") is None:
        pytest.skip("needs iterfzf (the peers extra) and Debian fzf")
    new, old = _gin_abbr3(real_cache, "--bin", bundled), _gin_abbr3(real_cache)
    assert new["bin"] == bundled and new["errors"] == 0
    assert new["first"] > 0  # default-mode rankings agree between 0.38 and 0.67
    assert {k: new[k] for k in ("first", "top10", "found", "mrr")} == {
        k: old[k] for k in ("first", "top10", "found", "mrr")
    }


@pytest.mark.slow
def test_results_command_writes_the_page_and_rerenders_it_byte_identically(tmp_path, real_cache):
    pytest.importorskip("frizbee")
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    queries = tmp_path / "q.tsv"
    rows = [r for r in (ROOT / "queries.tsv").read_text().splitlines() if r.startswith("gin\t")]
    queries.write_text("repo\tquery\ttype\tsource\n" + "\n".join(rows[:40]) + "\n")

    def results(*args: str) -> Ran:
        return run_cli(
            "results", "--only", "frizbee", "--only", "frizbee-typo", "--queries", str(queries),
            "--reports", str(tmp_path / "kept"), *args,
        )  # fmt: skip

    ran = results(
        "--cache", str(real_cache), "--mirror", str(mirror), "--out", str(tmp_path / "a.md")
    )
    assert ran.returncode == 0, ran.stderr
    again = results("--render-only", "--out", str(tmp_path / "b.md"))
    assert again.returncode == 0, again.stderr
    page = (tmp_path / "a.md").read_text()
    assert page == (tmp_path / "b.md").read_text()
    sourced = sum(1 for r in rows[:40] if r.split("\t")[3])
    assert f"| frizbee typo | {sourced} |" in page
    assert "frizbee 0.13.0 (PyPI)" in page
    missing = results("--render-only", "--out", str(tmp_path / "c.md"), "--only", "fzy")
    assert missing.returncode == 2 and "kept report " in missing.stderr
    assert "fzy.json: cannot read: No such file or directory" in missing.stderr
    assert not (tmp_path / "c.md").exists()
    assert "| query jobs | 1 |" in page


@pytest.mark.slow
def test_results_measures_every_finder_now_and_states_the_jobs_its_seconds_had(
    tmp_path, real_cache
):
    pytest.importorskip("frizbee")
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    queries = tmp_path / "q.tsv"
    rows = [r for r in (ROOT / "queries.tsv").read_text().splitlines() if r.startswith("gin\t")]
    queries.write_text("repo\tquery\ttype\tsource\n" + "\n".join(rows[:12]) + "\n")

    def results(out: str, kept: str, *args: str) -> dict:
        ran = run_cli(
            "results", "--only", "frizbee", "--queries", str(queries), "--reports",
            str(tmp_path / kept), "--out", str(tmp_path / out), "--cache", str(real_cache),
            "--mirror", str(mirror), *args,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        return json.loads(next((tmp_path / kept).iterdir()).read_text())

    results("one.md", "one", "--jobs", "1")
    entry = results("two.md", "two", "--jobs", "2")  # the same run, cached by the first
    assert entry["jobs"] == 2 and not entry["report"]["runs"][0]["cached"]
    assert "| query jobs | 2 |" in (tmp_path / "two.md").read_text()
    again = run_cli(
        "results", "--only", "frizbee", "--reports", str(tmp_path / "two"), "--render-only",
        "--jobs", "1", "--out", str(tmp_path / "three.md"),
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "| query jobs | 2 |" in (tmp_path / "three.md").read_text()


def test_the_reference_report_s_ceiling_is_a_row_and_a_column_of_the_page():
    entries = json.loads(json.dumps(ENTRIES))
    cell = {"n": 4, "first": 3.5, "top10": 4.0, "first_pct": 87.5, "top10_pct": 100.0,
            "first_ci": [3, 4], "top10_ci": [4, 4]}  # fmt: skip
    entries[0]["report"]["ceiling"] = {
        "n": 8, "first": 7.0, "top10": 8.0, "first_pct": 87.5, "top10_pct": 100.0,
        "first_ci": [6, 8], "top10_ci": [8, 8],
        "by_type": {"abbr3": cell}, "by_repo": {"gin": cell}, "by_language": {"go": cell},
    }  # fmt: skip
    page = render_results(kept_entries(entries), HOST)
    ceiling = (
        r"| ceiling | 8 | 7.0 (87.5%) \[6-8\] | 8.0 (100.0%) \[8-8\] | - | - | - | - | - | - |"
    )
    assert ceiling + "\n" in page
    assert "| type | n | reference | fzf | fzy | best peer (#1) | ceiling (#1 / top 10) |" in page
    assert r"| fzf, fzy | 87.5 \[75.0-100.0\] / 100.0 \[100.0-100.0\] |" + "\n" in page
    assert (
        "| typo | 4 | 100.0 / 100.0 / 100.0 | 0.0 / 0.0 / 0.0 | 0.0 / 0.0 / 0.0 | - | - |" in page
    )


def test_the_agreement_matrix_counts_queries_two_finders_put_the_same_name_first():
    entries = json.loads(json.dumps(ENTRIES))
    names = [["A", "B", "C", None, "E", "F", "G", "H", "I"],
             ["A", "X", "C", None, "E", "F", "G", "H", "I"],
             ["A", "B", None, None, None, None, None, None, None]]  # fmt: skip
    for entry, firsts in zip(entries, names, strict=True):
        entry["firsts"] = firsts
    assert agreement(kept_entries(entries))[0] == [
        None,
        pytest.approx(700 / 9),
        pytest.approx(200 / 9),
    ]
    page = render_results(kept_entries(entries), HOST)
    assert "| reference | - | 77.8 | 22.2 |\n| fzf | 77.8 | - | 11.1 |" in page
    del entries[2]["firsts"]  # a kept report from before: no matrix rather than a wrong one
    assert "agreement" not in render_results(kept_entries(entries), HOST)


def test_reports_measured_with_different_jobs_are_not_one_page():
    from recall.workflows.results_page import measured_jobs

    entry = kept_entries(ENTRIES)[0]
    assert measured_jobs([dataclasses.replace(entry, jobs=2)] * 2) == "2"
    with pytest.raises(RecallError, match=r"measured with different --jobs \(1, 2\)"):
        measured_jobs([dataclasses.replace(entry, jobs=jobs) for jobs in (1, 2)])


def test_the_page_shows_the_ceiling_s_range_and_marks_a_finder_only_beyond_it():
    entries = json.loads(json.dumps(ENTRIES))
    # abbr3: #1 range [1, 2] of 4 rows; fzf and fzy have 3 (beyond), the reference 2 (within)
    cell = {"n": 4, "first": 1.5, "top10": 4.0, "first_pct": 37.5, "top10_pct": 100.0,
            "first_ci": [1, 2], "top10_ci": [4, 4]}  # fmt: skip
    entries[0]["report"]["ceiling"] = cell | {
        "n": 8, "first": 5.5, "top10": 8.0, "first_pct": 68.8, "first_ci": [5, 6],
        "top10_ci": [8, 8], "by_type": {"abbr3": cell}, "by_repo": {}, "by_language": {},
    }  # fmt: skip
    page = render_results(kept_entries(entries), HOST)
    assert r"| ceiling | 8 | 5.5 (68.8%) \[5-6\] | 8.0 (100.0%) \[8-8\] |" in page
    assert (
        "| abbr3 | 4 | 50.0 / 100.0 / 100.0 | 75.0^ / 100.0 / 100.0 | 75.0^ / 75.0 / 100.0"
        r" | fzf, fzy | 37.5 \[25.0-50.0\] / 100.0 \[100.0-100.0\] |"
    ) in page
    assert "^ marks a finder above it on the same rows" in page
