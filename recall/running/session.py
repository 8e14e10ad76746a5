"""One finder build on one corpus: its folders, lock, environment, index and protocols.

Every finder process gets a fresh database folder and a HOME of the session's own, so it
can read no index or configuration of the user's. A query that crashes, hangs or prints
garbage is an error for that query, never a plain miss. The folder is locked for the
session's life, so a session killed outright (SIGKILL leaves its folder) is swept by the
next one, and never a live one's.
"""

from __future__ import annotations

import collections
import dataclasses
import fcntl
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import BinaryIO

import orjson

from recall.analysis.model import TOP, QueryResult
from recall.errors import RecallError
from recall.finders.engine import (
    RUN_FOLDERS,
    QueryArgv,
    expand,
    fill,
    finder_env,
    names_argv,
    uses_node_modules,
)
from recall.finders.kinds.node import MODULES_ENV, session_env
from recall.finders.protocol import rank_answer, rank_json
from recall.inputs.queryset import QueryRow
from recall.running.indexes import KeptIndex, index_key
from recall.running.interpreter import cache_of
from recall.running.proc import AnswerReader, Piped, Spawner, communicate, kill_group, write_by
from recall.running.values import Corpus, FinderBuild

TAIL = 300
AHEAD = 16  # batch requests written before their answers are read
AHEAD_BYTES = 4096  # and at most this much of them: a pipe holds at least one page
EXIT_GRACE_S = 5.0  # for a batch finder to exit once its stdin is closed
DEATH_GRACE_S = 1.0  # for a batch finder whose stdout closed to be seen exiting
SHOWN = 80  # characters of a query or line quoted in a one-line error
# said with an answer out of step: the likeliest cause, which the finder's author can check
STRAY = "a line it writes to stdout that is no answer (a print) shifts every answer after it"
INDEX_TIMEOUT_S = 1800.0  # indexing a corpus is one long step, not a query
RUN_PREFIX = "recall-run-"
LOCK_NAME = ".recall-lock"

MAX_TIMEOUT_S = 86400.0  # a day: poll() and time_t overflow long before inf


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    return " ".join(text[-TAIL:].split())


