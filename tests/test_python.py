"""kind = "python": the library worker as a real process, the engine table it is made
from, and the RapidFuzz and thefuzz presets on gin checked against the libraries called
directly."""

import json
import subprocess
import sys
from pathlib import Path

import git
import pytest
from conftest import ROOT, Ran, run_cli, tiny_suite
from helpers import saved_gin_run

from recall.errors import RecallError
from recall.finders.engine import load_preset, parse_engine
from recall.finders.kinds import HARNESS_ROOT
from recall.finders.kinds.adapter import BOOT, read_names, worker_bin
from recall.inputs.symbols import checkout_symbols, distinct_names

NAMES = ["TestFloatLimits", "foo_bar", "test_float_limits", "tesla"]
TE = [{"name": "TestFloatLimits"}, {"name": "test_float_limits"}, {"name": "tesla"}]  # "te"
TINY_ROWS = ["alpfun\tabbr3\talpha_function", "gamdel\tabbr3\tgamma_delta"]


def _worker(
    tmp_path: Path, *args: str, stdin: str = "", path: str = ""
) -> subprocess.CompletedProcess:
    names = tmp_path / "names.txt"
    names.write_text("".join(f"{n}\n" for n in NAMES))
    return subprocess.run(
        [sys.executable, "-P", "-m", "recall.finders.kinds.python", "--names", str(names), *args],
        input=stdin, capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": f"{ROOT}:{path}" if path else str(ROOT)},
    )  # fmt: skip


def _request(query: str, limit: int = 0, **extra: object) -> str:
    return json.dumps({**extra, "query": query, "limit": limit}) + "\n"


