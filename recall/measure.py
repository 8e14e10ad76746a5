"""Running one binary over the query set: isolated index, every query, rank by name.

Every finder process gets a fresh database folder and a HOME of the run's own, so it can
read no index or configuration of the user's. A query that crashes, hangs or prints
garbage is an error for that query, never a plain miss.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO, TypeVar

import orjson

from recall.corpus import Pin, fetch, hold_in_use, is_clean, use_lock
from recall.engine import Engine, QueryArgv, expand, fill, uses_node_modules
from recall.errors import RecallError
from recall.interpreter import cache_of
from recall.model import TOP, Corpus, FinderBuild, Hit, QueryResult, RunResult
from recall.peers.node import MODULES_ENV, session_env
from recall.queryset import QueryRow
from recall.spawn import Child, Spawner, kill_group, reap, reaped
from recall.symbols import checkout_symbols, distinct_names

TAIL = 300
TAIL_KEEP = 1 << 16  # of a batch finder's stderr, for the error message
AHEAD = 16  # batch requests written before their answers are read
AHEAD_BYTES = 4096  # and at most this much of them: a pipe holds at least one page
EXIT_GRACE_S = 5.0  # for a batch finder to exit once its stdin is closed
DEATH_GRACE_S = 1.0  # for a batch finder whose stdout closed to be seen exiting
SHOWN = 80  # characters of a query or line quoted in a one-line error
EMPTY_SUSPECT = 0.95
INDEX_TIMEOUT_S = 1800.0  # indexing a corpus is one long step, not a query
RUN_PREFIX = "recall-run-"
LOCK_NAME = ".recall-lock"


def open_corpus(pin: Pin, cache: Path, mirror: Path | None) -> Corpus:
    """A pin's checkout, marked in use by this process (so prune leaves it), fetched, with
    its names listed: what every binary run on it needs. The checkout is checked deeply
    (every file, ignored paths and mtimes too) and rebuilt if it is not the pin byte for
    byte, so a hand edit in the cache is undone before the first query, not found after."""
    hold_in_use(use_lock(cache, "corpora", pin.name))
    checkout = fetch(pin, cache, mirror, deep=True)
    return Corpus(checkout, distinct_names(checkout_symbols(checkout, cache)), cache, mirror)


def rank_by_name(rows: Iterable[Hit], source: str) -> QueryResult:
    """Rank = position of source among distinct names; top = first TOP distinct names."""
    seen: set[str] = set()
    top: list[Hit] = []
    rank = None
    for hit in rows:
        if hit.name in seen:
            continue
        seen.add(hit.name)
        if len(top) < TOP:
            top.append(hit)
        if hit.name == source:
            rank = len(seen)
            if len(top) >= TOP:
                break
    return QueryResult(rank, tuple(top))


def parse_output(engine: Engine, out: bytes) -> list[Hit]:
    """The ranked rows of one answer; raises ValueError on anything unparseable."""
    if engine.output == "lines":
        text = out.decode("utf-8")
        return [Hit(line.split("\t", 1)[0], None, None) for line in text.splitlines() if line]
    data = orjson.loads(out)
    return json_hits(data)


def json_hits(data: object) -> list[Hit]:
    if not isinstance(data, list):
        raise ValueError("expected a JSON list of results")
    hits = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ValueError("expected objects with a string 'name'")
        line = item.get("line")
        file = item.get("file")
        hits.append(
            Hit(
                item["name"],
                file if isinstance(file, str) else None,
                line if isinstance(line, int) and not isinstance(line, bool) else None,
            )
        )
    return hits


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    return " ".join(text[-TAIL:].split())


class Session:
    """One binary on one corpus: its temporary folder, environment and index."""

    def __init__(self, binary: FinderBuild, corpus: Corpus, timeout: float) -> None:
        self.binary, self.corpus, self.timeout = binary, corpus, timeout
        self.engine = binary.engine
        self.live: set[int] = set()  # process groups of finder processes still running
        self.stopping = False
        self.guard = threading.Lock()
        self.devnull = -1
        self.kind_env = self._kind_env()  # before the temporary folder: it may fail
        sweep_stale_sessions()
        try:
            self.tmp = Path(tempfile.mkdtemp(prefix=RUN_PREFIX))
        except OSError as exc:
            raise RecallError(
                f"temporary folder {tempfile.gettempdir()}: {exc.strerror or exc}"
            ) from None
        try:
            self.lock = _hold_lock(self.tmp / LOCK_NAME)
            self.devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            db = self.tmp / "db"
            db.mkdir()
            names = self.tmp / "names.txt"
            names.write_text("".join(f"{n}\n" for n in corpus.names), encoding="utf-8")
        except OSError as exc:
            self.close()
            raise RecallError(f"temporary folder {self.tmp}: {exc.strerror or exc}") from None
        self.values = {
            **binary.values(),
            "db": str(db),
            "corpus": str(corpus.checkout.path),
            "names": str(names),
            "language": corpus.checkout.pin.language,
        }
        if MODULES_ENV in self.kind_env:
            self.values["node_modules"] = self.kind_env[MODULES_ENV]
        self.bin_argv = binary.bin_argv()
        self.values["bin"] = " ".join(self.bin_argv)
        self.cwd = fill(self.engine.cwd, self.values)
        self.stdin_path = fill(self.engine.stdin, self.values) if self.engine.stdin else None
        # encoded once: Popen would encode every variable again for every query
        self.env = {os.fsencode(k): os.fsencode(v) for k, v in self._environment().items()}
        self.spawner = Spawner(self.cwd, self.env)
        self.query_argv = QueryArgv(self.engine.query, self.values, self.bin_argv)

    def _kind_env(self) -> dict[str, str]:
        """What an engine needs installed before its processes start: the tree's npm
        packages, in the cache its `{python}` was made in, for a node engine and for an
        engine that names {node_modules} (a language server that is an npm package)."""
        if not uses_node_modules(self.engine):
            return {}
        return session_env(self.binary.tree, cache_of(self.binary.python))

    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in self.engine.env_remove}
        for name in ("home", "cache", "config", "data"):
            (self.tmp / name).mkdir()
        env.update(
            HOME=str(self.tmp / "home"),
            XDG_CACHE_HOME=str(self.tmp / "cache"),
            XDG_CONFIG_HOME=str(self.tmp / "config"),
            XDG_DATA_HOME=str(self.tmp / "data"),
            LC_ALL="C.UTF-8",
            TZ="UTC",
        )
        env.update(self.kind_env)
        env.update({k: fill(v, self.values) for k, v in self.engine.env})
        return env

    def argv(self, template: tuple[str, ...], extra: dict[str, str] | None = None) -> list[str]:
        return expand(template, {**self.values, **(extra or {})}, self.bin_argv)

    def close(self) -> None:
        self.stop()
        if self.devnull >= 0:
            os.close(self.devnull)
            self.devnull = -1
        shutil.rmtree(self.tmp, ignore_errors=True)
        if getattr(self, "lock", None) is not None:
            self.lock.close()

    def stop(self) -> None:
        """Kill every finder process group still running, and any started after this."""
        with self.guard:
            self.stopping = True
            live = list(self.live)
        for pid in live:
            kill_group(pid)

    def _started(self, pid: int) -> None:
        with self.guard:
            self.live.add(pid)
            stopping = self.stopping
        if stopping:
            kill_group(pid)

    def _finished(self, pid: int) -> None:
        kill_group(pid)  # background children must not outlive the query they served
        with self.guard:
            self.live.discard(pid)

    def index(self) -> float:
        if not self.engine.index:
            return 0.0
        argv = self.argv(self.engine.index)
        started = time.perf_counter()
        code, _out, err = self.run(argv, INDEX_TIMEOUT_S)
        if code != 0:
            reason = "timed out" if code is None else _ended(code)
            raise RecallError(
                f"index {self.corpus.checkout.pin.name} with {self.binary.label} failed "
                f"({reason}): {' '.join(argv)}: {_tail(err)}"
            )
        return time.perf_counter() - started

    def run(self, argv: list[str], timeout: float) -> tuple[int | None, bytes, bytes]:
        """Run argv in its own process group; on timeout the whole group is killed."""
        try:
            if self.stdin_path:
                with open(self.stdin_path, "rb") as stdin:
                    child = self.spawner.start(argv, stdin.fileno())
            else:
                child = self.spawner.start(argv, self.devnull)
        except OSError as exc:
            return 127, b"", f"cannot start {argv[0]}: {exc.strerror}".encode()
        self._started(child.pid)
        try:
            return _communicate(child, timeout)
        finally:
            self._finished(child.pid)

    def query_one(self, row: QueryRow) -> QueryResult:
        code, out, err = self.run(self.query_argv.fill(row.query, "0"), self.timeout)
        if code is None:
            return QueryResult(None, (), f"timed out after {self.timeout:g} s: {_tail(err)}")
        if code in self.engine.no_match_exit:
            return QueryResult(None, ())
        if code != 0:
            return QueryResult(None, (), f"{_ended(code)}: {_tail(err)}")
        try:
            hits = parse_output(self.engine, out)
        except (ValueError, UnicodeDecodeError) as exc:
            return QueryResult(None, (), f"unparseable output ({exc}): {_tail(out)}")
        return rank_by_name(hits, row.source)

    def query_batch(self, rows: list[QueryRow]) -> list[QueryResult]:
        """Every row through batch processes, one after another: a process that dies is
        replaced for the rows after the one it died on."""
        # Serialised once: a request is its id (counted from 0 in each process) put in
        # front of this body, `"query":...,"limit":0}` and its newline.
        bodies = [orjson.dumps({"query": row.query, "limit": 0})[1:] + b"\n" for row in rows]
        results: list[QueryResult] = []
        while len(results) < len(rows):
            results += self._batch_process(rows, bodies, len(results))
        return results

    def _batch_process(
        self, rows: list[QueryRow], bodies: list[bytes], start: int
    ) -> list[QueryResult]:
        """Answers from one batch process to rows[start:]; stops at the first query it
        fails on.

        Up to AHEAD requests are written before their answers are read, so the finder
        finds its next query waiting when it answers one, and the harness reads answers
        that have piled up several at a time, instead of both sleeping in turn on every
        query. The finder still answers one query after another: the query in flight is
        the first one unanswered, and each has `timeout` seconds from the answer before,
        for writing its request (a finder may stop reading) and for reading its answer.
        Once every row is answered, stdin is closed and stdout read to its end: a line
        there is an answer to no request, so every answer before it may be shifted.
        """
        try:
            proc = subprocess.Popen(
                self.argv(self.engine.batch), cwd=self.cwd, env=self.env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise RecallError(f"cannot start {self.binary.label}: {exc.strerror}") from None
        assert proc.stdin and proc.stdout and proc.stderr
        self._started(proc.pid)
        reader = _AnswerReader(proc.stdout.fileno(), proc.stderr.fileno())
        stdin = proc.stdin.fileno()
        os.set_blocking(stdin, False)  # a finder that stops reading must not block the harness
        sent, ahead_bytes = start, 0  # requests written, the bytes of those not yet answered
        in_flight: collections.deque[int] = collections.deque()  # their lengths
        results: list[QueryResult] = []
        ends_by = 0.0  # when a finder done with its requests must have exited
        try:
            for i in range(start, len(rows)):
                deadline = time.monotonic() + self.timeout
                chunk: list[bytes] = []
                while sent < len(rows) and sent - i < AHEAD:
                    request = b'{"id":%d,' % (sent - start) + bodies[sent]
                    if sent > i and ahead_bytes + len(request) > AHEAD_BYTES:
                        break
                    chunk.append(request)
                    in_flight.append(len(request))
                    ahead_bytes += len(request)
                    sent += 1
                if chunk and not _write_by(stdin, b"".join(chunk), deadline, reader):
                    results.append(self._batch_died(proc, reader, stalled=True))
                    return results
                line = reader.readline(deadline)
                if line is None:
                    results.append(self._batch_died(proc, reader, stalled=False))
                    return results
                ahead_bytes -= in_flight.popleft()
                results.append(self._batch_answer(line, rows[i], i - start))
            proc.stdin.close()
            ends_by = time.monotonic() + EXIT_GRACE_S
            surplus, first = reader.rest(ends_by)
            if surplus:
                count = len(rows) - start
                raise RecallError(
                    self._protocol_error(
                        f"{surplus} answer line{'s' if surplus > 1 else ''} more than the "
                        f"{count} request{'s' if count > 1 else ''} it was sent; the first: "
                        f"{_shown(first.decode('utf-8', 'replace'))}"
                    )
                )
        except BaseException:
            kill_group(proc.pid)  # interrupted, or out of step: no grace for the finder
            raise
        finally:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
                try:
                    proc.wait(timeout=max(0.0, ends_by - time.monotonic()))
                except subprocess.TimeoutExpired:
                    kill_group(proc.pid)
            self._finished(proc.pid)
            proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    stream.close()
        return results

    def _batch_died(
        self, proc: subprocess.Popen, reader: _AnswerReader, stalled: bool
    ) -> QueryResult:
        """The error of the query in flight when no answer came: how the finder ended.

        A crash closes stdout a moment before the process can be reaped, so after the
        pipe closes the exit is awaited a little (DEATH_GRACE_S) before the finder counts
        as one that closed its stdout and lives on."""
        code = proc.poll()
        if code is None and reader.closed:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(timeout=DEATH_GRACE_S)
        if code is not None:
            what = _ended(code)
        elif reader.closed:
            what = "closed its stdout"
        else:
            what = f"timed out after {self.timeout:g} s"
            if stalled:
                what += " (it stopped reading its requests)"
        kill_group(proc.pid)
        proc.wait()
        return QueryResult(None, (), f"{what}: {_tail(reader.stderr())}")

    def _batch_answer(self, line: bytes, row: QueryRow, expected: int) -> QueryResult:
        """One answer line for row, whose request carried id `expected`. An answer that
        carries an id must carry that one: any other means the answers have shifted
        against the requests, and that is the run's error, not the query's."""
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            return QueryResult(None, (), f"unparseable output ({exc}): {_tail(line)}")
        if isinstance(data, dict) and "id" in data:
            got = data["id"]
            if type(got) is not int or got != expected:
                raise RecallError(
                    self._protocol_error(
                        f"the answer for id {expected} (query {_shown(row.query)}) carries "
                        f"id {_tail(orjson.dumps(got))}: its answers are out of step with "
                        "its requests"
                    )
                )
            if "error" not in data:
                data = data.get("results")
        if isinstance(data, dict) and "error" in data:
            return QueryResult(None, (), f"finder error: {str(data['error'])[:TAIL]}")
        try:
            return rank_by_name(json_hits(data), row.source)
        except ValueError as exc:
            return QueryResult(None, (), f"unparseable output ({exc}): {_tail(line)}")

    def _protocol_error(self, detail: str) -> str:
        return (
            f"batch finder {self.binary.label} ({' '.join(self.bin_argv)}) on "
            f"{self.corpus.checkout.pin.name}: {detail}"
        )


def _ended(code: int) -> str:
    """How a finder process ended, from its return code (negative: the signal)."""
    if code >= 0:
        return f"exit {code}"
    try:
        return f"killed by signal {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def _shown(text: str) -> str:
    """A query or line quoted for a one-line message, cut if long."""
    return repr(text) if len(text) <= SHOWN else repr(text[:SHOWN]) + "..."


def _collect(child: Child, timeout: float) -> tuple[bytes, bytes, int | None]:
    """stdout, stderr, and the exit status, or None if the process did not end within
    timeout. The answer is complete when the process exits, even if a background child it
    left still holds the pipes open, so the exit is awaited on a pidfd beside the pipes
    (where there is no pidfd, on the pipes closing)."""
    deadline = time.monotonic() + timeout
    chunks: dict[int, list[bytes]] = {child.stdout: [], child.stderr: []}
    try:
        pidfd: int | None = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        pidfd = None
    poller = select.poll()
    for fd in (child.stdout, child.stderr, *([pidfd] if pidfd is not None else [])):
        poller.register(fd, select.POLLIN)
    open_pipes, status = 2, None
    try:
        while open_pipes or (status is None and pidfd is not None):
            if status is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                ready = poller.poll(left * 1000)
            else:
                ready = poller.poll(0)  # exited: drain what is there, wait for no one
                if not ready:
                    break
            for fd, _event in ready:
                if fd == pidfd:
                    status = reap(child.pid)
                    poller.unregister(fd)
                    continue
                data = os.read(fd, 1 << 16)
                if data:
                    chunks[fd].append(data)
                else:
                    poller.unregister(fd)
                    open_pipes -= 1
        if status is None:
            status = _reap_by(child.pid, deadline)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return b"".join(chunks[child.stdout]), b"".join(chunks[child.stderr]), status


def _reap_by(pid: int, deadline: float) -> int | None:
    """The exit status if the process ends by deadline (only without a pidfd: a short
    sleep between looks), else None."""
    while (status := reaped(pid)) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(left, 0.001))
    return status


class _AnswerReader:
    """Answer lines from a batch finder's stdout, with a deadline per line and without a
    thread: the pipe is read without blocking, and polled only when it is empty. Its
    stderr is drained meanwhile (the last TAIL_KEEP bytes kept for an error message), so
    a finder that logs a lot never stalls on a full pipe."""

    def __init__(self, stdout: int, stderr: int) -> None:
        self.stdout, self.stderr_fd = stdout, stderr
        for fd in (stdout, stderr):
            os.set_blocking(fd, False)
        with contextlib.suppress(OSError, AttributeError):  # room for a long answer
            fcntl.fcntl(stdout, fcntl.F_SETPIPE_SZ, 1 << 20)
        self.lines: collections.deque[bytes] = collections.deque()
        self.partial: list[bytes] = []
        self.closed = False  # stdout reached its end
        self.stderr_open = True
        self.err = b""
        self.poller = select.poll()
        for fd in (stdout, stderr):
            self.poller.register(fd, select.POLLIN)

    def readline(self, deadline: float) -> bytes | None:
        """The next line, or None if the pipe closed (`closed` says so) or the deadline
        passed first."""
        while not self.lines:
            if self.closed:
                return None
            try:
                chunk = os.read(self.stdout, 1 << 20)
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                for fd, _event in self.poller.poll(left * 1000):
                    if fd == self.stderr_fd:
                        self.drain_stderr(self.poller)
                continue
            if not chunk:
                self.closed = True
                self.poller.unregister(self.stdout)
                return None
            self._split(chunk)
        return self.lines.popleft()

    def rest(self, deadline: float) -> tuple[int, bytes]:
        """How many lines are still to come before stdout closes (or deadline), an
        unterminated last one included, and the first of them."""
        count, first = 0, b""
        while (line := self.readline(deadline)) is not None:
            count, first = count + 1, first if count else line
        if self.closed and self.partial:
            count, first = count + 1, first if count else b"".join(self.partial)
        return count, first

    def drain_stderr(self, poller: select.poll) -> None:
        """Read what stderr holds now; once it closes, poller stops watching it."""
        if self._read_stderr() == b"":
            self.stderr_open = False
            poller.unregister(self.stderr_fd)

    def _split(self, chunk: bytes) -> None:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if self.partial:
                self.lines.append(b"".join([*self.partial, chunk[start:end]]))
                self.partial = []
            else:
                self.lines.append(chunk[start:end])
            start = end + 1
        if start < len(chunk):
            self.partial.append(chunk[start:])

    def _read_stderr(self) -> bytes | None:
        """One read of stderr, its tail kept: what it held (b"" once closed), or None if
        it holds nothing now."""
        try:
            data = os.read(self.stderr_fd, 1 << 16)
        except BlockingIOError:
            return None
        self.err = (self.err + data)[-TAIL_KEEP:]
        return data

    def stderr(self) -> bytes:
        """The last TAIL_KEEP bytes the finder wrote to stderr, once it has ended."""
        with contextlib.suppress(OSError):
            while self._read_stderr():
                pass
        return self.err


def _write_by(fd: int, data: bytes, deadline: float, reader: _AnswerReader) -> bool:
    """All of data into a batch finder's stdin (non-blocking) by deadline; False if the
    finder stopped reading first. Its stderr is drained meanwhile, so that a finder
    blocked on a full stderr is not taken for one that stopped reading. A finder that
    has died reads nothing: its exit is reported when its answer does not come."""
    view = memoryview(data)
    poller: select.poll | None = None
    while view:
        try:
            view = view[os.write(fd, view) :]
            continue
        except BrokenPipeError:
            return True
        except BlockingIOError:
            pass
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if poller is None:  # only once the pipe is full: most writes never get here
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            if reader.stderr_open:
                poller.register(reader.stderr_fd, select.POLLIN)
        for ready, _event in poller.poll(left * 1000):
            if ready == reader.stderr_fd:
                reader.drain_stderr(poller)
    return True


def _communicate(child: Child, timeout: float) -> tuple[int | None, bytes, bytes]:
    """Output and exit status; None on timeout, after the whole group is killed."""
    try:
        out, err, status = _collect(child, timeout)
        if status is None:
            kill_group(child.pid)
            reap(child.pid)
        return status, out, err
    except BaseException:
        kill_group(child.pid)
        with contextlib.suppress(ChildProcessError):
            reap(child.pid)
        raise
    finally:
        os.close(child.stdout)
        os.close(child.stderr)


def _hold_lock(path: Path) -> BinaryIO:
    """An open file holding an exclusive lock: the kernel drops it when the run dies."""
    partial = path.with_name(path.name + ".partial")
    handle = open(partial, "a+b")  # noqa: SIM115 - held open for the session's life
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    partial.rename(path)  # a sweeper only ever sees the lock file already locked
    return handle


def sweep_stale_sessions() -> None:
    """Remove the temporary folders of runs that were killed (SIGKILL leaves them): any
    recall-run- folder whose lock no live process holds."""
    root = Path(tempfile.gettempdir())
    for folder in root.glob(f"{RUN_PREFIX}*"):
        try:
            with open(folder / LOCK_NAME, "rb") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue


def run_binary(
    binary: FinderBuild,
    rows: list[QueryRow],
    corpora: dict[str, Corpus],
    *,
    jobs: int,
    timeout: float,
) -> RunResult:
    """Every row through binary, results in row order whatever the completion order.

    A batch engine's corpora are measured `jobs` at a time, each with its own index and
    processes, and a corpus's rows in shards when there are more jobs than corpora left;
    per-query engines take one corpus at a time through a pool of `jobs` processes. The
    sessions are made one after another before any runs: each sweeps the temporary
    folders of dead runs, and must not see another's folder before it is locked."""
    repos = list(dict.fromkeys(r.repo for r in rows))
    picked = [[i for i, r in enumerate(rows) if r.repo == repo] for repo in repos]
    engine = binary.engine
    together = min(jobs, len(repos)) if engine.batch and engine.batch_jobs else 1
    sessions: list[Session] = []

    def measure(k: int) -> tuple[list[QueryResult], float, float, bool]:
        session, subset = sessions[k], [rows[i] for i in picked[k]]
        _progress(f"{binary.label}: {repos[k]}: indexing, then {len(subset)} queries")
        try:
            index_s = session.index()
            started = time.perf_counter()
            if not engine.batch:
                answers = _query_pool(session, subset, jobs)
            else:
                answers = _batch_shards(
                    session, subset, jobs // together if engine.batch_jobs else 1
                )
            query_s = time.perf_counter() - started
        finally:
            session.close()
        return answers, index_s, query_s, restore_if_dirty(corpora[repos[k]])

    def stop() -> None:
        for session in sessions:
            session.stop()

    try:
        for repo in repos:
            sessions.append(Session(binary, corpora[repo], timeout))
        if together > 1:
            measured = _in_parallel(stop, measure, list(range(len(repos))), together)
        else:
            measured = [measure(k) for k in range(len(repos))]
    finally:
        for session in sessions:
            session.close()
    results: list[QueryResult | None] = [None] * len(rows)
    for k, (answers, _index_s, _query_s, _dirtied) in enumerate(measured):
        for i, answer in zip(picked[k], answers, strict=True):
            results[i] = answer
    done = tuple(r for r in results if r is not None)
    return RunResult(
        binary.label, " ".join(binary.bin_argv()),
        sum(m[1] for m in measured), sum(m[2] for m in measured), done,
        dirtied=tuple(repo for repo, m in zip(repos, measured, strict=True) if m[3]),
    )  # fmt: skip


