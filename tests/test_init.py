import json
import re
from pathlib import Path

import pytest
from conftest import ROOT, make_repo, needs_ctags, needs_mirror, run_cli

from recall.errors import RecallError
from recall.finders.engine import (
    TEMPLATE_MARK,
    load_engine,
    load_preset,
    parse_engine,
    preset_names,
)

OPTIONAL = ("build", "index", "batch", "profile", "cwd", "stdin", "env", "pass_env",
            "inputs", "toolchain", "output", "no_match_exit")  # fmt: skip


def test_init_with_the_rq_preset_writes_a_loadable_copy_and_the_next_command(tmp_path):
    make_repo(tmp_path / "rq", {"Cargo.toml": "[package]\n"})
    proc = run_cli("init", "--preset", "rq", cwd=tmp_path / "rq")
    assert proc.returncode == 0, proc.stderr
    written = load_engine(tmp_path / "rq" / "recall.toml")
    preset = load_preset("rq")
    assert (written.build, written.bin, written.query, written.env) == (
        preset.build, preset.bin, preset.query, preset.env,
    )  # fmt: skip
    assert "then run: recall --repo gin --type abbr3 " in proc.stdout
    assert proc.stdout.count("\n") == 1


@pytest.mark.parametrize("preset", preset_names())
def test_a_starter_from_a_preset_keeps_its_engine_and_leaves_out_its_results_columns(
    tmp_path, preset
):
    from recall.workflows.init import starter

    make_repo(tmp_path / "f", {"x.txt": "x"})
    text = starter(preset, tmp_path / "f").decode()
    engine = parse_engine(text.encode(), "recall.toml")
    assert "[[results]]" not in text and engine.columns == ()
    assert (engine.query, engine.kind, engine.index, engine.batch) == (
        load_preset(preset).query, load_preset(preset).kind, load_preset(preset).index,
        load_preset(preset).batch,
    )  # fmt: skip


def test_blank_init_loads_and_explains_every_optional_key_commented_out(tmp_path):
    make_repo(tmp_path / "f", {"x.txt": "x"})
    (tmp_path / "f" / "sub").mkdir()
    proc = run_cli("init", cwd=tmp_path / "f" / "sub")
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "f" / "recall.toml"
    engine = parse_engine(path.read_bytes(), str(path))
    assert engine.query[1] == "{query}" and not engine.build and not engine.index
    text = path.read_text()
    for key in OPTIONAL:
        assert re.search(rf"^# {key} = ", text, re.M), key


def test_an_unedited_template_is_refused_with_the_lines_to_edit(tmp_path):
    """Issue 44 item 3: the blank template's guessed query ran as it was, and failed on
    fzy as a finder that answers nothing. Each guessed line carries a mark; an engine
    file that still holds one is refused naming its lines, before anything runs."""
    make_repo(tmp_path / "f", {"x.txt": "x"})
    assert run_cli("init", cwd=tmp_path / "f").returncode == 0
    path = tmp_path / "f" / "recall.toml"
    lines = path.read_text().splitlines()
    marked = [n for n, line in enumerate(lines, start=1) if line.endswith(TEMPLATE_MARK)]
    assert [lines[n - 1].split(" =")[0] for n in marked] == ["bin", "query"]
    message = (
        f"{path}:{marked[0]},{marked[1]}: `recall init`'s template, unedited (bin, query): "
        f"edit these lines for your finder and remove the `{TEMPLATE_MARK}` mark"
    )
    with pytest.raises(RecallError) as refused:
        load_engine(path)
    assert str(refused.value) == message
    proc = run_cli("--repo", "gin", "--cache", str(tmp_path / "cache"), cwd=tmp_path / "f")
    assert (proc.returncode, proc.stderr) == (2, f"recall: {message}\n")
    assert not (tmp_path / "cache").exists()
    edited = [line.replace(f"  {TEMPLATE_MARK}", "") for line in lines]
    path.write_text("\n".join(edited) + "\n")
    assert load_engine(path).bin == ("{tree}/my-finder",)


