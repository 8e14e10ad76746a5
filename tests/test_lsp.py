"""kind = "lsp": the adapter as a real process in front of real language servers, the
real jedi-language-server over a fixture repository, small servers written here that
crash, never become ready or answer an error object, and the engine table."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, make_repo, run_cli

from recall.errors import RecallError
from recall.finders.engine import load_preset, parse_engine, uses_node_modules
from recall.finders.kinds.adapter import worker_bin
from recall.finders.requirements import APT_PACKAGES, engine_needs

HAVE_JEDI = importlib.util.find_spec("jedi_language_server") is not None
needs_jedi = pytest.mark.skipif(
    not HAVE_JEDI,
    reason="jedi-language-server is not installed (pip install -e '.[peers]'; .ci/run installs it)",
)
JEDI = [sys.executable, "-c", "from jedi_language_server.cli import cli; cli()"]
HAVE_BASEDPYRIGHT = importlib.util.find_spec("basedpyright") is not None
BASEDPYRIGHT = [
    sys.executable, "-c", "import sys; from basedpyright.langserver import main; sys.exit(main())",
    "--stdio",
]  # fmt: skip

FIXTURE = {
    "limits.py": "class TestFloatLimits:\n    pass\n\n\ndef float_limits():\n    return 1\n",
    "pkg/__init__.py": "",
    "pkg/helpers.py": "import os\n\n\ndef float_helper():\n    return os.sep\n",
    **{
        f"many/mod{i:02}.py": "".join(f"def func_{i:02}_{j}():\n    pass\n" for j in range(2))
        for i in range(15)
    },
}

# A language server in a few lines of Python, speaking Content-Length JSON-RPC on stdio.
# It answers every name of argv[1] that holds the query as a subsequence, ignoring case, in
# the file's order, as SymbolInformation, and as WorkspaceSymbol (location without range)
# for a query starting with "w". Before it answers initialize it asks the client what an
# editor is asked, and it writes its pid, the initialize params and the client's answers to
# argv[2]. argv[3] picks a fault: "crash" exits 7 on a query starting with "t" that is not
# a name (the adapter's readiness probes are names), "never" answers nothing ever, "error"
# answers queries starting with "bad" with an error object, "linger" outlives the end of
# its stdin.
SERVER = r"""
import json, os, sys, time

names_path, log_path, mode = sys.argv[1:4]
names = [n for n in open(names_path).read().split("\n") if n]
inp, out = sys.stdin.buffer, sys.stdout.buffer
log = open(log_path, "a")

def read():
    length = None
    while True:
        line = inp.readline()
        if not line:
            if mode == "linger":  # a server that does not notice its client is gone
                time.sleep(600)
            sys.exit(0)
        if line == b"\r\n":
            break
        key, _, value = line.decode().partition(":")
        if key.lower() == "content-length":
            length = int(value)
    return json.loads(inp.read(length))

def send(message):
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()

def subsequence(query, name):
    rest = iter(name.lower())
    return all(c in rest for c in query)

def symbol(i, name, query):
    uri = "file://" + os.getcwd() + f"/src/f{i % 3}.py"
    if query.startswith("w"):
        return {"name": name, "kind": 12, "location": {"uri": uri}}
    start = {"line": i, "character": 4}
    return {"name": name, "kind": 12, "containerName": "m",
            "location": {"uri": uri, "range": {"start": start, "end": start}}}

while True:
    message = read()
    method = message.get("method")
    if method == "initialize":
        log.write(json.dumps({"pid": os.getpid()}) + "\n")
        log.write(json.dumps({"initialize": message["params"]}) + "\n")
        send({"id": "p1", "method": "window/workDoneProgress/create", "params": {"token": 1}})
        send({"id": "c1", "method": "workspace/configuration",
              "params": {"items": [{"section": "fake.symbols"}, {"section": "absent"}]}})
        send({"method": "window/logMessage", "params": {"type": 3, "message": "hello"}})
        got = [read(), read()]
        log.write(json.dumps({"replies": got}) + "\n")
        log.flush()
        send({"id": message["id"], "result": {"capabilities": {"workspaceSymbolProvider": True}}})
    elif method == "workspace/symbol":
        query = message["params"]["query"]
        if mode == "never":
            send({"id": message["id"], "result": []})
        elif mode == "crash" and query.startswith("t") and query not in names:
            os._exit(7)
        elif mode == "error" and query.startswith("bad"):
            send({"id": message["id"], "error": {"code": -32603, "message": "index broke"}})
        else:
            q = query.lstrip("w").lower()
            hits = [symbol(i, n, query) for i, n in enumerate(names) if subsequence(q, n)]
            send({"id": message["id"], "result": hits})
    elif method == "shutdown":
        log.write("shutdown\n")
        log.flush()
        send({"id": message["id"], "result": None})
    elif method == "exit":
        log.write("exit\n")
        log.flush()
        sys.exit(0)
