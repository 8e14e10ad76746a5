"""The batch protocol, both ends: the finder's (serve), and the harness's reading of an
answer (its rows parsed, and the rank of the name meant).

A batch finder reads JSON lines {"id": I, "query": Q, "limit": N} (limit 0 or absent for
every hit) and writes, for each, one line {"id": I, "results": [...]} in order, flushed;
a request without an id gets the bare list. A bad request, or a search that raises, is
one line {"id": I, "error": "..."} for that query, and the finder goes on: one query's
fault never ends the batch. The id is echoed with the answer or the error, so the harness
can tell an answer that landed on the wrong query. The reference finder and every kind's
worker (python, frizbee, lsp) serve through `serve`, so they validate requests alike.

The serving end runs in a finder's own process, whose start-up a run measures, so this
module imports the model (and NumPy behind it) and the engine only when it ranks.

Rank is counted among distinct names, so a finder that lists one name once per
definition is not penalised for its duplicates.

An answer *names nothing in the corpus* when it lists at least one row and no row's name
(in the whole list, not only its top 10) is one of the corpus's distinct names, the names
`{names}` lists. Such an answer is flagged (`QueryResult.off_corpus`): a few are a finder's
own business (a language server's standard-library symbols), but most of a run's answers
flagged means the harness is reading something else as names (fzy's `--show-scores`
prints a score first on each line, and `output = "lines"` takes it for the name).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from itertools import repeat

import orjson

TYPE_CHECKING = False  # typing for the type checker alone: see recall/__init__.py
if TYPE_CHECKING:
    from typing import BinaryIO

    from recall.analysis.model import Hit, QueryResult
    from recall.finders.engine import Engine

Rows = list[dict[str, object]]  # one answer: hits best first, each {"name", "file", "line"}
Search = Callable[[str, int], Rows]  # a finder's search: (query, limit; 0 for all) -> rows
# what serve answers from: a Search, or one that returns its JSON list already encoded
# (bytes, or a view of a buffer it writes answers into, copied into the line at once)
Answers = Callable[[str, int], "Rows | bytes | memoryview"]
BAD_REQUEST = 'bad request: expected {"query": string, "limit": whole number >= 0}'


def serve(search: Answers, requests: Iterable[bytes], out: BinaryIO) -> None:
    """Answer each request line with one line, in order, flushed so the harness never
    waits; blank lines are skipped."""
    for line in requests:
        if not line.strip():
            continue
        out.write(answer_line(search, line))
        out.flush()


def answer_line(search: Answers, line: bytes) -> bytes:
    """One request line's answer line, with its newline: the results, or an error that
    names what was wrong with the request or what the search raised. An answer can be
    hundreds of kilobytes, so its bytes are put together once."""
    return b"".join((*_answer(search, line), b"\n"))


def _answer(search: Answers, line: bytes) -> tuple[bytes | memoryview, ...]:
    """The pieces of answer_line()."""
    try:
        request = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return (orjson.dumps({"error": f"bad request: not JSON: {exc}"}),)
    if not isinstance(request, dict):
        return (orjson.dumps({"error": BAD_REQUEST}),)
    query, limit = request.get("query"), request.get("limit", 0)
    if not isinstance(query, str) or type(limit) is not int or limit < 0:
        return (_reply(request, {"error": BAD_REQUEST}),)
    try:
        results = search(query, limit)
    except Exception as exc:  # the finder's fault, reported for this query alone
        return (_reply(request, {"error": f"{type(exc).__name__}: {exc}"}),)
    encoded = results if isinstance(results, bytes | memoryview) else orjson.dumps(results)
    if "id" in request:
        return b'{"id":', orjson.dumps(request["id"]), b',"results":', encoded, b"}"
    return (encoded,)


def _reply(request: dict, body: dict[str, str]) -> bytes:
    """body, with the request's id first when it has one."""
    return orjson.dumps({"id": request["id"], **body} if "id" in request else body)


def rank_by_name(rows: Iterable[Hit], source: str, names: Collection[str] = ()) -> QueryResult:
    """Rank = position of source among distinct names; top = first TOP distinct names.
    With the corpus's names, an answer of which no row is one of them is off_corpus."""
    from recall.analysis.model import TOP, QueryResult

    seen: set[str] = set()
    top: list[Hit] = []
    rank = None
    named = not names
    for hit in rows:
        if not named and hit.name in names:
            named = True
        if hit.name in seen:
            continue
        seen.add(hit.name)
        if len(top) < TOP:
            top.append(hit)
        if hit.name == source:
            rank = len(seen)
        if rank is not None and len(top) >= TOP and named:
            break
    return QueryResult(rank, tuple(top), off_corpus=bool(seen) and not named)


def rank_answer(
    engine: Engine, out: bytes, source: str, names: Collection[str] = ()
) -> QueryResult:
    """The rank of source in one per-query answer; raises ValueError on anything
    unparseable."""
    from recall.analysis.model import Hit

    if engine.output == "lines":
        text = out.decode("utf-8")
        hits = (Hit(line.split("\t", 1)[0], None, None) for line in text.splitlines() if line)
        return rank_by_name(hits, source, names)
    return rank_json(orjson.loads(out), source, names)


def rank_json(data: object, source: str, names: Collection[str] = ()) -> QueryResult:
    """rank_by_name over a parsed JSON answer, a list of objects with a string `name` (and
    a `file` string and `line` integer where the finder has them); raises ValueError on
    anything else, wherever in the list it is.

    Answers are unlimited, so a list holds thousands of rows (a default run reads 200 MB
    of them), and the harness reads them on the cores the finders run on: every row is
    checked and its name taken by `map` over built-ins (no Python step per row), the
    source's rank is the distinct names up to its first row, and only the top 10 become
    Hits. The checks are those built-ins' own: dict.get refuses a row that is no dict, and
    str.join a name that is no str (a pass of each, where a set of the types took two)."""
    from recall.analysis.model import TOP, Hit, QueryResult

    if not isinstance(data, list):
        raise ValueError("expected a JSON list of results")
    try:
        got: list[str] = list(map(dict.get, data, repeat("name")))  # type: ignore[arg-type]
        "".join(got)  # so got is a list of str after all
    except TypeError:
        raise ValueError("expected objects with a string 'name'") from None
    named = not names or any(map(names.__contains__, got))
    try:
        rank: int | None = len(set(got[: got.index(source) + 1]))
    except ValueError:
        rank = None
    seen: set[str] = set()
    top: list[Hit] = []
    for k, name in enumerate(got):
        if len(top) >= TOP:
            break
        if name in seen:
            continue
        seen.add(name)
        item = data[k]
        file, line = item.get("file"), item.get("line")
        top.append(Hit(name, file if type(file) is str else None,
                       line if type(line) is int else None))  # fmt: skip
    return QueryResult(rank, tuple(top), off_corpus=bool(got) and not named)
