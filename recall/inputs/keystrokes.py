"""The typing set (typing.tsv): how a person types toward a name, one keystroke at a time.

A person at a fuzzy finder types one character at a time and stops when the name they
want comes first. The typing model says which characters, for each sampled name, in four
deterministic ways (docs/queries.md, "The typing set"):

- `prefix`: the lowercased name itself, from its first character (`t`, `te`, `tes`, ...);
- `starts`: the first letter of each word (`t`, `tf`, `tfl`);
- `first+starts`: the first word whole, then the first letter of each later word
  (`t`, ..., `test`, `testf`, `testfl`);
- `spaced`: the words separated by spaces, as typed in a picker (`test f`, `test fl`, ...).

Each way is a sequence; each of its steps adds one keystroke, so a step's number is its
query's length. A sequence stops at its whole text or at MAX_STEPS keystrokes. The three
word-wise ways need two words or more (for a one-word name they repeat `prefix`). The
names are the same seeded sample `recall derive` draws for the other sets, so the rows
depend only on the corpus, the seed and N.

A finder answers each distinct (repo, query) once: sources share prefixes (`t` starts
most sequences of a corpus), so `prompts` turns the steps into the rows that run, hand
rows (no single source: a prefix is a step toward many names), and the analysis maps
their answers back to every step that typed them (recall/analysis/effort.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from recall.errors import RecallError
from recall.files import read_input
from recall.inputs.derive import NameSource, RepoSettings, sample_names
from recall.inputs.queryset import HAND, QueryRow
from recall.inputs.recipes import words

HEADER = ("repo", "sequence", "step", "query", "source")
SEQUENCES = ("prefix", "starts", "first+starts", "spaced")
# A person who has typed 16 characters and still does not see the name has stopped
# trusting the finder; the k-curve goes to 10, so 16 leaves room on both sides.
MAX_STEPS = 16


def _prefix(name: str, parts: list[str]) -> str:
    return name.lower()


def _starts(name: str, parts: list[str]) -> str:
    return "".join(part[0] for part in parts)


def _first_starts(name: str, parts: list[str]) -> str:
    return parts[0] + "".join(part[0] for part in parts[1:])


def _spaced(name: str, parts: list[str]) -> str:
    return " ".join(parts)


_TEXTS: dict[str, Callable[[str, list[str]], str]] = {
    "prefix": _prefix,
    "starts": _starts,
    "first+starts": _first_starts,
    "spaced": _spaced,
}


def typed_text(kind: str, name: str) -> str | None:
    """The whole text a sequence of `kind` types toward name, or None where the way does
    not apply (no words; one word for the word-wise ways)."""
    parts = words(name)
    if not parts or (kind != "prefix" and len(parts) < 2):
        return None
    return _TEXTS[kind](name, parts)


def steps(text: str) -> list[str]:
    """The queries a sequence types: one character more each step, up to MAX_STEPS."""
    return [text[:i] for i in range(1, min(len(text), MAX_STEPS) + 1)]


def sequences(name: str) -> list[tuple[str, list[str]]]:
    """Every (kind, steps) of name, in SEQUENCES order."""
    out = []
    for kind in SEQUENCES:
        text = typed_text(kind, name)
        if text:
            out.append((kind, steps(text)))
    return out


@dataclass(frozen=True)
class TypingRow:
    """One keystroke of one sequence: after `step` keystrokes the query is `query`."""

    repo: str
    sequence: str
    step: int
    query: str
    source: str
    line: int = field(default=0, compare=False)  # its line in the file read; 0: derived


def derive_typing_rows(repo: str, source: NameSource, n: int, seed: int) -> list[TypingRow]:
    """The typing set's rows for n sampled names: every step of every sequence."""
    rows = []
    for name in sample_names(source.names, n, seed):
        for kind, queries in sequences(name):
            rows += [TypingRow(repo, kind, i, q, name) for i, q in enumerate(queries, start=1)]
    return rows


def format_typing(rows: list[TypingRow]) -> bytes:
    lines = ["\t".join(HEADER)]
    lines += ["\t".join((r.repo, r.sequence, str(r.step), r.query, r.source)) for r in rows]
    return ("\n".join(lines) + "\n").encode("utf-8")


def is_typing_file(path: Path) -> bool:
    """Does the file start with the typing set's header (a BOM allowed)? A file that cannot
    be read is refused here, in the words its reader would use; a pipe is read once, and
    its reader gets the same bytes (files.read_input)."""
    first = read_input(path).split(b"\n", 1)[0]
    return first.removeprefix(b"\xef\xbb\xbf").rstrip(b"\r") == "\t".join(HEADER).encode()


