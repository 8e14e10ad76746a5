from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from helpers import DEEP_OBJECT, fault_env, fault_world, one_line_exit_2

from recall.errors import RecallError
from recall.inputs.corpus import Pin
from recall.inputs.derive import (
    NameSource,
    PrefixIndex,
    derive_rows,
    derive_typed_rows,
    load_settings,
    recipes,
    sample_names,
    typed_recipes,
)
from recall.inputs.queryset import TYPED_TYPES, read_queries
from recall.inputs.recipes import QWERTY_NEIGHBOURS, double, drop, neighbour, prefix, typo, words


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("HTTPServer", ["http", "server"]),
        ("OnAHasMany", ["on", "a", "has", "many"]),
        ("arity2", ["arity2"]),
        ("utf8", ["utf8"]),
        ("sha1?", ["sha1"]),
        ("utf_8", ["utf", "8"]),
        ("test_float_limits", ["test", "float", "limits"]),
    ],
)
def test_words_split_on_punctuation_and_case_humps(name, expected):
    assert words(name) == expected


def test_spec_table_examples():
    got = dict(recipes("test_float_limits"))
    assert got["abbr3"] == "tesflolim"
    assert got["abbr2"] == "teflli"
    assert got["first+last"] == "teslimits"
    assert got["consonants"] == "tstflt"
    assert got["glob"] == "tes*lim"
    assert sorted(got["typo"]) == sorted("test_float_limits")


def test_issue_examples():
    assert dict(recipes("test_no_magic_comment_word_with_utf_8"))["first+last"] == "tes8"
    assert dict(recipes("Model2"))["consonants"] == "mdl2"
    assert dict(recipes("has_index?"))["consonants"] == "hsndx"
    assert dict(recipes("can_find_inverse_of_automatically?"))["abbr3"] == "canfininvofaut"


def test_one_word_names_have_no_first_last_and_no_glob():
    kinds = [kind for kind, _ in recipes("Callbacks")]
    assert "first+last" not in kinds and "glob" not in kinds


def test_every_query_is_lowercase():
    assert all(q == q.lower() for _, q in recipes("HTTPServerError_Handler"))


def test_typo_swaps_two_adjacent_different_characters_reproducibly():
    for seed in range(50):
        q = typo("Callbacks", seed)
        diffs = [i for i, (a, b) in enumerate(zip(q, "callbacks", strict=True)) if a != b]
        assert len(diffs) == 2 and diffs[1] == diffs[0] + 1
        assert q[diffs[0]] == "callbacks"[diffs[1]] and q[diffs[0]] != q[diffs[1]]
        assert typo("Callbacks", seed) == q
    assert typo("aaaa", 1) is None


def test_prefix_index_is_case_insensitive():
    index = PrefixIndex(["HasMany", "belongs_to"])
    assert index.has_prefix("hasm") and index.has_prefix("BELONGS_")
    assert not index.has_prefix("hsm")


def test_sampling_is_deterministic_and_growing_n_only_appends():
    names = [f"name_{i:04d}_thing" for i in range(500)] + ["abc", "x\ty_long_name"]
    first = sample_names(names, 50, seed=3)
    assert first == sample_names(list(reversed(names)), 50, seed=3)
    assert sample_names(names, 80, seed=3)[:50] == first
    assert "abc" not in first and all("\t" not in n for n in sample_names(names, 600, 3))
    assert sample_names(names, 50, seed=4) != first


def test_derived_rows_drop_queries_that_are_a_name_prefix():
    names = ["test_float_limits", "tesflolim_helper", "other_thing"]
    rows = derive_rows("r", names, 10, seed=1)
    got = {(r.source, r.type) for r in rows}
    assert ("test_float_limits", "abbr3") not in got
    assert ("test_float_limits", "glob") in got


def test_committed_query_set_passes_the_prefix_rule(all_names):
    rows = read_queries(ROOT / "queries.tsv", set(all_names))
    indexes = {repo: PrefixIndex(names) for repo, names in all_names.items()}
    known = {repo: set(names) for repo, names in all_names.items()}
    derived = [r for r in rows if r.type != "hand"]
    assert len(derived) >= 4500
    assert sum(1 for r in rows if r.type == "hand") >= 60
    for row in derived:
        assert row.source in known[row.repo] or pytest.fail(row)
        if row.type != "glob":
            assert not indexes[row.repo].has_prefix(row.query), row


def test_derive_all_check_passes_on_the_committed_set(real_cache, all_names):
    from conftest import mirror_dir, run_cli

    args = ["--cache", str(real_cache), "--mirror", str(mirror_dir())]
    proc = run_cli("derive", "all", "--check", *args)
    assert proc.returncode == 0, proc.stderr
    assert {line.split(":")[0] for line in proc.stdout.splitlines()} == {
        "queries.tsv", "typed.tsv", "typing.tsv", "paths.tsv"
    }  # fmt: skip
    proc = run_cli("derive", "recipes", "Model2")
    assert "Model2\tconsonants\tmdl2" in proc.stdout.splitlines()


