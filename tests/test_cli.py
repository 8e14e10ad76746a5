from conftest import run_recall

from recall import __version__


def test_version_flag_prints_the_harness_version():
    proc = run_recall("--version")
    assert proc.returncode == 0
    assert proc.stdout == f"recall {__version__}\n"
