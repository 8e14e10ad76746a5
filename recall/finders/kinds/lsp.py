"""kind = "lsp": a language server's workspace/symbol as a finder, over stdio.

The symbol search most programmers use is their editor's "go to symbol in workspace",
answered by a language server. This adapter is that editor, reduced to what the search
needs: it starts the server once per corpus (the harness runs this module as the batch
process of the engine), opens the frozen checkout as the workspace, waits until the
server answers a workspace/symbol probe with something, then sends one workspace/symbol
request per query of the harness's batch protocol and answers the rows in the order the
server returned them, which is the server's ranking.

JSON-RPC with Content-Length framing is written here rather than taken from pygls or
lsprotocol: the client side needs about a hundred lines (a header, a body, a reader
thread), and a dependency would have to be in `{python}`'s site-packages for every tree
under test, pinned, and kept in step with servers that only ever speak plain JSON.

The server runs in a process group of its own, so that a fault kills it and every
process it started, and with the parent-death signal set to SIGKILL, so that the harness
killing this adapter (a query past --timeout) takes the server down too, although the
server is outside the adapter's group. Exit status: 0 after shutdown and exit at the end
of stdin; 2 if the server never became ready (one line on stderr naming the timeout); 3
if the server died (how, on stderr), which the harness reports for the query in flight
before it starts the adapter again.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, BinaryIO
from urllib.parse import unquote, urlparse

import orjson

from recall import __version__
from recall.errors import RecallError
from recall.finders.kinds import HARNESS_ROOT
from recall.finders.kinds.adapter import (
    confined,
    json_argument,
    json_object_flag,
    kind_tables,
    read_names,
    worker_bin,
)
from recall.finders.protocol import Rows, serve

READY_TIMEOUT_S = 120.0
POLL_S = 0.25  # between two readiness probes that found nothing
SHUTDOWN_S = 5.0  # for the server to answer shutdown and then to exit
PROBES = 3  # names of the corpus tried in turn as readiness probes
FALLBACK_PROBES = ("e", "a", "s")  # without a names file: letters most names hold
PR_SET_PDEATHSIG = 1


def process_table(table: dict, source: str) -> dict:
    """A kind = "lsp" [engine] as the process engine that runs this adapter for it.

    The server's argv goes after `--` as argv elements of their own rather than inside
    one JSON-encoded element, so that the harness fills its placeholders ({db},
    {corpus}) element by element and a path holding a quote cannot break an encoding."""
    known = {
        "server", "ready_timeout", "settings", "env", "gopath", "unqualify", "open",
        "wait_progress", "compile_commands", "probes",
    }  # fmt: skip
    tables = kind_tables(table, source, "lsp", known, ("settings", "env"))
    server = table.get("server")
    if (
        not isinstance(server, list)
        or not server
        or not all(isinstance(part, str) and part for part in server)
    ):
        raise RecallError(
            f"{source}: [engine] kind 'lsp' needs server = the language server's argv "
            f"(a non-empty list of strings), got {server!r}"
        )
    if "{bin}" in server:
        raise RecallError(f"{source}: [engine] server: {{bin}} is the adapter, not the server")
    timeout = table.get("ready_timeout", READY_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise RecallError(f"{source}: [engine] ready_timeout must be a number of seconds > 0")
    env, encoded = tables["env"], json_argument(tables["settings"])
    adapter = ["{bin}", "--workspace", "{corpus}", "--names", "{names}"]
    adapter += ["--ready-timeout", f"{float(timeout):g}", "--settings", encoded]
    gopath, unqualify = table.get("gopath"), table.get("unqualify", False)
    if gopath is not None:
        adapter += ["--gopath", in_db(gopath, source, "gopath")]
    if not isinstance(unqualify, bool):
        raise RecallError(f"{source}: [engine] unqualify must be true or false")
    if unqualify:
        adapter.append("--unqualify")
    opened = table.get("open")
    if opened is not None:
        if (
            not isinstance(opened, str)
            or not opened
            or opened.startswith("/")
            or ".." in opened.split("/")
        ):
            raise RecallError(f"{source}: [engine] open must be a glob relative to the checkout")
        adapter += ["--open", opened]
    wait_progress = table.get("wait_progress", False)
    if not isinstance(wait_progress, bool):
        raise RecallError(f"{source}: [engine] wait_progress must be true or false")
    if wait_progress:
        adapter.append("--wait-progress")
    adapter += compile_commands_flags(table.get("compile_commands"), source)
    if gopath is not None or "--compile-commands" in adapter:
        adapter += ["--run-folder", "{db}"]
    probes = table.get("probes")
    if probes is not None:
        if (
            not isinstance(probes, list)
            or not probes
            or not all(isinstance(p, str) and p for p in probes)
        ):
            raise RecallError(f"{source}: [engine] probes must be a non-empty list of strings")
        adapter += ["--probes", orjson.dumps(probes).decode()]
    return {
        "bin": worker_bin("recall.finders.kinds.lsp"),
        "query": [*adapter, "--query", "{query}", "--limit", "{limit}", "--", *server],
        "batch": [*adapter, "--", *server],
        "env": {"PYTHONPATH": os.pathsep.join(("{tree}", HARNESS_ROOT)), **env},  # as library's
        "output": "json",
        "batch_jobs": False,  # one server per corpus: each would index the workspace anew
    }


def compile_commands_flags(table: object, source: str) -> list[str]:
    """The adapter's flags for a compile_commands table: dir (where the adapter writes
    compile_commands.json, {db} so that the checkout stays clean), sources (the suffixes
    of the files compiled, each a command) and flags (given to every command)."""
    if table is None:
        return []
    if not isinstance(table, dict) or set(table) - {"dir", "sources", "flags"}:
        raise RecallError(
            f"{source}: [engine] compile_commands must be a table of dir, sources and flags"
        )
    folder, sources, flags = table.get("dir"), table.get("sources"), table.get("flags", [])
    folder = in_db(folder, source, "compile_commands.dir")
    for key, value in (("sources", sources), ("flags", flags)):
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise RecallError(
                f"{source}: [engine] compile_commands.{key} must be a list of strings"
            )
    if not sources or not all(suffix.startswith(".") for suffix in sources):
        raise RecallError(
            f'{source}: [engine] compile_commands.sources must name suffixes such as ".c"'
        )
    return ["--compile-commands", folder, "--compile-sources", orjson.dumps(sources).decode(),
            "--compile-flags", orjson.dumps(flags).decode()]  # fmt: skip


def in_db(value: object, source: str, key: str) -> str:
    """A folder the adapter writes into, as the engine file names it: {db} or a folder in
    it, the only place an adapter writes (besides the harness's cache). A folder of the
    tree or the corpus would be overwritten (a finder's own compile_commands.json), and
    anywhere else is outside what a run may touch."""
    if (
        not isinstance(value, str)
        or not (value == "{db}" or value.startswith("{db}/"))
        or ".." in value.split("/")
        or "{" in value[len("{db}") :]
    ):
        raise RecallError(
            f"{source}: [engine] {key} must be {{db}} or a folder inside it, got {value!r}: "
            "the adapter writes nowhere else (not into the tree, nor the checkout)"
        )
    return value


HEADER_SUFFIXES = frozenset({".h", ".hh", ".hpp", ".hxx", ".inl"})


def write_compile_commands(
    workspace: Path, folder: Path, sources: list[str], flags: list[str], run_folder: Path
) -> list[Path]:
    """folder/compile_commands.json: one command per file of the workspace whose suffix is
    in sources, with flags and, as include folders, every folder named `include` and every
    folder that holds a header, so that `#include "server.h"` and `<fmt/format.h>` resolve
    without the project's build (which the frozen checkout cannot run: no configure, no
    network). clangd indexes every file it lists in the background, and keeps that index
    beside it (folder/.cache/clangd), so nothing is written into the checkout: folder, and
    the file, must lie in run_folder. Returns the files it lists, in sorted order; none is
    an error of the engine."""
    root = workspace.resolve()
    files, includes = [], set()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or ".git" in path.relative_to(root).parts:
            continue
        if path.suffix in sources:
            files.append(path)
        if path.suffix in HEADER_SUFFIXES:
            includes.add(path.parent)
            includes.update(p for p in path.parents if p.name == "include" and root in p.parents)
    if not files:
        raise NotReady(f"no file of the workspace ends in {', '.join(sources)}")
    argv = ["cc", *flags, *(f"-I{folder}" for folder in sorted(includes))]
    commands = [
        {"directory": str(root), "file": str(path), "arguments": [*argv, "-c", str(path)]}
        for path in files
    ]
    target = folder / "compile_commands.json"
    try:
        confined(run_folder, folder).mkdir(parents=True, exist_ok=True)
        confined(run_folder, target).write_bytes(orjson.dumps(commands))
    except (OSError, ValueError) as exc:
        raise NotReady(f"cannot write {target}: {exc}") from None
    return files


class ServerDied(BaseException):
    """The server ended or closed its stdout. A BaseException, so that it passes through
    the per-query catch of library.answer: no later query can be answered either, and the
    harness must see the adapter die, not a run of error answers."""


class NotReady(Exception):
    """The server gave no non-empty workspace/symbol answer within the ready timeout."""


class LspError(Exception):
    """An LSP error object answered for a request: that query's error, nothing more."""


def capabilities() -> dict:
    """What an editor declares for workspace/symbol. No resolveSupport: with it a server
    may answer locations without ranges and expect a workspaceSymbol/resolve per row,
    and the line of a row is part of what the harness reports."""
    return {
        "workspace": {
            "symbol": {
                "dynamicRegistration": True,
                "symbolKind": {"valueSet": list(range(1, 27))},
                "tagSupport": {"valueSet": [1]},
            },
            "workspaceFolders": True,
            "configuration": True,
            "didChangeConfiguration": {"dynamicRegistration": True},
        },
        "window": {"workDoneProgress": True, "showMessage": {}},
        "general": {"positionEncodings": ["utf-16"]},
    }


class Connection:
    """JSON-RPC over a child's stdin and stdout with LSP's Content-Length framing.

    A thread reads messages into a queue, so a wait for one answer can have a deadline
    and can answer the server's own requests meanwhile, as an editor does."""

    def __init__(self, proc: subprocess.Popen, settings: dict) -> None:
        assert proc.stdin and proc.stdout
        self.proc, self.settings = proc, settings
        self.writer: IO[bytes] = proc.stdin
        self.inbox: queue.Queue[dict | None] = queue.Queue()
        self.next_id = 0
        self.progress: set[object] = set()  # work-done progress begun and not yet ended
        self.progress_began = False
        threading.Thread(target=self._read, args=(proc.stdout,), daemon=True).start()

    def _read(self, stream: BinaryIO) -> None:
        try:
            while (message := read_message(stream)) is not None:
                self.inbox.put(message)
        except (OSError, ValueError):
            pass
        self.inbox.put(None)

    def send(self, message: dict) -> None:
        body = orjson.dumps({"jsonrpc": "2.0", **message})
        try:
            self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.writer.flush()
        except (BrokenPipeError, ValueError):
            raise ServerDied("closed its stdin") from None

    def notify(self, method: str, params: object) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: object, timeout: float | None = None) -> object:
        """The result of one request; LspError for an error object, TimeoutError when no
        answer came in time (a late answer to it is dropped when it comes)."""
        self.next_id += 1
        wanted = self.next_id
        self.send({"id": wanted, "method": method, "params": params})
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(method)
            try:
                message = self.inbox.get(timeout=left)
            except queue.Empty:
                raise TimeoutError(method) from None
            if message is None:
                raise ServerDied("closed its stdout")
            if "method" in message:
                self.handle(message)
                continue
            if message.get("id") != wanted:
                continue  # the late answer to a probe that timed out
            if "error" in message:
                error = message["error"]
                if isinstance(error, dict):
                    raise LspError(f"{error.get('message', '')} (code {error.get('code')})")
                raise LspError(str(error))
            return message.get("result")

    def handle(self, message: dict) -> None:
        """A message of the server's own: a request is answered as an editor does; of the
        notifications (logs, diagnostics, progress) only work-done progress is kept."""
        if "id" in message:
            self.send({"id": message["id"], "result": self.reply(message)})
            return
        params = message.get("params")
        if message["method"] != "$/progress" or not isinstance(params, dict):
            return
        value = params.get("value")
        kind = value.get("kind") if isinstance(value, dict) else None
        token = params.get("token")
        if kind == "begin" and isinstance(token, (str, int)):
            self.progress.add(token)
            self.progress_began = True
        elif kind == "end":
            self.progress.discard(token)

    def wait_progress(self, timeout: float) -> None:
        """Until the server has begun work-done progress and ended all of it: clangd
        reports its background index so, and answers workspace/symbol from the part
        indexed so far, so an answer before the end would depend on the machine's speed."""
        deadline = time.monotonic() + timeout
        while not self.progress_began or self.progress:
            left = deadline - time.monotonic()
            if left <= 0:
                state = "still running" if self.progress_began else "never begun"
                raise NotReady(f"work-done progress {state}")
            try:
                message = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if message is None:
                raise ServerDied("closed its stdout")
            if "method" in message:
                self.handle(message)

    def reply(self, message: dict) -> object:
        """The result an editor gives a server's request: its settings for
        workspace/configuration, null for the rest (progress tokens, registrations,
        message boxes), which servers take as "done, nothing to add"."""
        if message["method"] != "workspace/configuration":
            return None
        params = message.get("params")
        items = params.get("items", []) if isinstance(params, dict) else []
        return [section(self.settings, item) for item in items]


