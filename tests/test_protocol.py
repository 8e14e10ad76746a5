"""recall/finders/protocol.py: the batch protocol held to its contract by real misbehaving
finders (an answer out of step with its request is an error of the run, never a silent
shift onto the next query, and a finder that dies says how it died), and a JSON answer
ranked by name in one pass."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, needs_ctags

from recall.analysis.model import Hit, RunResult
from recall.errors import RecallError
from recall.finders.engine import load_engine
from recall.finders.protocol import rank_by_name, rank_json
from recall.inputs.queryset import QueryRow
from recall.inputs.symbols import checkout_symbols, distinct_names
from recall.running.measure import run_binary
from recall.running.values import Corpus, FinderBuild

# MODE "ids": answers {"id": I, "results": [...]}, I counted by the finder itself from 0,
# so a harness that expects any other numbering fails; "bare": the plain result list.
# The query says what goes wrong on it; with "bye" in MODE a line follows the last answer.
FINDER = r"""
import json
import sys, os, resource, signal, sys, time
names, mode = open(sys.argv[1]).read().splitlines(), sys.argv[2]
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file behind
if os.environ.get("PIDS"):  # which processes served the corpus
    with open(os.environ["PIDS"], "a") as log:
        log.write(f"{os.getpid()}\n")
if os.environ.get("DEAF"):  # reads no request at all
    time.sleep(300)

def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

for count, line in enumerate(sys.stdin):
    query = json.loads(line)["query"]
    time.sleep(float(os.environ.get("SLOW", "0")))
    hits = sorted((n for n in names if query.lower() in n.lower()), key=lambda n: (len(n), n))
    rows = [{"name": n} for n in hits]
    answer = {"id": count + (query == "wrongid"), "results": rows} if "ids" in mode else rows
    if query == "twice":
        send(answer)
    if query == "stray":
        print("loading the index...", flush=True)
    if query == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if query == "exit3":
        sys.exit(3)
    if query == "closeout":
        os.close(1)
        time.sleep(300)
    if query == "closethenexit":
        os.close(1)
        time.sleep(0.3)
        os._exit(4)
    if query == "hang":
        time.sleep(300)
    if query == "stop":
        send(answer)
        time.sleep(300)  # reads no more requests
    send(answer)
if "bye" in mode:
    print("bye", flush=True)
"""
ENGINE = """[engine]
bin = ["{python}", "FINDER"]
query = ["{bin}", "{query}"]
batch = ["{bin}", "{names}", "MODE"]
cwd = "{db}"
"""


@pytest.fixture(scope="module")
def gin_corpus(gin, real_cache: Path) -> dict[str, Corpus]:
    return {"gin": Corpus(gin, distinct_names(checkout_symbols(gin, real_cache)))}


# A --timeout no healthy answer comes near on a loaded machine (a process started after a
# fault answers its first query within it too). A test about a hang runs the hang alone:
# the finder hangs for ever, so a short timeout triggers whatever the load, and no healthy
# query has to beat it.
HEALTHY_S = 60.0


def _run(
    tmp_path: Path, corpora: dict, mode: str, queries: list[str], timeout: float = HEALTHY_S,
    jobs: int = 1, extra: str = "",
) -> RunResult:  # fmt: skip
    (tmp_path / "finder.py").write_text(FINDER)
    engine = ENGINE.replace("FINDER", str(tmp_path / "finder.py")).replace("MODE", mode)
    (tmp_path / "engine.toml").write_text(engine + extra)
    binary = FinderBuild("batchy", load_engine(tmp_path / "engine.toml"), tmp_path, sys.executable)
    rows = [QueryRow("gin", q, "exact", "Context") for q in queries]
    return run_binary(binary, rows, corpora, jobs=jobs, timeout=timeout)


# Enough rows for the workers that find no corpus left to start to join this one.
SHARDED = [q for k in range(30) for q in ("Context", "Engine", "Default", "Contex", "Render",
                                          "Bind", "Get")]  # fmt: skip
SHARDED[40], SHARDED[150] = "exit3", "segv"


def _pids(
    tmp_path: Path, corpora: dict, name: str, jobs: int, extra: str = ""
) -> tuple[RunResult, int]:
    """A run over SHARDED with the processes it started counted, with and without faults."""
    (tmp_path / name).mkdir()
    log = tmp_path / name / "pids"
    env = f'env = {{ PIDS = "{log}", SLOW = "0.002" }}\n'
    run = _run(tmp_path / name, corpora, "ids", SHARDED, jobs=jobs, extra=env + extra)
    return run, len(set(log.read_text().split()))


def test_jobs_share_a_corpus_among_batch_processes_that_answer_as_one_process_does(
    tmp_path, gin_corpus
):
    """With more jobs than corpora, the idle workers start batch processes of their own on
    the corpus, each drawing the next rows: the answers are one process's, faults too."""
    one, started_one = _pids(tmp_path, gin_corpus, "one", jobs=1)
    three, started_three = _pids(tmp_path, gin_corpus, "three", jobs=3)
    assert three.results == one.results
    assert _errors(three, SHARDED).keys() == {"exit3", "segv"}
    # one process, and two more after each fault (the retry, which dies too, then one for
    # the rest); with three jobs, the other workers' processes too (two of them, unless the
    # rows ran out before one joined)
    assert started_one == 5 and started_three in (6, 7)
    single, started = _pids(tmp_path, gin_corpus, "single", 3, extra="batch_jobs = false\n")
    assert single.results == one.results and started == 5


