"""The one error type users ever see, and the exit codes."""

EXIT_OK = 0
EXIT_LOSS = 1
EXIT_FAILURE = 2


class RecallError(Exception):
    """A failure the user can act on; the CLI prints it as one line and exits 2."""
