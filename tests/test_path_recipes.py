from recall.inputs.path_recipes import (
    choices,
    derive_path_rows,
    eligible,
    parts_of,
    path_recipes,
    sample_paths,
)
from recall.inputs.queryset import PATH_TYPES

BUTTON = "src/components/Button.tsx"


def test_a_path_is_cut_into_folders_basename_stem_and_extension():
    assert parts_of(BUTTON) == parts_of(BUTTON)
    p = parts_of(BUTTON)
    assert (p.dirs, p.base, p.stem, p.ext) == (("src", "components"), "Button.tsx", "Button", "tsx")
    dotfile = parts_of(".github/.gitignore")
    assert (dotfile.stem, dotfile.ext) == (".gitignore", "")
    assert parts_of("README").dirs == ()


def test_the_issue_examples_come_out_of_their_recipes():
    assert choices("fragment", BUTTON) == ["comp/butt"]
    assert choices("extfirst", "src/lib.rs") == [".rs lib"]
    # the issue's `sccbut` has one initial too many for src/components: see docs/queries.md
    assert choices("dirinitials", BUTTON) == ["scbut"]
    assert choices("baseprefix", BUTTON) == [
        "but",
        "butt",
        "butto",
        "button",
        "button.",
        "button.t",
    ]
    assert choices("wordstarts", "src/ButtonGroup.tsx") == ["bg"]
    assert choices("wordstarts", BUTTON) == []  # one word: nothing to abbreviate
    assert choices("basecase", BUTTON) == ["button"]
    assert choices("basecase", "lib/context.go") == ["Context"]
    # every swap of two adjacent, different characters (not the two t's)
    assert choices("basetypo", BUTTON) == ["ubtton", "btuton", "butotn", "buttno"]


def test_a_recipe_that_needs_a_folder_or_extension_gives_no_row_without_one():
    made = dict(path_recipes("Makefile", 1))
    assert "fragment" not in made and "dirinitials" not in made and "extfirst" not in made
    assert made["basecase"] == "makefile"


def test_every_row_is_one_of_its_recipes_choices_and_reproducible_from_the_seed():
    paths = [BUTTON, "tokio/src/io/util/write_all_buf.rs", "gin/context_test.go", "a/b.c"]
    rows = derive_path_rows("r", paths, 10, 3)
    assert rows == derive_path_rows("r", paths, 10, 3)
    assert {row.source for row in rows} == {p for p in paths if eligible(p)}
    assert "a/b.c" not in {row.source for row in rows}  # a one-letter stem is not sampled
    for row in rows:
        assert row.type in PATH_TYPES and row.query in choices(row.type, row.source)
        assert (row.type, row.query) in path_recipes(row.source, 3)


def test_growing_the_sample_only_appends():
    paths = [f"src/module_{i}/file_{i}.py" for i in range(50)]
    assert sample_paths(paths, 20, 1) == sample_paths(paths, 30, 1)[:20]


def test_derive_recipes_with_the_path_set_prints_a_paths_rows():
    from conftest import run_cli

    proc = run_cli("derive", "recipes", "--set", "paths", "--seed", "3", BUTTON)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert f"{BUTTON}\tfragment\tcomp/butt" in lines and f"{BUTTON}\textfirst\t.tsx butt" in lines
    assert lines == [f"{BUTTON}\t{kind}\t{query}" for kind, query in path_recipes(BUTTON, 3)]