def _errors(run: RunResult, queries: list[str]) -> dict[str, str]:
    return {queries[i]: r.error for i, r in enumerate(run.results) if r.error}


@pytest.mark.parametrize(
    ("mode", "fault", "message"),
    [
        ("ids", "stray", "the answer for id 3 (query 'Context') carries id 2"),
        ("ids", "twice", "the answer for id 3 (query 'Context') carries id 2"),
        ("ids", "wrongid", "the answer for id 2 (query 'wrongid') carries id 3"),
        ("bare", "twice", "1 answer line more than the 5 requests"),
        ("bare", "stray", "1 answer line more than the 5 requests"),
        ("bare-bye", "Context", "1 answer line more than the 5 requests"),
    ],
)
def test_an_answer_out_of_step_with_its_request_is_a_run_error(
    tmp_path, gin_corpus, mode, fault, message
):
    queries = ["Context", "Context", fault, "Context", "Engine"]
    with pytest.raises(RecallError) as caught:
        _run(tmp_path, gin_corpus, mode, queries)
    text = str(caught.value)
    assert message in text, text
    assert text.startswith("batch finder batchy (") and " on gin: " in text
    assert "\n" not in text


def test_the_first_surplus_line_is_quoted(tmp_path, gin_corpus):
    with pytest.raises(RecallError, match=r"the first: 'bye'"):
        _run(tmp_path, gin_corpus, "bare-bye", ["Context"])


def test_ids_count_from_zero_in_each_restarted_process(tmp_path, gin_corpus):
    queries = ["Context", "exit3", "Context", "Engine", "exit3", "Context"]
    run = _run(tmp_path, gin_corpus, "ids", queries)
    assert [r.error is not None for r in run.results] == [False, True, False, False, True, False]
    assert [r.rank for r in run.results if not r.error] == [1, 1, None, 1]


def test_answers_with_ids_rank_as_bare_lists_do(tmp_path, gin_corpus):
    queries = ["Context", "Engine", "Default", "Contex"]
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
    with_ids = _run(tmp_path / "a", gin_corpus, "ids", queries)
    bare = _run(tmp_path / "b", gin_corpus, "bare", queries)
    assert with_ids.results == bare.results
    assert with_ids.errors == 0