def test_derive_sample_reproduces_the_committed_rows(real_cache, all_names):
    from conftest import mirror_dir, run_cli

    args = ["--cache", str(real_cache), "--mirror", str(mirror_dir())]
    proc = run_cli("derive", "sample", "gin", "--n", "100", "--seed", "1", *args)
    assert proc.returncode == 0, proc.stderr
    assert len({line.split("\t")[3] for line in proc.stdout.splitlines()}) == 100
    committed = [
        line for line in (ROOT / "queries.tsv").read_text().splitlines()
        if line.startswith("gin\t") and "\thand\t" not in line
    ]  # fmt: skip
    assert proc.stdout.splitlines() == committed


def test_the_api_derives_what_the_commands_print_and_checks_without_writing(
    real_cache, all_names, monkeypatch
):
    """recall.derive_recipes, derive_sample and derive_all are the commands' workflows."""
    from conftest import mirror_dir

    import recall

    monkeypatch.chdir(ROOT)
    made = recall.derive_recipes(recall.RecipesOptions(names=("Model2",)))
    printed = run_cli("derive", "recipes", "Model2").stdout
    assert [f"{n}\t{kind}\t{query}" for n, kind, query in made] == printed.splitlines()
    data = recall.Data(cache=str(real_cache), mirror=str(mirror_dir()))
    rows = recall.derive_sample(recall.SampleOptions(repo="gin", n=100, data=data))
    committed = read_queries(ROOT / "queries.tsv", set(all_names))
    assert rows == [row for row in committed if row.repo == "gin" and row.type != "hand"]
    before = (ROOT / "queries.tsv").stat().st_mtime_ns
    options = recall.DeriveOptions(data=data, settings="derive.json", queries="queries.tsv",
                                   check=True)  # fmt: skip
    (derived,) = recall.derive_all(options)
    assert (derived.queries, derived.changed) == (Path("queries.tsv"), False)
    assert derived.rows == len(read_queries(ROOT / "queries.tsv", set(all_names)))
    assert (ROOT / "queries.tsv").stat().st_mtime_ns == before


def test_derive_sample_help_and_readme_say_n_counts_names_not_rows():
    from conftest import run_cli

    help_text = " ".join(run_cli("derive", "sample", "--help").stdout.split())
    assert "--n N how many names to sample (not rows: a name gives up to six)" in help_text
    readme = (ROOT / "README.md").read_text()
    line = next(row for row in readme.splitlines() if "`recall derive sample" in row)
    assert "--n` counts names" in line and "sample query rows" not in line


def test_typed_table_examples():
    got = dict(typed_recipes("test_float_limits", 1, "TestNumbers", "python"))
    assert got == {
        "prefix": "test_flo", "word": "float", "words": "test float",
        "qualified": "TestNumbers.test_float_limits", "drop": "test_float_imits",
        "double": "test_floatt_limits", "neighbour": "test_floay_limits",
        "case": "testFloatLimits",
    }  # fmt: skip
    assert dict(typed_recipes("parseEngine"))["case"] == "parse_engine"
    assert dict(typed_recipes("HTTPServer"))["case"] == "http_server"
    assert dict(typed_recipes("has_index?"))["case"] == "hasIndex"


def test_qualified_joins_with_colons_for_ruby_rust_and_cpp_and_needs_an_owner():
    for language, joined in (("ruby", "Base::find"), ("rust", "Base::find"), ("go", "Base.find")):
        assert dict(typed_recipes("find", 1, "Base", language))["qualified"] == joined
    assert "qualified" not in dict(typed_recipes("find_all", 1, None, "ruby"))


def test_one_word_names_have_no_word_words_or_case():
    kinds = {kind for kind, _ in typed_recipes("Callbacks")}
    assert kinds == {"prefix", "drop", "double", "neighbour"}


@pytest.mark.parametrize("seed", range(40))
def test_prefix_is_2_to_8_characters_and_never_the_whole_name(seed):
    for name in ("Callbacks", "abcde", "a_much_longer_name_than_eight"):
        q = prefix(name, seed)
        assert 2 <= len(q) <= min(8, len(name) - 1) and name.lower().startswith(q)


