import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT, make_repo, run_cli

from recall.analysis.model import MedianP90
from recall.render.text import render_bench
from recall.workflows.bench import (
    median_p90,
    parse_phases,
    per_query_medians,
    ratio,
    schedule,
    spread,
    summarize_bench,
)


def test_schedule_runs_a_warm_up_rep_then_every_query_through_every_binary():
    order = list(schedule(n_queries=3, n_binaries=2, reps=2))
    assert len(order) == 3 * 2 * 3
    assert [rep for rep, _, _ in order] == [0] * 6 + [1] * 6 + [2] * 6
    for rep in range(3):
        in_rep = [(q, b) for r, q, b in order if r == rep]
        # a query goes through every binary in turn before the next query starts
        assert [q for q, _ in in_rep] == [0, 0, 1, 1, 2, 2]
        assert {b for _, b in in_rep} == {0, 1}


def test_schedule_rotates_which_binary_goes_first_from_rep_to_rep():
    order = list(schedule(n_queries=2, n_binaries=3, reps=5))
    firsts = {}
    for rep, query, binary in order:
        firsts.setdefault((rep, query), binary)
    assert [firsts[rep, 0] for rep in range(6)] == [0, 1, 2, 0, 1, 2]
    assert [b for r, q, b in order if (r, q) == (1, 1)] == [1, 2, 0]


def test_schedule_gives_each_binary_each_position_equally_over_n_reps():
    n = 3
    positions = Counter()
    for i, (rep, _query, binary) in enumerate(schedule(n_queries=1, n_binaries=n, reps=n)):
        if rep:
            positions[binary, i % n] += 1
    assert set(positions.values()) == {1} and len(positions) == n * n


def test_schedule_of_one_binary_is_plain_repetition():
    assert list(schedule(2, 1, 1)) == [(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 0)]


def test_medians_are_per_query_then_median_and_p90_over_queries():
    samples = [[1.0, 100.0, 2.0], [4.0, 4.0, 5.0], [10.0, 9.0, 11.0]]
    medians = per_query_medians(samples)
    assert medians == [2.0, 4.0, 10.0]  # the stray 100 ms sample does not move query 0
    assert median_p90(medians) == MedianP90(median=4.0, p90=8.8)


def test_spread_is_the_median_relative_interquartile_range():
    steady = [[10.0, 10.0, 10.0, 10.0, 10.0]] * 3
    assert spread(steady) == 0.0
    noisy = [[5.0, 10.0, 10.0, 20.0, 30.0]] * 3
    assert spread(noisy) == 1.0  # p25 10, p75 20, median 10


def test_ratio_is_new_over_base_per_query():
    result = ratio([10.0, 20.0, 40.0, 5.0], [5.0, 20.0, 80.0, 5.0])
    assert result["median"] == 1.0
    assert result["p10"] == pytest.approx(0.65)
    assert result["p90"] == pytest.approx(1.7)


def _summary(wall_b, phases_b=None):
    wall = [[[10.0, 10.0, 10.0]] * 2, wall_b]
    phases = [[{}, {}], phases_b or [{}, {}]]
    return summarize_bench(["base", "new"], wall, phases, [0, 1], reps=3)


def test_summary_has_the_json_fields_and_a_ratio_for_two_binaries():
    phases = [{"score": [1.0, 2.0, 3.0]}, {"score": [5.0, 5.0, 5.0]}]
    bench = _summary([[20.0, 20.0, 20.0], [30.0, 30.0, 30.0]], phases).to_json()
    assert (bench["reps"], bench["queries"], bench["noisy"]) == (3, 2, False)
    base, new = bench["runs"]
    assert base == {
        "label": "base", "wall_ms": {"median": 10.0, "p90": 10.0}, "phases": {},
        "spread": 0.0, "errors": 0,
    }  # fmt: skip
    assert new["wall_ms"] == {"median": 25.0, "p90": 29.0}
    assert new["phases"] == {"score": {"median": 3.5, "p90": 4.7}}
    assert new["errors"] == 1
    assert bench["ratios"] == [{"base": "base", "new": "new", "median": 2.5, "p10": 2.1,
                                "p90": 2.9}]  # fmt: skip
    assert json.loads(json.dumps(bench)) == bench


def test_noisy_samples_warn_and_are_all_kept():
    bench = _summary([[5.0, 10.0, 40.0], [5.0, 10.0, 40.0]])
    assert bench.noisy
    assert bench.runs[1].wall_ms.median == 10.0
    lines = render_bench(bench, markdown=False)
    warning = [line for line in lines if line.startswith("warning:")]
    assert len(warning) == 1 and "too noisy" in warning[0] and "new" in warning[0]
    assert not [line for line in render_bench(_summary([[10.0] * 3] * 2), False) if "warn" in line]


def test_render_shows_phases_and_the_ratio_line():
    phases = [{"score": [1.0]}, {"score": [2.0]}]
    bench = _summary([[20.0, 20.0, 20.0], [20.0, 20.0, 20.0]], phases)
    text = "\n".join(render_bench(bench, markdown=True))
    assert text.startswith("## Bench: 2 hand queries x 3 reps")
    assert (
        "| binary | wall median | wall p90 | score median | score p90 | spread | errors |" in text
    )
    assert "| base | 10.0 | 10.0 | - | - | 0% | 0 |" in text
    assert "new / base per query: median 2.000 (p10 2.000, p90 2.000)" in text


