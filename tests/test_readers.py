"""Every reader of a file the user names, given generated inputs (issue 42): the query set,
the typing set, the judgments set, a saved run (`--against`), a run's shard and a history's
shard (`merge`), an engine file, an accept file, a regress file and corpus.json. Each input
is a real valid file (made by a real run on the tiny corpus) mutated by Hypothesis, or
random bytes, given to the command line in this process. The property: a report (exit 0 or 1, JSON
that the schema holds, every count within what the input supports) or one `recall: ...`
line with exit 2; never a traceback, a hang, another exit, or a number the input does not
support (a saved #1 whose own top list puts another name first).

The profile is derandomized (the same inputs every run, so CI is deterministic) and
EXAMPLES inputs a reader: about a tenth of a second each, from the results cache."""

from __future__ import annotations

import contextlib
import json
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
from conftest import (
    ROOT,
    SUBSEQUENCE_ENGINE,
    SUBSEQUENCE_FINDER,
    needs_ctags,
    needs_tool,
    run_cli,
    tiny_suite,
)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from recall.analysis.effort import typed_sequences
from recall.analysis.keystroke_ceiling import modelled
from recall.inputs.judgments import contested, parse_judgments
from recall.inputs.keystrokes import read_typing

EXAMPLES = 100  # generated inputs a reader, each run
SCHEMA = jsonschema.Draft202012Validator(
    json.loads((ROOT / "docs" / "report.schema.json").read_text())
)
PROFILE = settings(
    max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)  # fmt: skip
HANG_S = 120  # an input that keeps a command longer than this is a hang
# Git reaches nothing but files: a mutated pin url must not make it try the network.
ENV = {"RECALL_MIRROR": "", "GIT_ALLOW_PROTOCOL": "file", "GIT_SSH_COMMAND": "false"}
ROWS = [
    "alfu\tabbr2\talpha_function", "gadel\tabbr3\tgamma_delta", "ta\tabbr2\tgamma_delta",
    "epva\tabbr2\tepsilon_value", "bc\thand\t",
]  # fmt: skip
TYPING = (
    "repo\tsequence\tstep\tquery\tsource\n"
    "tiny\tprefix\t1\tg\tgamma_delta\ntiny\tprefix\t2\tga\tgamma_delta\n"
    "tiny\tstarts\t1\te\tepsilon_value\ntiny\tstarts\t2\tev\tepsilon_value\n"
    "tiny\tprefix\t1\tb\tBetaClass\n"
)
JUDGMENTS = (
    "domain\tquery\tpreferred\tother\tsource\n"
    "symbol\tgd\tgamma_delta\tgd_x\ta/b t\nsymbol\tgd\tgamma_delta\t gd \ta/b t\n"
    "path\tab\tlib/alpha.py\tlib/beta.py\tc/d u\nsymbol\tx\tx_y\tyx\tc/d u\n"
)


@dataclass(frozen=True)
class World:
    """The tiny corpus, its files, and the valid files a run made of them."""

    folder: Path
    corpus: Path
    queries: Path
    cache: Path
    finder: Path
    saved: Path
    valid: dict[str, bytes]

    def data(self, **files: Path) -> list[str]:
        """The data flags of a run over the tiny suite, the given ones replaced."""
        named = {"corpus": self.corpus, "queries": self.queries, **files}
        return ["--corpus", str(named["corpus"]), "--queries", str(named["queries"]),
                "--cache", str(self.cache)]  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    folder = tmp_path_factory.mktemp("readers")
    suite = tiny_suite(folder, ROWS, {"finder.py": SUBSEQUENCE_FINDER,
                                      "recall.toml": SUBSEQUENCE_ENGINE})  # fmt: skip
    made = World(folder, suite["corpus"], suite["queries"], suite["cache"], suite["finder"],
                 folder / "saved.json", {})  # fmt: skip
    (folder / "typing.tsv").write_text(TYPING)
    (folder / "judgments.tsv").write_text(JUDGMENTS)
    (folder / "accept.tsv").write_text("repo\tquery\tsource\ntiny\tta\tgamma_delta\n")
    (folder / "regress.tsv").write_text("repo\tquery\texpect\ntiny\tgadel\t^lib/gamma.py:1 \n")
    engine = ROOT / "recall" / "finders" / "presets" / "fzf.toml"
    runs = {
        "saved run": ["--engine", "fzf", "--no-regress", "--save", str(made.saved)],
        "run shard": ["--engine", "fzf", "--no-regress", "--shard", "1/1", "--save",
                      str(folder / "shard.json")],
        "typing set": ["--engine", "fzf", "--queries", str(folder / "typing.tsv")],
    }  # fmt: skip
    for what, args in runs.items():
        proc = run_cli(*made.data(), *args, cwd=folder, env=ENV)
        assert proc.returncode == 0, (what, proc.stderr)
    history = run_cli(
        "history", "--finder", str(made.finder), *made.data(), "--shard", "1/1", "--save",
        str(folder / "history.json"), "HEAD", cwd=folder, env=ENV,
    )  # fmt: skip
    assert history.returncode == 0, history.stderr
    valid = {
        "query set": made.queries, "typing set": folder / "typing.tsv",
        "judgments set": folder / "judgments.tsv", "saved run": made.saved,
        "run shard": folder / "shard.json", "history shard": folder / "history.json",
        "engine file": engine, "accept file": folder / "accept.tsv",
        "regress file": folder / "regress.tsv", "corpus.json": made.corpus,
    }  # fmt: skip
    made.valid.update({what: path.read_bytes() for what, path in valid.items()})
    return made


