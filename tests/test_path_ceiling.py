from recall.analysis.path_ceiling import row_ceilings
from recall.inputs.path_recipes import choices, eligible, path_recipes
from recall.inputs.queryset import QueryRow

PATHS = [
    "src/components/Button.tsx",
    "src/components/ButtonGroup.tsx",
    "src/core/button.ts",
    "lib/context.go",
    "lib/context_test.go",
    "test/context.go",
    "x/y.z",
]


def brute_force(row: QueryRow, paths: list[str]) -> tuple[float, float]:
    """The ceiling by its definition: each eligible path's chance of making the query."""
    chances = []
    for path in paths:
        if not eligible(path):
            continue
        options = choices(row.type, path)
        if options and row.query in options:
            chances.append(options.count(row.query) / len(options))
    chances.sort(reverse=True)
    return chances[0] / sum(chances), sum(chances[:10]) / sum(chances)


def test_each_rows_ceiling_is_its_sources_likelihood_among_every_path_that_makes_it():
    rows = [
        QueryRow("r", query, kind, path)
        for path in PATHS
        if eligible(path)
        for kind, query in path_recipes(path, 1)
    ]
    got = row_ceilings(rows, {"r": PATHS})
    assert set(got) == set(rows)
    for row in rows:
        first, top10 = brute_force(row, PATHS)
        assert abs(got[row].first - first) < 1e-12 and abs(got[row].top10 - top10) < 1e-12


def test_two_paths_that_make_the_same_query_halve_its_first():
    row = QueryRow("r", ".go cont", "extfirst", "lib/context.go")
    assert row_ceilings([row], {"r": PATHS})[row].first == 1 / 3  # three .go files start cont


def test_a_hand_made_row_its_recipe_cannot_make_has_no_ceiling():
    row = QueryRow("r", "zzz", "fragment", "lib/context.go")
    assert row_ceilings([row], {"r": PATHS}) == {}


def test_the_shorter_basename_is_the_likelier_source_of_a_prefix():
    paths = ["a/confs.rb", "b/configuration.rb"]
    row = QueryRow("r", "conf", "baseprefix", paths[1])
    # confs.rb has 5 prefix lengths (3..7), configuration.rb 6 (3..8)
    assert abs(row_ceilings([row], {"r": paths})[row].first - (1 / 5) / (1 / 5 + 1 / 6)) < 1e-12
