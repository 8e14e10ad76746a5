"""`python -m recall`, and the `recall` command (pyproject's console script, `entry`): the
signal handlers first, before any import that takes time.

Until the command's modules are imported (NumPy, GitPython, orjson: a tenth of a second
and more), Ctrl-C or SIGTERM ends the process at once with one line and 130 or 143
(errors.exit_at_start): nothing has been started that needs cleaning up, and a
KeyboardInterrupt raised inside an extension module's initialisation can crash the
interpreter (orjson's did, with a segfault). cli.main puts the handlers that unwind the
work back once the command is ready to run.
"""

import _signal  # signal.py's core: signal.py imports the enum and types modules first

from recall.errors import exit_at_start


def entry() -> int:
    for signum in (_signal.SIGINT, _signal.SIGTERM):
        if _signal.getsignal(signum) != _signal.SIG_IGN:  # a job started in the background
            _signal.signal(signum, exit_at_start)
    from recall.cli import main

    return main()


if __name__ == "__main__":
    raise SystemExit(entry())