@pytest.mark.parametrize("seed", range(40))
def test_typing_slips_touch_one_letter_or_digit(seed):
    name, lowered = "has_index2?", "has_index2?"
    dropped, doubled, missed = drop(name, seed), double(name, seed), neighbour(name, seed)
    assert len(dropped) == len(name) - 1 and len(doubled) == len(name) + 1
    gone = next(i for i in range(len(name)) if lowered[:i] + lowered[i + 1 :] == dropped)
    assert lowered[gone].isalnum()
    diffs = [i for i, (a, b) in enumerate(zip(missed, lowered, strict=True)) if a != b]
    assert len(diffs) == 1 and missed[diffs[0]] in QWERTY_NEIGHBOURS[lowered[diffs[0]]]
    assert (drop(name, seed), double(name, seed), neighbour(name, seed)) == (
        dropped, doubled, missed
    )  # fmt: skip


def test_the_keyboard_table_is_symmetric():
    for key, near in QWERTY_NEIGHBOURS.items():
        assert key not in near
        assert all(key in QWERTY_NEIGHBOURS[other] for other in near), key


def test_typed_rows_have_no_prefix_rule_and_reproduce_from_recipes():
    names = ["test_float_limits", "test_float_limits_helper", "other_thing"]
    source = NameSource(names, {"other_thing": "Owner"}, "python")
    rows = derive_typed_rows("r", source, 10, seed=2)
    assert ("test_float_limits", "prefix") in {(r.source, r.type) for r in rows}
    for row in rows:
        made = typed_recipes(row.source, 2, source.owners.get(row.source), "python")
        assert (row.type, row.query) in made


def test_committed_typed_set_has_300_rows_of_every_type(all_names):
    rows = read_queries(ROOT / "typed.tsv", set(all_names))
    counts = {kind: sum(1 for r in rows if r.type == kind) for kind in TYPED_TYPES}
    assert min(counts.values()) >= 300, counts
    known = {repo: set(names) for repo, names in all_names.items()}
    assert all(r.source in known[r.repo] for r in rows if r.type == "prefix")


def test_derive_all_writes_through_a_symlink_and_keeps_the_query_sets_mode(
    real_cache, all_names, tmp_path
):
    """Issue 31, class 9: the rewritten query set used to become a new file of mode 0600
    in place of the link. Now the link stays and its target keeps 0644."""
    from conftest import mirror_dir, run_cli

    settings = tmp_path / "derive.json"
    settings.write_text('{"repos": {"gin": {"n": 100, "seed": 1}}}\n')
    (tmp_path / "kept").mkdir()
    real = tmp_path / "kept" / "queries.tsv"
    real.write_text("repo\tquery\ttype\tsource\n")
    real.chmod(0o644)
    link = tmp_path / "queries.tsv"
    link.symlink_to(real)
    args = ["--cache", str(real_cache), "--mirror", str(mirror_dir())]
    proc = run_cli("derive", "all", "--queries", str(link), "--settings", str(settings), *args)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and (real.stat().st_mode & 0o777) == 0o644
    committed = [
        line for line in (ROOT / "queries.tsv").read_text().splitlines()
        if line.startswith("gin\t") and "\thand\t" not in line
    ]  # fmt: skip
    assert real.read_text().splitlines()[1:] == committed


@pytest.mark.parametrize("check", [("--check",), ()], ids=["check", "regenerate"])
def test_derive_all_outside_a_suite_folder_is_refused_rather_than_checking_nothing(tmp_path, check):
    """Issue 42 item 17: `recall derive all --check` in a folder with no derive settings
    checked nothing and exited 0."""
    proc = run_cli("derive", "all", *check, "--cache", str(tmp_path / "cache"), cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"recall: derive all: no derive settings in {tmp_path} (derive.json, derive-typed.json, "
        "derive-typing.json, derive-paths.json): run it in a suite's folder (recall's "
        "checkout, or a finder's with sets of its own), or name one set with --settings FILE "
        "--queries FILE\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def world(tmp_path: Path) -> dict:
    return fault_world(tmp_path)


def test_a_derive_settings_file_nested_100k_deep_is_one_line_exit_2(world, tmp_path):
    settings = tmp_path / "derive.json"
    settings.write_bytes(DEEP_OBJECT)
    proc = run_cli(
        "derive", "all", "--corpus", str(world["corpus"]), "--settings", str(settings),
        "--queries", str(world["queries"]), "--cache", str(world["cache"]),
        cwd=world["finder"], env=fault_env(world),
    )  # fmt: skip
    one_line_exit_2(proc, f"{settings}: not JSON")


@pytest.mark.parametrize("entry", ['{"n": true, "seed": 1}', '{"n": 3, "seed": false}'])
def test_derive_settings_holding_a_bool_for_n_or_seed_name_the_repo(tmp_path, entry):
    path = tmp_path / "derive.json"
    path.write_text(f'{{"repos": {{"gin": {entry}}}}}')
    with pytest.raises(RecallError, match="repo 'gin': n and seed must be whole numbers"):
        load_settings(path, {"gin": Pin("gin", "https://github.com/gin-gonic/gin", "a" * 40, "go")})