def read_typing(path: Path, repos: set[str] | None = None) -> list[TypingRow]:
    """Parse a typing set strictly: every step of a sequence present, in order, each one
    keystroke more than the last, and each sequence once; a bad line is refused with its
    file and line named."""
    data = read_input(path).removeprefix(b"\xef\xbb\xbf")
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise RecallError(f"{path}: not UTF-8 (byte {exc.start})") from None
    if not lines or tuple(lines[0].split("\t")) != HEADER:
        raise RecallError(f"{path}:1: header must be {'<TAB>'.join(HEADER)}")
    rows: list[TypingRow] = []
    begun: dict[tuple[str, str, str], int] = {}  # each sequence's first line
    for number, line in enumerate(lines[1:], start=2):
        at = f"{path}:{number}"
        row = _parse(line.split("\t"), at, repos, rows[-1] if rows else None, number)
        key = (row.repo, row.sequence, row.source)
        if row.step == 1 and key in begun:  # its steps would be read as one sequence's
            raise RecallError(
                f"{at}: a second {row.sequence} sequence toward {row.source!r} (the first "
                f"starts at line {begun[key]})"
            )
        begun.setdefault(key, number)
        rows.append(row)
    return rows


def _parse(
    fields: list[str], at: str, repos: set[str] | None, last: TypingRow | None, number: int
) -> TypingRow:
    if len(fields) != len(HEADER):
        raise RecallError(f"{at}: expected {len(HEADER)} tab-separated fields, got {len(fields)}")
    repo, kind, step, query, source = fields
    if repos is not None and repo not in repos:
        raise RecallError(f"{at}: unknown repo {repo!r} (not in the corpus pins)")
    if kind not in SEQUENCES:
        raise RecallError(f"{at}: unknown sequence {kind!r} (one of {', '.join(SEQUENCES)})")
    if not (step.isascii() and step.isdigit()) or int(step) < 1:  # `²` is a digit to isdigit
        raise RecallError(f"{at}: step must be a whole number from 1, got {step!r}")
    if not source:
        raise RecallError(f"{at}: a typing row needs its source name")
    row = TypingRow(repo, kind, int(step), query, source, number)
    if len(query) != row.step or not query.strip():
        raise RecallError(f"{at}: step {row.step} must type {row.step} characters, got {query!r}")
    same = last is not None and (last.repo, last.sequence, last.source) == (repo, kind, source)
    if row.step != (last.step + 1 if same and last else 1):
        raise RecallError(f"{at}: step {row.step} of {kind} toward {source!r} is out of order")
    if same and last and not query.startswith(last.query):
        raise RecallError(f"{at}: {query!r} does not extend the step before, {last.query!r}")
    return row


def check_typing_sources(
    rows: Iterable[TypingRow], names: Mapping[str, Iterable[str]], where: str
) -> None:
    """Refuse a step whose source is no name of its corpus at its pin, naming its line,
    before any finder runs: the harness could not tell a finder's miss from a typo in the
    set (names: each repo's distinct names)."""
    known = {repo: set(listed) for repo, listed in names.items()}
    for row in rows:
        if row.source not in known[row.repo]:
            at = f"{where}:{row.line}" if row.line else where
            raise RecallError(
                f"{at}: source {row.source!r} ({row.sequence}) is not a name of {row.repo} "
                "at its pin"
            )


def select_typing(
    rows: list[TypingRow], repos: list[str] | None, kinds: list[str] | None,
    split: set[str] | None,
) -> list[TypingRow]:  # fmt: skip
    """The steps of the --repo, --type (a sequence kind) and --split selection (split:
    queryset.split_repos's repos of the side, whole corpora as in every set)."""
    for kind in kinds or []:
        if kind not in SEQUENCES:
            raise RecallError(f"--type: unknown sequence {kind!r} (one of {', '.join(SEQUENCES)})")
    return [
        r
        for r in rows
        if (not repos or r.repo in repos)
        and (not kinds or r.sequence in kinds)
        and (split is None or r.repo in split)
    ]


def prompts(rows: list[TypingRow]) -> list[QueryRow]:
    """The distinct (repo, query) of the steps, in first-seen order: what the finders run,
    each once per corpus, as hand rows (a prefix has no one source)."""
    seen = dict.fromkeys((r.repo, r.query) for r in rows)
    return [QueryRow(repo, query, HAND, "") for repo, query in seen]


# derive-typing.json names these recipes: `recall derive all` writes typing.tsv with them.
RECIPES = "typing"


def is_typing_settings(path: Path) -> bool:
    """Do the derive settings make the typing set (`"recipes": "typing"`)?"""
    try:
        data = orjson.loads(read_input(path))
    except (RecallError, orjson.JSONDecodeError):
        return False  # load_settings reports the file's problem
    return isinstance(data, dict) and data.get("recipes") == RECIPES


def derive_typing_all(
    sources: dict[str, NameSource], settings: dict[str, RepoSettings]
) -> list[TypingRow]:
    """The whole typing set, repo by repo in corpus order."""
    rows: list[TypingRow] = []
    for repo, conf in settings.items():
        rows += derive_typing_rows(repo, sources[repo], conf.n, conf.seed)
    return rows


def refuse_typing(path: Path, command: str) -> None:
    """A command that reads query sets only, given a typing set: one line that says which
    command measures it, not a complaint about its header."""
    if is_typing_file(path):
        raise RecallError(
            f"{path}: a typing set, which {command} does not read; recall run --queries "
            f"{path} measures its keystrokes to the name"
        )
