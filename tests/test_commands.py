"""recall/commands/: one module a subcommand, each with add_parser and run, and every
command's --help answering from the one parser that cli.main builds."""

from __future__ import annotations

import pkgutil
import re

import pytest

from recall import cli, commands

MODULE_NAMES = sorted(
    info.name for info in pkgutil.iter_modules(commands.__path__) if not info.name.startswith("_")
)
VERBS = {"derive": ("recipes", "sample", "all"), "cache": ("list", "prune")}


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_every_command_module_has_add_parser_and_run_and_is_a_command_of_the_cli():
    assert MODULE_NAMES == sorted(commands.MODULES) == sorted(cli.COMMANDS)
    for name in MODULE_NAMES:
        module = commands.MODULES[name]
        assert module.__name__ == f"recall.commands.{name}"
        assert callable(module.add_parser) and callable(module.run), name


@pytest.mark.parametrize("name", MODULE_NAMES)
def test_each_command_help_exits_0_and_names_the_command(name, capsys):
    assert _help([name], capsys).startswith(f"usage: recall {name} ")
    for verb in VERBS.get(name, ()):
        assert _help([name, verb], capsys).startswith(f"usage: recall {name} {verb} ")


def test_recall_help_lists_every_command_and_where_the_run_flags_are(capsys):
    out = _help([], capsys)
    listed = [line.split()[0] for line in out.splitlines() if re.match(r"    \S", line)]
    assert listed == list(commands.MODULES)
    assert "see `recall run --help` for its flags" in " ".join(out.split())
