"""The direction of imports inside `recall` (docs/architecture.md): data flows one way, from
inputs through finders and running to analysis and render, so each folder imports only the
folders below it, and no two modules import each other, however indirectly."""

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "recall"
# What each folder must never reach, even through other modules: analysis and render
# import nothing that runs a finder, a build or a workflow; inputs imports no finder; the
# finders' protocol may name the model's plain results (Hit, QueryResult), nothing above.
EXECUTION = (
    "recall.running",
    "recall.finders",
    "recall.workflows",
    "recall.commands",
    "recall.cli",
)
NEVER = {
    "recall.analysis": EXECUTION,
    "recall.render": EXECUTION,
    "recall.inputs": ("recall.finders", "recall.running", "recall.analysis", *EXECUTION[2:]),
    "recall.finders": ("recall.running", "recall.render", *EXECUTION[2:]),
    "recall.running": ("recall.workflows", "recall.render", "recall.commands", "recall.cli"),
    "recall.workflows": ("recall.commands", "recall.cli"),
}


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


def _within(module: str, folder: str) -> bool:
    return module == folder or module.startswith(folder + ".")


@pytest.mark.parametrize("folder", sorted(NEVER))
def test_a_folder_reaches_no_folder_above_it_even_indirectly(folder):
    graph = _graph()
    inside = [m for m in graph if _within(m, folder)]
    assert inside, f"{folder} is no folder of recall"
    bad = {
        m: sorted(r for r in _reach(graph, m) if any(_within(r, f) for f in NEVER[folder]))
        for m in inside
    }
    assert {m: found for m, found in bad.items() if found} == {}


def test_the_rule_names_only_folders_and_modules_that_exist():
    graph = _graph()
    named = set(NEVER) | {f for never in NEVER.values() for f in never}
    assert sorted(f for f in named if not any(_within(m, f) for m in graph)) == []


def test_the_renderers_and_the_model_load_no_git():
    """`import recall.render.text` stays light: the report's text needs no git."""
    code = (
        "import sys, recall.render.text, recall.render.html, recall.analysis.model; "
        "print(sorted(m for m in sys.modules if m == 'git' or m.startswith('git.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stderr


def test_no_recall_module_imports_itself_through_others():
    graph = _graph()
    cycles = sorted(m for m in graph if m in _reach(graph, m))
    assert cycles == []


def test_the_cycle_check_sees_a_lazy_import_inside_a_function(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from recall.workflows.run import cmd_run\n")
    assert _imports(path, {"recall.workflows.run"}) == {"recall.workflows.run"}
    path.write_text("if __name__ == '__main__':\n    from recall.cli import main\n")
    assert _imports(path, {"recall.cli"}) == set()
