"""The Python API (docs/api.md): the workflows called with typed options give the numbers
the command line prints, and `import recall` stays light."""

import argparse
import dataclasses
import json
import re
import subprocess
import sys

import pytest
from conftest import ROOT, mirror_dir, needs_ctags, needs_mirror, run_cli

import recall
from recall.workflows.bisection import render as render_verdict
from recall.workflows.pin import render as render_pin


def _examples() -> dict[str, str]:
    """docs/api.md's Python blocks, by the name on their first line (`# run`)."""
    blocks = re.findall(
        r"```python\n# (\w+)\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S
    )
    return dict(blocks)


def _run_example(name: str) -> dict:
    """Run docs/api.md's example as it stands there; what it left in its namespace."""
    namespace: dict = {}
    exec(compile(_examples()[name], f"docs/api.md ({name})", "exec"), namespace)
    return namespace


def test_api_md_has_an_example_of_each_command_the_tests_run():
    assert sorted(_examples()) == [
        "bisect", "doctor", "fetch", "history", "merge", "pin", "results", "run",
    ]  # fmt: skip


def _without_seconds(report: dict) -> dict:
    """A report's JSON without what differs between two runs of the same binary."""
    for run in report["runs"]:
        for key in ("index_s", "query_s", "cached"):
            del run[key]
    return report


@pytest.mark.slow
@needs_ctags
def test_the_worked_example_reports_what_the_cli_prints_for_gin_abbr3(
    real_cache, monkeypatch, capsys
):
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    monkeypatch.setenv("RECALL_CACHE", str(real_cache))
    monkeypatch.setenv("RECALL_MIRROR", str(mirror))
    monkeypatch.chdir(ROOT)
    report = _run_example("run")["report"]
    printed = capsys.readouterr().out

    assert isinstance(report, recall.Report)
    proc = run_cli("run", "--repo", "gin", "--type", "abbr3", "--json")
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(proc.stdout)
    assert _without_seconds(report.to_json()) == _without_seconds(cli)
    counts = cli["runs"][0]
    assert counts["n"] > 0 and set(cli["runs"][0]["by_type"]) == {"abbr3"}
    assert printed == (
        f"{counts['label']}: #1 {counts['first']}/{counts['n']} ({counts['first_pct']}%), "
        f"MRR {counts['mrr']}\n"
    )