"""

NAMES = ["TestFloatLimits", "foo_bar", "float_limits", "tesla"]


def _fake_server(tmp_path: Path, mode: str) -> tuple[list[str], Path]:
    """The server's argv and the file it logs to; it answers NAMES."""
    script, log = tmp_path / "server.py", tmp_path / "server.log"
    script.write_text(SERVER)
    names = tmp_path / "names.txt"
    names.write_text("".join(f"{n}\n" for n in NAMES))
    return [sys.executable, str(script), str(names), str(log), mode], log


def _adapter(
    workspace: Path,
    server: list[str],
    stdin: str,
    *args: str,
    probes: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """The adapter as the harness runs it; probes: the names file's names (else NAMES);
    env: the engine's variables on top of PYTHONPATH and PATH."""
    names = workspace.parent / f"{workspace.name}-names.txt"
    names.write_text("".join(f"{n}\n" for n in probes or NAMES))
    return subprocess.run(
        [sys.executable, "-P", "-m", "recall.finders.kinds.lsp", "--workspace", str(workspace),
         "--names", str(names), *args, "--", *server],
        input=stdin, capture_output=True, text=True, timeout=60, cwd=workspace,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **(env or {})},
    )  # fmt: skip


def _request(query: str, limit: int = 0, **extra: object) -> str:
    return json.dumps({**extra, "query": query, "limit": limit}) + "\n"


