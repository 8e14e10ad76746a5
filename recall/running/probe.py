"""One query through a finder, shown as a person runs it by hand: what a run's error says
when a finder fails on, or answers nothing to, (almost) every query, and what `recall
doctor` runs in a finder's repo to say whether its engine works.

"The engine description is probably wrong" says nothing of how; the finder's own stderr
and its argv do (fzy: `unrecognized option '--nosuchflag=getuinsli'`). The command a
probe prints runs as printed: the corpus's names are kept in the cache
(<cache>/names/<key>/names.txt, a cache entry like any other), so its stdin is still there
after the run; an index goes into a folder made by mktemp; the engine's own variables
stand before it. Only the harness's fixed environment (HOME and the like pointed into the
run's folder) is left out.
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass
from pathlib import Path

from recall.cache import FolderEntry
from recall.inputs.queryset import QueryRow
from recall.running.session import Probed, Session, Shown
from recall.running.values import Corpus, FinderBuild

NAMES_KIND, NAMES_MARKER, NAMES_FILE = "names", ".recall-names", "names.txt"
STDERR_LINES = 3  # the first lines of a finder's stderr an error quotes
LINE_CHARS = 160  # and of each line, at most this much


@dataclass(frozen=True)
class Probe:
    """A query run alone: its row, the command that runs it again, and what it did."""

    row: QueryRow
    command: str
    probed: Probed

    @property
    def answered(self) -> bool:
        return bool(self.probed.result.top) and self.probed.result.error is None

    def outcome(self) -> str:
        """How it ended and what it printed, in a few words."""
        probed = self.probed
        if probed.code is None:
            ended = "timed out"
        elif probed.code < 0:
            ended = f"killed by signal {-probed.code}"
        else:
            ended = f"exit {probed.code}"
        if probed.result.error:
            return f"{ended}: {probed.result.error}"
        listed = len(probed.result.top)
        if not listed:
            return f"{ended}, no names listed"
        said = f"{ended}, {listed} name{'' if listed == 1 else 's'} listed"
        if probed.result.off_corpus:
            first = probed.result.top[0].name
            return f"{said}, none a name of the corpus (the first {first!r})"
        return said

    def stderr(self) -> str:
        """The first lines of its stderr, on one line (` | ` between them)."""
        text = self.probed.err.decode("utf-8", "replace")
        lines = [line.strip()[:LINE_CHARS] for line in text.splitlines() if line.strip()]
        return " | ".join(lines[:STDERR_LINES]) if lines else "(nothing)"

    def said(self) -> str:
        """The probe as one clause of a one-line error."""
        return (
            f"one query ({self.row.repo} {self.row.query!r}) alone: {self.outcome()}; its "
            f"stderr: {self.stderr()}; run it yourself: {self.command}"
        )


def probe(binary: FinderBuild, corpus: Corpus, row: QueryRow, timeout: float, cache: Path) -> Probe:
    """row through binary on corpus, alone, as the run asks it, indexed first where the
    engine indexes (in a session of its own, as every run's is)."""
    session = Session(binary, corpus, timeout)
    try:
        session.index()
        probed = session.probe(row)
        shown = session.shown()
    finally:
        session.close()
    names = kept_names(cache, corpus)
    return Probe(row, command_line(shown, probed, names), probed)


def kept_names(cache: Path, corpus: Corpus) -> Path:
    """The corpus's names file, kept in the cache for a printed command to read."""
    listed = "".join(f"{n}\n" for n in corpus.names).encode("utf-8")
    pinned = f"-{corpus.checkout.pin.sha[:12]}" if corpus.checkout else ""
    key = f"{corpus.name}{pinned}-{hashlib.sha256(listed).hexdigest()[:16]}"
    entry = FolderEntry(cache, NAMES_KIND, key, NAMES_MARKER)
    return entry.get(lambda folder: (folder / NAMES_FILE).write_bytes(listed)) / NAMES_FILE


def command_line(shown: Shown, probed: Probed, names: Path) -> str:
    """A shell line that runs the probe's query as the session ran it, from any folder:
    the session's {names} read from the cache's copy, its {db} a fresh folder."""
    uses_db = any(
        shown.db in text
        for text in (shown.cwd, *probed.argv, *(shown.index or []), *(v for _k, v in shown.env))
    )

    def word(text: str) -> str:
        text = text.replace(shown.names, str(names))
        return '"$DB"'.join(shlex.quote(piece) if piece else "" for piece in text.split(shown.db))

    env = " ".join(f"{name}={word(value)}" for name, value in shown.env)
    prefix = f"{env} " if env else ""
    steps = ["DB=$(mktemp -d)"] if uses_db else []
    steps.append(f"cd {word(shown.cwd)}")
    if shown.index:
        steps.append(prefix + " ".join(word(w) for w in shown.index))
    query = prefix + " ".join(word(w) for w in probed.argv)
    if probed.request is not None:
        request = probed.request.decode("utf-8").rstrip("\n")
        query = f"printf '%s\\n' {shlex.quote(request)} | {query}"
    elif shown.stdin:
        query += f" < {word(shown.stdin)}"
    steps.append(query)
    return " && ".join(steps)