def test_the_worker_answers_as_rapidfuzz_does_with_ids_and_limits(tmp_path):
    from rapidfuzz import process

    stdin = _request("tesflolim", id=0) + _request("fobar", 2, id=1) + _request("tes", 1)
    proc = _worker(tmp_path, "--callable", "rapidfuzz.process:extract", stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    expected = [
        [hit[0] for hit in process.extract(q, NAMES, limit=limit)]
        for q, limit in [("tesflolim", None), ("fobar", 2), ("tes", 1)]
    ]
    assert [line["id"] for line in lines[:2]] == [0, 1]
    assert [row["name"] for row in lines[0]["results"]] == expected[0]
    assert [row["name"] for row in lines[1]["results"]] == expected[1]
    assert [row["name"] for row in lines[2]] == expected[2]  # no id: the bare list


def test_options_pass_keyword_arguments_and_a_callable_table_names_an_object(tmp_path):
    from rapidfuzz import fuzz, process

    options = json.dumps({"scorer": {"callable": "rapidfuzz.fuzz:partial_ratio"}})
    proc = _worker(tmp_path, "--callable", "rapidfuzz.process:extract", "--options", options,
                   "--query", "flo", "--limit", "2")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    expected = process.extract("flo", NAMES, scorer=fuzz.partial_ratio, limit=2)
    assert json.loads(proc.stdout) == [{"name": hit[0]} for hit in expected]


FLAKY_LIBRARY = """
def find(query, names, limit=None):
    if query == "boom":
        raise RuntimeError("the library fell over")
    if query == "odd":
        return [3]
    hits = [{"name": n, "file": "f.py", "line": 7} for n in names if n.startswith(query)]
    return hits[:limit] if limit else hits
"""


def test_a_failing_call_or_a_bad_hit_is_that_query_s_error_and_the_worker_goes_on(tmp_path):
    (tmp_path / "flaky.py").write_text(FLAKY_LIBRARY)
    stdin = _request("boom", id=0) + _request("odd", id=1) + "not json\n" + _request("tesl", id=2)
    proc = _worker(tmp_path, "--callable", "flaky:find", stdin=stdin, path=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[0] == {"id": 0, "error": "RuntimeError: the library fell over"}
    assert lines[1]["id"] == 1 and "a hit must be a name" in lines[1]["error"]
    assert "bad request" in lines[2]["error"]
    assert lines[3] == {"id": 2, "results": [{"name": "tesla", "file": "f.py", "line": 7}]}


@pytest.mark.parametrize(
    "target", ["nosuch_module_zz:find", "rapidfuzz.process:no_such_function", "rapidfuzz"]
)
def test_a_callable_that_cannot_be_loaded_is_one_line_on_stderr_and_exit_2(tmp_path, target):
    proc = _worker(tmp_path, "--callable", target, stdin=_request("tes"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"library worker: cannot load {target}: ")
    assert len(proc.stderr.splitlines()) == 1


def test_names_are_split_on_newlines_only(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("odd\u2028name\nplain\n\n", encoding="utf-8")
    assert read_names(path) == ["odd\u2028name", "plain"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "needs callable"),
        ('callable = "rapidfuzz.process"', "needs callable"),
        ("callable = 3", "needs callable"),
        ('callable = "a:b"\nbin = ["x"]', "unknown key 'bin' for kind 'python'"),
        ('callable = "a:b"\noptions = 3', "options must be a table"),
        ('callable = "a:b"\nenv = "X=1"', "env must be a table"),
    ],
)
def test_a_python_engine_table_that_cannot_run_names_the_key(text, message):
    with pytest.raises(RecallError, match=message):
        parse_engine(f'[engine]\nkind = "python"\n{text}\n'.encode(), "lib.toml")


def test_a_python_engine_runs_the_worker_of_the_tree_under_test():
    engine = load_preset("rapidfuzz")
    assert engine.kind == "python"
    assert engine.bin == tuple(worker_bin("recall.finders.kinds.python"))
    assert dict(engine.env)["PYTHONPATH"] == f"{{tree}}:{HARNESS_ROOT}"  # the tree's first
    assert "--callable" in engine.batch and "rapidfuzz.process:extract" in engine.batch


def _direct(preset: str):
    """The library call each preset makes, made here without the harness."""
    from rapidfuzz import fuzz, process

    if preset == "rapidfuzz":
        return lambda q, names: process.extract(q, names, limit=None)
    if preset == "rapidfuzz-partial":
        return lambda q, names: process.extract(q, names, scorer=fuzz.partial_ratio, limit=None)
    thefuzz_process = pytest.importorskip("thefuzz.process")
    return lambda q, names: thefuzz_process.extract(q, names, limit=None)


@pytest.mark.parametrize("preset", ["rapidfuzz", "rapidfuzz-partial", "thefuzz"])
def test_each_library_preset_on_gin_ranks_as_the_library_called_directly(
    preset, real_cache, gin, tmp_path
):
    call = _direct(preset)
    document = saved_gin_run(preset, real_cache, tmp_path)
    results = document["runs"][-1]["results"]
    names = tuple(distinct_names(checkout_symbols(gin, real_cache)))
    assert len(results) == len(document["rows"]) > 150
    for (_repo, query, _type, source), (rank, top, error, _off_corpus) in zip(
        document["rows"], results, strict=True
    ):
        hits = [hit[0] for hit in call(query, names)]
        assert error is None
        assert rank == hits.index(source) + 1, query
        assert [row[0] for row in top] == hits[:10], query


DYING_LIBRARY = """
import os

def find(query, names, limit=None):
    if query.startswith("t"):
        os._exit(3)
    return [n for n in names if n.lower().startswith(query[:1])][: limit or None]
"""


def _library_engine(tmp_path: Path, target: str) -> Path:
    (tmp_path / "dying.py").write_text(DYING_LIBRARY)
    engine = tmp_path / "engine.toml"
    engine.write_text(
        f'[engine]\nkind = "python"\ncallable = "{target}"\n'
        f'env = {{ PYTHONPATH = "{{tree}}:{tmp_path}" }}\n'
    )
    return engine


def test_a_library_that_kills_its_worker_costs_the_query_in_flight_only(real_cache, gin, tmp_path):
    engine = _library_engine(tmp_path, "dying:find")
    proc = run_cli(
        "--engine", str(engine), "--repo", "gin", "--type", "abbr3",
        "--cache", str(real_cache), "--json", "--no-regress",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)["runs"][0]
    queries = [row["query"] for row in run["error_rows"]]
    assert queries and all(q.startswith("t") for q in queries)
    assert all(row["error"].startswith("exit 3") for row in run["error_rows"])
    assert run["found"] > 0  # the restarted worker answered the queries after each death


def test_a_library_that_cannot_be_imported_is_exit_2_naming_it(real_cache, gin, tmp_path):
    engine = _library_engine(tmp_path, "nosuchmod_zz:find")
    proc = run_cli(
        "--engine", str(engine), "--repo", "gin", "--type", "abbr3",
        "--cache", str(real_cache), "--no-regress",
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"cannot import nosuchmod_zz; install: {sys.executable} -m pip install" in proc.stderr


def test_an_async_library_without_limit_whose_names_are_under_value_ranks_as_called(
    real_cache, gin, tmp_path
):
    """pfzy.fuzzy_match (the peers extra) is a coroutine function, takes no limit and
    returns dicts whose name is under "value": the engine says only name_key."""
    import asyncio

    pfzy = pytest.importorskip("pfzy")
    engine = tmp_path / "pfzy.toml"
    engine.write_text(
        '[engine]\nkind = "python"\ncallable = "pfzy:fuzzy_match"\nname_key = "value"\n'
    )
    saved = tmp_path / "saved.json"
    proc = run_cli(
        "--engine", str(engine), "--repo", "gin", "--type", "abbr3", "--cache", str(real_cache),
        "--save", str(saved), "--no-regress", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["runs"][0]["errors"] == 0
    document = json.loads(saved.read_text())
    names = list(distinct_names(checkout_symbols(gin, real_cache)))
    for (_repo, query, _type, source), (rank, top, _error, _off_corpus) in zip(
        document["rows"][:25], document["runs"][-1]["results"], strict=False
    ):
        hits = [hit["value"] for hit in asyncio.run(pfzy.fuzzy_match(query, list(names)))]
        assert rank == (hits.index(source) + 1 if source in hits else None), query
        assert [row[0] for row in top] == list(dict.fromkeys(hits))[:10], query


def test_the_worker_cuts_the_hits_of_a_function_without_limit_and_awaits_a_coroutine(tmp_path):
    (tmp_path / "lib.py").write_text(
        "async def find(query, names):\n"
        "    return [{'value': n} for n in names if query in n.lower()]\n"
    )
    stdin = _request("t", 2, id=0) + _request("t", 0, id=1)
    proc = _worker(tmp_path, "--callable", "lib:find", "--name-key", "value", stdin=stdin,
                   path=str(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first, every = (json.loads(line)["results"] for line in proc.stdout.splitlines())
    assert first == [{"name": "TestFloatLimits"}, {"name": "test_float_limits"}]
    assert [row["name"] for row in every] == ["TestFloatLimits", "test_float_limits", "tesla"]


WRAPPER = """
from rapidfuzz import process


def find(query, names, limit=None):
    '''The finder's own wrapper: its library's extract, names lowercased first.'''
    return [hit[0] for hit in process.extract(query, names, processor=str.lower, limit=limit)]
"""


@pytest.mark.parametrize("layout", ["root", "src"])
def test_a_wrapper_module_in_the_finder_s_own_tree_is_its_callable(
    layout, real_cache, gin, tmp_path
):
    """A finder's repo (not recall's) carries recall_wrapper.py at its root, or in src/
    named by path: the harness's worker imports it from the tree under test."""
    from conftest import make_repo
    from rapidfuzz import process

    module = "recall_wrapper.py" if layout == "root" else "src/recall_wrapper.py"
    path = "" if layout == "root" else 'path = ["src"]\n'
    toml = f'[engine]\nkind = "python"\ncallable = "recall_wrapper:find"\n{path}'
    finder = tmp_path / "finder"
    make_repo(finder, {module: WRAPPER, "recall.toml": toml})
    saved = tmp_path / "saved.json"
    proc = run_cli(
        "--finder", str(finder), "--repo", "gin", "--type", "abbr3", "--cache", str(real_cache),
        "--corpus", str(ROOT / "corpus.json"), "--queries", str(ROOT / "queries.tsv"),
        "--save", str(saved), "--no-regress", cwd=finder,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    document = json.loads(saved.read_text())
    names = tuple(distinct_names(checkout_symbols(gin, real_cache)))
    for (_repo, query, _type, source), (rank, _top, error, _off_corpus) in zip(
        document["rows"][:20], document["runs"][-1]["results"], strict=False
    ):
        hits = [h[0] for h in process.extract(query, names, processor=str.lower, limit=None)]
        assert error is None and rank == hits.index(source) + 1, query


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('path = ["/abs"]', "must be a folder inside the tree"),
        ('path = ["../up"]', "must be a folder inside the tree"),
        ("path = 3", "path must be a list"),
        ('name_key = ""', "name_key must be"),
    ],
)
def test_a_python_engine_s_path_and_name_key_are_checked(text, message):
    with pytest.raises(RecallError, match=message):
        parse_engine(f'[engine]\nkind = "python"\ncallable = "a:b"\n{text}\n'.encode(), "lib.toml")


# A finder whose repo has a top-level package `recall` of its own, unrelated to the harness.
FOREIGN_RECALL = {
    "recall/__init__.py": "# this finder's own package, which happens to be called recall\n",
    "recall/search.py": "def find(query, names, limit=None):\n"
    "    hits = sorted((n for n in names if query[:1] in n), key=lambda n: (len(n), n))\n"
    "    return hits[:limit] if limit else hits\n",
    "wrap.py": "from recall.search import find\n",
}


def _boot(tree: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """The worker started as a python engine's bin starts it, {tree} filled in."""
    filled = {"{python}": sys.executable, "{tree}": str(tree)}
    argv = [filled.get(part, part) for part in worker_bin("recall.finders.kinds.python")]
    names = tree.parent / "names.txt"
    names.write_text("".join(f"{n}\n" for n in NAMES))
    return subprocess.run(
        [*argv, "--names", str(names), *args], input=stdin, capture_output=True, text=True,
        timeout=60, env={"PYTHONPATH": f"{tree}:{HARNESS_ROOT}"}, cwd=tree,
    )  # fmt: skip


@pytest.mark.parametrize("target", ["wrap:find", "recall.search:find"])
def test_a_tree_with_a_recall_package_of_its_own_runs_the_harness_s_worker(tmp_path, target):
    """Was: `-m recall.finders.kinds.python` found the tree's recall first and every query
    failed (No module named 'recall.finders'), after the corpora were fetched."""
    tree = tmp_path / "finder"
    for name, text in FOREIGN_RECALL.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    proc = _boot(tree, "--callable", target, stdin=_request("t", id=0) + _request("f", 1, id=1))
    assert proc.returncode == 0, proc.stderr
    first, second = (json.loads(line)["results"] for line in proc.stdout.splitlines())
    assert [row["name"] for row in first] == ["tesla", "TestFloatLimits", "test_float_limits"]
    assert second == [{"name": "foo_bar"}]


def test_a_tree_that_is_recall_runs_its_own_worker(tmp_path):
    """A base of recall measures its own worker (the BOOT's `own` branch): here a tree
    whose worker answers one fixed name to every query."""
    tree = tmp_path / "recall-base"
    kinds = tree / "recall" / "finders" / "kinds"
    kinds.mkdir(parents=True)
    for folder in (tree / "recall", tree / "recall" / "finders", kinds):
        (folder / "__init__.py").write_text("")
    (kinds / "python.py").write_text(
        "import sys\n\ndef main(argv):\n"
        '    print(\'[{"name": "the base worker"}]\')\n    return 0\n'
    )
    proc = _boot(tree, "--callable", "rapidfuzz.process:extract", "--query", "tes")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [{"name": "the base worker"}]
    assert "import importlib" in BOOT  # the boot is code, not a file: nothing outside the key


def _library_world(tmp_path: Path, target: str, files: dict[str, str]) -> dict:
    """The tiny corpus, TINY_ROWS, and a finder repo of files whose engine calls target."""
    toml = f'[engine]\nkind = "python"\ncallable = "{target}"\n'
    return tiny_suite(tmp_path, TINY_ROWS, {**files, "recall.toml": toml})


def _run_world(world: dict, *extra: str) -> Ran:
    return run_cli(
        "--finder", str(world["finder"]), "--corpus", str(world["corpus"]),
        "--queries", str(world["queries"]), "--cache", str(world["cache"]), "--no-regress",
        *extra, cwd=world["finder"], env={"RECALL_MIRROR": ""},
    )  # fmt: skip


def test_a_finder_with_its_own_recall_package_is_measured_end_to_end(tmp_path):
    proc = _run_world(_library_world(tmp_path, "recall.search:find", FOREIGN_RECALL), "--json")
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)["runs"][0]
    assert run["errors"] == 0 and run["found"] == 2


CHATTY_LIBRARY = """
import os, subprocess
print("loading the chatty library")


def find(query, names, limit=None):
    print("searching for", query)
    os.write(1, b"from C, as it were\\n")
    subprocess.run(["echo", "a child's line"])
    return [n for n in names if n.lower().startswith(query[:2])][: limit or None]
"""


def test_what_a_library_prints_goes_to_stderr_and_the_answers_stay_in_step(tmp_path):
    """Was: print() in a wrapper put a line among the answers, and the run stopped with
    "answers are out of step" or "more answer lines than requests", saying nothing of
    the library. The worker keeps stdout for its answers: print(), a write to file
    descriptor 1 and a child's output all land on stderr."""
    (tmp_path / "chatty.py").write_text(CHATTY_LIBRARY)
    stdin = _request("te", id=0) + _request("fo", 1, id=1)
    proc = _worker(tmp_path, "--callable", "chatty:find", stdin=stdin, path=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert answers == [{"id": 0, "results": TE}, {"id": 1, "results": [{"name": "foo_bar"}]}]
    for said in ("loading the chatty library", "searching for fo", "from C", "a child's line"):
        assert said in proc.stderr
    one = _worker(tmp_path, "--callable", "chatty:find", "--query", "fo", path=str(tmp_path))
    assert one.returncode == 0 and json.loads(one.stdout) == [{"name": "foo_bar"}]


def test_a_finder_whose_library_prints_is_measured_end_to_end(tmp_path):
    world = _library_world(tmp_path, "chatty:find", {"chatty.py": CHATTY_LIBRARY})
    proc = _run_world(world, "--json")
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)["runs"][0]
    assert run["errors"] == 0 and run["first"] == 2


SHAPES_LIBRARY = """
def find(query, names, limit=None):
    hits = [n for n in names if n.lower().startswith(query[:2])]
    return {
        "str": hits[0], "bytes": hits[0].encode(), "dict": {n: 1 for n in hits},
        "set": set(hits), "none": None, "int": 3, "tuple": tuple(hits),
        "gen": (n for n in hits), "list": hits,
    }[query[2:]]
"""


def test_a_return_value_that_is_not_a_list_of_hits_is_that_query_s_error(tmp_path):
    """Was: a str was iterated a letter at a time (#1 0 of 84, errors 0, exit 0 on gin,
    whose single letters are names). A str, bytes, a dict, a set (no order), None or a
    number is that query's error; a list, a tuple or a generator is the hits."""
    (tmp_path / "shapes.py").write_text(SHAPES_LIBRARY)
    refused = ["str", "bytes", "dict", "set", "none", "int"]
    taken = ["tuple", "gen", "list"]
    stdin = "".join(_request(f"te{shape}", id=i) for i, shape in enumerate(refused + taken))
    proc = _worker(tmp_path, "--callable", "shapes:find", stdin=stdin, path=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = ["str", "bytes", "dict", "set", "NoneType", "int"]
    assert [line.get("error") for line in lines[: len(refused)]] == [
        f"TypeError: the function returned a value of type {kind}, not a list of hits "
        "(a single name is [name])"
        for kind in kinds
    ]
    assert [line.get("results") for line in lines[len(refused) :]] == [TE] * len(taken)


def test_a_function_returning_a_plain_name_is_refused_not_counted_as_misses(tmp_path):
    """The issue's case end to end: a corpus whose single letters are names (as gin's
    are), so the answers' letters name something and no off-corpus guard fires."""
    library = "def best(query, names, limit=None):\n    return names[0]\n"
    world = _library_world(tmp_path, "best:best", {"best.py": library})
    upstream = tmp_path / "upstream"
    (upstream / "lib" / "letters.py").write_text(
        "".join(f"def {c}():\n    pass\n\n\n" for c in "abcdefghlmnopstu_")
    )
    repo = git.Repo(upstream)
    repo.index.add(["lib/letters.py"])
    sha = repo.index.commit("single letters").hexsha
    corpus = json.loads(world["corpus"].read_text())
    corpus["tiny"]["sha"] = sha
    world["corpus"].write_text(json.dumps(corpus))
    proc = _run_world(world)
    assert proc.returncode == 2 and proc.stdout == ""
    # one line: the refusal, then the probe of one query alone (recall/running/probe.py)
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(
        "recall: candidate failed on 2 of 2 queries, so it cannot be measured; the first: "
        "finder error: TypeError: the function returned a value of type str, not a list of "
        "hits (a single name is [name]); one query (tiny 'alpfun') alone: "
    )
