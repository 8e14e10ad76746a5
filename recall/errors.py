"""The one error type users ever see, and the exit codes."""

import _signal  # signal.py's core: without the enum and types modules signal.py imports
import os

EXIT_OK = 0
EXIT_LOSS = 1
EXIT_FAILURE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
EXIT_TERMINATED = 143  # 128 + SIGTERM


class RecallError(Exception):
    """A failure the user can act on; the CLI prints it as one line and exits 2."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (what `timeout` and CI runners send), raised where the harness is: a kind
    of interrupt, so every path that cleans up after Ctrl-C (finder groups killed,
    temporary folders removed) does so for it too."""


def exit_at_start(signum: int, _frame: object) -> None:
    """SIGINT or SIGTERM while `recall` is still importing its modules: one line and the
    exit status at once (recall/__main__.py), since nothing needs cleaning up yet. It and
    its module import nothing that takes time: they come before the handler is in place."""
    interrupted = signum == _signal.SIGINT
    os.write(2, b"recall: interrupted\n" if interrupted else b"recall: terminated\n")
    os._exit(EXIT_INTERRUPTED if interrupted else EXIT_TERMINATED)