class Session:
    """One finder build on one corpus: its temporary folder, environment and index, and
    its processes, per query (`run`, `query_one`) or in batch (`query_batch`)."""

    def __init__(
        self,
        binary: FinderBuild,
        corpus: Corpus,
        timeout: float,
        *,
        build: str | None = None,
        home: Path | None = None,
    ) -> None:
        """build: the cache identity of a cacheable build (as a result's key names it),
        which lets an engine with `index_cache` reuse a kept index; None never does.
        home: the folder of another live session of this run whose HOME, XDG folders and
        TMPDIR the finder's processes get (None: the session's own); see `home`."""
        self.binary, self.corpus, self.timeout = binary, corpus, timeout
        self.engine = binary.engine
        self._names = frozenset(corpus.names)  # an answer naming none of them is flagged
        self._live: set[int] = set()  # process groups of finder processes still running
        self.restarts = 0  # batch processes started again after one died or timed out
        self._stopping = False
        self._guard = threading.Lock()
        self._devnull = -1
        self._kind_vars = self._kind_env()  # before the temporary folder: it may fail
        sweep_stale_sessions()
        try:
            self._tmp = Path(tempfile.mkdtemp(prefix=RUN_PREFIX))
        except OSError as exc:
            raise RecallError(
                f"temporary folder {tempfile.gettempdir()}: {exc.strerror or exc}"
            ) from None
        # Where HOME, the XDG folders and TMPDIR are (RUN_FOLDERS): the session's own, or
        # for the names lists of a judgments run the first list's session's, so that what a
        # finder sets up there once (the reference finder's compiled kernel) is made once a
        # run, not once a list (measure.run_binary).
        self.home = home or self._tmp
        try:
            self._lock = _hold_lock(self._tmp / LOCK_NAME)
            self._devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            db = self._tmp / "db"
            db.mkdir()
            names = self._tmp / "names.txt"
            listed = "".join(f"{n}\n" for n in corpus.names).encode("utf-8")
            names.write_bytes(listed)
            checkout = corpus.checkout.path if corpus.checkout else self._tmp / "corpus"
            if corpus.checkout is None:  # a names list's: an empty folder, its default cwd
                checkout.mkdir()
        except OSError as exc:
            self.close()
            raise RecallError(f"temporary folder {self._tmp}: {exc.strerror or exc}") from None
        # A names list alone has no checkout to index: an engine indexes it with its
        # `index_names` (engine.names_argv; refuse_unfit has refused one that needs more).
        self._index = self.engine.index if corpus.checkout else names_argv(self.engine)
        self._values = {
            **binary.values(),
            "db": str(db),
            "corpus": str(checkout),
            "names": str(names),
            "language": corpus.checkout.pin.language if corpus.checkout else "",
        }
        if MODULES_ENV in self._kind_vars:
            self._values["node_modules"] = self._kind_vars[MODULES_ENV]
        self._bin_argv = binary.bin_argv()
        self._values["bin"] = " ".join(self._bin_argv)
        self._cwd = fill(self.engine.cwd, self._values)
        self._stdin_path = fill(self.engine.stdin, self._values) if self.engine.stdin else None
        # encoded once: Popen would encode every variable again for every query
        self._env = {os.fsencode(k): os.fsencode(v) for k, v in self._environment().items()}
        self._spawner = Spawner(self._cwd, self._env)
        self._query_argv = self.prepared(self.engine.query)
        self._db = db
        self._kept: KeptIndex | None = None
        if build is not None and self.engine.index_cache and corpus.cache is not None:
            pin = corpus.checkout.pin if corpus.checkout else None
            key = index_key(build, self.engine, self._index, pin, listed, binary.tree)
            self._kept = KeptIndex(corpus.cache, key)

    def _kind_env(self) -> dict[str, str]:
        """What an engine needs installed before its processes start: the tree's npm
        packages, in the cache its `{python}` was made in, for a node engine and for an
        engine that names {node_modules} (a language server that is an npm package)."""
        if not uses_node_modules(self.engine):
            return {}
        return session_env(self.binary.tree, cache_of(self.binary.python), self.engine)

    def _environment(self) -> dict[str, str]:
        """The declared environment (engine.finder_env) with the session's folders made
        and its placeholders filled: nothing else of the caller's reaches the finder."""
        for folder in RUN_FOLDERS.values():
            (self.home / folder).mkdir(exist_ok=True)
        run = {name: f"{{run}}/{folder}" for name, folder in RUN_FOLDERS.items()}
        env = {}
        for name, value in finder_env(self.engine, os.environ).items():
            env[name] = str(self.home) + value[len("{run}") :] if run.get(name) == value else value
        env.update(self._kind_vars)
        env.update({k: fill(v, self._values) for k, v in self.engine.env})
        return env

    def _argv(self, template: tuple[str, ...]) -> list[str]:
        return expand(template, self._values, self._bin_argv)

    def prepared(self, template: tuple[str, ...]) -> QueryArgv:
        """A per-query argv of this session (the engine's query, or its profile), with all
        but {query} and {limit} filled in once."""
        return QueryArgv(template, self._values, self._bin_argv)

    def close(self) -> None:
        self.stop()
        if self._devnull >= 0:
            os.close(self._devnull)
            self._devnull = -1
        shutil.rmtree(self._tmp, ignore_errors=True)
        if getattr(self, "_lock", None) is not None:
            self._lock.close()

    def stop(self) -> None:
        """Kill every finder process group still running, and any started after this."""
        with self._guard:
            self._stopping = True
            live = list(self._live)
        for pid in live:
            kill_group(pid)

    def _started(self, pid: int) -> None:
        with self._guard:
            self._live.add(pid)
            stopping = self._stopping
        if stopping:
            kill_group(pid)

    def _finished(self, pid: int) -> None:
        kill_group(pid)  # background children must not outlive the query they served
        with self._guard:
            self._live.discard(pid)

    def index(self) -> float:
        """Seconds to make `{db}`: the index argv run, or a kept index copied in."""
        if not self._index:
            return 0.0
        started = time.perf_counter()
        if self._kept is None:
            self._run_index()
        else:
            try:
                self._kept.restore_or_make(self._db, self._run_index)
            except OSError as exc:
                raise RecallError(f"cache {self._kept.root}: {exc.strerror or exc}") from None
        return time.perf_counter() - started

    def _run_index(self) -> None:
        argv = self._argv(self._index)
        code, _out, err = self.run(argv, INDEX_TIMEOUT_S)
        if code != 0:
            reason = "timed out" if code is None else _ended(code)
            raise RecallError(
                f"index {self.corpus.name} with {self.binary.label} failed "
                f"({reason}): {' '.join(argv)}: {_tail(err)}"
            )

    def run(
        self, argv: list[str], timeout: float, stdin_path: str | None = None
    ) -> tuple[int | None, bytes, bytes]:
        """Run argv in its own process group, reading stdin_path (default: the engine's
        `stdin`); on timeout the whole group is killed."""
        stdin_path = stdin_path or self._stdin_path
        try:
            if stdin_path:
                with self._open_stdin(stdin_path) as stdin:
                    child = self._spawner.start(argv, stdin.fileno())
            else:
                child = self._spawner.start(argv, self._devnull)
        except OSError as exc:
            self._check_cwd()
            return 127, b"", f"cannot start {argv[0]}: {exc.strerror}".encode()
        self._started(child.pid)
        try:
            return communicate(child, timeout)
        finally:
            self._finished(child.pid)

    def _open_stdin(self, path: str) -> BinaryIO:
        """The engine's `stdin` file; one it cannot open is the engine description's fault
        (a key naming a path), not the program's, and so an error of the run."""
        try:
            return open(path, "rb")
        except OSError as exc:
            why = " does not exist" if isinstance(exc, FileNotFoundError) else f": {exc.strerror}"
            raise RecallError(f"engine {self.engine.source}: stdin {path}{why}") from None

    def _check_cwd(self) -> None:
        """A process that cannot start because its `cwd` is missing: an error of the engine
        description naming the key and the path (the spawn's own error would blame the
        program: `cannot start fzf`)."""
        if not os.path.isdir(self._cwd):
            why = "is not a folder" if os.path.exists(self._cwd) else "does not exist"
            raise RecallError(f"engine {self.engine.source}: cwd {self._cwd} {why}")

    def query_one(self, row: QueryRow) -> QueryResult:
        return self.query_alike([row])[0]

    def query_alike(self, rows: list[QueryRow]) -> list[QueryResult]:
        """Rows that ask one question (the same query and limit, other sources: a judgments
        query's candidates) through one process: each row's rank read from its one answer."""
        code, out, err = self.run(
            self._query_argv.fill(rows[0].query, str(limit_of(rows[0]))), self.timeout
        )
        return [self._answer(row, code, out, err) for row in rows]

    def _answer(self, row: QueryRow, code: int | None, out: bytes, err: bytes) -> QueryResult:
        """A per-query process's result for row, from how it ended and what it printed."""
        if code is None:
            return QueryResult(None, (), f"timed out after {self.timeout:g} s: {_tail(err)}")
        if code in self.engine.no_match_exit:
            return QueryResult(None, ())
        if code != 0:
            return QueryResult(None, (), f"{_ended(code)}: {_tail(err)}")
        try:
            return rank_answer(self.engine, out, row.source, self._names)
        except (ValueError, UnicodeDecodeError) as exc:
            return QueryResult(None, (), f"unparseable output ({exc}): {_tail(out)}")

    def probe(self, row: QueryRow) -> Probed:
        """One query alone, as the run asks it (through the batch argv with its one
        request on stdin, when the engine has one): what a person running it by hand
        would see, for an error that must say why a finder answers nothing."""
        limit = str(limit_of(row))
        if not self.engine.batch:
            argv = self._query_argv.fill(row.query, limit)
            code, out, err = self.run(argv, self.timeout)
            return Probed(argv, None, code, out, err, self._answer(row, code, out, err))
        request = b'{"id":0,' + BatchFeed([row]).bodies[0]
        asked = self._tmp / "probe-request.jsonl"
        asked.write_bytes(request)
        argv = self._argv(self.engine.batch)
        code, out, err = self.run(argv, self.timeout, str(asked))
        first = out.split(b"\n", 1)[0]
        if first.strip():
            result = self._batch_answer(first, row, 0)
        elif code == 0:
            result = QueryResult(None, (), f"exit 0 with no answer line: {_tail(err)}")
        else:  # timed out, or an exit of its own
            result = self._answer(row, code, b"", err)
        return Probed(argv, request, code, out, err, result)

    def shown(self) -> Shown:
        """What a command printed for a person runs besides the query's argv: its folder,
        the engine's own variables, the index step, and the session's {names} and {db},
        which the printed command must replace (they go with the session)."""
        return Shown(
            cwd=self._cwd,
            env=tuple((k, fill(v, self._values)) for k, v in self.engine.env),
            index=self._argv(self._index) if self._index else None,
            stdin=self._stdin_path,
            names=self._values["names"],
            db=str(self._db),
        )

    def query_batch(self, rows: list[QueryRow]) -> list[QueryResult]:
        """Every row through batch processes, one after another."""
        feed = BatchFeed(rows)
        self.serve(feed)
        return feed.answers()

    def serve(self, feed: BatchFeed) -> None:
        """Answer rows drawn from feed through one batch process at a time until the feed
        is empty: a process that dies is replaced for the rows it had drawn, the one it
        died on first (see _died), unless the session is being stopped; each replacement
        is counted in `restarts`, which the report shows (a language server that times
        out and is started again forty times costs minutes that no error row shows).
        Other processes, of this session or another thread's call, may draw from the same
        feed meanwhile."""
        unsent: collections.deque[int] = collections.deque()
        while self._batch_process(feed, unsent):
            if self._stopping or not (unsent or feed.left()):
                break
            with self._guard:
                self.restarts += 1

    def _batch_process(self, feed: BatchFeed, unsent: collections.deque[int]) -> bool:
        """Answers from one batch process to the rows in unsent, then to rows drawn from
        feed; stops at the first query it fails on, leaving the rows it had drawn but not
        answered in unsent (that query too, for a retry, unless it was the process's first).
        True if it stopped there, False once every row is answered.

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
            proc = self._spawner.start_piped(self._argv(self.engine.batch))
        except OSError as exc:
            self._check_cwd()
            raise RecallError(f"cannot start {self.binary.label}: {exc.strerror}") from None
        self._started(proc.pid)
        reader = AnswerReader(proc.stdout, proc.stderr)
        stdin = proc.stdin
        os.set_blocking(stdin, False)  # a finder that stops reading must not block the harness
        sent = answered = ahead_bytes = 0  # requests written, answers read, the bytes between
        in_flight: collections.deque[tuple[int, int]] = collections.deque()  # (row, length)
        ends_by = 0.0  # when a finder done with its requests must have exited
        try:
            while True:
                deadline = time.monotonic() + self.timeout
                chunk: list[bytes] = []
                while len(in_flight) < AHEAD:
                    if not unsent:  # a drawn row is this process's to send, now or next
                        drawn = feed.draw()
                        if drawn is None:
                            break
                        unsent.append(drawn)
                    i = unsent[0]
                    request = b'{"id":%d,' % sent + feed.bodies[i]
                    if in_flight and ahead_bytes + len(request) > AHEAD_BYTES:
                        break
                    unsent.popleft()
                    chunk.append(request)
                    in_flight.append((i, len(request)))
                    ahead_bytes += len(request)
                    sent += 1
                if not in_flight:
                    break
                if chunk and not write_by(stdin, b"".join(chunk), deadline, reader):
                    self._died(feed, unsent, in_flight, proc, reader, answered, stalled=True)
                    return True
                line = reader.readline(deadline)
                if line is None:
                    self._died(feed, unsent, in_flight, proc, reader, answered, stalled=False)
                    return True
                i, length = in_flight.popleft()
                ahead_bytes -= length
                feed.answer(i, self._batch_answer(line, feed.rows[i], answered))
                answered += 1
            proc.close_stdin()
            ends_by = time.monotonic() + EXIT_GRACE_S
            surplus, first = reader.rest(ends_by)
            if surplus:
                raise RecallError(
                    self._protocol_error(
                        f"{surplus} answer line{'s' if surplus > 1 else ''} more than the "
                        f"{sent} request{'s' if sent > 1 else ''} it was sent; the first: "
                        f"{_shown(first.decode('utf-8', 'replace'))} ({STRAY})"
                    )
                )
        except BaseException:
            kill_group(proc.pid)  # interrupted, or out of step: no grace for the finder
            raise
        finally:
            if proc.poll() is None:
                proc.close_stdin()
                if proc.wait(max(0.0, ends_by - time.monotonic())) is None:
                    kill_group(proc.pid)
            self._finished(proc.pid)
            proc.wait()
            proc.close()
        return False

    def _died(
        self,
        feed: BatchFeed,
        unsent: collections.deque[int],
        in_flight: collections.deque[tuple[int, int]],
        proc: Piped,
        reader: AnswerReader,
        answered: int,
        stalled: bool,
    ) -> None:
        """The process died on the query in flight: the rows written after it go back to
        the front of unsent, in order, for the next process, and so does that query unless
        it was the first this process was sent, whose error it then is (how the process
        ended).

        So a query is retried once, as the first query of a fresh process, whenever its
        process dies on it after answering others, and whatever it gets there is its
        answer. Its outcome is then the same whichever rows shared its first process,
        which differ with --jobs: a finder that dies after every fifth answer loses no
        query, and one that kills every process it is sent to is an error either way."""
        result = self._batch_died(proc, reader, stalled)
        first = in_flight.popleft()[0]
        unsent.extendleft(reversed([i for i, _length in in_flight]))
        if answered:
            unsent.appendleft(first)
        else:
            feed.answer(first, result)

    def _batch_died(self, proc: Piped, reader: AnswerReader, stalled: bool) -> QueryResult:
        """The error of the query in flight when no answer came: how the finder ended.

        A crash closes stdout a moment before the process can be reaped, so after the
        pipe closes the exit is awaited a little (DEATH_GRACE_S) before the finder counts
        as one that closed its stdout and lives on."""
        code = proc.poll()
        if code is None and reader.closed:
            code = proc.wait(DEATH_GRACE_S)
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
                        f"its requests ({STRAY})"
                    )
                )
            if "error" not in data:
                data = data.get("results")
        if isinstance(data, dict) and "error" in data:
            return QueryResult(None, (), f"finder error: {str(data['error'])[:TAIL]}")
        try:
            return rank_json(data, row.source, self._names)
        except ValueError as exc:
            return QueryResult(None, (), f"unparseable output ({exc}): {_tail(line)}")

    def _protocol_error(self, detail: str) -> str:
        return (
            f"batch finder {self.binary.label} ({' '.join(self._bin_argv)}) on "
            f"{self.corpus.name}: {detail}"
        )


@dataclasses.dataclass(frozen=True)
class Probed:
    """One query run alone (Session.probe): its argv, the request it read on stdin (a
    batch engine's; None: the engine's own `stdin`), how it ended (None: timed out), what
    it printed, and the result the run would count."""

    argv: list[str]
    request: bytes | None
    code: int | None
    out: bytes
    err: bytes
    result: QueryResult


@dataclasses.dataclass(frozen=True)
class Shown:
    """A session's side of a command printed for a person (Session.shown)."""

    cwd: str
    env: tuple[tuple[str, str], ...]
    index: list[str] | None
    stdin: str | None
    names: str
    db: str


