"""The ceiling: how many names yield each query, and the best #1 and top 10 it allows."""

import random

import pytest

from recall.analysis.ceiling import (
    INVERTED,
    KINDS,
    RowCeiling,
    ceiling,
    ceilings,
    row_ceilings,
    summary,
)
from recall.analysis.stats import count_distribution, interval, standard_error
from recall.inputs.derive import NameSource, derive_rows, derive_typed_rows, eligible, recipes
from recall.inputs.queryset import QueryRow
from recall.inputs.recipes import (
    QWERTY_NEIGHBOURS,
    keyed_positions,
    prefix_lengths,
    swap_positions,
    swapped,
)

NAMES = [
    "test_count", "TestContent", "test_counter", "tset_count", "test_cuont",
    "parse_engine", "parseEngine", "ParseEngine", "render_view", "render_views",
    "HTTPServer", "http_server", "has_index?", "hass_index?", "has_undex?",
]  # fmt: skip
SOURCE = NameSource(sorted(NAMES), {"render_view": "View", "render_views": "View"}, "ruby")


def _chances(kind: str, query: str, source: NameSource = SOURCE) -> RowCeiling | None:
    row = QueryRow("r", query, kind, "x")
    return row_ceilings([row], {"r": source}).get(row)


def _k(kind: str, query: str, source: NameSource = SOURCE) -> int:
    chances = _chances(kind, query, source)
    return chances.k if chances else 0


def test_k_counts_every_name_that_yields_the_query():
    # test_count, TestContent, tset_count, test_counter (cut to 6), test_cuont
    assert _k("consonants", "tstcnt") == 5
    assert _k("abbr3", "pareng") == 3  # parse_engine, parseEngine, ParseEngine
    assert _k("qualified", "View::render_view") == 1
    assert _k("case", "parse_engine") == 2  # parseEngine, ParseEngine


def test_typo_counts_every_name_some_swap_turns_into_the_query():
    assert _k("typo", "test_count") == 2  # tset_count, test_cuont; never the name itself
    assert _k("typo", "tset_count") == 1  # test_count


def test_prefix_counts_the_longer_names_that_start_with_it():
    assert _k("prefix", "test_co") == 2  # test_count, test_counter (not testcontent)
    assert _k("prefix", "rende") == 2  # render_view, render_views
    assert _k("prefix", "render_view") == 0  # 11 characters: longer than any prefix


def test_slips_count_the_names_one_key_away():
    assert _k("drop", "has_idex?") == 1  # has_index?
    assert _k("double", "hass_index?") == 1  # has_index?, its s doubled
    assert _k("neighbour", "has_index?") == 1  # has_undex?: u is next to i


def _variants(kind: str, name: str) -> set[str]:
    """Every query of an inverted kind a name could yield: the brute-force definition."""
    low = name.lower()
    if kind == "typo":
        return {swapped(low, i) for i in swap_positions(low)}
    if kind == "prefix":
        return {low[:n] for n in prefix_lengths(name)}
    if kind == "drop":
        return {low[:i] + low[i + 1 :] for i in keyed_positions(low)}
    if kind == "double":
        return {low[: i + 1] + low[i:] for i in keyed_positions(low)}
    return {
        low[:i] + key + low[i + 1 :]
        for i in keyed_positions(low)
        for key in QWERTY_NEIGHBOURS[low[i]]
    }


@pytest.mark.parametrize("kind", INVERTED)
def test_inverted_counts_equal_brute_force_enumeration(kind, gin_source):
    rng = random.Random(kind)
    names = [n for n in gin_source.names if eligible(n)]
    variants = {name: _variants(kind, name) for name in names}
    picked = rng.sample(names, 40)
    queries = sorted({rng.choice(sorted(variants[name])) for name in picked})
    for query in queries:
        brute = sum(1 for name in names if query in variants[name])
        assert _k(kind, query, gin_source) == brute, query


def test_one_answer_recipes_give_one_over_k():
    chances = _chances("consonants", "tstcnt")
    assert chances.first == pytest.approx(1 / 5) and chances.top10 == pytest.approx(1.0)


def test_a_name_with_fewer_choices_is_the_likelier_source():
    source = NameSource(["alpha_beta", "alpha_gamma_beta"], {}, "python")
    chances = _chances("words", "alpha beta", source)
    # alpha_beta makes it for sure; alpha_gamma_beta once in its three pairs
    assert chances.k == 2 and chances.first == pytest.approx(1 / (1 + 1 / 3))
    typo = _chances("typo", "tset_count")  # test_count: 1 of its swap positions
    assert typo.k == 1 and typo.first == pytest.approx(1.0)