def test_phases_come_from_the_last_stderr_line():
    err = b'warming up\n{"phases": {"open": 1.5, "score": 3}}\n\n'
    assert parse_phases(err) == {"open": 1.5, "score": 3.0}
    for bad in (b"", b"not json\n", b'{"phases": {"open": "slow"}}\n', b"[1, 2]\n"):
        with pytest.raises(ValueError):
            parse_phases(bad)


FINDER = r"""
import json, os, sys
query, names, mode = sys.argv[1], sys.argv[2], sys.argv[3]
with open(os.environ["BENCH_LOG"], "a") as log:
    log.write(f"{mode}\t{os.path.dirname(os.path.abspath(__file__))}\t{query}\n")
words = open(names).read().splitlines()
hits = sorted((n for n in words if query.lower() in n.lower()), key=lambda n: (len(n), n))
print(json.dumps([{"name": n} for n in hits]))
if mode == "profile":
    print("noise before the phases", file=sys.stderr)
    print(json.dumps({"phases": {"load": 1.0, "score": 2.5}}), file=sys.stderr)
"""


def _engine(log: Path, profile: str | None) -> str:
    lines = [
        "[engine]",
        'bin = ["{python}", "{tree}/finder.py"]',
        'query = ["{bin}", "{query}", "{names}", "query"]',
        f'env = {{ BENCH_LOG = "{log}" }}',
    ]
    if profile:
        lines.append(f'profile = ["{{bin}}", "{{query}}", "{{names}}", "{profile}"]')
    return "\n".join(lines) + "\n"


QUERIES = "repo\tquery\ttype\tsource\ngin\tcontext\texact\tContext\n" + "".join(
    f"gin\t{q}\thand\t\n" for q in ("render", "bind", "engine")
)


def _bench(tmp_path: Path, real_cache: Path, profile: str | None, *extra: str):
    log = tmp_path / "log.tsv"
    finder = tmp_path / "finder"
    make_repo(finder, {"finder.py": FINDER, "recall.toml": _engine(log, profile)})
    queries = tmp_path / "q.tsv"
    queries.write_text(QUERIES)
    proc = run_cli(
        "--finder", str(finder), "--queries", str(queries), "--corpus",
        str(ROOT / "corpus.json"), "--cache", str(real_cache), "--no-regress", *extra, cwd=finder,
    )  # fmt: skip
    return proc, log


def test_bench_interleaves_binaries_and_reports_phases_in_json(tmp_path, real_cache, gin):
    proc, log = _bench(tmp_path, real_cache, "profile", "--base", "HEAD", "--same-program-ok",
                       "--bench", "2", "--type", "exact", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    bench = json.loads(proc.stdout)["bench"]
    assert (bench["reps"], bench["queries"]) == (2, 3)
    assert [run["label"] for run in bench["runs"]] == [
        json.loads(proc.stdout)["runs"][0]["label"],
        "candidate",
    ]
    for run in bench["runs"]:
        assert run["wall_ms"]["median"] > 0 and run["errors"] == 0
        assert run["phases"] == {"load": {"median": 1.0, "p90": 1.0},
                                 "score": {"median": 2.5, "p90": 2.5}}  # fmt: skip
    assert bench["ratios"][0]["new"] == "candidate"
    timed = [line.split("\t") for line in log.read_text().splitlines() if line[0] == "p"]
    trees = list(dict.fromkeys(tree for _, tree, _ in timed))
    assert len(trees) == 2  # the base's extracted archive and the candidate's repo
    expected = [(trees[b], ("render", "bind", "engine")[q]) for _, q, b in schedule(3, 2, 2)]
    assert [(tree, query) for _, tree, query in timed] == expected


def test_bench_without_a_profile_template_times_the_query_process(tmp_path, real_cache, gin):
    proc, log = _bench(tmp_path, real_cache, None, "--bench", "1")
    assert proc.returncode == 0, proc.stderr
    section = proc.stdout.split("Bench: 3 hand queries x 1 reps")[1]
    assert "candidate" in section and "score" not in section and " / " not in section
    # the run's 4 queries, then the warm-up and one rep of the 3 hand queries
    assert len(log.read_text().splitlines()) == 4 + 2 * 3


def test_bench_refuses_a_profile_without_phases(tmp_path, real_cache, gin):
    proc, _log = _bench(tmp_path, real_cache, "query", "--bench", "1", "--json")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""
    assert proc.stderr.startswith("recall: --bench: candidate: profile of gin query 'render'")


def test_bench_needs_hand_rows_in_the_selected_repos(tmp_path, real_cache, gin):
    proc, _log = _bench(tmp_path, real_cache, None, "--bench", "2", "--repo", "tokio")
    assert proc.returncode == 2
    assert proc.stderr.endswith("q.tsv has no hand rows in the selected repos\n")
    proc, _log = _bench(tmp_path, real_cache, None, "--bench", "0")
    assert (proc.returncode, proc.stderr) == (2, "recall: --bench 0: give 1 or more reps\n")