class BatchFeed:
    """A corpus's rows handed out one at a time, in row order, to the batch processes that
    serve it, and their answers kept by row. A batch finder answers a query from its index
    alone, so whichever process draws a row, the answer is the one a single process gives,
    and a process that is done early draws more instead of waiting for the others."""

    def __init__(self, rows: list[QueryRow]) -> None:
        self.rows = rows
        # Serialised once: a request is its id (counted from 0 in each process) put in
        # front of this body, `"query":...,"limit":0}` and its newline.
        self.bodies = [
            orjson.dumps({"query": row.query, "limit": limit_of(row)})[1:] + b"\n" for row in rows
        ]
        self._answers: list[QueryResult | None] = [None] * len(rows)
        self._drawn = 0
        self._guard = threading.Lock()

    def draw(self) -> int | None:
        """The next row no process has drawn, or None when none is left."""
        with self._guard:
            if self._drawn == len(self.rows):
                return None
            self._drawn += 1
            return self._drawn - 1

    def left(self) -> int:
        """How many rows no process has drawn yet."""
        with self._guard:
            return len(self.rows) - self._drawn

    def answer(self, i: int, result: QueryResult) -> None:
        self._answers[i] = result

    def answers(self) -> list[QueryResult]:
        """Every row's answer, in row order; only once every row is answered."""
        done = [a for a in self._answers if a is not None]
        if len(done) != len(self.rows):
            raise RecallError(f"{len(self.rows) - len(done)} rows were never answered")
        return done


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


def check_timeout(seconds: float) -> None:
    """A per-query timeout is a finite number of seconds: NaN compares false with every
    bound, and inf (or 1e300) overflows the clock arithmetic that waits on a finder."""
    if not 0 < seconds <= MAX_TIMEOUT_S:
        raise RecallError(
            f"--timeout {seconds:g}: give seconds above 0 and at most {MAX_TIMEOUT_S:g}"
        )


def limit_of(row: QueryRow) -> int:
    """What a row asks for: everything for a sourced row (its rank may be anywhere), the
    top 10 for a hand row (no source to rank: its top 10 is all that is kept), so that a
    typing set's short prefixes cost a finder ten answers, not thousands."""
    return 0 if row.sourced else TOP
