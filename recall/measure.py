"""Running one binary over the query set: isolated index, every query, rank by name.

Every finder process gets a fresh database folder and a HOME of the run's own, so it can
read no index or configuration of the user's. A query that crashes, hangs or prints
garbage is an error for that query, never a plain miss.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import orjson

from recall.corpus import Checkout, Pin, fetch, hold_in_use, is_clean, use_lock
from recall.engine import Engine, expand, fill
from recall.errors import RecallError
from recall.queryset import QueryRow
from recall.symbols import checkout_symbols, distinct_names

TOP = 10
TAIL = 300
EMPTY_SUSPECT = 0.95
INDEX_TIMEOUT_S = 1800.0  # indexing a corpus is one long step, not a query
RUN_PREFIX = "recall-run-"
LOCK_NAME = ".recall-lock"


@dataclass(frozen=True)
class Binary:
    """An engine bound to the tree it was built from."""

    label: str
    engine: Engine
    tree: Path

    def values(self) -> dict[str, str]:
        return {"tree": str(self.tree), "python": sys.executable}

    def bin_argv(self) -> list[str]:
        return [fill(part, self.values()) for part in self.engine.bin]


@dataclass(frozen=True)
class Hit:
    name: str
    file: str | None
    line: int | None


@dataclass(frozen=True)
class QueryResult:
    rank: int | None
    top: tuple[Hit, ...]
    error: str | None = None


@dataclass(frozen=True)
class RunResult:
    label: str
    bin: str
    index_s: float
    query_s: float
    results: tuple[QueryResult, ...]
    cached: bool = False  # read from the results cache or a saved run, not run now
    dirtied: tuple[str, ...] = ()  # corpora whose checkout this binary wrote into

    @property
    def errors(self) -> int:
        return sum(1 for r in self.results if r.error)


@dataclass(frozen=True)
class Corpus:
    """A checkout and the names file the harness writes for it."""

    checkout: Checkout
    names: list[str]
    cache: Path | None = None  # where to rebuild the checkout from if a finder dirties it
    mirror: Path | None = None


def open_corpus(pin: Pin, cache: Path, mirror: Path | None) -> Corpus:
    """A pin's checkout, marked in use by this process (so prune leaves it), fetched, with
    its names listed: what every binary run on it needs."""
    hold_in_use(use_lock(cache, "corpora", pin.name))
    checkout = fetch(pin, cache, mirror)
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

    def __init__(self, binary: Binary, corpus: Corpus, timeout: float) -> None:
        self.binary, self.corpus, self.timeout = binary, corpus, timeout
        self.engine = binary.engine
        self.live: set[subprocess.Popen[bytes]] = set()
        self.stopping = False
        self.guard = threading.Lock()
        sweep_stale_sessions()
        try:
            self.tmp = Path(tempfile.mkdtemp(prefix=RUN_PREFIX))
        except OSError as exc:
            raise RecallError(
                f"temporary folder {tempfile.gettempdir()}: {exc.strerror or exc}"
            ) from None
        try:
            self.lock = _hold_lock(self.tmp / LOCK_NAME)
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
        self.bin_argv = binary.bin_argv()
        self.values["bin"] = " ".join(self.bin_argv)
        self.cwd = fill(self.engine.cwd, self.values)
        self.stdin_path = fill(self.engine.stdin, self.values) if self.engine.stdin else None
        # encoded once: Popen would encode every variable again for every query
        self.env = {os.fsencode(k): os.fsencode(v) for k, v in self._environment().items()}

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
        env.update({k: fill(v, self.values) for k, v in self.engine.env})
        return env

    def argv(self, template: tuple[str, ...], extra: dict[str, str] | None = None) -> list[str]:
        return expand(template, {**self.values, **(extra or {})}, self.bin_argv)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if getattr(self, "lock", None) is not None:
            self.lock.close()

    def stop(self) -> None:
        """Kill every finder process group still running, and any started after this."""
        with self.guard:
            self.stopping = True
            live = list(self.live)
        for proc in live:
            _kill_group(proc)

    def _started(self, proc: subprocess.Popen[bytes]) -> None:
        with self.guard:
            self.live.add(proc)
            stopping = self.stopping
        if stopping:
            _kill_group(proc)

    def _finished(self, proc: subprocess.Popen[bytes]) -> None:
        _kill_group(proc)  # background children must not outlive the query they served
        with self.guard:
            self.live.discard(proc)

    def index(self) -> float:
        if not self.engine.index:
            return 0.0
        argv = self.argv(self.engine.index)
        started = time.perf_counter()
        code, _out, err = self.run(argv, INDEX_TIMEOUT_S)
        if code != 0:
            reason = "timed out" if code is None else f"exit {code}"
            raise RecallError(
                f"index {self.corpus.checkout.pin.name} with {self.binary.label} failed "
                f"({reason}): {' '.join(argv)}: {_tail(err)}"
            )
        return time.perf_counter() - started

    def run(self, argv: list[str], timeout: float) -> tuple[int | None, bytes, bytes]:
        """Run argv in its own process group; on timeout the whole group is killed."""
        with contextlib.ExitStack() as stack:
            stdin = (
                stack.enter_context(open(self.stdin_path, "rb"))
                if self.stdin_path
                else subprocess.DEVNULL
            )
            try:
                proc = subprocess.Popen(
                    argv, cwd=self.cwd, env=self.env, stdin=stdin,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                )  # fmt: skip
            except OSError as exc:
                return 127, b"", f"cannot start {argv[0]}: {exc.strerror}".encode()
        self._started(proc)
        try:
            return _communicate(proc, timeout)
        finally:
            self._finished(proc)

    def query_one(self, row: QueryRow) -> QueryResult:
        argv = self.argv(self.engine.query, {"query": row.query, "limit": "0"})
        code, out, err = self.run(argv, self.timeout)
        if code is None:
            return QueryResult(None, (), f"timed out after {self.timeout:g} s: {_tail(err)}")
        if code in self.engine.no_match_exit:
            return QueryResult(None, ())
        if code != 0:
            return QueryResult(None, (), f"exit {code}: {_tail(err)}")
        try:
            hits = parse_output(self.engine, out)
        except (ValueError, UnicodeDecodeError) as exc:
            return QueryResult(None, (), f"unparseable output ({exc}): {_tail(out)}")
        return rank_by_name(hits, row.source)

    def query_batch(self, rows: list[QueryRow]) -> list[QueryResult]:
        results: list[QueryResult] = []
        while len(results) < len(rows):
            results += self._batch_process(rows[len(results) :])
        return results

    def _batch_process(self, rows: list[QueryRow]) -> list[QueryResult]:
        """Answers from one batch process; stops at the first query it fails on."""
        try:
            proc = subprocess.Popen(
                self.argv(self.engine.batch), cwd=self.cwd, env=self.env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise RecallError(f"cannot start {self.binary.label}: {exc.strerror}") from None
        assert proc.stdin and proc.stdout and proc.stderr
        self._started(proc)
        reader = _LineReader(proc.stdout.fileno())
        results: list[QueryResult] = []
        try:
            for row in rows:
                request = orjson.dumps({"query": row.query, "limit": 0}) + b"\n"
                try:
                    proc.stdin.write(request)
                    proc.stdin.flush()
                except BrokenPipeError:
                    pass
                line = reader.readline(self.timeout)
                if line is None:
                    died = proc.poll() is not None
                    _kill_group(proc)
                    err = proc.stderr.read()
                    what = f"exit {proc.wait()}" if died else f"timed out after {self.timeout:g} s"
                    results.append(QueryResult(None, (), f"{what}: {_tail(err)}"))
                    return results
                results.append(self._batch_answer(line, row))
        except BaseException:
            _kill_group(proc)  # interrupted: no grace period for the finder
            raise
        finally:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    _kill_group(proc)
            self._finished(proc)
            proc.wait()
            for stream in (proc.stdout, proc.stderr):
                stream.close()
        return results

    def _batch_answer(self, line: bytes, row: QueryRow) -> QueryResult:
        try:
            data = orjson.loads(line)
            if isinstance(data, dict) and "error" in data:
                return QueryResult(None, (), f"finder error: {str(data['error'])[:TAIL]}")
            return rank_by_name(json_hits(data), row.source)
        except (ValueError, orjson.JSONDecodeError) as exc:
            return QueryResult(None, (), f"unparseable output ({exc}): {_tail(line)}")


def _collect(proc: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes, bool]:
    """stdout, stderr, and whether the process ended within timeout. The answer is complete
    when the process exits, even if a background child it left still holds the pipes open.

    Not Popen.communicate(timeout=...): after the pipes close it polls waitpid with
    sleeps in between, and for a finder that answers in a millisecond those sleeps were a
    third of each query's cost (see `make bench`). Here the exit is awaited on a pidfd.
    """
    assert proc.stdout and proc.stderr
    deadline = time.monotonic() + timeout
    streams = (proc.stdout.fileno(), proc.stderr.fileno())
    chunks: dict[int, list[bytes]] = {fd: [] for fd in streams}
    try:
        pidfd: int | None = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd (old kernel): wait for the pipes to close
        pidfd = None
    exited = False
    try:
        with selectors.PollSelector() as selector:
            for fd in streams:
                selector.register(fd, selectors.EVENT_READ)
            if pidfd is not None:
                selector.register(pidfd, selectors.EVENT_READ)
            while len(selector.get_map()) > (0 if exited or pidfd is None else 1):
                left = max(deadline - time.monotonic(), 0) if not exited else 0
                ready = selector.select(left)
                if not ready:
                    break  # the deadline passed, or the exited process's output is drained
                for key, _ in ready:
                    if key.fd == pidfd:
                        exited = True
                        selector.unregister(pidfd)
                        continue
                    data = os.read(key.fd, 1 << 16)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        selector.unregister(key.fd)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    out, err = (b"".join(chunks[fd]) for fd in streams)
    if exited:
        proc.wait()
        return out, err, True
    try:
        proc.wait(max(deadline - time.monotonic(), 0))
    except subprocess.TimeoutExpired:
        return out, err, False
    return out, err, True


class _LineReader:
    """Reads lines from a pipe with a timeout, without a thread per read."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer = fd, b""
        self.selector = selectors.DefaultSelector()
        self.selector.register(fd, selectors.EVENT_READ)

    def readline(self, timeout: float) -> bytes | None:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                return None
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line