def test_every_committed_recipe_type_has_a_ceiling_rule(gin_source):
    rows = derive_rows("gin", gin_source.names, 30, 1) + derive_typed_rows("gin", gin_source, 30, 2)
    chances = row_ceilings(rows, {"gin": gin_source})
    assert {row.type for row in rows} <= set(KINDS)
    assert all(chances[row].k >= 1 and 0 < chances[row].first <= 1 for row in rows)


def test_ceiling_sums_the_chances_of_its_rows():
    rows = [RowCeiling(1, 1.0, 1.0), RowCeiling(2, 0.5, 1.0), RowCeiling(20, 0.05, 0.5)]
    got = ceiling(rows)
    assert got.n == 3 and got.first == pytest.approx(1.55) and got.top10 == pytest.approx(2.5)
    queries = [QueryRow("r", q, "abbr3", "x") for q in ("a", "b")]
    by = ceilings(queries, dict(zip(queries, rows[:2], strict=True)), {"r": "ruby"})
    assert by["language"]["ruby"].first == pytest.approx(1.5)
    assert by["type"]["abbr3"].top10_pct == pytest.approx(100.0)


def test_the_report_s_ceiling_row_is_the_query_set_s_and_its_cache_is_never_trusted_torn(
    real_cache, gin_source, tmp_path
):
    import json

    from conftest import ROOT, run_cli

    from recall.cache import read_file
    from recall.inputs.corpus import load_pins
    from recall.inputs.queryset import read_queries, select

    def report() -> dict:
        flags = ("--repo", "gin", "--type", "abbr3", "--type", "typo", "--no-regress")
        proc = run_cli(*flags, "--cache", str(real_cache), "--json")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["ceiling"]

    pins = load_pins(ROOT / "corpus.json")
    rows = select(read_queries(ROOT / "queries.tsv", set(pins)), ["gin"], ["abbr3", "typo"])
    expected = ceilings(rows, row_ceilings(rows, {"gin": gin_source}), {"gin": "go"})
    for old in (real_cache / "ceilings").glob("*.json"):  # other tests' selections
        old.unlink()
    first = report()
    assert first["n"] == expected["all"]["all"].n == len(rows)
    assert first["first"] == round(expected["all"]["all"].first, 2)
    assert first["by_type"]["typo"]["top10_pct"] == round(expected["type"]["typo"].top10_pct, 1)
    # the standard error and the range are over exactly the rows selected, as the counts
    per_row = row_ceilings(rows, {"gin": gin_source})
    typos = [per_row[r].first for r in rows if r.type == "typo"]
    assert first["by_type"]["typo"]["first_se"] == round(standard_error(typos), 2)
    assert first["by_type"]["typo"]["first_ci"] == list(interval(typos))
    assert first["first_ci"] == list(interval([per_row[r].first for r in rows]))
    assert first["left_out"] == {"count": 0, "first": []}
    (finder,) = first["finders"]  # the reference finder, on the same rows as its run
    assert finder["first"] <= first["first_ci"][1] and not finder["first_above"]
    [stored] = (real_cache / "ceilings").glob("*.json")  # one per rows, pins and recipes
    stored.write_bytes(stored.read_bytes()[:10])
    assert report() == first
    assert json.loads(read_file(stored) or b"")  # made anew, whole, its digest first


def test_the_count_s_distribution_spread_and_range_match_small_cases_by_hand():
    assert count_distribution([0.5, 0.5]).tolist() == [0.25, 0.5, 0.25]
    assert count_distribution([1.0, 1.0, 0.0]).tolist() == [0.0, 0.0, 1.0, 0.0]
    assert standard_error([0.5, 0.5]) == pytest.approx(0.5**0.5)  # sqrt(2 * 1/4)
    assert standard_error([1.0, 0.0, 1.0]) == 0.0  # certain rows do not spread
    assert interval([0.5, 0.5]) == (0, 2)  # each end has 1/4, more than 2.5%
    assert interval([1.0, 1.0, 0.0]) == (2, 2)
    assert interval([]) == (0, 0)
    # Binomial(10, 1/2): P(X <= 1) = 11/1024 < 2.5% < P(X <= 2) = 56/1024; symmetric above
    assert interval([0.5] * 10) == (2, 8)
    assert standard_error([0.5] * 10) == pytest.approx(2.5**0.5)
    # four certain rows and three each at 1/2 and 1/4: P(the six all miss) = 1/8 * 27/64 =
    # 5.3% keeps 4; P(5 or 6 of the six) = 0.0254 > 2.5% keeps 9, P(6) = 0.2% drops 10
    assert interval([1, 0.5, 0.25, 1, 0.5, 0.25, 1, 0.5, 0.25, 1]) == (4, 9)
    assert count_distribution([0.3] * 40).sum() == pytest.approx(1.0)