def test_bad_options_raise_the_message_the_cli_prints(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(recall.RecallError, match=r"^--jobs 0: give 1 or more$"):
        recall.run(recall.RunOptions(jobs=0))
    assert run_cli("run", "--jobs", "0").stderr == "recall: --jobs 0: give 1 or more\n"


@pytest.mark.slow
def test_import_recall_loads_neither_numpy_nor_gitpython_until_an_api_name_is_used():
    code = (
        "import sys, recall; print(sorted(m for m in ('numpy', 'git') if m in sys.modules)); "
        "print(recall.RunOptions.__module__, recall.run.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.splitlines() == ["[]", "recall.workflows.options recall.workflows.run"], (
        out.stderr
    )


def test_a_name_the_api_does_not_have_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'walk'"):
        recall.walk  # noqa: B018


def _without_index_seconds(data: dict) -> dict:
    for side in data["sides"]:
        del side["index_s"]
    return data


@needs_mirror
def test_explain_from_python_gives_the_json_the_cli_prints(gin, real_cache, monkeypatch):
    monkeypatch.chdir(ROOT)
    options = recall.ExplainOptions(
        query="tstcnt", repo="gin", engine="reference", data=recall.Data(cache=str(real_cache))
    )
    explained = recall.explain(options)
    flags = ("--repo", "gin", "--engine", "reference", "--cache", str(real_cache))
    proc = run_cli("explain", "tstcnt", *flags, "--json")
    assert proc.returncode == 0, proc.stderr
    assert _without_index_seconds(explained.data) == _without_index_seconds(json.loads(proc.stdout))
    assert explained.sides[0].result.rank == explained.data["sides"][0]["rank"]


def _without_timing(history: dict) -> dict:
    """A history's JSON without what a second measure of the same commits changes."""
    for commit in history["commits"]:
        for key in [k for k in commit if k.endswith("_s") or k in ("built", "cached")]:
            del commit[key]
    return history


@pytest.fixture
def in_env(real_cache, monkeypatch):
    """$RECALL_CACHE and $RECALL_MIRROR as the examples of docs/api.md expect them."""
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    monkeypatch.setenv("RECALL_CACHE", str(real_cache))
    monkeypatch.setenv("RECALL_MIRROR", str(mirror))
    return ("--cache", str(real_cache), "--mirror", str(mirror))


@needs_mirror
@needs_ctags
def test_the_history_example_returns_a_history_whose_json_the_cli_prints(
    fzy, in_env, monkeypatch, capsys
):
    monkeypatch.chdir(fzy)
    history = _run_example("history")["history"]
    printed = capsys.readouterr().out

    assert isinstance(history, recall.History)
    proc = run_cli("history", "--tags", "*1.1", *in_env, "--repo", "gin", "--type", "abbr3",
                   "--json", cwd=fzy)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _without_timing(history.to_json()) == _without_timing(json.loads(proc.stdout))
    (row,) = history.commits
    assert row.commit.refs == ("1.1", "v1.1") and row.tally is not None
    assert printed == f"{row.commit.sha[:12]} 1.1 v1.1 #1 {row.tally.all.first_pct}%\n"


@needs_mirror
@needs_ctags
def test_the_bisect_example_returns_the_verdict_the_cli_prints(fzy, in_env, monkeypatch, capsys):
    monkeypatch.chdir(fzy)
    verdict = _run_example("bisect")["verdict"]
    printed = capsys.readouterr().out

    assert isinstance(verdict, recall.Verdict)
    assert (verdict.before, verdict.after) == (3, 4)
    assert verdict.first_bad.subject == "Don't consider numbers word separators"
    assert printed == f"{verdict.first_bad.sha} {verdict.first_bad.subject} 3 4\n"
    proc = run_cli("bisect", "--good", "0.5", "--bad", "0.6", "--query", "gin:tescongetintsli",
                   "--type", "abbr3", *in_env, cwd=fzy)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == render_verdict(verdict)


@needs_mirror
@needs_ctags
def test_the_pin_example_writes_the_suite_the_cli_writes(in_env, tmp_path, monkeypatch, capsys):
    (tmp_path / "api").mkdir()
    (tmp_path / "cli").mkdir()
    monkeypatch.chdir(tmp_path / "api")
    change = _run_example("pin")["change"]
    printed = capsys.readouterr().out

    assert isinstance(change, recall.PinChange)
    assert (change.previous, change.pin.split, change.kept, change.removed) == (
        None, "holdout", 0, 0,
    )  # fmt: skip
    assert printed == f"holdout {change.added}\n" and change.added > 0
    pin = change.pin
    proc = run_cli("pin", "gin", pin.url, pin.sha, "--language", "go", "--n", "5", *in_env,
                   cwd=tmp_path / "cli")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == render_pin(change)
    for name in ("corpus.json", "derive.json", "queries.tsv"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()


def _sized(text: str) -> str:
    """Doctor's output without the cache's size, which the other tests' runs change."""
    return re.sub(r"(?m)^(ok +cache +.*writable, ).*$", r"\1SIZE", text)


@pytest.mark.slow
@needs_ctags
def test_the_doctor_example_returns_typed_checks_that_render_as_the_cli_prints(
    in_env, monkeypatch, capsys
):
    from recall.workflows.doctor import Check, render

    monkeypatch.chdir(ROOT)
    diagnosis = _run_example("doctor")["diagnosis"]
    printed = capsys.readouterr().out
    assert isinstance(diagnosis, recall.Diagnosis) and diagnosis.healthy
    assert all(isinstance(check, Check) for check in diagnosis.checks)
    with pytest.raises(dataclasses.FrozenInstanceError):
        diagnosis.checks[0].status = "FAIL"  # type: ignore[misc]
    assert printed.splitlines()[-1] == "True"
    shown = [c for c in diagnosis.checks if c.status != "ok"]
    assert printed.splitlines()[:-1] == [f"{c.status} {c.name} {c.detail} {c.fix}" for c in shown]
    proc = run_cli("doctor", *in_env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _sized(proc.stdout) == _sized(render(diagnosis))


@pytest.mark.slow
@needs_ctags
def test_the_merge_example_reports_what_the_whole_run_reports(in_env, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    namespace = _run_example("merge")
    report = namespace["report"]
    printed = capsys.readouterr().out

    assert isinstance(report, recall.Report)
    whole = recall.run(recall.RunOptions(data=namespace["data"]))
    assert _without_seconds(report.to_json()) == _without_seconds(whole.to_json())
    assert printed == f"{whole.runs[0].counts.first_pct}\n"


BAD_OPTIONS = [
    ("RunOptions", {"jobs": 1.5}, "RunOptions.jobs: expected int, got 1.5"),
    ("RunOptions", {"jobs": True}, "RunOptions.jobs: expected int, got True"),
    ("RunOptions", {"timeout": "5"}, "RunOptions.timeout: expected float, got '5'"),
    ("RunOptions", {"candidates": ("fzf",)},
     "RunOptions.candidates: expected a tuple of (a tuple (one of 'engine', 'bin', str)), "
     "got ('fzf',)"),
    ("RunOptions", {"candidates": (("preset", "fzf"),)}, "RunOptions.candidates: expected"),
    ("RunOptions", {"split": "train"},
     "RunOptions.split: expected one of 'tune', 'holdout' or None, got 'train'"),
    ("RunOptions", {"shard": (3, 2)}, "--shard 3/2: give K/N with 1 <= K <= N"),
    ("RunOptions", {"bench": 0}, "--bench 0: give 1 or more reps"),
    ("RunOptions", {"timeout": float("nan")}, "--timeout nan: give seconds above 0"),
    ("RunOptions", {"data": {"repos": ["gin"]}}, "RunOptions.data: expected Data, got"),
    ("Data", {"repos": "gin"}, "Data.repos: expected a tuple of (str) or None, got 'gin'"),
    ("Data", {"types": ["abbr3"]}, "Data.types: expected a tuple of (str) or None"),
    ("MergeOptions", {"files": "a.json"}, "MergeOptions.files: expected a tuple of (str)"),
    ("CommitOptions", {"jobs": 0}, "--jobs 0: give 1 or more"),
    ("HistoryOptions", {"every": 0}, "--every 0: give 1 or more"),
    ("HistoryOptions", {"save": "h.json"}, "--save goes with --shard K/N"),
    ("HistoryOptions", {"shard": (1, 2)}, "--shard needs --save FILE"),
    ("HistoryOptions", {"revs": ["v1"]}, "HistoryOptions.revs: expected a tuple of (str)"),
    ("BisectOptions", {"good": "a", "bad": "b", "metric": "mrr"},
     "BisectOptions.metric: expected one of 'first_pct' or None, got 'mrr'"),
    ("BisectOptions", {"good": "a", "bad": "b", "drop": "3"}, "BisectOptions.drop: expected"),
    ("PruneOptions", {"older_than": float("nan")}, "--older-than and --keep-builds must be"),
    ("InitOptions", {"preset": "nope"}, "--preset nope: no such preset (presets: "),
    ("RecipesOptions", {"names": ("Model",), "recipe_set": "typing"},
     "RecipesOptions.recipe_set: expected one of 'default', 'typed', 'paths', got 'typing'"),
    ("RecipesOptions", {"names": ["Model"]}, "RecipesOptions.names: expected a tuple of (str)"),
    ("SampleOptions", {"repo": "gin", "n": -1}, "--n must be zero or more"),
    ("PinOptions", {"repo": "gin", "url": "u", "sha": "0" * 40, "language": "cobol"},
     "--language 'cobol': not a language recall reads (one of c, c++, csharp, go, "),
    ("DeriveOptions", {"check": "yes"}, "DeriveOptions.check: expected bool, got 'yes'"),
    ("PinOptions", {"repo": "gin", "url": "u", "sha": "s", "language": "go", "n": -1},
     "--n must be zero or more"),
    ("PinOptions", {"repo": "gin", "url": "u", "sha": "s", "language": "go", "n": "5"},
     "PinOptions.n: expected int or None, got '5'"),
    ("ExplainOptions", {"query": "x", "repo": "gin", "build_timeout": 0},
     "--build-timeout must be above 0"),
    ("ResultsOptions", {"jobs": 2.0}, "ResultsOptions.jobs: expected int, got 2.0"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "given", "message"), BAD_OPTIONS,
    ids=[f"{name}-{next(iter(given.items()))[0]}" for name, given, _m in BAD_OPTIONS],
)  # fmt: skip
def test_an_option_of_the_wrong_type_or_value_is_one_recall_error_when_made(
    tmp_path, monkeypatch, name, given, message
):
    """Issue 42 item 14: jobs=1.5, timeout="5" and candidates=("fzf",) failed mid-run with
    a TypeError or ValueError, after fetching; docs/api.md promises a RecallError first."""
    from recall.workflows import options

    monkeypatch.chdir(tmp_path)
    with pytest.raises(recall.RecallError) as caught:
        getattr(options, name)(**given)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # nothing made, nothing fetched


def test_options_as_the_command_line_makes_them_pass_their_own_checks():
    from recall.cli import build_parser
    from recall.commands import run as run_command

    args = build_parser("run").parse_args(
        ["run", "--engine", "fzf", "--bin", "b=/bin/true", "--split", "tune", "--jobs", "2",
         "--timeout", "5", "--shard", "1/2", "--repo", "gin", "--type", "abbr3"]
    )  # fmt: skip
    made = run_command.options_of(args)
    assert made.candidates == (("engine", "fzf"), ("bin", "b=/bin/true"))
    assert (made.split, made.jobs, made.timeout, made.shard) == ("tune", 2, 5.0, (1, 2))


# Each options class and the command whose flags fill it.
COMMAND_OF = {
    "RunOptions": "run", "Data": "run", "MergeOptions": "merge", "HistoryOptions": "history",
    "CommitOptions": "history", "BisectOptions": "bisect", "ExplainOptions": "explain",
    "ResultsOptions": "results", "PinOptions": "pin", "PruneOptions": "cache prune",
    "InitOptions": "init", "RecipesOptions": "derive recipes", "SampleOptions": "derive sample",
    "DeriveOptions": "derive all",
    "DoctorOptions": "doctor", "FetchOptions": "fetch",
}  # fmt: skip


def _flags_of(command: str) -> dict[str, argparse.Action]:
    """The flags of a command (`cache prune`: of its verb), by the name they are kept as."""
    from recall.cli import build_parser

    parser = build_parser(command.split()[0])
    for word in command.split():
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = sub.choices[word]
    return {action.dest: action for action in parser._actions}


def _api_doc_exceptions() -> set[str]:
    """The options docs/api.md's table says are no flag of the same name."""
    text = (ROOT / "docs" / "api.md").read_text()
    table = text.split("| option | on the command line |")[1].split("\n\n")[0]
    rows = [row.split("|")[1] for row in table.splitlines()[2:]]
    return {name for row in rows for name in re.findall(r"`(\w+\.\w+)`", row)}


def test_every_option_is_its_flag_of_the_same_name_and_default_or_listed_in_api_md():
    from recall.workflows import options

    unlike = set()
    for name, command in COMMAND_OF.items():
        flags = _flags_of(command)
        for field in dataclasses.fields(getattr(options, name)):
            action = flags.get(field.name)
            spelled = (
                action is not None
                and (  # a positional argument (`revs`) is named by its dest
                    not action.option_strings
                    or f"--{field.name.replace('_', '-')}" in action.option_strings
                )
            )
            default = field.default if field.default is not dataclasses.MISSING else None
            if not spelled or (action.option_strings and action.default != default):
                unlike.add(f"{name}.{field.name}")
    assert unlike == _api_doc_exceptions()


@needs_mirror
def test_the_fetch_example_yields_each_pin_s_checkout_as_the_cli_prints_it(
    in_env, monkeypatch, capsys
):
    from recall.inputs.corpus import Checkout

    monkeypatch.chdir(ROOT)
    _run_example("fetch")
    printed = capsys.readouterr().out
    checkouts = list(recall.fetch(recall.FetchOptions(repos=("gin", "okio"))))
    assert all(isinstance(c, Checkout) for c in checkouts)
    assert [c.pin.name for c in checkouts] == ["gin", "okio"]
    shown = [f"{c.pin.name}\t{c.pin.sha[:12]}\t{c.path}" for c in checkouts]
    assert run_cli("fetch", "gin", "okio", *in_env).stdout.splitlines() == shown
    assert printed.splitlines() == [line.replace("\t", " ") for line in shown]


@pytest.mark.slow
@needs_mirror
def test_the_results_example_returns_the_page_and_its_entries_and_writes_nothing(
    in_env, monkeypatch, capsys
):
    from recall.render.results_entry import Entry
    from recall.workflows.results import ResultsPage

    monkeypatch.chdir(ROOT)
    namespace = _run_example("results")
    page, out = namespace["page"], namespace["out"]
    assert isinstance(page, ResultsPage)
    assert [type(e) for e in page.entries] == [Entry] and page.entries[0].label == "reference"
    assert isinstance(page.entries[0].report, recall.Report)
    assert page.entries[0].report.split == "holdout"
    assert page.markdown.startswith("# Results on the judgments")
    assert not out.exists()  # the command writes the page; the API returns it
    assert capsys.readouterr().out.splitlines() == [f"reference {page.markdown.splitlines()[0]}"]
