"""Text that reaches a terminal: names, queries and finder output shown, never obeyed;
and the progress line a long run keeps on stderr.

A name in a top 10, a query, a source or a finder's stderr is data from a corpus or a
program; written raw, an ESC in it would recolour, move the cursor or retitle the window,
a BEL would ring, a tab or newline would break a table, and a bidirectional control
(U+202E) would make the rest of the line read backwards, so a name shows as another. So
every C0 and C1 control character, DEL and the bidirectional controls are shown as their
Python escapes (`\\x1b`, `\\x07`, `\\t`, `\\u202e`), as repr would; the JSON report keeps
the exact string. This is the one rule for every medium: Markdown and HTML apply it first
(recall/render/escape.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, TextIO

# The bidirectional controls: marks (U+061C, U+200E, U+200F), embeddings and overrides
# (U+202A-U+202E), isolates (U+2066-U+2069); and the line and paragraph separators.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_CONTROL_BUT_LAYOUT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def has_control(text: str) -> bool:
    """Whether text holds a character that shown() would escape."""
    return _CONTROL.search(text) is not None


def shown(text: str) -> str:
    """One field for a table cell or a line: every control character escaped, tab and
    newline included, so the field stays on its line and in its column."""
    return _CONTROL.sub(_escaped, text)


def safe_output(text: str) -> str:
    """A whole rendered report: every control character escaped except the tab and
    newline that lay it out, so nothing a field missed reaches the terminal raw."""
    return _CONTROL_BUT_LAYOUT.sub(_escaped, text)


# Progress ---------------------------------------------------------------------------------
#
# A long run (rails' rows through a slow finder, a history of fifty commits) says how far it
# has got and how long is left: one status line on stderr, redrawn in place, only when
# stderr is a terminal (a log or a pipe gets none, and stdout never does: it holds the
# report). With NO_COLOR set (https://no-color.org) the line is plain text; otherwise its
# labels are bold and it is erased with the terminal's erase-line sequence.

ERASE, BOLD, PLAIN = "\x1b[2K\r", "\x1b[1m", "\x1b[0m"
REDRAW_S = 0.2  # at most five redraws a second: a fast finder answers thousands


@dataclass
class Task:
    """One thing counted: rows of a binary, commits of a history, finders of a page."""

    label: str
    total: int
    unit: str
    started: float
    done: int = 0
    note: str = ""  # what it is doing now ("gin: indexing")


class Reporter(Protocol):
    """Everything the stages tell while they work, through one object: the tasks counted
    (rows of a binary, commits of a history), lines of their own (a history's "building"),
    warnings (a cache entry dropped), and asides only a watcher wants (which mirror a
    corpus is fetched from). The default, Progress, draws the status line on a terminal's
    stderr and writes the lines above it, so a warning never lands inside the status
    line; a Python program replaces it with `reporting(its_own)` (docs/api.md)."""

    def task(self, label: str, total: int, unit: str) -> AbstractContextManager[Task]:
        """A task counted while the block runs."""
        ...

    def advance(self, task: Task, n: int = 1) -> None: ...

    def note(self, task: Task, text: str) -> None:
        """What the task is doing now ("gin: indexing")."""
        ...

    def say(self, message: str) -> None:
        """A line of its own, always shown."""
        ...

    def warn(self, message: str) -> None:
        """Something went wrong that the work goes on past (`recall: warning: ...`)."""
        ...

    def aside(self, message: str) -> None:
        """A line for someone watching (the default: only on a terminal)."""
        ...


class Progress:
    """The status line of every task under way, outermost first ("history 3/10 commits
    30% ETA 2m10s | base (abc): 120/500 rows 24% ETA 9s"). Thread-safe: the batch workers
    of a run advance it from their threads. stream, clock and environ are parameters so
    that a test can drive it with a fake terminal and a fake clock."""

    def __init__(
        self,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        try:
            self.enabled = self.stream.isatty()
        except (AttributeError, ValueError, OSError):  # a closed or odd stream: no line
            self.enabled = False
        self.color = self.enabled and not environ.get("NO_COLOR")
        self.clock = clock
        self.tasks: list[Task] = []
        self._drawn = 0  # the length of the line on screen, to blank it without color
        self._last = float("-inf")
        self._lock = threading.RLock()

    @contextlib.contextmanager
    def task(self, label: str, total: int, unit: str) -> Iterator[Task]:
        """A task counted while the block runs; the status line goes when the outermost
        task ends, so nothing of it is left above the report."""
        task = Task(label, max(0, total), unit, self.clock())
        with self._lock:
            self.tasks.append(task)
            self._draw(force=True)
        try:
            yield task
        finally:
            with self._lock:
                self.tasks.remove(task)
                if self.tasks:
                    self._draw(force=True)
                else:
                    self._erase()

    def advance(self, task: Task, n: int = 1) -> None:
        with self._lock:
            task.done += n
            task.total = max(task.total, task.done)  # an estimate (bisect's) may run over
            self._draw(force=task.done == task.total)

    def note(self, task: Task, text: str) -> None:
        with self._lock:
            task.note = text
            self._draw(force=True)

    def say(self, message: str) -> None:
        """A line of its own on stderr (always, as before), above the status line."""
        with self._lock:
            self._erase()
            print(message, file=self.stream, flush=True)
            self._draw(force=True)

    def warn(self, message: str) -> None:
        self.say(f"recall: warning: {message}")

    def aside(self, message: str) -> None:
        """Said only on a terminal: a log or a pipe gets the lines that matter alone."""
        if self.enabled:
            self.say(message)

    def line(self) -> str:
        """The status line as plain text (no escapes)."""
        now = self.clock()
        return " | ".join(_task_text(task, now) for task in self.tasks)

    def _draw(self, *, force: bool) -> None:
        now = self.clock()
        if not self.enabled or not self.tasks or (not force and now - self._last < REDRAW_S):
            return
        self._last = now
        text = self.line()
        if self.color:
            shown = text
            for task in self.tasks:
                shown = shown.replace(task.label, f"{BOLD}{task.label}{PLAIN}", 1)
            self.stream.write(f"{ERASE}{shown}")
        else:
            self.stream.write("\r" + text.ljust(self._drawn))
        self._drawn = len(text)
        self.stream.flush()

    def _erase(self) -> None:
        if not self.enabled or not self._drawn:
            return
        self.stream.write(ERASE if self.color else "\r" + " " * self._drawn + "\r")
        self.stream.flush()
        self._drawn = 0


def _task_text(task: Task, now: float) -> str:
    percent = 100.0 * task.done / task.total if task.total else 100.0
    text = f"{task.label} {task.done}/{task.total} {task.unit} {percent:.0f}%"
    if 0 < task.done < task.total:
        left = (now - task.started) * (task.total - task.done) / task.done
        text += f" ETA {duration(left)}"
    elif task.done < task.total:
        text += " ETA -"
    return text + (f" ({task.note})" if task.note else "")


def duration(seconds: float) -> str:
    """Seconds as a short duration: 9s, 2m05s, 1h03m."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


_PROGRESS: Progress | None = None
_REPORTER: Reporter | None = None  # one given by reporting(), in place of the default


def progress() -> Reporter:
    """The process's one reporter: the one given to `reporting`, else the status line on
    stderr (made on first use, so a test's redirected stderr is the one it sees)."""
    global _PROGRESS
    if _REPORTER is not None:
        return _REPORTER
    if _PROGRESS is None or (_PROGRESS.stream is not sys.stderr and not _PROGRESS.tasks):
        _PROGRESS = Progress()
    return _PROGRESS


@contextlib.contextmanager
def reporting(reporter: Reporter) -> Iterator[Reporter]:
    """Every task, line and warning of the work done in the block goes to reporter (the
    Python API's `recall.reporting`); the one before it is back after the block."""
    global _REPORTER
    before, _REPORTER = _REPORTER, reporter
    try:
        yield reporter
    finally:
        _REPORTER = before