def test_a_row_the_recipes_cannot_make_from_its_source_is_named_and_left_out():
    rows = [
        QueryRow("r", "tstcnt", "consonants", "test_count"),  # made by its recipe
        QueryRow("r", "tstcnt", "consonants", "parse_engine"),  # made, but not from it
        QueryRow("r", "zqzqzq", "abbr3", "test_count"),  # made from no name
        QueryRow("r", "test_count", "exact", "test_count"),  # no recipe for the type
        QueryRow("r", "tescou", "abbr3", "gone_name"),  # not a name: the caller's, at 0
        QueryRow("r", "hand", "hand", ""),
    ]
    per_row = row_ceilings(rows, {"r": SOURCE})
    assert set(per_row) == {rows[0], rows[4]}
    got = summary(rows, per_row, {"r": "ruby"})
    assert got.counts.n == 2
    assert [(r.query, r.type, r.source) for r in got.left_out.first] == [
        ("tstcnt", "consonants", "parse_engine"), ("zqzqzq", "abbr3", "test_count"),
        ("test_count", "exact", "test_count"),
    ]  # fmt: skip
    assert "exact" not in got.by_type and got.by_type["consonants"].n == 1


def test_a_foreign_file_s_rows_the_recipes_cannot_make_are_left_out_of_both_sides(
    real_cache, gin, tmp_path
):
    import json

    from conftest import run_cli

    path = tmp_path / "foreign.tsv"
    path.write_text(
        "repo\tquery\ttype\tsource\n"
        "gin\ttescongetintsli\tabbr3\tTestContextGetInt16Slice\n"
        "gin\tTestContextGetInt16Slice\texact\tTestContextGetInt16Slice\n"  # no recipe
        "gin\tqqzzqq\tconsonants\tTestContextGetInt16Slice\n"  # no name makes it
    )
    flags = ("--cache", str(real_cache), "--queries", str(path), "--no-regress")
    proc = run_cli(*flags, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    bound, (run,) = report["ceiling"], report["runs"]
    assert run["n"] == 3 and bound["n"] == 1  # the finder keeps its rows; the ceiling models one
    assert [(r["query"], r["type"]) for r in bound["left_out"]["first"]] == [
        ("TestContextGetInt16Slice", "exact"), ("qqzzqq", "consonants"),
    ]  # fmt: skip
    (finder,) = bound["finders"]
    assert finder["first"] == int(run["by_type"]["abbr3"]["first"])  # on the one row alone
    assert "exact" not in bound["by_type"]
    text = run_cli(*flags).stdout
    assert "Left out of the ceiling: 2 rows the recipes cannot make" in text
    assert "points below it on its 1 row (#1 / top 10)" in text
    assert any(line.startswith("gin ") and line.endswith(" of 1") for line in text.splitlines())


def test_the_glob_model_is_calibrated_a_fixed_order_over_many_samples_gets_its_expectation(
    all_names,
):
    """issue 43 found the reference finder's top 10 on the glob rows of the committed
    holdout above the ceiling's range and asked whether the glob choice model is wrong.
    It is not: ranking every name that makes a glob by one fixed order (the shortest first,
    as fuzzy finders lean), over many samples of three corpora, gets the model's expected
    top 10 on average, with the model's spread (docs/queries.md has the whole measure: one
    sample, the committed one, can lean to that order, and a finder with it)."""
    corpora = {"pytest": 150, "commons-lang": 150, "redis": 150}  # derive.json's n
    makers: dict[str, dict[str, list[str]]] = {}  # per corpus: a glob's names, shortest first
    for repo in corpora:
        for name in sorted(filter(eligible, all_names[repo]), key=lambda x: (len(x), x)):
            for query in (q for kind, q in recipes(name) if kind == "glob"):
                makers.setdefault(repo, {}).setdefault(query, []).append(name)
    z = []
    for seed in range(2, 82):
        hits = expected = variance = 0.0
        for repo, n in corpora.items():
            names = all_names[repo]
            rows = [r for r in derive_rows(repo, names, n, seed) if r.type == "glob"]
            chances = row_ceilings(rows, {repo: NameSource(names, {}, "")})
            for row in rows:
                p = chances[row].top10
                hits += row.source in makers[repo][row.query][:10]
                expected += p
                variance += p * (1 - p)
        z.append((hits - expected) / variance**0.5)
    mean = sum(z) / len(z)
    spread = (sum((x - mean) ** 2 for x in z) / (len(z) - 1)) ** 0.5
    assert abs(mean) < 0.35, mean  # 80 samples: the mean's own spread is 0.11
    assert 0.7 < spread < 1.3, spread