# Mutations of a valid file ------------------------------------------------------------

ODD_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("\t\r\n\0 ²١-.:#*?\\\"'{}[]=\ufeff")),
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
    ),
    max_size=12,
)
ODD_FIELDS = st.one_of(
    ODD_TEXT,
    st.sampled_from(["0", "-1", "1", "2", "²", "١", "1e3", "", " 1", "99999999999999999999",
                     "tiny", "gin", "hand", "abbr2", "prefix", "starts", "typo",
                     "gamma_delta", "alpha_function", "BetaClass", "{query}", "{bin}", "!x"]),
)  # fmt: skip
JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(),
    st.floats(allow_nan=False, allow_infinity=False), ODD_FIELDS,
)  # fmt: skip
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(ODD_FIELDS, inner, max_size=4)
    ),
    max_leaves=8,
)


def mutate_text(data: st.DataObject, valid: bytes) -> bytes:
    """One to three edits of a text file's lines and fields: a line deleted, doubled,
    moved or made up, a field replaced, a character changed, the file cut short, a BOM or
    CRLF endings."""
    lines = valid.decode("utf-8").split("\n")
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, max(0, len(lines) - 1)))
        op = data.draw(st.sampled_from(
            ["delete", "double", "move", "insert", "field", "char", "case", "digit", "cut",
             "bom", "crlf"]
        ))  # fmt: skip
        if op == "delete" and lines:
            del lines[i]
        elif op == "double" and lines:
            lines.insert(i, lines[i])
        elif op == "move" and lines:
            lines.insert(data.draw(st.integers(0, len(lines))), lines.pop(i))
        elif op == "insert":
            lines.insert(i, "\t".join(data.draw(st.lists(ODD_FIELDS, max_size=6))))
        elif op == "field" and lines:
            fields = lines[i].split("\t")
            j = data.draw(st.integers(0, len(fields) - 1))
            fields[j] = data.draw(ODD_FIELDS)
            lines[i] = "\t".join(fields)
        elif op == "char" and lines and lines[i]:
            j = data.draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:j] + data.draw(ODD_TEXT) + lines[i][j + 1 :]
        elif op == "case" and lines:  # `T`, `Te` where the file typed `t`, `te`
            fields = lines[i].split("\t")
            j = data.draw(st.integers(0, len(fields) - 1))
            fields[j] = fields[j].swapcase()
            lines[i] = "\t".join(fields)
        elif op == "digit" and lines:  # digits to str.isdigit(), not to int()
            odd = data.draw(st.sampled_from(["\u00b2", "\u0661", "\uff11", "0", "9"]))
            lines[i] = "".join(odd if c.isdigit() else c for c in lines[i])
        elif op == "cut":
            text = "\n".join(lines)
            lines = text[: data.draw(st.integers(0, len(text)))].split("\n")
        elif op == "bom":
            lines = ["\ufeff" + lines[0], *lines[1:]] if lines else ["\ufeff"]
        elif op == "crlf":
            lines = [line + "\r" for line in lines]
    return "\n".join(lines).encode("utf-8", "surrogatepass")