def section(settings: dict, item: object) -> object:
    """The settings for one workspace/configuration item: its dotted section, or all."""
    name = item.get("section") if isinstance(item, dict) else None
    if not name:
        return settings or None
    found: object = settings
    for part in str(name).split("."):
        if not isinstance(found, dict) or part not in found:
            return None
        found = found[part]
    return found


def read_message(stream: BinaryIO) -> dict | None:
    """One framed message, or None at the end of the stream."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length is None:
        raise ValueError("a message without Content-Length")
    body = stream.read(length)
    if len(body) < length:
        return None
    message = orjson.loads(body)
    return message if isinstance(message, dict) else {}


def rows(result: object, root: Path, limit: int, unqualify: bool = False) -> Rows:
    """SymbolInformation[] or WorkspaceSymbol[] as the protocol's rows, in the server's
    order: file relative to the workspace, line 1-based (none when the location has no
    range, as a WorkspaceSymbol's may not). unqualify: the name after its last dot, for a
    server that qualifies the names it answers (gopls's "Context.Copy" is the method
    Copy, the name the corpus and the harness know it by)."""
    if result is None:
        return []
    if not isinstance(result, list):
        raise TypeError(f"workspace/symbol answered {result!r:.80}, not a list")
    found: Rows = []
    for symbol in result:
        if not isinstance(symbol, dict) or not isinstance(symbol.get("name"), str):
            raise TypeError(f"a symbol without a name: {symbol!r:.80}")
        name = symbol["name"].rpartition(".")[2] if unqualify else symbol["name"]
        row: dict[str, object] = {"name": name or symbol["name"]}
        location = symbol.get("location")
        if isinstance(location, dict):
            uri = location.get("uri")
            if isinstance(uri, str):
                row["file"] = relative(uri, root)
            start = (location.get("range") or {}).get("start") or {}
            if isinstance(start.get("line"), int):
                row["line"] = start["line"] + 1
        found.append(row)
        if limit and len(found) == limit:
            break
    return found


def relative(uri: str, root: Path) -> str:
    """A file: URI as a path relative to the workspace root (as given if outside it)."""
    parsed = urlparse(uri)
    path = Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(uri)
    for base in (root, root.resolve()):
        with contextlib.suppress(ValueError):
            return path.relative_to(base).as_posix()
    with contextlib.suppress(ValueError, OSError):
        return path.resolve().relative_to(root.resolve()).as_posix()
    return str(path)


# A path element of a Go module path (golang.org/x/mod/module.CheckPath): letters, digits
# and - . _ ~, neither beginning nor ending with a dot, so never "." nor "..".
_MODULE_ELEMENT = re.compile(r"[A-Za-z0-9_~-]([A-Za-z0-9._~-]*[A-Za-z0-9_~-])?")


def module_path(text: str) -> str | None:
    """The module path a go.mod's module directive names, its quotes ("..." or `...`)
    and any // comment taken away, if it is a module path (elements of _MODULE_ELEMENT
    joined by /: never absolute, never with `..`); None otherwise."""
    for line in text.splitlines():
        words = line.split("//", 1)[0].split()
        if words[:1] != ["module"]:
            continue
        path = words[1] if len(words) == 2 else ""
        if len(path) >= 2 and path[0] == path[-1] and path[0] in '"`':
            path = path[1:-1]
        elements = path.split("/")
        return path if all(map(_MODULE_ELEMENT.fullmatch, elements)) else None
    return None


def gopath_workspace(workspace: Path, gopath: Path, run_folder: Path) -> Path:
    """The workspace as a package of a GOPATH: gopath/src/<module path> linked to it.

    Debian's gopls 0.5.0 and Go 1.19 cannot load a module whose go.mod names a newer Go
    (gin's says 1.25.0: "invalid go version") nor download its dependencies offline, so in
    module mode they index nothing; in GOPATH mode (GO111MODULE=off in the engine's env)
    they index every package of the workspace, but only of a workspace inside GOPATH, at
    the import path its imports use. The module path comes from go.mod's module line,
    which the corpus writes: the folders and the link made of it must lie in run_folder."""
    try:
        text = (workspace / "go.mod").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NotReady(f"--gopath needs the workspace's go.mod: {exc}") from None
    module = module_path(text)
    if module is None:
        raise NotReady(f"{workspace / 'go.mod'}: no module line naming a Go module path")
    link = gopath / "src" / module
    try:
        folder = confined(run_folder, link.parent)
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / link.name
        if link.is_symlink() or link.exists():
            if link.resolve() != workspace.resolve():
                raise NotReady(f"{link} exists and is not the workspace")
        else:
            link.symlink_to(workspace.resolve(), target_is_directory=True)
    except (OSError, ValueError) as exc:
        raise NotReady(f"cannot link the workspace into {gopath}: {exc}") from None
    return link


def _die_with_parent() -> None:
    """In the server's child before exec: SIGKILL when the adapter dies, however it dies
    (the harness's SIGKILL of the adapter's group does not reach the server's group)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def start(argv: list[str], workspace: Path) -> subprocess.Popen:
    """The server over stdio in a process group of its own; its stderr is the adapter's,
    so its last words are in the tail the harness reports when it dies."""
    return subprocess.Popen(
        argv, cwd=workspace, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        process_group=0, preexec_fn=_die_with_parent,
    )  # fmt: skip


def initialize(conn: Connection, workspace: Path, settings: dict, timeout: float) -> None:
    uri = workspace.resolve().as_uri()
    params = {
        "processId": os.getpid(),
        "clientInfo": {"name": "recall", "version": __version__},
        "rootUri": uri,
        "rootPath": str(workspace.resolve()),
        "workspaceFolders": [{"uri": uri, "name": workspace.name}],
        "capabilities": capabilities(),
        "initializationOptions": settings or None,
    }
    try:
        conn.request("initialize", params, timeout)
    except TimeoutError:
        raise NotReady("no answer to initialize") from None
    except LspError as exc:
        raise NotReady(f"initialize failed: {exc}") from None
    conn.notify("initialized", {})
    if settings:
        conn.notify("workspace/didChangeConfiguration", {"settings": settings})


LANGUAGE_IDS = {
    ".ts": "typescript", ".tsx": "typescriptreact", ".mts": "typescript", ".cts": "typescript",
    ".js": "javascript", ".jsx": "javascriptreact", ".mjs": "javascript", ".cjs": "javascript",
    ".py": "python", ".go": "go", ".c": "c", ".h": "c", ".rs": "rust", ".rb": "ruby",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".java": "java",
}  # fmt: skip


def open_file(conn: Connection, path: Path) -> None:
    """textDocument/didOpen of one file, with its text, as an editor opens it."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise NotReady(f"cannot read {path}: {exc.strerror}") from None
    language = LANGUAGE_IDS.get(path.suffix, path.suffix.lstrip(".") or "plaintext")
    document = {"uri": path.resolve().as_uri(), "languageId": language, "version": 1}
    conn.notify("textDocument/didOpen", {"textDocument": {**document, "text": text}})


def open_first(conn: Connection, root: Path, pattern: str) -> None:
    """textDocument/didOpen of the first file (in sorted order, outside node_modules)
    that matches pattern, as an editor has a file open when its user searches the
    workspace. typescript-language-server needs it: tsserver answers navto from the
    projects of open files, and with none open it answers nothing however long it is
    given."""
    found = sorted(
        path for path in root.glob(pattern)
        if path.is_file() and "node_modules" not in path.relative_to(root).parts
    )  # fmt: skip
    if not found:
        raise NotReady(f"no file of the workspace matches open = {pattern!r}")
    open_file(conn, found[0])


def wait_ready(conn: Connection, probes: list[str], timeout: float) -> None:
    """Ready once a probe (a name of the corpus) gets a non-empty answer: a server that
    indexes in the background answers nothing, or an error, until it has indexed."""
    deadline = time.monotonic() + timeout
    tried = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            shown = ", ".join(repr(p) for p in probes)
            raise NotReady(f"no non-empty workspace/symbol answer for {shown}")
        probe = probes[tried % len(probes)]
        tried += 1
        with contextlib.suppress(LspError):
            try:
                if conn.request("workspace/symbol", {"query": probe}, left):
                    return
            except TimeoutError:
                continue
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))


def pick_probes(names_path: Path | None) -> list[str]:
    """A few of the corpus's own names, spread over the sorted list, as probes."""
    names: list[str] = []
    if names_path is not None:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            names = [n for n in read_names(names_path) if n.isidentifier() and len(n) > 3]
    if not names:
        return list(FALLBACK_PROBES)
    step = max(1, len(names) // PROBES)
    return names[step // 2 :: step][:PROBES]


def died(proc: subprocess.Popen, how: str) -> str:
    """How the server ended, for the one line the adapter leaves on stderr."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1.0)
    code = proc.poll()
    if code is None:
        return f"language server {how}"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"language server killed by signal {signal.Signals(-code).name}"
        return f"language server killed by signal {-code}"
    return f"language server exited with status {code}"


def stop(conn: Connection, proc: subprocess.Popen) -> None:
    """shutdown and exit as an editor closes; the group is killed whatever it does."""
    try:
        with contextlib.suppress(ServerDied, TimeoutError, LspError):
            conn.request("shutdown", None, SHUTDOWN_S)
            conn.notify("exit", None)
            with contextlib.suppress(OSError):
                proc.stdin.close()  # type: ignore[union-attr]
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=SHUTDOWN_S)
    finally:
        kill(proc)


def kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=SHUTDOWN_S)


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds to the finally that kills the server


def json_list_flag(parser: argparse.ArgumentParser, flag: str, text: str) -> list[str]:
    """A flag holding a JSON list of strings (the engine file's, encoded by
    process_table); anything else is a usage error naming the flag."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        parser.error(f"{flag} must be a JSON list of strings")
    return value


def main(argv: list[str] | None = None) -> int:
    """The adapter's life as an editor's: start the server, initialize it on the workspace
    (linked into a GOPATH first, where an old gopls indexes only in GOPATH mode), open a
    file where the server (tsserver) indexes nothing until one is open, wait until a probe
    query finds something, then answer one --query or every query of the batch protocol
    on stdin, and shut the server down. It is one function because its exits are the
    contract the harness reads (0 done, 1 a query the server refused, 2 not ready or not
    started, 3 the server died), and because the server must be killed on every path out
    of it, SIGTERM included, which the one `finally` (and the handler that turns SIGTERM
    into an unwinding exit) guarantees."""
    parser = argparse.ArgumentParser(
        prog="python -m recall.finders.kinds.lsp",
        description="A language server's workspace/symbol as a finder: --query once, "
        "else the harness's JSON lines on stdin. The server's argv follows --.",
    )
    parser.add_argument("--workspace", type=Path, required=True, help="the workspace folder")
    parser.add_argument("--names", type=Path, help="the corpus's names, for readiness probes")
    parser.add_argument("--ready-timeout", type=float, default=READY_TIMEOUT_S)
    parser.add_argument("--settings", default="{}", help="initializationOptions, JSON")
    parser.add_argument("--query", help="answer this one query and exit")
    parser.add_argument("--limit", type=int, default=0, help="with --query (0 = unlimited)")
    parser.add_argument("--gopath", type=Path, help="open the workspace linked into this GOPATH")
    parser.add_argument("--unqualify", action="store_true", help="names after their last dot")
    parser.add_argument("--open", help="didOpen the first file that matches this glob")
    parser.add_argument(
        "--wait-progress", action="store_true",
        help="ready once the server's work-done progress has begun and ended",
    )  # fmt: skip
    parser.add_argument("--probes", help="readiness probes, JSON (else names of --names)")
    parser.add_argument("--compile-commands", type=Path, help="write compile_commands.json here")
    parser.add_argument("--compile-sources", default="[]", help="suffixes compiled, JSON")
    parser.add_argument("--compile-flags", default="[]", help="flags of every command, JSON")
    parser.add_argument(
        "--run-folder", type=Path,
        help="the folder --gopath and --compile-commands must lie in ({db}): the adapter "
        "writes nowhere else",
    )  # fmt: skip
    parser.add_argument("server", nargs="+", help="the language server's argv")
    args = parser.parse_args(argv)
    if args.limit < 0:
        parser.error("--limit must be 0 or more")
    writes = args.gopath is not None or args.compile_commands is not None
    if writes and args.run_folder is None:
        parser.error("--gopath and --compile-commands need --run-folder, the folder they lie in")
    settings = json_object_flag(parser, "--settings", args.settings)
    signal.signal(signal.SIGTERM, _terminated)
    root = args.workspace
    compiled: list[Path] = []
    if args.compile_commands is not None:
        try:
            compiled = write_compile_commands(
                args.workspace, args.compile_commands,
                json_list_flag(parser, "--compile-sources", args.compile_sources),
                json_list_flag(parser, "--compile-flags", args.compile_flags),
                args.run_folder,
            )  # fmt: skip
        except NotReady as exc:
            print(f"lsp adapter: {exc}", file=sys.stderr)
            return 2
    if args.gopath is not None:
        try:
            root = gopath_workspace(args.workspace, args.gopath, args.run_folder)
        except NotReady as exc:
            print(f"lsp adapter: {exc}", file=sys.stderr)
            return 2
    try:
        proc = start(args.server, root)
    except OSError as exc:
        print(f"lsp adapter: cannot start {args.server[0]}: {exc.strerror}", file=sys.stderr)
        return 2
    conn = Connection(proc, settings)
    try:
        began = time.monotonic()
        initialize(conn, root, settings, args.ready_timeout)
        if args.open:
            open_first(conn, root, args.open)
        elif compiled:  # clangd loads the database when a file of it is opened
            open_file(conn, compiled[0])
        if args.wait_progress:
            conn.wait_progress(args.ready_timeout - (time.monotonic() - began))
        left = args.ready_timeout - (time.monotonic() - began)
        probes = json_list_flag(parser, "--probes", args.probes) if args.probes else []
        wait_ready(conn, probes or pick_probes(args.names), left)

        def search(query: str, limit: int) -> Rows:
            answer = conn.request("workspace/symbol", {"query": query})
            return rows(answer, root, limit, args.unqualify)

        if args.query is not None:
            try:
                found = search(args.query, args.limit)
            except (LspError, TypeError) as exc:
                print(f"lsp adapter: {type(exc).__name__}: {exc}", file=sys.stderr)
                return 1
            sys.stdout.buffer.write(orjson.dumps(found) + b"\n")
        else:
            serve(search, sys.stdin.buffer, sys.stdout.buffer)
        stop(conn, proc)
        return 0
    except NotReady as exc:
        print(
            f"lsp adapter: {args.server[0]} not ready within the ready timeout of "
            f"{args.ready_timeout:g} s: {exc}",
            file=sys.stderr,
        )
        return 2
    except ServerDied as exc:
        print(f"lsp adapter: {died(proc, str(exc))}", file=sys.stderr)
        return 3
    finally:
        kill(proc)


if __name__ == "__main__":
    sys.exit(main())
