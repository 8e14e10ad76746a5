import json
import re
import shutil
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, make_repo, needs_tool, run_cli, tiny_suite

from recall.analysis.model import Hit
from recall.finders.protocol import rank_by_name

FINDER = r"""
import json, os, subprocess, sys, time
query = sys.argv[1]
names = [n for n in open(sys.argv[2]).read().splitlines()]
if query == "crash":
    raise SystemExit("boom: crashed on purpose")
if query == "exit3":
    sys.exit(3)
if query == "segv":
    import resource, signal
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file in the checkout
    os.kill(os.getpid(), signal.SIGSEGV)
if query == "hang":
    child = subprocess.Popen(["sleep", "300"])
    open(os.path.join(os.environ["PIDDIR"], "hang"), "w").write(str(child.pid))
    time.sleep(300)
if query == "closehang":
    os.close(1)
    os.close(2)
    time.sleep(300)
if query == "garbage":
    print("this is not json")
    sys.exit(0)
if query == "badutf8":
    sys.stdout.buffer.write(b'[{"name": "\xff"}]')
    sys.exit(0)
if query == "bgchild":
    child = subprocess.Popen(["sleep", "300"])
    open(os.path.join(os.environ["PIDDIR"], "bgchild"), "w").write(str(child.pid))
if query == "huge":
    print(json.dumps([{"name": f"n{i}", "file": "x", "line": i} for i in range(200000)]))
    sys.exit(0)
hits = [n for n in names if query.lower().replace("*", "") in n.lower()]
hits.sort(key=lambda n: (len(n), n))
print(json.dumps([{"name": n, "file": None, "line": None} for n in hits]))
"""

ENGINE = """[engine]
bin = ["{python}", "{tree}/finder.py"]
query = ["{bin}", "{query}", "{names}"]
output = "json"
pass_env = ["PIDDIR"]
"""


def test_rank_is_by_distinct_name():
    hits = [Hit("a", "x", 1), Hit("a", "y", 2), Hit("b", None, None), Hit("c", None, None)]
    result = rank_by_name(hits, "c")
    assert result.rank == 3
    assert [h.name for h in result.top] == ["a", "b", "c"]
    assert result.top[0].file == "x"
    assert rank_by_name(hits, "zzz").rank is None


@pytest.fixture
def misbehaving(tmp_path: Path) -> Path:
    make_repo(tmp_path / "finder", {"finder.py": FINDER, "recall.toml": ENGINE})
    return tmp_path / "finder"


def test_misbehaving_finder_is_reported_per_query(misbehaving, tmp_path, real_cache, gin):
    queries = tmp_path / "q.tsv"
    bad = ["crash", "exit3", "segv", "hang", "closehang", "garbage", "badutf8", "bgchild", "huge"]
    lines = ["repo\tquery\ttype\tsource", "gin\tContext\texact\tContext"]
    lines += [f"gin\t{q}\texact\tContext" for q in bad]
    queries.write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    proc = run_cli(
        "--finder", str(misbehaving), "--queries", str(queries), "--corpus",
        str(ROOT / "corpus.json"), "--cache", str(real_cache), "--timeout", "5",
        "--json", "--allow-empty", cwd=misbehaving, env={"PIDDIR": str(tmp_path)},
    )  # fmt: skip
    assert time.monotonic() - started < 60
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    run = report["runs"][0]
    assert run["first"] == 1  # the good query still ranks
    errors = {e["query"]: e["error"] for e in run["error_rows"]}
    # bgchild answered and exited: its answer counts, its leftover child is killed
    assert set(errors) == {"crash", "exit3", "segv", "hang", "closehang", "garbage", "badutf8"}
    assert "boom: crashed on purpose" in errors["crash"]
    assert errors["exit3"].startswith("exit 3")
    assert errors["segv"].startswith("killed by signal SIGSEGV")
    assert errors["hang"].startswith("timed out")
    assert errors["closehang"].startswith("timed out")  # pipes closed, process still alive
    assert "unparseable" in errors["garbage"]
    assert run["errors"] == 7
    # huge listed n0, n1, ...: no name of gin, counted and shown, not refused (1 of 2)
    assert run["off_corpus"] == 1
    assert run["off_corpus_first"] == [
        {"repo": "gin", "query": "huge", "type": "exact", "answer": "n0"}
    ]
    for name in ("hang", "bgchild"):  # the whole process group died, children included
        pid = int((tmp_path / name).read_text())
        assert not Path(f"/proc/{pid}").exists() or "Z" in _state(pid), name


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_engine_that_returns_nothing_is_suspect(misbehaving, tmp_path, real_cache, gin):
    queries = tmp_path / "q.tsv"
    queries.write_text("repo\tquery\ttype\tsource\ngin\tqqqqzz\texact\tContext\n")
    args = ["--finder", str(misbehaving), "--queries", str(queries), "--corpus",
            str(ROOT / "corpus.json"), "--cache", str(real_cache)]  # fmt: skip
    proc = run_cli(*args, cwd=misbehaving)
    assert proc.returncode == 2
    assert "engine description is probably wrong" in proc.stderr
    assert proc.stdout == ""


