"""What the docs and the comments cite exists: a moved module, a renamed test or a deleted
file leaves a citation that points nowhere, and nothing else notices (issue 46 found 12
such paths after one move). Checked: every path into recall's own tree, every `recall.`
module, and every `test_*` name or file cited in docs/, the README, and the comments and
docstrings of recall/, tests/ and benchmarks/."""

import ast
import functools
import importlib
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT

# Roots of recall's own tree. `.github/` is not one: docs/ci.md's workflow files are the
# user's, in the user's repository.
# A path into recall's tree; not one followed by `@` (another project's file@commit).
PATH = re.compile(
    r"(?<![\w./@-])((?:recall|tests|docs|benchmarks|\.ci)/[\w./-]*\w)(?![\w/@-]|\.[\w/])"
)
MODULE = re.compile(r"(?<![\w./-])(recall(?:\.[a-z_]\w*)+)")
# A test, a test file, or the start of a test's name (`test_sigkill_at_each_stage_...`).
TEST = re.compile(r"(?<![\w./-])(test_\w+?)(\.py)?(?:\[[^\]]*\])?(…|\.\.\.|\*)?(?![\w.])")
FILES = {"recall.toml"}  # the engine file, which the module pattern would read as a module
BACKTICKED = re.compile(r"`([^`\n]+)`")
# Files of the measured corpora that the docs quote as examples (a path query's answer):
# not recall's, and no rule tells them from recall's own.
CORPUS_FILES = {"docs/gif.md"}


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _sources() -> list[Path]:
    return sorted(
        p for top in ("recall", "tests", "benchmarks") for p in (ROOT / top).rglob("*.py")
    )


def _prose(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of a Python file's comments and docstrings: its prose, not its data
    (a test's strings are corpus names and paths by design)."""
    source = path.read_text()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                text = first.value.value
                for offset, line in enumerate(text.splitlines() if isinstance(text, str) else []):
                    yield first.lineno + offset, line


def _doc_lines(path: Path) -> Iterator[tuple[int, str]]:
    """A doc's lines, less those that quote another project's file (`file`@`commit`)."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if "`@`" not in line:
            yield number, line


def _citations(docs: list[Path], sources: list[Path]) -> Iterator[tuple[str, str, str]]:
    """(where, kind, cited) for every citation: paths and modules anywhere in the prose;
    in the docs, test names only in backticks (the docs quote other projects' tests, as
    queries, in plain text and tables); and a test's whole name only where it reads as
    one of recall's (four words or more, as every test here is named, or beside a tests/
    file): `test_float_limits` and `test_count` are gin's and the ceiling's example names."""
    texts = [(p, _doc_lines(p), True) for p in docs]
    texts += [(p, _prose(p), False) for p in sources]
    for path, lines, is_doc in texts:
        for number, line in lines:
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{number}"
            for match in PATH.finditer(line):
                yield where, "path", match.group(1).rstrip(".")
            for match in MODULE.finditer(line):
                if match.group(1) not in FILES:
                    yield where, "module", match.group(1)
            spans = [m.group(1) for m in BACKTICKED.finditer(line)] if is_doc else [line]
            for span in spans:
                for match in TEST.finditer(span):
                    name, file, cut = match.groups()
                    if file:
                        yield where, "test file", name
                    elif cut:
                        yield where, "test prefix", name
                    elif name.count("_") >= 4 or "tests/test_" in line:
                        yield where, "test", name


@functools.cache
def _test_names() -> frozenset[str]:
    return frozenset(
        node.name
        for path in (ROOT / "tests").glob("test_*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    )


def _module_exists(dotted: str) -> bool:
    """A module, or a name one defines (`recall.workflows.run.measure`)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def _missing(kind: str, cited: str, tests: frozenset[str]) -> bool:
    if kind == "path":
        return (
            cited not in CORPUS_FILES
            and not any(ch in cited for ch in "*<")
            and not (ROOT / cited).exists()
        )
    if kind == "module":
        return not _module_exists(cited)
    if kind == "test file":
        return not (ROOT / "tests" / f"{cited}.py").exists()
    if kind == "test prefix":
        return not any(name.startswith(cited) for name in tests)
    return cited not in tests and not (ROOT / "tests" / f"{cited}.py").exists()


def test_every_path_module_and_test_the_docs_and_comments_cite_exists():
    tests = _test_names()
    missing = sorted(
        f"{where}: {kind} {cited}"
        for where, kind, cited in _citations(_docs(), _sources())
        if _missing(kind, cited, tests)
    )
    assert missing == []


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("see recall/workflows/nope.py", [("path", "recall/workflows/nope.py")]),
        ("recall.workflows.nope does it", [("module", "recall.workflows.nope")]),
        ("recall.workflows.run.no_such_name", [("module", "recall.workflows.run.no_such_name")]),
        ("`test_it_is_gone_away[x]` pins it", [("test", "test_it_is_gone_away")]),
        ("`tests/test_x.py`: `test_gone`", [("path", "tests/test_x.py"), ("test", "test_gone")]),
        ("`test_gone_away…[a, b]` pins it", [("test prefix", "test_gone_away")]),
        ("`test_gone_away_...` pins it", [("test prefix", "test_gone_away_")]),
        ("`test_float_limits`, a corpus name", []),
        ("recall.toml is a file", []),
        ("in `test_gone_away.py`", [("test file", "test_gone_away")]),
        ("test_gone_away, quoted from a corpus, not backticked", []),
        ("| `tests/test_x.py`@`32f1aa92155a` | `test_gone_away` |", []),
    ],
)
def test_a_stale_citation_in_a_doc_is_found(tmp_path, line, found):
    doc = tmp_path / "stale.md"
    doc.write_text(f"{line}\n")
    cited = [(kind, name) for _where, kind, name in _citations([doc], [])]
    assert cited == found
    assert all(_missing(kind, name, _test_names()) for kind, name in cited)


def test_a_stale_citation_in_a_comment_is_found_and_a_string_is_not_read(tmp_path):
    source = tmp_path / "x.py"
    source.write_text(
        '"""Moved to recall/gone.py."""\n\nQUERY = "test_count"  # recall.gone.module\n'
    )
    cited = [(where, kind, name) for where, kind, name in _citations([], [source])]
    assert cited == [
        ("x.py:3", "module", "recall.gone.module"),
        ("x.py:1", "path", "recall/gone.py"),
    ]
