import pytest
from conftest import ROOT, mirror_dir, run_cli
from test_results import ENTRIES, HOST

from recall.errors import RecallError
from recall.path_peers import PATH_PEERS, WORDING, render_paths_page
from recall.results import path_peers


def test_the_paths_page_has_every_file_picker_and_no_language_server():
    presets = {p.preset for p in path_peers()}
    assert presets == {
        "reference-paths", "fzf-paths", "fzy-paths", "frizbee-paths", "fusejs-paths",
        "fuzzysort-paths",
    }  # fmt: skip
    assert len(path_peers()) == len(PATH_PEERS) == 7  # fzf twice: Debian's and iterfzf's


def test_the_page_says_paths_where_the_names_page_says_names():
    page = render_paths_page(ENTRIES, HOST)
    assert page.startswith("# Results on paths:")
    assert "Rank is by path" in page and "Rank is by name" not in page
    for names, _paths in WORDING:
        assert names not in page


def test_a_sentence_the_names_page_lost_is_an_error_not_a_half_worded_page(monkeypatch):
    import recall.path_peers

    monkeypatch.setattr(recall.path_peers, "render_results", lambda e, h: "# Other title\n")
    with pytest.raises(RecallError, match="no longer says"):
        render_paths_page(ENTRIES, HOST)


def test_results_over_a_path_set_runs_the_path_presets_and_words_the_page(tmp_path, real_cache):
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    queries = tmp_path / "p.tsv"
    rows = [r for r in (ROOT / "paths.tsv").read_text().splitlines() if r.startswith("gin\t")]
    queries.write_text("repo\tquery\ttype\tsource\n" + "\n".join(rows[:30]) + "\n")
    ran = run_cli(
        "results", "--only", "reference-paths", "--only", "fzy-paths", "--queries", str(queries),
        "--cache", str(real_cache), "--mirror", str(mirror), "--out", str(tmp_path / "p.md"),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    page = (tmp_path / "p.md").read_text()
    assert "| reference | 30 |" in page and "| fzy | 30 |" in page
    assert "| ceiling | 30 |" in page
    assert "Rank is by path" in page and "recall commit" in page
    assert "recall/finder/paths.py" in page
