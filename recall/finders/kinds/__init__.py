"""Adapters that let finders without a command line of their own speak the batch protocol.

HARNESS_ROOT is the folder that holds the harness's `recall` package: a kind's worker runs
with it last on PYTHONPATH, after the tree under test, and a results key that sees it in a
finder's environment covers the harness's own code (running/identity.py).
"""

from pathlib import Path

HARNESS_ROOT = str(Path(__file__).resolve().parents[3])