def _communicate(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int | None, bytes, bytes]:
    """Output and exit status; None on timeout, after the whole group is killed."""
    try:
        out, err, done = _collect(proc, timeout)
    except BaseException:
        _kill_group(proc)
        proc.communicate()
        raise
    if done:
        return proc.returncode, out, err
    _kill_group(proc)
    rest_out, rest_err = proc.communicate()
    return None, out + rest_out, err + rest_err


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _hold_lock(path: Path):  # type: ignore[no-untyped-def]
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
    binary: Binary,
    rows: list[QueryRow],
    corpora: dict[str, Corpus],
    *,
    jobs: int,
    timeout: float,
) -> RunResult:
    """Every row through binary, results in row order whatever the completion order."""
    results: list[QueryResult | None] = [None] * len(rows)
    index_s = query_s = 0.0
    dirtied: list[str] = []
    for repo in dict.fromkeys(r.repo for r in rows):
        picked = [i for i, r in enumerate(rows) if r.repo == repo]
        session = Session(binary, corpora[repo], timeout)
        _progress(f"{binary.label}: {repo}: indexing, then {len(picked)} queries")
        try:
            index_s += session.index()
            started = time.perf_counter()
            subset = [rows[i] for i in picked]
            if binary.engine.batch:
                answers = session.query_batch(subset)
            else:
                answers = _query_pool(session, subset, jobs)
            query_s += time.perf_counter() - started
        finally:
            session.close()
        if restore_if_dirty(corpora[repo]):
            dirtied.append(repo)
        for i, answer in zip(picked, answers, strict=True):
            results[i] = answer
    done = tuple(r for r in results if r is not None)
    return RunResult(
        binary.label, " ".join(binary.bin_argv()), index_s, query_s, done, dirtied=tuple(dirtied)
    )


def _query_pool(session: Session, rows: list[QueryRow], jobs: int) -> list[QueryResult]:
    """Per-query processes in parallel; an interrupt cancels what has not started and kills
    what has, instead of waiting for every queued query to finish."""
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        return list(pool.map(session.query_one, rows))
    except BaseException:
        session.stop()
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


def check_not_empty(run: RunResult) -> None:
    """A binary that answers (almost) nothing is far likelier misdescribed than bad."""
    if not run.results:
        return
    empty = sum(1 for r in run.results if not r.top and not r.error)
    if empty / len(run.results) >= EMPTY_SUSPECT:
        raise RecallError(
            f"{run.label} returned nothing for {empty} of {len(run.results)} queries: the "
            "engine description is probably wrong (use --allow-empty if it is not)"
        )