@needs_tool("fzy")
def test_fzy_with_show_scores_reads_scores_as_names_and_is_refused(tmp_path, real_cache, gin):
    """Issue 31, class 7: every line is `SCORE<TAB>name`, and `output = "lines"` takes the
    score for the name, so both sides found 0% and --fail-on-loss exited 0."""
    preset = (ROOT / "recall" / "finders" / "presets" / "fzy.toml").read_text()
    scores = preset.replace('"--show-matches={query}"', '"--show-scores", "--show-matches={query}"')
    assert scores != preset
    engine = tmp_path / "fzy-scores.toml"
    engine.write_text(scores)
    proc = run_cli(
        "--engine", str(engine), "--base-bin", shutil.which("fzy") or "fzy", "--repo", "gin",
        "--type", "abbr3", "--cache", str(real_cache), "--fail-on-loss", "--json",
        "--same-program-ok",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert re.fullmatch(
        r"recall: base: 84 of the 84 answers that listed anything name nothing in the "
        r"corpus \(the first begin '\d+\.\d+', '\d+\.\d+', '\d+\.\d+'\): the engine "
        r"description is probably wrong \(does its output give names\?\); one query \(gin "
        r"'\w+'\) alone: exit 0, \d+ names listed, none a name of the corpus \(the first "
        r"'\d+\.\d+'\); its stderr: \(nothing\); run it yourself: .*--show-scores.*\n",
        proc.stderr,
    ), proc.stderr
    assert proc.stdout == ""


BATCH_FINDER = r"""
import json, sys, time
names = open(sys.argv[1]).read().splitlines()
for line in sys.stdin:
    query = json.loads(line)["query"]
    if query == "crash":
        sys.exit("boom: crashed on purpose")
    if query == "hang":
        time.sleep(300)
    if query == "garbage":
        print("this is not json", flush=True)
        continue
    if query == "refuse":
        print(json.dumps({"error": "refused on purpose"}), flush=True)
        continue
    if query == "noisy":  # more than a pipe holds, before answering
        sys.stderr.write("log line\n" * 50000)
        sys.stderr.flush()
        query = "Context"
    if query == "huge":  # one answer line of several MiB
        hits = [f"n{i}" for i in range(150000)] + ["Context"]
    else:
        hits = sorted((n for n in names if query.lower() in n.lower()), key=lambda n: (len(n), n))
    print(json.dumps([{"name": n} for n in hits]), flush=True)
"""


def test_batch_faults_are_the_query_in_flight_and_the_rest_is_answered(tmp_path, real_cache, gin):
    from recall.finders.engine import load_engine
    from recall.inputs.queryset import QueryRow
    from recall.inputs.symbols import checkout_symbols, distinct_names
    from recall.running.measure import run_binary
    from recall.running.values import Corpus, FinderBuild

    (tmp_path / "finder.py").write_text(BATCH_FINDER)
    (tmp_path / "engine.toml").write_text(
        '[engine]\nbin = ["{python}", "%s"]\nquery = ["{bin}", "{query}"]\n'
        'batch = ["{bin}", "{names}"]\n' % (tmp_path / "finder.py")
    )
    binary = FinderBuild("batch", load_engine(tmp_path / "engine.toml"), tmp_path, sys.executable)
    corpora = {"gin": Corpus(gin, distinct_names(checkout_symbols(gin, real_cache)))}
    # hang right after crash: the first query of the process after crash's retry, so it
    # times out once (a query that is not a process's first is retried, timing out twice)
    queries = ["Context", "crash", "hang", "Context", "Context", "garbage", "refuse",
               "noisy", "huge"] + ["Context"] * 40  # fmt: skip
    rows = [QueryRow("gin", q, "exact", "Context") for q in queries]
    run = run_binary(binary, rows, corpora, jobs=1, timeout=5)
    errors = {rows[i].query: r.error for i, r in enumerate(run.results) if r.error}
    assert set(errors) == {"crash", "hang", "garbage", "refuse"}
    assert errors["crash"].startswith("exit 1: boom: crashed on purpose")
    assert errors["hang"].startswith("timed out after 5 s")
    assert errors["garbage"].startswith("unparseable output")
    assert errors["refuse"] == "finder error: refused on purpose"
    ranks = [r.rank for r in run.results]
    assert ranks[queries.index("huge")] == 150001  # the huge line, whole
    ranks_of_context = {ranks[i] for i, q in enumerate(queries) if q in ("Context", "noisy")}
    assert ranks_of_context == {1}  # every query after a crash or hang is answered again


FIFTH_FINDER = r"""
import json, os, sys
names = open(sys.argv[1]).read().splitlines()
for count, line in enumerate(sys.stdin, 1):
    request = json.loads(line)
    query = request["query"]
    if query == "kills-every-process":
        sys.stderr.write("died on purpose\n")
        os._exit(7)
    letters = query.replace("*", "")
    hits = sorted((n for n in names if letters[:2] in n.lower()), key=lambda n: (len(n), n))
    sys.stdout.write(json.dumps({"id": request["id"], "results": [{"name": n} for n in hits]}))
    sys.stdout.write("\n")
    sys.stdout.flush()
    if count % 5 == 0:
        os._exit(0)  # dies after every fifth answer: how many a process answers decides
"""


def _numbers_only(report: dict) -> dict:
    """A report without what depends on how the rows were shared among processes: its
    seconds, and how many processes died and were started again (a finder that dies after
    its fifth answer dies at other rows with --jobs 2)."""
    for run in report["runs"]:
        del run["index_s"], run["query_s"], run["restarts"]
    return report


def test_jobs_give_the_numbers_of_one_job_with_a_finder_that_dies_every_fifth_answer(
    tmp_path, real_cache, gin
):
    """Issue 31, class 8: which rows a process answers differs with --jobs, so a finder
    that counts its answers used to fail on other rows. A row whose process died after
    answering others is retried as the first row of a fresh process: no row is lost, and
    a row that kills every process is an error with any --jobs."""
    (tmp_path / "finder.py").write_text(FIFTH_FINDER)
    engine = tmp_path / "fifth.toml"
    engine.write_text(
        '[engine]\nbin = ["{python}", "-I", "-S", "%s"]\nquery = ["{bin}", "{query}"]\n'
        'batch = ["{bin}", "{names}"]\n' % (tmp_path / "finder.py")
    )
    rows = [line for line in (ROOT / "queries.tsv").read_text().splitlines()[1:]
            if line.startswith("gin\t") and line.split("\t")[2] == "abbr3"]  # fmt: skip
    rows.insert(40, "gin\tkills-every-process\texact\tContext")
    queries = tmp_path / "queries.tsv"
    queries.write_text("repo\tquery\ttype\tsource\n" + "\n".join(rows) + "\n")
    reports = []
    for jobs in ("1", "2"):  # 2: the second worker joins gin, drawing rows from its feed
        proc = run_cli(
            "--engine", str(engine), "--queries", str(queries), "--cache", str(real_cache),
            "--jobs", jobs, "--json", "--no-cache",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        reports.append(_numbers_only(json.loads(proc.stdout)))
    assert reports[1] == reports[0]
    run = reports[0]["runs"][0]
    assert [(e["query"], e["error"]) for e in run["error_rows"]] == [
        ("kills-every-process", "exit 7: died on purpose")
    ]
    assert run["found"] > 0


HANGING_BATCH = r"""
import json, sys, time
names = open(sys.argv[1]).read().splitlines()
for line in sys.stdin:
    request = json.loads(line)
    if request["query"].startswith("hang"):
        time.sleep(300)
    if request["query"] == "crash":
        sys.exit("crashed on purpose")
    hits = [{"name": n} for n in names if request["query"] in n]
    print(json.dumps({"id": request["id"], "results": hits}), flush=True)
"""
HANGING_ENGINE = """[engine]
bin = ["{python}", "{tree}/finder.py"]
query = ["{bin}", "{names}", "{query}"]
batch = ["{bin}", "{names}"]
"""


def test_restarts_of_a_batch_process_are_counted_and_shown_in_every_report(tmp_path):
    """Was: 42 timeout-and-restart cycles of a language server in one run (142 s) were
    reported nowhere. Here the process answers alpha, times out on hang (not its first
    query: started again, #1), times out on hang as the first query of the next (its
    error; started again, #2), answers beta, dies on crash (#3), dies on it again as the
    first query (its error; #4), and the fifth process answers the rest."""
    rows = [f"{q}\texact\t{s}" for q, s in [
        ("alpha", "alpha_function"), ("hang", "gamma_delta"), ("beta", "BetaClass"),
        ("crash", "gamma_delta"), ("gamma", "gamma_delta"), ("epsilon", "epsilon_value"),
    ]]  # fmt: skip
    world = tiny_suite(tmp_path, rows, {"finder.py": HANGING_BATCH, "recall.toml": HANGING_ENGINE})
    saved = tmp_path / "saved.json"
    page = tmp_path / "page.html"
    common = ("--corpus", str(world["corpus"]), "--queries", str(world["queries"]),
              "--cache", str(world["cache"]), "--no-regress")  # fmt: skip
    proc = run_cli(
        "--finder", str(world["finder"]), *common, "--timeout", "1", "--jobs", "1", "--json",
        "--save", str(saved), "--html", str(page), cwd=world["finder"],
        env={"RECALL_MIRROR": ""},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)["runs"][0]
    assert (run["restarts"], run["errors"], run["first"]) == (4, 2, 3)  # beta: no BetaClass
    line = "candidate: its batch process was started again 4 times, after a death or a timeout"
    assert f"<p>{line}</p>" in page.read_text()
    merged = run_cli("merge", str(saved), *common, "--markdown", cwd=world["finder"])
    assert merged.returncode == 0, merged.stderr
    assert f"\n\n{line}\n" in merged.stdout
    text = run_cli("merge", str(saved), *common, cwd=world["finder"])
    assert f"\n\n{line}\n" in text.stdout


BATCH_LISTS = r"""
import sys, time
names = open(sys.argv[2]).read().split("\n")
if sys.argv[1] == "index":
    if "bad" in names:
        sys.exit("cannot index the list holding bad")
    time.sleep(30)  # still indexing when the other list's index fails
"""


def test_the_first_failure_of_a_batch_run_is_its_error_not_a_process_it_had_killed(tmp_path):
    """With --jobs 2 two lists index at once; when one index fails, the other's process is
    killed (SIGKILL), and its death must not stand in for the cause (it did: `failed
    (killed by signal SIGKILL)`, depending on which worker's error came first)."""
    finder = tmp_path / "finder"
    engine = (
        "[engine]\n"
        f'bin = ["{sys.executable}", "{{tree}}/lists.py"]\n'
        'index = ["{bin}", "index", "{names}"]\n'
        'query = ["{bin}", "query", "{names}", "{query}"]\n'
        'batch = ["{bin}", "batch", "{names}"]\n'
    )
    make_repo(finder, {"lists.py": BATCH_LISTS, "recall.toml": engine})
    judgments = tmp_path / "mine.tsv"
    judgments.write_text(
        "domain\tquery\tpreferred\tother\tsource\n"
        "symbol\tq\tbad\tbadder\ta/b t\n"  # the lighter list (two names): it fails at once
        "symbol\tr\tr1\tr2\ta/b t\nsymbol\tr\tr1\tr3\ta/b t\nsymbol\tr\tr2\tr3\ta/b t\n"
    )
    started = time.perf_counter()
    proc = run_cli("--cache", str(tmp_path / "cache"), "--finder", str(finder), "--queries",
                   str(judgments), "--jobs", "2")  # fmt: skip
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("recall: index judged-") and "failed (exit 1)" in line, line
    assert "cannot index the list holding bad" in line and "SIGKILL" not in line
    assert time.perf_counter() - started < 25  # the sleeping index was killed, not awaited