def test_a_batch_finder_that_dies_says_how(tmp_path, gin_corpus):
    """Each death says how, and the healthy query after it is answered by a fresh process.
    The hang runs on its own: the only query that waits for the timeout, it cannot pass for
    a healthy one on a loaded machine (the issue's flake: at a 0.5 s timeout under load
    15, a healthy query timed out), and the others have a timeout they never come near."""
    faults = ["segv", "exit3", "closeout", "closethenexit"]
    queries = [q for fault in faults for q in (fault, "Context")]
    run = _run(tmp_path, gin_corpus, "ids", queries)
    errors = _errors(run, queries)
    assert set(errors) == set(faults)
    assert errors["segv"].startswith("killed by signal SIGSEGV")
    assert errors["exit3"].startswith("exit 3")
    assert errors["closeout"].startswith("closed its stdout")
    assert errors["closethenexit"].startswith("exit 4")  # a crash is never read as a hang
    assert {r.rank for r in run.results if not r.error} == {1}
    (tmp_path / "hang").mkdir()
    (hung,) = _run(tmp_path / "hang", gin_corpus, "ids", ["hang"], timeout=1).results
    assert hung.error is not None and hung.error.startswith("timed out after 1 s")


def test_a_batch_finder_that_stops_reading_times_out_on_that_query(tmp_path, gin_corpus):
    """A request larger than a pipe holds, to a finder that reads no more: the write is
    bounded by --timeout as the answer is. The finder reads nothing at all, so the query
    is the only one to wait for the timeout (after a hang the rest goes to a fresh
    process: test_measure's batch faults)."""
    huge = "x" * (1 << 20)
    run = _run(tmp_path, gin_corpus, "ids", [huge], timeout=1, extra='env = { DEAF = "1" }\n')
    (result,) = run.results
    assert result.rank is None and result.error is not None
    assert result.error.startswith("timed out after 1 s (it stopped reading its requests)")


def test_an_index_step_killed_by_a_signal_says_which(tmp_path, gin_corpus):
    from recall.running.session import Session

    (tmp_path / "engine.toml").write_text(
        '[engine]\nbin = ["{python}"]\nquery = ["{bin}", "{query}"]\n'
        'index = ["{bin}", "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]\n'
        'cwd = "{db}"\n'
    )
    session = Session(
        FinderBuild("idx", load_engine(tmp_path / "engine.toml"), tmp_path, sys.executable),
        gin_corpus["gin"],
        1,
    )
    try:
        with pytest.raises(
            RecallError, match=r"index gin with idx failed \(killed by signal SIGKILL\)"
        ):
            session.index()
    finally:
        session.close()


def test_corpora_measured_side_by_side_answer_as_one_after_another(tmp_path, gin_corpus):
    """Two corpora (gin under two names) with --jobs 2: one batch process each at once, and
    the results of --jobs 1 row for row, faults included."""
    corpora = {"gin": gin_corpus["gin"], "gin2": gin_corpus["gin"]}
    mine = {"gin": ["Context", "exit3", "Engine", "Render", "segv", "Bind"],
            "gin2": ["Default", "Get", "segv", "Context", "Bind", "exit3"]}  # fmt: skip
    rows = [QueryRow(repo, mine[repo][i], "exact", "Context") for i in range(6) for repo in mine]
    runs = []
    for jobs in (1, 2):
        folder = tmp_path / f"jobs{jobs}"
        folder.mkdir()
        (folder / "finder.py").write_text(FINDER)
        engine = ENGINE.replace("FINDER", str(folder / "finder.py")).replace("MODE", "ids")
        (folder / "engine.toml").write_text(engine + f'env = {{ PIDS = "{folder / "pids"}" }}\n')
        binary = FinderBuild("batchy", load_engine(folder / "engine.toml"), folder, sys.executable)
        runs.append(run_binary(binary, rows, corpora, jobs=jobs, timeout=HEALTHY_S))
        # one process a corpus, and two more after each fault (the retry, which dies too,
        # then a process for the rest) but gin2's last row (the retry only)
        assert len(set((folder / "pids").read_text().split())) == 5 + 4
    assert runs[1].results == runs[0].results
    assert [r.error is not None for r in runs[1].results] == [
        row.query in ("exit3", "segv") for row in rows
    ]
    assert runs[1].results[0].rank == 1 and runs[1].results[1].rank is None  # Context, Default


