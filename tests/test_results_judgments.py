"""The judgments page (docs/RESULTS-judgments.md): every peer that reads a names list, the
file pickers in their path mode, run through the real CLI; each committed set's #1 share
read from the reports its own results run kept, and its correlation with the agreement."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import needs_tool, run_cli

from recall.errors import RecallError
from recall.finders.engine import load_preset, needs_corpus
from recall.inputs.queryset import JUDGED
from recall.render.judgments_results import PATH_MODE, leaders
from recall.workflows.results_judgments import set_shares
from recall.workflows.results_page import page_columns


def test_the_page_runs_every_peer_that_reads_a_names_list_and_the_pickers_path_modes():
    peers = page_columns(JUDGED)
    labels = [p.label for p in peers]
    assert "reference" in labels and "reference (path mode)" in labels
    assert "fzf (Debian) (path mode)" in labels and "Fuse.js (path mode)" in labels
    assert not any(needs_corpus(load_preset(p.preset)) for p in peers)
    assert {"jedi-lsp", "gopls", "clangd", "basedpyright", "tsserver"}.isdisjoint(
        p.preset for p in peers
    )
    assert len(labels) == len(set(labels))


def test_the_finders_that_lead_the_sets_are_each_set_s_best_of_this_page():
    shares = {
        "default": {"a": 70.0, "b": 70.0, "c": 10.0, "gone": 99.0},
        "typing": {"c": 60.0, "a": 50.0},
    }
    assert leaders(shares, ["c", "b", "a"]) == ["c", "b", "a"]
    assert leaders({"default": {"x": 1.0}}, ["a"]) == []


def _kept(folder: Path, label: str, report: dict, **extra: object) -> None:
    entry = {"label": label, "version": "v", "command": "c", "note": "", "report": report,
             **extra}  # fmt: skip
    folder.mkdir(exist_ok=True)
    (folder / f"{label.replace(' ', '-')}.json").write_text(json.dumps(entry))


@needs_tool("fzf")
@pytest.mark.slow
def test_set_shares_reads_a_set_s_kept_reports_and_refuses_any_other(real_cache, gin, tmp_path):
    ran = run_cli("--cache", str(real_cache), "--repo", "gin", "--type", "abbr3", "--engine",
                  "fzf", "--no-regress", "--json")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    default = tmp_path / "default"
    _kept(default, "fzf (Debian)", report)
    _kept(default, "gopls", report, languages=["go"])  # a server's share is of its languages'
    shares = set_shares((("default", str(default)),))
    assert shares == {"default": {"fzf (Debian)": report["runs"][0]["first_pct"]}}
    cases = [
        ((("paths", str(default)),), "a kept report of another query set than"),
        ((("mine", str(default)),), "--set-reports mine="),
        ((("default", str(tmp_path / "none")),), "no such folder"),
        ((("default", str(default)), ("default", str(default))), "default is named twice"),
    ]
    for sets, said in cases:
        with pytest.raises(RecallError) as caught:
            set_shares(sets)
        assert said in str(caught.value)
    split = tmp_path / "split"
    _kept(split, "fzy", report | {"split": "tune"})
    with pytest.raises(RecallError, match="a kept report of the tune split alone"):
        set_shares((("default", str(split)),))


@needs_tool("fzf")
@needs_tool("fzy")
@pytest.mark.slow
def test_the_page_through_the_cli_correlates_the_named_sets_and_renders_again_alike(
    real_cache, gin, tmp_path
):
    ran = run_cli("--cache", str(real_cache), "--repo", "gin", "--engine", "fzf", "--no-regress",
                  "--json")  # fmt: skip
    report = json.loads(ran.stdout)
    default = tmp_path / "default"
    for label, share in (("fzf (Debian)", 40.0), ("fzf (iterfzf)", 40.0), ("fzy", 30.0)):
        _kept(default, label, report | {"runs": [report["runs"][0] | {"first_pct": share}]})
    page, kept = tmp_path / "page.md", tmp_path / "judged"
    flags = ("results", "--queries", "judgments", "--only", "fzf", "--only", "fzy", "--only",
             "fzf-paths", "--set-reports", f"default={default}", "--out", str(page),
             "--reports", str(kept), "--cache", str(real_cache))  # fmt: skip
    proc = run_cli(*flags, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    assert text.startswith("# Results on the judgments: agreement with the maintainers' own tests")
    for label in ("fzf (Debian)", "fzf (iterfzf)", "fzy", f"fzf (Debian){PATH_MODE}"):
        assert f"\n| {label} | 547 | " in text
    correlation = text[text.index("## How far recall's own sets agree") :]
    assert "Fisher's z with Bonett and Wright's variance" in correlation
    assert "\n| default | 3 | " in correlation  # the three finders of both pages
    assert "## The judgments the leading finders disagree with" in correlation
    assert "(fzf (Debian), fzf (iterfzf))" in correlation  # the default set's leaders, tied
    again = run_cli(*flags, "--render-only")
    assert again.returncode == 0, again.stderr
    assert page.read_text() == text
    other = run_cli(
        "results", "--queries", "typed", "--set-reports", f"default={default}", "--out",
        str(tmp_path / "x.md"), "--render-only", "--reports", str(kept),
    )  # fmt: skip
    assert other.returncode == 2 and "on the judgments page alone" in other.stderr


def test_a_set_named_without_its_reports_is_refused_before_any_peer_runs(tmp_path):
    proc = run_cli("results", "--queries", "judgments", "--set-reports",
                   f"typed={tmp_path / 'none'}", "--out", str(tmp_path / "page.md"))  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"recall: --set-reports typed={tmp_path / 'none'}: no such folder (`recall results "
        "--reports DIR` keeps one)"
    )
    assert not (tmp_path / "page.md").exists()
    bad = run_cli("results", "--queries", "judgments", "--set-reports", "typed")
    assert bad.returncode == 2 and "expected SET=DIR" in bad.stderr


@pytest.mark.slow
def test_the_page_from_a_folder_outside_any_checkout_names_the_reference_s_own_commit(
    real_cache, tmp_path
):
    """Was a traceback (InvalidGitRepositoryError): the reference peer's version was read
    from the current folder's repository, not from the tree the preset runs."""
    fixture = Path(__file__).parent / "fixtures" / "zerobrane-judgments.tsv"
    page = tmp_path / "page.md"
    proc = run_cli("results", "--queries", str(fixture), "--only", "reference", "--out",
                   str(page), "--cache", str(real_cache), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent,
                          capture_output=True, text=True).stdout[:12]  # fmt: skip
    assert f"| reference | recall commit {head}" in page.read_text()
    assert "No set's kept reports were named" in page.read_text()
