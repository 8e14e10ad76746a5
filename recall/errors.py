"""The one error type users ever see, and the exit codes."""

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