@pytest.mark.parametrize(
    ("files", "preset", "shown"),
    [
        ({"Makefile": "all:\n", "src/fzy.c": "int main;\n"}, "fzy", "a Makefile and src/fzy.c"),
        ({"Cargo.toml": '[package]\nname = "rq"\n'}, "rq", "Cargo.toml's package rq"),
        ({"go.mod": "module github.com/junegunn/fzf\n"}, "fzf", "go.mod's module fzf"),
        ({"Makefile": "all:\n", "src/main.c": "int main;\n"}, None, None),
    ],
    ids=["fzy", "rq", "fzf", "none"],
)
def test_blank_init_in_a_repo_a_preset_fits_names_the_preset(tmp_path, files, preset, shown):
    """Issue 44 item 3: plain `recall init` in fzy's repo did not suggest the fzy preset."""
    make_repo(tmp_path / "finder", files)
    proc = run_cli("init", cwd=tmp_path / "finder")
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "finder" / "recall.toml"
    tail = (
        f"; this repo looks like {preset}'s ({shown}): the preset fits it, `rm {path} && "
        f"recall init --preset {preset}`\n"
    )
    assert proc.stdout.endswith(tail) == (preset is not None), proc.stdout
    assert proc.stdout.count("\n") == 1


def test_init_refuses_to_overwrite_an_existing_recall_toml(tmp_path):
    make_repo(tmp_path / "f", {"recall.toml": "mine\n"})
    proc = run_cli("init", "--preset", "fzf", cwd=tmp_path / "f")
    assert proc.returncode == 2
    assert (
        proc.stderr
        == f"recall: {tmp_path / 'f' / 'recall.toml'}: already exists; not overwriting it\n"
    )
    assert (tmp_path / "f" / "recall.toml").read_text() == "mine\n"
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == [".git", "recall.toml"]


def test_init_with_an_unknown_preset_names_the_presets_and_writes_nothing(tmp_path: Path):
    proc = run_cli("init", "--preset", "nope", cwd=tmp_path)
    assert proc.returncode == 2 and f"(presets: {', '.join(preset_names())})" in proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("files", "build", "bin_", "env"),
    [
        ({"Makefile": "all:\n"}, ("make",), ("{tree}/finder",), ()),
        (
            {"Cargo.toml": '[package]\nname = "quick"\n'},
            ("cargo", "build", "--release"), ("{tree}/target/release/quick",), (),
        ),
        (
            {"go.mod": "module example.com/me/gofind\n", "cmd/gofind/main.go": "package main\n"},
            ("go", "build", "-o", "gofind", "./cmd/gofind"), ("{tree}/gofind",), (),
        ),
        (
            {"go.mod": "module github.com/me/quick/v2\n\ngo 1.21\n"},
            ("go", "build", "-o", "quick", "."), ("{tree}/quick",), (),
        ),
        (
            {"package.json": '{"name": "jsfind", "bin": {"jsfind": "./cli.js"}}'},
            ("npm", "ci"), ("node", "{tree}/cli.js"), (),
        ),
        (
            {"pyproject.toml": '[project]\nname = "py-find"\n', "src/py_find/__init__.py": ""},
            (), ("{python}", "-P", "-m", "py_find"), (("PYTHONPATH", "{tree}/src"),),
        ),
    ],
)  # fmt: skip
def test_blank_init_writes_the_build_and_bin_its_build_file_shows_each_line_commented(
    tmp_path, files, build, bin_, env
):
    make_repo(tmp_path / "finder", files)
    proc = run_cli("init", cwd=tmp_path / "finder")
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "finder" / "recall.toml"
    engine = parse_engine(path.read_bytes(), str(path))
    assert (engine.build, engine.bin, engine.env) == (build, bin_, env)
    text = (tmp_path / "finder" / "recall.toml").read_text()
    written = [line for line in text.splitlines() if re.match(r"(build|bin|env) = ", line)]
    assert len(written) == 2 + bool(env)
    assert all(" # " in line for line in written), written