def test_a_run_error_on_one_corpus_ends_the_queries_of_the_others_at_once(tmp_path, gin_corpus):
    """gin2's finder answers out of step, an error of the whole run, while gin's hangs on a
    query that --timeout would allow a minute: the run ends with the error, not after it."""
    corpora = {"gin": gin_corpus["gin"], "gin2": gin_corpus["gin"]}
    rows = [QueryRow("gin", q, "exact", "Context") for q in ("Context", "hang", "Engine")]
    rows += [QueryRow("gin2", q, "exact", "Context") for q in ("Context", "wrongid")]
    (tmp_path / "finder.py").write_text(FINDER)
    engine = ENGINE.replace("FINDER", str(tmp_path / "finder.py")).replace("MODE", "ids")
    (tmp_path / "engine.toml").write_text(engine)
    binary = FinderBuild("batchy", load_engine(tmp_path / "engine.toml"), tmp_path, sys.executable)
    started = time.monotonic()
    with pytest.raises(RecallError, match="carries id 2"):
        run_binary(binary, rows, corpora, jobs=2, timeout=60)
    assert time.monotonic() - started < 20


MISSING_CWD = ('cwd = "{db}/missing"\n', r"cwd /\S+/missing does not exist")
CWD_A_FILE = ('cwd = "{tree}/engine.toml"\n', r"cwd TREE/engine.toml is not a folder")
MISSING_STDIN = ('stdin = "{db}/missing.txt"\n', r"stdin /\S+/missing.txt does not exist")


@pytest.mark.parametrize(
    ("keys", "message", "batch"),
    # a batch process reads the harness's pipe, never the stdin file
    [(*MISSING_CWD, False), (*CWD_A_FILE, False), (*MISSING_STDIN, False),
     (*MISSING_CWD, True), (*CWD_A_FILE, True)],
)  # fmt: skip
def test_a_missing_cwd_or_stdin_names_the_engine_key_and_the_path(
    tmp_path, gin_corpus, keys, message, batch
):
    """Issue 31 class 11: the spawn's ENOENT read `cannot start python3`, blaming the
    program; it is the engine description's key and path, an error of the run."""
    engine = tmp_path / "engine.toml"
    engine.write_text(
        '[engine]\nbin = ["{python}", "-c", "print(1)"]\nquery = ["{bin}", "{query}"]\n'
        + ('batch = ["{bin}"]\n' if batch else "")
        + keys
    )
    binary = FinderBuild("misplaced", load_engine(engine), tmp_path, sys.executable)
    rows = [QueryRow("gin", "Context", "exact", "Context")]
    with pytest.raises(RecallError) as caught:
        run_binary(binary, rows, gin_corpus, jobs=1, timeout=60)
    expected = f"engine {re.escape(str(engine))}: " + message.replace(
        "TREE", re.escape(str(tmp_path))
    )
    assert re.fullmatch(expected, str(caught.value)), str(caught.value)


# Requests each server must refuse alike: a bool is no limit (JSON's true is not 1), and
# every fault of the request names itself the same way whoever serves it.
BAD_REQUESTS = [
    '{"id": 1, "query": "parse", "limit": true}',
    "not json",
    "[1, 2]",
    '{"id": 2, "limit": 3}',
    '{"id": 3, "query": "parse", "limit": -1}',
    '{"id": 4, "query": 7}',
]