def _paths(value: object, at: tuple = ()) -> Iterator[tuple]:
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*at, i))


def _get(value: object, at: tuple) -> object:
    for step in at:
        value = value[step]  # type: ignore[index]
    return value


SPECIAL = st.sampled_from([0, 1, -1, 2, None, True, False, "1", "", [], {}, 1.5, 10**30])


def mutate_json(data: st.DataObject, valid: bytes) -> bytes:
    """One to three edits anywhere in a JSON file's tree (a number half the time: a rank,
    a line, a step): a value replaced by any JSON value or by a telling one (1, 0, null,
    ...), a number moved by one, a key or item deleted, an item doubled or two swapped."""
    tree = json.loads(valid)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = sorted(_paths(tree), key=repr)
        numbers = [at for at in paths if type(_get(tree, at)) in (int, float)]
        at = data.draw(st.sampled_from(numbers if numbers and data.draw(st.booleans()) else paths))
        op = data.draw(st.sampled_from(["replace", "special", "nudge", "delete", "double", "swap"]))
        if not at:
            tree = data.draw(JSON_VALUES) if op == "replace" else tree
            continue
        parent, key = _get(tree, at[:-1]), at[-1]
        if op == "replace":
            parent[key] = data.draw(JSON_VALUES)  # type: ignore[index]
        elif op == "special":
            parent[key] = data.draw(SPECIAL)  # type: ignore[index]
        elif op == "nudge" and isinstance(parent[key], int | float):  # type: ignore[index]
            parent[key] += data.draw(st.sampled_from([-1, 1]))  # type: ignore[index]
        elif op == "delete":
            del parent[key]  # type: ignore[attr-defined]
        elif op == "double" and isinstance(parent, list):
            parent.insert(key, parent[key])
        elif op == "swap" and isinstance(parent, list) and len(parent) > 1:
            other = data.draw(st.integers(0, len(parent) - 1))
            parent[key], parent[other] = parent[other], parent[key]
    return json.dumps(tree, allow_nan=True).encode()


# The property ------------------------------------------------------------------------


@contextlib.contextmanager
def _within(seconds: int) -> Iterator[None]:
    """A hang fails the example (SIGALRM) rather than the whole run."""

    def expire(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"no answer within {seconds} s: a hang")

    before = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def _counts_within(counts: dict, n: int) -> None:
    assert 0 <= counts["first"] <= counts["top10"] <= counts["found"] <= counts["n"] == n, counts


def _report_holds(report: dict, _given: Path) -> None:
    """A report: valid against the schema, every run's counts within its sourced rows,
    the ceiling within the rows it models."""
    SCHEMA.validate(report)
    for run in report["runs"]:
        _counts_within(run, report["sourced"])
    ceiling = report["ceiling"]
    assert 0 <= ceiling["first"] <= ceiling["n"] <= report["sourced"]


def _typing_holds(report: dict, given: Path) -> None:
    """The effort section: the ceiling over the sequences the model types, and nothing
    reached by more sequences than there are."""
    _report_holds(report, given)
    sequences = typed_sequences(read_typing(given))
    effort = report["effort"]
    assert effort["sequences"] == len(sequences)
    assert effort["ceiling"]["n"] == sum(1 for s in sequences if modelled(s))
    for run in (*effort["runs"], effort["ceiling"]):
        assert 0 <= run["first"] <= run["n"] and 0 <= run["top3"] <= run["n"], run


def _judgments_holds(report: dict, given: Path) -> None:
    """The judgments section: every pair of the file, each run's agreement within the
    uncontested pairs, and its ranks one pair each."""
    SCHEMA.validate(report)
    pairs = parse_judgments(given.read_bytes(), str(given))
    judged = report["judgments"]
    assert len(judged["pairs"]) == len(pairs)
    n = len(pairs) - len(contested(pairs))
    for run in judged["runs"]:
        assert 0 <= run["neither"] <= n - run["agree"] and run["agree"] <= run["n"] == n, run
        assert len(run["ranks"]) == len(pairs)


def _supported_firsts(saved: dict) -> int:
    """The #1s a saved run's last run supports: rank 1 of a sourced row whose own top
    list starts with its source."""
    run = saved["runs"][-1]
    return sum(
        1
        for (_repo, _query, kind, source), (rank, top, _error, _off) in zip(
            saved["rows"], run["results"], strict=False
        )
        if kind != "hand" and rank == 1 and top and top[0][0] == source
    )