def _answers(proc: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture(scope="module")
def fixture_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lsp-fixture") / "repo"
    make_repo(path, FIXTURE).close()
    return path


@pytest.mark.slow
@needs_jedi
def test_jedi_language_server_answers_workspace_symbol_through_the_adapter(fixture_repo):
    stdin = (
        _request("float", id=0) + _request("float", 1, id=1) + _request("TestFl", id=2)
        + _request("func", id=3) + _request("zzz_none", id=4)
    )  # fmt: skip
    proc = _adapter(fixture_repo, JEDI, stdin, "--ready-timeout", "30", probes=("float_limits",))
    assert proc.returncode == 0, proc.stderr
    answers = _answers(proc)
    assert [a["id"] for a in answers] == [0, 1, 2, 3, 4]
    floats = answers[0]["results"]
    assert sorted((r["name"], r["file"], r["line"]) for r in floats) == [
        ("float_helper", "pkg/helpers.py", 4),
        ("float_limits", "limits.py", 5),
    ]
    assert answers[1]["results"] == floats[:1]  # the limit cuts the server's order
    assert answers[2]["results"] == [{"name": "TestFloatLimits", "file": "limits.py", "line": 1}]
    # 30 functions start with "func": jedi's workspace.symbols.maxSymbols (20) is the cap.
    assert len(answers[3]["results"]) == 20
    assert answers[4]["results"] == []


@pytest.mark.slow
@pytest.mark.skipif(
    not HAVE_BASEDPYRIGHT,
    reason="basedpyright is not installed (pip install -e '.[peers]'; .ci/run installs it)",
)
def test_basedpyright_answers_workspace_symbol_through_the_adapter(fixture_repo):
    stdin = _request("flolim", id=0) + _request("func_03", id=1) + _request("TestFl", 1, id=2)
    proc = _adapter(fixture_repo, BASEDPYRIGHT, stdin, "--ready-timeout", "50",
                    probes=("float_limits",))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answers = _answers(proc)
    assert {(r["name"], r["file"], r["line"]) for r in answers[0]["results"]} >= {
        ("TestFloatLimits", "limits.py", 1),
        ("float_limits", "limits.py", 5),
    }
    assert sorted(r["name"] for r in answers[1]["results"]) == ["func_03_0", "func_03_1"]
    assert answers[2]["results"] == [{"name": "TestFloatLimits", "file": "limits.py", "line": 1}]


# A Go module whose go.mod names a Go newer than Debian's 1.19, as gin's does, with a
# method (gopls answers "FloatLimits.Check") and a package below the root that the root
# imports (in GOPATH mode gopls 0.5.0 indexes the root package and what it imports).
GO_FIXTURE = {
    "go.mod": "module example.com/fixture\n\ngo 1.25.0\n\nrequire github.com/absent/dep v1.0.0\n",
    "limits.go": 'package fixture\n\nimport "example.com/fixture/sub"\n\n'
    "type FloatLimits struct{}\n\nfunc (FloatLimits) Check() int { return 1 }\n\n"
    "func floatHelper() { sub.SubThing() }\n",
    "sub/sub.go": 'package sub\n\nimport "github.com/absent/dep"\n\nfunc SubThing() { dep.X() }\n',
}


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("gopls") is None or shutil.which("go") is None,
    reason="gopls or go is not installed (apt-get install gopls golang-go; .ci/run does)",
)
def test_gopls_answers_offline_in_gopath_mode_with_the_checkout_linked_in(tmp_path):
    """The gopls preset's keys and env on a module Go 1.19 cannot load and whose
    dependency cannot be downloaded: every package is indexed all the same, rows are
    relative to the checkout, and a method's qualified name is its own."""
    repo = tmp_path / "repo"
    make_repo(repo, GO_FIXTURE).close()
    gopath = tmp_path / "db" / "gopath"
    preset = load_preset("gopls")
    assert preset.languages == ("go",)
    env = {"GO111MODULE": "off", "GOPATH": str(gopath), "GOPROXY": "off", "GOFLAGS": ""}
    env["HOME"] = str(tmp_path / "home")
    stdin = _request("FloatLimits", id=0) + _request("Check", id=1) + _request("SubThing", id=2)
    proc = _adapter(repo, ["gopls"], stdin, "--ready-timeout", "50", "--gopath", str(gopath),
                    "--run-folder", str(gopath.parent), "--unqualify", probes=("floatHelper",),
                    env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answers = _answers(proc)
    ours = [
        [(r["name"], r["file"], r["line"]) for r in a["results"] if r["file"][:1] != "/"]
        for a in answers
    ]  # rows outside the checkout are the standard library's
    assert ours[0][0] == ("FloatLimits", "limits.go", 5)
    assert ("Check", "limits.go", 7) in ours[1]
    assert ours[2] == [("SubThing", "sub/sub.go", 5)]
    assert (gopath / "src" / "example.com" / "fixture").resolve() == repo.resolve()


TS_FIXTURE = {
    "tsconfig.json": '{"compilerOptions": {"strict": true}, "include": ["src"]}\n',
    "src/a.ts": "export function floatLimits(): number {\n  return 1\n}\n",
    "src/b.ts": "export class TestFloatLimits {\n  check(): void {}\n}\n\n"
    "export const floatHelper = 2\n",
}


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="node or npm is not installed (apt-get install nodejs npm; .ci/run does)",
)
def test_typescript_language_server_answers_from_the_project_of_the_opened_file(
    tmp_path, real_cache
):
    """The tsserver preset's server from the tree's pinned npm packages: with one file
    open, symbols of the whole tsconfig project are answered."""
    from recall.finders.kinds.node import FOLDER, node_modules

    modules = node_modules(FOLDER, real_cache)
    repo = tmp_path / "repo"
    make_repo(repo, TS_FIXTURE).close()
    server = ["node", str(modules / "typescript-language-server/lib/cli.mjs"), "--stdio"]
    stdin = _request("floatHelper", id=0) + _request("TestFloatLim", id=1)
    stdin += _request("check", id=2)
    proc = _adapter(repo, server, stdin, "--ready-timeout", "50", "--open", "**/*.ts",
                    probes=("floatHelper",), env={"HOME": str(tmp_path)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answers = _answers(proc)
    assert [(r["name"], r["file"], r["line"]) for r in answers[0]["results"]] == [
        ("floatHelper", "src/b.ts", 5)
    ]
    assert ("TestFloatLimits", "src/b.ts", 1) in {
        (r["name"], r["file"], r["line"]) for r in answers[1]["results"]
    }
    assert ("check", "src/b.ts", 2) in {
        (r["name"], r["file"], r["line"]) for r in answers[2]["results"]
    }


C_FIXTURE = {
    "src/server.h": "#define PROTO_IOBUF_LEN 1024\n\nstruct redisServer {\n    int hz;\n};\n",
    "src/server.c": '#include "server.h"\n\nint processCommand(struct redisServer *s) {\n'
    "    return s->hz;\n}\n",
    "lib/include/dep/dep.h": "int depThing(void);\n",
    "lib/dep.c": "#include <dep/dep.h>\n\nint depThing(void) { return PROTO; }\n",
}


@pytest.mark.skipif(
    shutil.which("clangd") is None,
    reason="clangd is not installed (apt-get install clangd; .ci/run does)",
)
def test_clangd_answers_from_the_compile_commands_the_adapter_writes_outside_the_checkout(
    tmp_path,
):
    """The clangd preset's keys on a C checkout with no build: the adapter lists every .c
    file in {db}/compile_commands.json with the header folders as includes, clangd indexes
    them all (not only the file opened) and keeps its index in {db}, and the checkout stays
    as clean as the harness's deep check wants it."""
    repo, db = tmp_path / "repo", tmp_path / "db"
    make_repo(repo, C_FIXTURE).close()
    preset = load_preset("clangd")
    assert preset.languages == ("c", "c++")
    compile_flags = ["--compile-commands", str(db), "--compile-sources", '[".c", ".cc"]',
                     "--compile-flags", "[]", "--wait-progress",
                     "--run-folder", str(db)]  # fmt: skip
    stdin = _request("processCommand", id=0) + _request("redisServer", id=1)
    stdin += _request("depThing", id=2) + _request("hz", id=3)
    stdin += _request("PROTO_IOBUF_LEN", id=4)
    proc = _adapter(repo, ["clangd", f"--compile-commands-dir={db}", "--log=error"], stdin,
                    "--ready-timeout", "50", *compile_flags, probes=("processCommand",),
                    env={"HOME": str(tmp_path)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answers = _answers(proc)
    assert [(r["name"], r["file"], r["line"]) for a in answers[:4] for r in a["results"]] == [
        ("processCommand", "src/server.c", 3), ("redisServer", "src/server.h", 3),
        ("depThing", "lib/dep.c", 3), ("hz", "src/server.h", 4),
    ]  # fmt: skip
    assert answers[4]["results"] == []  # clangd 14 lists no macro (docs/engines.md)
    commands = json.loads((db / "compile_commands.json").read_text())
    assert [Path(c["file"]).name for c in commands] == ["dep.c", "server.c"]
    assert f"-I{(repo / 'lib' / 'include').resolve()}" in commands[0]["arguments"]
    assert (db / ".cache" / "clangd" / "index").is_dir()
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=repo,
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert status.stdout == ""


def test_the_clangd_and_javascript_server_presets_parse_and_name_what_they_run():
    clangd = load_preset("clangd")
    assert "--wait-progress" in clangd.batch and "--compile-commands" in clangd.batch
    assert clangd.batch[clangd.batch.index("--compile-commands") + 1] == "{db}"
    assert engine_needs(clangd).programs == ("clangd",)
    assert APT_PACKAGES["clangd"] == "clangd"
    js = load_preset("tsserver-js")
    assert js.languages == ("javascript",) and uses_node_modules(js)
    assert js.batch[js.batch.index("--open") + 1] == "src/jquery.js"
    assert js.batch[js.batch.index("--probes") + 1] == '["Callbacks"]'


def test_unqualify_keeps_a_name_after_its_last_dot():
    from recall.finders.kinds.lsp import rows

    answer = [{"name": "Context.Copy"}, {"name": "gin.H"}, {"name": "plain"}, {"name": "x."}]
    names = [r["name"] for r in rows(answer, Path("/w"), 0, unqualify=True)]
    assert names == ["Copy", "H", "plain", "x."]


def test_killing_the_adapter_takes_the_server_down_with_it(tmp_path):
    """The harness kills a batch process's group past --timeout, and the server is in a
    group of its own: the parent-death signal must end it all the same."""
    server, log = _fake_server(tmp_path, "linger")
    names = tmp_path / "probes.txt"
    names.write_text("foo_bar\n")
    adapter = subprocess.Popen(
        [sys.executable, "-P", "-m", "recall.finders.kinds.lsp", "--workspace", str(tmp_path),
         "--names", str(names), "--", *server],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={"PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert adapter.stdin and adapter.stdout
    adapter.stdin.write(_request("foo", id=0).encode())
    adapter.stdin.flush()
    assert json.loads(adapter.stdout.readline())["id"] == 0  # ready and answering
    pid = json.loads(log.read_text().splitlines()[0])["pid"]
    adapter.kill()
    adapter.wait()
    adapter.stdin.close()
    adapter.stdout.close()
    try:
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "the server outlived its adapter"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Running, as opposed to gone or dead and waiting to be reaped (a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def test_the_adapter_answers_the_server_as_an_editor_and_reads_both_symbol_shapes(tmp_path):
    server, log = _fake_server(tmp_path, "plain")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = json.dumps({"fake": {"symbols": {"max": 5}}})
    stdin = _request("flim", id=0) + _request("wfoo", id=1) + _request("tesla", 1)
    proc = _adapter(workspace, server, stdin, "--settings", settings)
    assert proc.returncode == 0, proc.stderr
    answers = _answers(proc)
    assert answers[0] == {
        "id": 0,
        "results": [
            {"name": "TestFloatLimits", "file": "src/f0.py", "line": 1},
            {"name": "float_limits", "file": "src/f2.py", "line": 3},
        ],
    }
    assert answers[1] == {"id": 1, "results": [{"name": "foo_bar", "file": "src/f1.py"}]}
    assert answers[2] == [{"name": "TestFloatLimits", "file": "src/f0.py", "line": 1}]
    entries = log.read_text().splitlines()[1:]
    params = json.loads(entries[0])["initialize"]
    assert params["rootUri"] == workspace.resolve().as_uri()
    assert params["workspaceFolders"] == [{"uri": workspace.resolve().as_uri(), "name": "ws"}]
    assert params["initializationOptions"] == {"fake": {"symbols": {"max": 5}}}
    assert "symbol" in params["capabilities"]["workspace"]
    replies = {r["id"]: r for r in json.loads(entries[1])["replies"]}
    assert replies["p1"]["result"] is None
    assert replies["c1"]["result"] == [{"max": 5}, None]
    assert entries[-2:] == ["shutdown", "exit"]


def test_an_error_object_is_that_query_s_error_and_the_next_query_is_answered(tmp_path):
    server, _log = _fake_server(tmp_path, "error")
    stdin = _request("bad", id=0) + _request("foo", id=1)
    proc = _adapter(tmp_path, server, stdin)
    assert proc.returncode == 0, proc.stderr
    answers = _answers(proc)
    assert answers[0] == {"id": 0, "error": "LspError: index broke (code -32603)"}
    assert [r["name"] for r in answers[1]["results"]] == ["foo_bar"]


def test_a_server_that_dies_ends_the_adapter_saying_how(tmp_path):
    server, _log = _fake_server(tmp_path, "crash")
    stdin = _request("foo", id=0) + _request("tes", id=1) + _request("foo", id=2)
    proc = _adapter(tmp_path, server, stdin)
    assert proc.returncode == 3
    assert [a["id"] for a in _answers(proc)] == [0]  # the query in flight has no answer
    assert proc.stderr.strip().splitlines()[-1] == (
        "lsp adapter: language server exited with status 7"
    )


@pytest.mark.slow
def test_a_server_that_never_becomes_ready_is_exit_2_naming_the_timeout(tmp_path):
    server, _log = _fake_server(tmp_path, "never")
    proc = _adapter(tmp_path, server, _request("foo", id=0), "--ready-timeout", "1")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "not ready within the ready timeout of 1 s" in lines[0]


def test_the_engine_s_probes_replace_the_corpus_names_as_readiness_probes(tmp_path):
    """tsserver-js: the names the adapter would take from jquery's list may all be names
    of test/, which the project of the opened file never holds; the preset's probe is one
    the server knows."""
    server, _log = _fake_server(tmp_path, "normal")
    absent = ("zzzz_absent", "qqqq_absent")
    proc = _adapter(tmp_path, server, _request("foo", id=0), "--ready-timeout", "1",
                    probes=absent)  # fmt: skip
    assert proc.returncode == 2 and "zzzz_absent" in proc.stderr
    proc = _adapter(tmp_path, server, _request("foo", id=0), "--ready-timeout", "20",
                    "--probes", '["tesla"]', probes=absent)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [r["name"] for r in _answers(proc)[0]["results"]] == ["foo_bar"]


def test_a_server_that_cannot_start_is_one_line_and_exit_2(tmp_path):
    proc = _adapter(tmp_path, [str(tmp_path / "no-such-server")], _request("foo"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("lsp adapter: cannot start ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "needs server"),
        ("server = []", "needs server"),
        ('server = "pyright --stdio"', "needs server"),
        ('server = ["{bin}"]', "{bin} is the adapter"),
        ('server = ["s"]\nready_timeout = 0', "ready_timeout must be a number"),
        ('server = ["s"]\nready_timeout = "1"', "ready_timeout must be a number"),
        ('server = ["s"]\nsettings = 3', "settings must be a table"),
        ('server = ["s"]\nenv = "X=1"', "env must be a table"),
        ('server = ["s"]\nbin = ["x"]', "unknown key 'bin' for kind 'lsp'"),
        ('server = ["{nope}"]', "unknown placeholder {nope}"),
        ('server = ["s"]\ngopath = 1', "gopath must be .db. or a folder inside it"),
        ('server = ["s"]\nunqualify = "yes"', "unqualify must be true or false"),
        ('server = ["s"]\nopen = "/abs/*.ts"', "open must be a glob relative"),
        ('server = ["s"]\nwait_progress = 1', "wait_progress must be true or false"),
        ('server = ["s"]\nprobes = []', "probes must be a non-empty list"),
        ('server = ["s"]\ncompile_commands = "{db}"', "compile_commands must be a table"),
        ('server = ["s"]\ncompile_commands = { dir = "{db}" }', "sources must be a list"),
        (
            'server = ["s"]\ncompile_commands = { dir = "{db}", sources = ["c"] }',
            "sources must name suffixes",
        ),
        (
            'server = ["s"]\ncompile_commands = { sources = [".c"] }',
            "compile_commands.dir must be .db. or a folder inside it",
        ),
        ('server = ["s"]\nopen = "../*.ts"', "open must be a glob relative"),
    ],
)
def test_an_lsp_engine_table_that_cannot_run_names_the_key(text, message):
    with pytest.raises(RecallError, match=message) as caught:
        parse_engine(f'[engine]\nkind = "lsp"\n{text}\n'.encode(), "lsp.toml")
    assert str(caught.value).startswith("lsp.toml: ")


def test_an_lsp_engine_runs_the_adapter_of_the_tree_under_test_with_the_server_after_dashes():
    engine = parse_engine(
        b'[engine]\nkind = "lsp"\nlanguages = ["go"]\nserver = ["gopls", "-logfile", '
        b'"{db}/log"]\nready_timeout = 5\nsettings = { a = 1 }\n',
        "lsp.toml",
    )
    assert engine.kind == "lsp" and engine.languages == ("go",)
    assert engine.bin == tuple(worker_bin("recall.finders.kinds.lsp"))
    assert dict(engine.env)["PYTHONPATH"].split(":")[0] == "{tree}"  # then the harness's
    assert engine.batch == (
        "{bin}", "--workspace", "{corpus}", "--names", "{names}", "--ready-timeout", "5",
        "--settings", '{"a":1}', "--", "gopls", "-logfile", "{db}/log",
    )  # fmt: skip
    for preset in ("jedi-lsp", "basedpyright"):
        assert load_preset(preset).languages == ("python",)
    assert load_preset("tsserver").languages == ("typescript",)
    assert not uses_node_modules(engine) and uses_node_modules(load_preset("tsserver"))


def test_a_server_crashing_mid_run_costs_the_query_in_flight_only(real_cache, gin, tmp_path):
    """Through the CLI on gin: the fake server answers gin's names and dies on every query
    starting with "t"; each of those is an error saying how it died, and the restarted
    adapter answers the rest."""
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    engine = tmp_path / "engine.toml"
    engine.write_text(
        '[engine]\nkind = "lsp"\n'
        f'server = ["{{python}}", "{script}", "{{names}}", "{{db}}/log", "crash"]\n'
        "ready_timeout = 20\n"
    )
    # the first twelve of gin's first+last rows, half of them starting with "t": each crash
    # costs a server start or two (the query is tried again in a fresh one), so a few suffice
    rows = [r for r in (ROOT / "queries.tsv").read_text().splitlines() if "\tfirst+last\t" in r]
    queries = tmp_path / "q.tsv"
    queries.write_text(
        "repo\tquery\ttype\tsource\n"
        + "\n".join([r for r in rows if r.startswith("gin\t")][:12])
        + "\n"
    )
    proc = run_cli(
        "--engine", str(engine), "--repo", "gin", "--queries", str(queries),
        "--cache", str(real_cache), "--json", "--no-regress", "--allow-empty",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)["runs"][0]
    queries = [row["query"] for row in run["error_rows"]]
    assert queries and all(q.startswith("t") for q in queries)
    assert all(
        "exit 3" in row["error"] and "language server exited with status 7" in row["error"]
        for row in run["error_rows"]
    )
    assert run["found"] > 0  # the restarted adapter answered the rest


def test_a_language_server_is_started_once_per_corpus_whatever_the_jobs():
    from recall.finders.engine import load_preset

    assert load_preset("jedi-lsp").batch_jobs is False
    assert load_preset("rapidfuzz").batch_jobs is True


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="node or npm is not installed (apt-get install nodejs npm; .ci/run does)",
)
def test_tsserver_js_s_probe_waits_for_jquery_s_imports_to_load(tmp_path, real_cache, pins):
    """The preset's readiness probe must name a symbol of a module src/jquery.js imports: a
    name of the open file itself (`jQuery`, its first probe) is answered before the imports
    load, and every query of a run then found nothing. Ready on the preset's probe, the
    first query already finds `deferred` of src/deferred.js, an imported module."""
    from conftest import mirror_dir

    from recall.finders.kinds.node import FOLDER, node_modules
    from recall.inputs.corpus import fetch

    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    checkout = fetch(pins["jquery"], real_cache, mirror)
    modules = node_modules(FOLDER, real_cache)
    batch = load_preset("tsserver-js").batch
    probes = batch[batch.index("--probes") + 1]
    server = ["node", str(modules / "typescript-language-server/lib/cli.mjs"), "--stdio"]
    proc = _adapter(Path(checkout.path), server, _request("Deferred", 5, id=0), "--ready-timeout",
                    "50", "--open", "src/jquery.js", "--probes", probes,
                    env={"HOME": str(tmp_path)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    results = _answers(proc)[0]["results"]
    assert results, "ready before the project's imports loaded: Deferred found nothing"
    assert (results[0]["name"], results[0]["file"]) == ("deferred", "src/deferred.js")


@pytest.mark.parametrize(
    ("key", "folder"),
    [
        ("compile_commands.dir", "{tree}"),
        ("compile_commands.dir", "{corpus}"),
        ("compile_commands.dir", "{db}/../up"),
        ("compile_commands.dir", "/tmp/anywhere"),
        ("gopath", "{tree}/gopath"),
        ("gopath", "{db}/.."),
        ("gopath", "gopath"),
    ],
)
def test_a_folder_the_adapter_would_write_outside_db_is_refused_in_one_line(key, folder):
    table = (
        f'compile_commands = {{ dir = "{folder}", sources = [".c"] }}'
        if key == "compile_commands.dir"
        else f'gopath = "{folder}"'
    )
    with pytest.raises(RecallError) as caught:
        parse_engine(f'[engine]\nkind = "lsp"\nserver = ["s"]\n{table}\n'.encode(), "lsp.toml")
    assert str(caught.value) == (
        f"lsp.toml: [engine] {key} must be {{db}} or a folder inside it, got {folder!r}: the "
        "adapter writes nowhere else (not into the tree, nor the checkout)"
    )


CLANGD_IN_TREE = """[engine]
kind = "lsp"
server = ["clangd", "--compile-commands-dir={db}"]
compile_commands = { dir = "{tree}", sources = [".c"] }
"""


def test_compile_commands_in_the_tree_is_refused_before_the_finder_s_own_file_is_touched(
    tmp_path,
):
    """Was: the adapter overwrote the finder's committed compile_commands.json, exit 0."""
    finder = tmp_path / "finder"
    own = '[{"directory": "/src", "file": "mine.c", "command": "cc -c mine.c"}]\n'
    make_repo(finder, {"recall.toml": CLANGD_IN_TREE, "compile_commands.json": own}).close()
    cache = tmp_path / "cache"
    proc = run_cli("--finder", str(finder), "--repo", "redis", "--cache", str(cache), cwd=finder)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"recall: {finder / 'recall.toml'}: [engine] compile_commands.dir must be {{db}} or a "
        "folder inside it, got '{tree}': the adapter writes nowhere else (not into the tree, "
        "nor the checkout)\n"
    )
    assert (finder / "compile_commands.json").read_text() == own
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=finder,
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert status.stdout == "" and not cache.exists()


@pytest.mark.parametrize(
    ("line", "module"),
    [
        ("module example.com/fixture", "example.com/fixture"),
        ('module "example.com/fixture" // quoted', "example.com/fixture"),
        ("module `example.com/fix~ture_2`", "example.com/fix~ture_2"),
        ('module "/tmp/x/LINK"', None),
        ("module /tmp/x/LINK", None),
        ('module "a/../../x"', None),
        ("module a/./b", None),
        ("module .hidden/x", None),
        ("module", None),
        ("module a b", None),
        ("go 1.19", None),
    ],
)
def test_a_go_mod_module_path_is_read_unquoted_and_only_a_go_module_path_is_taken(line, module):
    from recall.finders.kinds.lsp import module_path

    assert module_path(f"// header\n{line}\n\ngo 1.19\n") == module


@pytest.mark.parametrize("module", ['"{outside}/LINK"', "`{outside}/LINK`", '"../../{name}"'])
def test_a_go_mod_naming_a_path_outside_makes_nothing_there_and_is_exit_2(tmp_path, module):
    """Was: module "/tmp/x/LINK" made /tmp/x and a link to the checkout there, exit 0:
    the check for a leading / ran before the quotes were stripped."""
    outside = tmp_path / "outside"
    repo = tmp_path / "repo"
    text = module.format(outside=outside, name=outside.name)
    make_repo(repo, {"go.mod": f"module {text}\n\ngo 1.19\n", "a.go": "package a\n"}).close()
    db = tmp_path / "run" / "db"
    db.mkdir(parents=True)
    server, _log = _fake_server(tmp_path, "ok")
    proc = _adapter(repo, server, _request("a"), "--gopath", str(db / "gopath"),
                    "--run-folder", str(db))  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"lsp adapter: {repo / 'go.mod'}: no module line naming a Go module path\n"
    )
    assert not outside.exists() and sorted(p.name for p in db.iterdir()) == []


def test_every_folder_and_link_the_adapter_makes_must_resolve_inside_its_run_folder(tmp_path):
    """The mechanism under the go.mod case: a link already on the way (gopath/src leading
    out) or a folder named outside the run folder is refused before anything is made."""
    from recall.finders.kinds.lsp import NotReady, gopath_workspace, write_compile_commands

    repo, run, outside = tmp_path / "repo", tmp_path / "run", tmp_path / "outside"
    make_repo(repo, {**GO_FIXTURE, "a.c": "int a(void) { return 1; }\n"}).close()
    (run / "gopath").mkdir(parents=True)
    outside.mkdir()
    (run / "gopath" / "src").symlink_to(outside)
    with pytest.raises(NotReady, match="is outside"):
        gopath_workspace(repo, run / "gopath", run)
    with pytest.raises(NotReady, match="is outside"):
        gopath_workspace(repo, tmp_path / "elsewhere", run)
    with pytest.raises(NotReady, match="is outside"):
        write_compile_commands(repo, run / "gopath" / "src" / "cc", [".c"], [], run)
    with pytest.raises(NotReady, match="is outside"):
        write_compile_commands(repo, tmp_path / "repo", [".c"], [], run)
    assert list(outside.iterdir()) == [] and not (tmp_path / "elsewhere").exists()
    assert not (repo / "compile_commands.json").exists()
    link = gopath_workspace(repo, run / "db" / "gopath", run)  # inside: made
    assert link == run.resolve() / "db" / "gopath" / "src" / "example.com" / "fixture"
    assert link.is_symlink() and link.resolve() == repo.resolve()