def _serve(argv: list[str], lines: list[str]) -> list[dict]:
    proc = subprocess.run(
        argv, input="".join(f"{line}\n" for line in lines), capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.slow
@needs_ctags
def test_the_reference_finder_and_a_library_worker_refuse_bad_requests_alike(tmp_path):
    """One server loop (protocol.serve) behind both: the same bad line gets the same error
    line, its id echoed, and the next request is answered."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "mod.py").write_text("def parse_config(): pass\n")
    db, names = tmp_path / "mod.db", tmp_path / "names.txt"
    reference = [sys.executable, "-m", "recall.finders.reference"]
    index = [*reference, "index", str(tree), "--language", "python", "--db", str(db)]
    subprocess.run(index, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, timeout=120)
    names.write_text("parse_config\n")
    worker = [sys.executable, "-m", "recall.finders.kinds.python", "--names", str(names),
              "--callable", "rapidfuzz.process:extract"]  # fmt: skip
    lines = [*BAD_REQUESTS, '{"id": 5, "query": "parse", "limit": 1}']
    by_reference = _serve([*reference, "query", "--batch", "--db", str(db)], lines)
    by_worker = _serve(worker, lines)
    assert by_reference[:-1] == by_worker[:-1]
    assert [answer.get("id") for answer in by_worker] == [1, None, None, 2, 3, 4, 5]
    assert all(answer["error"].startswith("bad request") for answer in by_worker[:-1])
    assert by_reference[-1]["results"][0]["name"] == by_worker[-1]["results"][0]["name"]


# A JSON answer is ranked in one pass that makes Hits of the top 10 only: it must rank
# exactly as rank_by_name does over every row made a Hit, and still refuse a bad row
# anywhere in the list; an answer that names nothing in the corpus is flagged.


def _rows(names: list[str]) -> list[dict]:
    return [{"name": n, "file": f"f{k}.py", "line": k} for k, n in enumerate(names)]


def _as_hits(rows: list[dict]) -> list[Hit]:
    return [Hit(r["name"], r.get("file"), r.get("line")) for r in rows]


@pytest.mark.parametrize(
    ("names", "source"),
    [
        (["a", "a", "b", "c"], "c"),  # a duplicate before the source
        ([f"n{k}" for k in range(30)], "n3"),  # found early, the top 10 filled after it
        ([f"n{k}" for k in range(30)], "n25"),  # found beyond the top 10
        ([f"n{k % 12}" for k in range(40)], "n11"),  # repeats all through the list
        (["x", "y"], "zzz"),  # not found
        ([], "a"),
    ],
)
def test_rank_json_ranks_as_rank_by_name_over_every_row(names, source):
    rows = _rows(names)
    assert rank_json(rows, source) == rank_by_name(_as_hits(rows), source)


def test_a_row_whose_file_or_line_has_the_wrong_type_keeps_its_name_only():
    rows = [{"name": "a", "file": 3, "line": True}, {"name": "b", "line": 2.5}]
    assert rank_json(rows, "b").top == (Hit("a", None, None), Hit("b", None, None))


@pytest.mark.parametrize("bad", [{"name": 7}, {"file": "x"}, "a", None])
def test_a_bad_row_after_the_source_and_a_full_top_10_is_still_an_error(bad):
    rows = [*_rows([f"n{k}" for k in range(20)]), bad]
    with pytest.raises(ValueError):
        rank_json(rows, "n0")


def test_an_answer_that_is_not_a_list_is_an_error():
    with pytest.raises(ValueError):
        rank_json({"name": "a"}, "a")


CORPUS = frozenset({"Context", "Copy", "New"})


@pytest.mark.parametrize(
    ("names", "off_corpus"),
    [
        (["1.895000", "1.200000"], True),  # fzy --show-scores read as lines: scores, no names
        (["0.9", "Context"], False),  # one name of the corpus is enough
        ([f"n{k}" for k in range(40)] + ["Copy"], False),  # found past the top 10
        ([], False),  # an empty answer is empty, not off the corpus
    ],
)
def test_an_answer_of_which_no_row_is_a_corpus_name_is_off_corpus(names, off_corpus):
    rows = _rows(names)
    assert rank_json(rows, "Copy", CORPUS).off_corpus is off_corpus
    assert rank_by_name(_as_hits(rows), "Copy", CORPUS).off_corpus is off_corpus


def test_a_corpus_name_after_the_source_and_a_full_top_10_still_counts():
    """The search for a corpus name goes on past the point where ranking stops."""
    rows = _rows(["zz", *(f"n{k}" for k in range(20)), "New"])
    result = rank_json(rows, "zz", CORPUS)
    assert (result.rank, result.off_corpus) == (1, False)
    assert rank_by_name(_as_hits(rows), "zz", CORPUS) == result


def test_without_the_corpus_names_nothing_is_flagged():
    assert not rank_json(_rows(["1.0"]), "Copy").off_corpus
