"""The command line: the parser built from the command modules (recall/commands/), the
command first, and the one error wrapper every command's failures go through.

Start-up imports nothing heavy: `recall --version` and `recall --help` answer without
NumPy or GitPython, and only the module of the command that runs is imported, inside the
wrapper, so that Ctrl-C at any point, start-up included, ends in one line and exit 130
(until that module is imported, by recall/__main__.py's handler, which exits at once).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from recall import __version__, commands
from recall.commands._flags import GLOBAL_VALUE_FLAGS
from recall.errors import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    RecallError,
    Terminated,
    exit_at_start,
)
from recall.terminal import shown

COMMANDS = commands.NAMES


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with a command named, only that command's module is imported and
    defines its flags, and the others are listed by their summaries alone."""
    parser = argparse.ArgumentParser(
        prog="recall",
        description="Measure how often a fuzzy symbol finder ranks the intended name first.",
        epilog="With no command, recall runs `recall run`: see `recall run --help` for its flags.",
    )
    parser.add_argument("--version", action="version", version=f"recall {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if name == command:
            commands.module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=commands.SUMMARIES[name])
    return parser


def command_first(argv: list[str]) -> list[str]:
    """The command name first, so that global flags may stand before it (`recall --mirror
    DIR fetch gin`) as well as after it; no command named means `run`."""
    i = 0
    while i < len(argv):
        if argv[i] in GLOBAL_VALUE_FLAGS:
            i += 2
        elif argv[i].startswith(tuple(f"{flag}=" for flag in GLOBAL_VALUE_FLAGS)):
            i += 1
        else:
            break
    if i < len(argv) and argv[i] in (*COMMANDS, "-h", "--help", "--version"):
        return [argv[i], *argv[:i], *argv[i + 1 :]]
    return ["run", *argv]


def main(argv: list[str] | None = None) -> int:
    restore: Callable[[], None] = _nothing
    try:
        ordered = command_first(list(sys.argv[1:] if argv is None else argv))
        command = ordered[0] if ordered[0] in COMMANDS else None
        args = build_parser(command).parse_args(ordered)  # imports the command's modules
        restore = _unwinding_signals()
        return commands.module(args.command).run(args)
    except RecallError as exc:  # shown(): one line, and no finder's ESC reaches the terminal
        print(f"recall: {shown(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    except Terminated:
        print("recall: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("recall: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:  # a full or read-only disk where no stage expected one
        print(f"recall: {exc.filename or 'I/O'}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        restore()


def _nothing() -> None:
    pass


def _unwinding_signals() -> Callable[[], None]:
    """From here on, with the command's modules imported, SIGTERM raises Terminated where
    the harness is, so it unwinds as Ctrl-C does, and Ctrl-C raises KeyboardInterrupt
    again where recall's start-up (recall/__main__.py) had it exit at once; returns what
    puts the handlers before them back. Only the CLI installs them (outside the main
    thread no handler can be set): importing recall must not change a host program's
    signals."""
    if threading.current_thread() is not threading.main_thread():
        return _nothing
    previous = signal.signal(signal.SIGTERM, _terminate)
    interrupt = signal.getsignal(signal.SIGINT)
    if interrupt is exit_at_start:
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def restore() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        if interrupt is exit_at_start:
            signal.signal(signal.SIGINT, interrupt)

    return restore


def _terminate(_signum: int, _frame: FrameType | None) -> None:
    # A second SIGTERM must not cut the cleanup the first one started short; a handler
    # rather than SIG_IGN, because an ignored signal stays ignored in every child.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: None)
    raise Terminated