@needs_mirror
@needs_ctags
def test_init_with_the_fzy_preset_in_fzys_repo_measures_the_tree_against_its_base(
    fzy_origin, tmp_path, real_cache
):
    """Issue 32 item 2: `recall init --preset fzy` in fzy's own repo wrote `bin = ["fzy"]`
    and no build, so `--base 1.0` ran /usr/bin/fzy on both sides and showed no change.
    Now it builds the tree with make and runs the fzy it makes, and a base is the fzy
    that 1.0's make makes; `recall` finds the recall.toml from a folder below it."""
    import git

    git.Repo.clone_from(str(fzy_origin), tmp_path / "fzy").close()
    proc = run_cli("init", "--preset", "fzy", cwd=tmp_path / "fzy")
    assert proc.returncode == 0, proc.stderr
    engine = load_engine(tmp_path / "fzy" / "recall.toml")
    assert (engine.build, engine.bin) == (("make",), ("{tree}/fzy",))
    assert engine.query == load_preset("fzy").query
    proc = run_cli(
        "--base", "1.0", "--repo", "gin", "--type", "abbr3", "--json", "--no-regress",
        "--cache", str(real_cache), cwd=tmp_path / "fzy" / "src",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    base, candidate = json.loads(proc.stdout)["runs"]
    assert candidate["bin"] == str(tmp_path / "fzy" / "fzy")
    assert base["bin"] != candidate["bin"] and Path(base["bin"]).name == "fzy"
    assert str(tmp_path / "fzy") not in base["bin"] and "1.0" in base["label"]
    assert candidate["n"] == base["n"] > 0


@needs_mirror
@needs_ctags
@pytest.mark.slow
def test_a_base_that_runs_the_program_the_candidate_runs_is_refused_unless_meant(
    tmp_path, real_cache
):
    """The same program on both sides (bin = ["fzy"], a program on PATH) shows no change
    whatever the ref holds: refused in one line before anything runs, and run when
    --same-program-ok says it is meant."""
    import shutil

    if shutil.which("fzy") is None:
        pytest.skip("fzy is not installed (apt-get install fzy; .ci/run installs it)")
    engine = load_preset("fzy")
    text = (ROOT / "recall" / "finders" / "presets" / "fzy.toml").read_text()
    assert engine.bin == ("fzy",)
    make_repo(tmp_path / "finder", {"recall.toml": text, "x.c": "int x;\n"})
    flags = ("--base", "HEAD", "--repo", "gin", "--type", "abbr3", "--no-regress",
             "--cache", str(real_cache))  # fmt: skip
    proc = run_cli(*flags, cwd=tmp_path / "finder")
    assert proc.returncode == 2 and proc.stdout == ""
    fzy = shutil.which("fzy")
    assert proc.stderr.startswith(f"recall: --base HEAD: the engine runs fzy ({fzy}), not a")
    assert "--same-program-ok" in proc.stderr and proc.stderr.count("\n") == 1
    proc = run_cli(*flags, "--same-program-ok", "--json", cwd=tmp_path / "finder")
    assert proc.returncode == 0, proc.stderr
    base, candidate = json.loads(proc.stdout)["runs"]
    assert base["first"] == candidate["first"]


def test_the_api_writes_the_starter_the_command_writes_and_says_the_same(tmp_path, monkeypatch):
    """`recall.init` is the command's workflow: the same file, and the same next step."""
    import recall
    from recall.workflows.init import render

    api, cli = tmp_path / "api" / "fzy", tmp_path / "cli" / "fzy"
    for repo in (api, cli):
        make_repo(repo, {"Makefile": "all:\n\tcc -o fzy src/fzy.c\n", "src/fzy.c": ""})
    monkeypatch.chdir(tmp_path)
    started = recall.init(recall.InitOptions(finder=str(api)))
    proc = run_cli("init", cwd=cli)
    assert proc.returncode == 0, proc.stderr
    assert started.path == api / "recall.toml" and started.fits == (
        "fzy",
        "a Makefile and src/fzy.c",
    )
    assert started.path.read_bytes() == (cli / "recall.toml").read_bytes()
    assert render(started, api) == proc.stdout.replace(str(cli), str(api))