T = TypeVar("T")
R = TypeVar("R")


def _batch_shards(session: Session, rows: list[QueryRow], jobs: int) -> list[QueryResult]:
    """A corpus's rows in `jobs` contiguous shards, each through batch processes of its
    own over the one index: a batch finder answers each query from the index alone, so
    the answers are the ones a single process gives, in row order, in about 1/jobs of the
    time on as many cores."""
    size = -(-len(rows) // max(1, jobs))
    shards = [rows[i : i + size] for i in range(0, len(rows), size)] if rows else []
    if len(shards) <= 1:
        return session.query_batch(rows)
    answers = _in_parallel(session.stop, session.query_batch, shards, len(shards))
    return [answer for shard in answers for answer in shard]


def _query_pool(session: Session, rows: list[QueryRow], jobs: int) -> list[QueryResult]:
    """Per-query processes in parallel."""
    return _in_parallel(session.stop, session.query_one, rows, jobs)


def _in_parallel(
    stop: Callable[[], None], work: Callable[[T], R], items: list[T], workers: int
) -> list[R]:
    """work over items on threads, results in item order; an interrupt cancels what has not
    started and kills what has, instead of waiting for every queued item to finish."""
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        return list(pool.map(work, items))
    except BaseException:
        stop()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)


def restore_if_dirty(corpus: Corpus) -> bool:
    """After a binary's queries: did it write into the checkout? If so, rebuild it (the deep
    check, since a finder may write into ignored paths) so the next binary sees the pin."""
    if is_clean(corpus.checkout):
        return False
    if corpus.cache is not None:
        fetch(corpus.checkout.pin, corpus.cache, corpus.mirror, deep=True)
    return True


def _progress(message: str) -> None:
    """Progress goes to a terminal only, so stdout and logs carry just the report."""
    if sys.stderr.isatty():
        print(f"recall: {message}", file=sys.stderr, flush=True)


def check_answered(run: RunResult, *, allow_empty: bool) -> None:
    """A binary that answers (almost) nothing is far likelier misdescribed than bad: one
    that fails on (almost) every query cannot be measured at all, and one that returns
    nothing is accepted only when the user says it is meant (--allow-empty)."""
    if not run.results:
        return
    total = len(run.results)
    failed = [r.error for r in run.results if r.error]
    if len(failed) / total >= EMPTY_SUSPECT:
        raise RecallError(
            f"{run.label} failed on {len(failed)} of {total} queries, so it cannot be "
            f"measured; the first: {failed[0]}"
        )
    empty = sum(1 for r in run.results if not r.top and not r.error)
    if not allow_empty and (empty + len(failed)) / total >= EMPTY_SUSPECT:
        raise RecallError(
            f"{run.label} returned nothing for {empty} of {total} queries: the "
            "engine description is probably wrong (use --allow-empty if it is not)"
        )
