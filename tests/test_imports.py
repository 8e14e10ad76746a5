"""The direction of imports inside `recall`: data flows one way (docs/architecture.md), so
the model and the rendering import nothing that runs a finder, a build or a git command,
and no two modules import each other, however indirectly."""

import ast
import functools
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "recall"
# The modules that run things: finder processes and sessions, builds, git, subprocesses,
# and the commands that drive them (with the names the split into proc/session and
# commands/ gives them).
EXECUTION = {
    "recall.measure", "recall.proc", "recall.session", "recall.spawn", "recall.build",
    "recall.interpreter", "recall.explain", "recall.bench", "recall.run", "recall.cli",
    "recall.results", "recall.history", "recall.bisect", "recall.doctor", "recall.init",
    "recall.pin", "recall.cache", "recall.commands", "recall.peers",
}  # fmt: skip


def _name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_main_block(node: ast.AST) -> bool:
    """`if __name__ == "__main__":`, where a module may start the CLI it is part of."""
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The recall modules a file imports anywhere (in functions too: a lazy import is a
    dependency all the same), but in its `__main__` block."""
    found: set[str] = set()
    todo: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
    while todo:
        node = todo.pop()
        if _is_main_block(node):
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        todo.extend(ast.iter_child_nodes(node))
    return {name for name in found if name in modules}


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Each module's imports of recall modules, read once for the file's tests."""
    paths = {_name(path): path for path in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {name: _imports(path, modules) - {name} for name, path in paths.items()}


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _is_execution(module: str) -> bool:
    return any(module == e or module.startswith(e + ".") for e in EXECUTION)


def test_the_model_and_the_rendering_import_no_execution_module_even_indirectly():
    graph = _graph()
    pure = [m for m in graph if m == "recall.model" or m.startswith("recall.render")]
    assert "recall.render.text" in pure and "recall.render.html" in pure
    bad = {m: sorted(filter(_is_execution, _reach(graph, m))) for m in pure}
    assert {m: found for m, found in bad.items() if found} == {}


def test_the_analysis_imports_no_execution_module_even_indirectly():
    graph = _graph()
    bad = sorted(filter(_is_execution, _reach(graph, "recall.report")))
    assert bad == []


def test_no_recall_module_imports_itself_through_others():
    graph = _graph()
    cycles = sorted(m for m in graph if m in _reach(graph, m))
    assert cycles == []


def test_the_cycle_check_sees_a_lazy_import_inside_a_function(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from recall.run import cmd_run\n")
    assert _imports(path, {"recall.run"}) == {"recall.run"}
    path.write_text("if __name__ == '__main__':\n    from recall.cli import main\n")
    assert _imports(path, {"recall.cli"}) == set()
