import re
from pathlib import Path

from conftest import make_repo, run_cli

from recall.engine import load_engine, load_preset, preset_names

OPTIONAL = ("build", "index", "batch", "profile", "cwd", "stdin", "env", "pass_env",
            "env_remove", "inputs", "toolchain", "output", "no_match_exit")  # fmt: skip


def test_init_with_the_rq_preset_writes_a_loadable_copy_and_the_next_command(tmp_path):
    make_repo(tmp_path / "rq", {"Cargo.toml": "[package]\n"})
    proc = run_cli("init", "--preset", "rq", cwd=tmp_path / "rq")
    assert proc.returncode == 0, proc.stderr
    written = load_engine(tmp_path / "rq" / "recall.toml")
    preset = load_preset("rq")
    assert (written.build, written.bin, written.query, written.env) == (
        preset.build, preset.bin, preset.query, preset.env,
    )  # fmt: skip
    assert "recall --repo gin --type abbr3 --finder" in proc.stdout
    assert proc.stdout.count("\n") == 1


def test_blank_init_loads_and_explains_every_optional_key_commented_out(tmp_path):
    make_repo(tmp_path / "f", {"x.txt": "x"})
    (tmp_path / "f" / "sub").mkdir()
    proc = run_cli("init", cwd=tmp_path / "f" / "sub")
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "f" / "recall.toml"
    engine = load_engine(path)
    assert engine.query[1] == "{query}" and not engine.build and not engine.index
    text = path.read_text()
    for key in OPTIONAL:
        assert re.search(rf"^# {key} = ", text, re.M), key


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
