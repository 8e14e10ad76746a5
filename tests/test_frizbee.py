"""The frizbee adapter as a real process speaking the batch protocol, and its presets on gin."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

pytest.importorskip("frizbee")

NAMES = ["TestFloatLimits", "foo_bar", "test_float_limits", "tesla"]


def _adapter(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    names = tmp_path / "names.txt"
    names.write_text("".join(f"{n}\n" for n in NAMES))
    return subprocess.run(
        [sys.executable, "-m", "recall.finders.kinds.frizbee", "--names", str(names), *args],
        input=stdin, capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def _request(query: str, limit: int = 0) -> str:
    return json.dumps({"query": query, "limit": limit}) + "\n"


def test_batch_answers_one_line_per_request_in_order_and_honours_limit(tmp_path):
    stdin = _request("tesflolim") + _request("fobar") + _request("tes", 1)
    proc = _adapter(tmp_path, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == 3
    assert {row["name"] for row in answers[0]} == {"TestFloatLimits", "test_float_limits"}
    assert answers[1] == [{"name": "foo_bar"}]
    assert len(answers[2]) == 1


def test_a_bad_request_gets_an_error_line_and_the_process_keeps_answering(tmp_path):
    proc = _adapter(tmp_path, stdin="not json\n" + '{"limit": 3}\n' + _request("fobar"))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert "bad request" in lines[0]["error"] and "bad request" in lines[1]["error"]
    assert lines[2] == [{"name": "foo_bar"}]


def test_batch_echoes_the_id_it_received_with_the_answer_or_the_error(tmp_path):
    stdin = '{"id": 0, "query": "fobar", "limit": 0}\n{"id": 1, "limit": 3}\n' + _request("fobar")
    proc = _adapter(tmp_path, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[0] == {"id": 0, "results": [{"name": "foo_bar"}]}
    assert lines[1]["id"] == 1 and "bad request" in lines[1]["error"]
    assert lines[2] == [{"name": "foo_bar"}]


def test_one_typo_allowed_finds_a_transposition_that_none_allowed_misses(tmp_path):
    strict = _adapter(tmp_path, "--query", "fobra")
    typo = _adapter(tmp_path, "--query", "fobra", "--max-typos", "1")
    assert strict.returncode == typo.returncode == 0, strict.stderr + typo.stderr
    assert json.loads(strict.stdout) == []
    assert json.loads(typo.stdout)[0] == {"name": "foo_bar"}


def test_answers_are_identical_run_to_run(tmp_path):
    stdin = _request("tes") + _request("flo") + _request("ar")
    assert _adapter(tmp_path, stdin=stdin).stdout == _adapter(tmp_path, stdin=stdin).stdout


def _gin_run(preset: str, real_cache: Path) -> dict:
    proc = run_cli(
        "--engine", preset, "--repo", "gin", "--type", "abbr3", "--type", "typo",
        "--cache", str(real_cache), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["runs"][0]


def test_frizbee_presets_on_gin_typo_mode_finds_the_typo_queries(real_cache, gin):
    strict, typo = _gin_run("frizbee", real_cache), _gin_run("frizbee-typo", real_cache)
    assert strict["errors"] == typo["errors"] == 0
    assert strict["by_type"]["typo"]["found"] == 0  # a transposition is not a subsequence
    assert typo["by_type"]["typo"]["first_pct"] > 50
    assert strict["by_type"]["abbr3"]["first_pct"] > 50
    assert strict["by_type"]["abbr3"]["first"] == typo["by_type"]["abbr3"]["first"]