def _saved_holds(report: dict, given: Path) -> None:
    """A saved run as the baseline, or a shard merged: its #1 count is what the file's
    own results support."""
    _report_holds(report, given)
    assert report["runs"][0]["first"] == _supported_firsts(json.loads(given.read_bytes()))


def _history_holds(history: dict, given: Path) -> None:
    """A history: each measured commit's #1 count is what its parts' results support."""
    shard = json.loads(given.read_bytes())
    for commit in history["commits"]:
        if commit.get("first") is None:
            continue
        (part,) = [p for p in shard["parts"] if p["sha"] == commit["sha"]]
        results = part["run"]["results"]
        firsts = sum(1 for row, (rank, top, _e, _o) in zip(shard["rows"], results, strict=False)
                     if row[2] != "hand" and rank == 1 and top and top[0][0] == row[3])  # fmt: skip
        assert 0 <= commit["first"] == firsts <= commit["n"] == history["sourced"], commit


@dataclass(frozen=True)
class Reader:
    kind: str  # how its valid file is mutated: "text" or "json"
    argv: Callable[[World, Path], list[str]]  # the command line that reads the file
    holds: Callable[[dict, Path], None]  # what a report of the file must show


FZF = ["--engine", "fzf", "--timeout", "5", "--json"]
READERS = {
    "query set": Reader("text", lambda w, f: [*w.data(queries=f), *FZF, "--no-regress"],
                        _report_holds),
    "typing set": Reader("text", lambda w, f: [*w.data(queries=f), *FZF], _typing_holds),
    "judgments set": Reader("text", lambda w, f: [*w.data(queries=f), *FZF], _judgments_holds),
    "saved run": Reader("json", lambda w, f: [*w.data(), *FZF, "--no-regress", "--against",
                                              str(f)], _saved_holds),
    "run shard": Reader("json", lambda w, f: ["merge", str(f), *w.data(), "--no-regress",
                                              "--json"], _saved_holds),
    "history shard": Reader("json", lambda w, f: ["merge", str(f), *w.data(), "--json"],
                            _history_holds),
    "engine file": Reader("text", lambda w, f: [*w.data(), "--engine", str(f), "--timeout",
                                                "5", "--build-timeout", "10", "--json",
                                                "--no-regress"], _report_holds),
    "accept file": Reader("text", lambda w, f: [*w.data(), *FZF, "--no-regress", "--against",
                                                str(w.saved), "--accept", str(f)],
                          _report_holds),
    "regress file": Reader("text", lambda w, f: [*w.data(), *FZF, "--regress", str(f)],
                           _report_holds),
    "corpus.json": Reader("json", lambda w, f: [*w.data(corpus=f), *FZF, "--no-regress"],
                          _report_holds),
}  # fmt: skip
NAMES = {"engine file": "engine.toml", "corpus.json": "corpus.json"}


@needs_tool("fzf")
@needs_ctags
@pytest.mark.slow
@pytest.mark.parametrize("what", list(READERS))
@PROFILE
@given(data=st.data())
def test_every_reader_of_user_files_gives_a_report_or_one_line_never_a_traceback(world, what, data):
    reader = READERS[what]
    valid = world.valid[what]
    how = data.draw(st.sampled_from(["mutated", "mutated", "mutated", "bytes", "valid"]))
    if how == "valid":
        content = valid
    elif how == "bytes":
        content = data.draw(st.binary(max_size=400))
    else:
        content = (mutate_json if reader.kind == "json" else mutate_text)(data, valid)
    folder = Path(tempfile.mkdtemp(dir=world.folder))
    path = folder / NAMES.get(what, "input")
    path.write_bytes(content)
    with _within(HANG_S):
        proc = run_cli(*reader.argv(world, path), cwd=world.folder, env=ENV)
    event(f"{how}: exit {proc.returncode}")  # --hypothesis-show-statistics shows the mix
    assert "Traceback" not in proc.stderr, proc.stderr
    said = [line for line in proc.stderr.splitlines() if not line.startswith("recall: warning:")]
    if proc.returncode == 2:
        assert proc.stdout == "" and len(said) == 1 and said[0].startswith("recall: "), said
        return
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr)
    reader.holds(json.loads(proc.stdout), path)
