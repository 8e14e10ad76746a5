"""Untrusted text stays text: names, queries and stderr from a finder, and commit subjects
from a repository, reach Markdown, HTML and the terminal escaped for each, never as a tag,
a table cell boundary, a link or a control sequence (issue 31, class 10)."""

import re
import subprocess
from pathlib import Path

import git
import pytest
from conftest import needs_ctags, run_cli, tiny_suite

from recall.analysis.history import History
from recall.render.commandline import explain_command
from recall.render.escape import code_span, html, markdown
from recall.render.history import render_html as render_history_html
from recall.terminal import shown
from recall.workflows.bisection import Verdict
from recall.workflows.bisection import render as bisect_render
from recall.workflows.history import Commit

SCRIPT = "<script>alert(1)</script>"
CELL_BREAK = "</td></tr></table>"
LINK = "[click](javascript:alert(1))"
BIDI = "evil\u202eyp.exe"
HOSTILE = [SCRIPT, CELL_BREAK, LINK, BIDI, "a|b", "`tick`", "https://evil.example", "__init__"]
STDERR = "\x1b[31m<script>boom</script>\x07 | [x](javascript:y) \u202e"
# raw control and bidi characters, which no report may hold
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
FINDER = r"""
import json, sys
query = sys.argv[1]
if query == "crash":
    sys.stderr.write(STDERR)
    sys.exit(3)
hostile = [{"name": n, "file": "x.py", "line": 1} for n in HOSTILE]
named = {"alpha": "alpha_function", "beta": "BetaClass"}.get(query)
# gamma: hostile names only, BIDI first: it names nothing in the corpus (1 of 3: shown)
answer = hostile + [{"name": named}] if named else hostile[3:] + hostile[:3]
print(json.dumps(answer))
""".replace("STDERR", repr(STDERR)).replace("HOSTILE", repr(HOSTILE))
ENGINE = '[engine]\nbin = ["{python}", "{tree}/finder.py"]\nquery = ["{bin}", "{query}"]\n'
ROWS = [("alpha", "alpha_function"), ("beta", "BetaClass"), ("gamma", "gamma_delta"),
        ("crash", "alpha_function")]  # fmt: skip
SUBJECT = "Rank <script>alert(1)</script> | first \x1b[2J\x07 [x](javascript:y) \u202eevil"


@pytest.fixture
def tiny(tmp_path: Path) -> dict:
    rows = [f"{q}\texact\t{s}" for q, s in ROWS]
    return tiny_suite(tmp_path, rows, {"finder.py": FINDER, "recall.toml": ENGINE}, SUBJECT)


def _recall(tiny: dict, *args: str):
    return run_cli(
        *args, "--corpus", str(tiny["corpus"]), "--queries", str(tiny["queries"]),
        "--cache", str(tiny["cache"]), "--finder", str(tiny["finder"]), cwd=tiny["finder"],
        env={"RECALL_MIRROR": ""},
    )  # fmt: skip


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def _assert_tables_whole(page: str) -> None:
    """Every Markdown table row has as many cell boundaries as its header."""
    lines = page.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|---") or line.startswith("|--"):
            width = _unescaped_pipes(lines[i - 1])
            for row in lines[i + 1 :]:
                if not row.startswith("|"):
                    break
                assert _unescaped_pipes(row) == width, row


def test_markdown_escapes_tags_cells_links_emphasis_and_bidi():
    assert markdown(SCRIPT) == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert markdown(CELL_BREAK) == "&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;"
    assert markdown(LINK) == "\\[click\\](javascript\\:alert(1))"
    assert markdown(BIDI) == "evil\\\\u202eyp.exe"  # shown, and its backslash kept literal
    assert markdown("a|b `c` *d* ~~e~~") == "a\\|b \\`c\\` \\*d\\* \\~\\~e\\~\\~"
    assert markdown("__init__ and test_float_limits") == "\\_\\_init\\_\\_ and test_float_limits"
    assert markdown("see https://x.org, www.y.org, me@z.org") == (
        "see https\\://x.org, www\\.y.org, me\\@z.org"
    )
    assert markdown("nDCG@10 & <b>") == "nDCG@10 &amp; &lt;b&gt;"
    assert markdown("\\[x](y)") == "\\\\\\[x\\](y)"  # a backslash cannot undo the escape


def test_html_escapes_markup_quotes_and_shows_control_and_bidi_characters():
    assert html(f"{SCRIPT}\"'\x1b\x07{BIDI}") == (
        "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#x27;\\x1b\\x07evil\\u202eyp.exe"
    )


def test_every_bidi_control_is_shown_as_an_escape():
    for code in [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]:
        assert shown(chr(code)) == f"\\u{code:04x}"


def test_a_code_span_holds_any_text_literally():
    assert code_span("fzf --filter={query}") == "`fzf --filter={query}`"
    assert code_span("a ``b`` | c") == "```a ``b`` \\| c```"
    assert code_span("`x`") == "`` `x` ``"


@needs_ctags
@pytest.mark.slow
def test_a_finders_names_and_stderr_stay_text_in_markdown_html_and_the_terminal(tiny, tmp_path):
    page = tmp_path / "report.html"
    text = _recall(tiny, "--misses", "--html", str(page))
    assert text.returncode == 0, text.stderr
    md = _recall(tiny, "--misses", "--markdown")
    assert md.returncode == 0, md.stderr
    for out in (text.stdout, md.stdout, page.read_text()):
        assert not RAW.search(out), out
    # text may hold a tag, which a terminal shows; HTML may say javascript: in a cell
    assert "<script" not in md.stdout and "javascript:" not in md.stdout
    assert "<script" not in page.read_text() and "href" not in page.read_text()
    # text: each string as it is, its controls shown
    assert SCRIPT in text.stdout and "\\x1b[31m<script>boom</script>\\x07" in text.stdout
    assert "evil\\u202eyp.exe" in text.stdout
    # Markdown: the misses' #1, the answer naming nothing in the corpus, the stderr
    assert f"| {markdown(SCRIPT)} |" in md.stdout and f"| {markdown(BIDI)} |" in md.stdout
    assert "## Answers of candidate naming nothing in the corpus: 1" in md.stdout
    assert markdown(STDERR) in md.stdout and "</td>" not in md.stdout
    _assert_tables_whole(md.stdout)
    # HTML: the off-corpus row's first name and the stderr, as text inside their cells
    body = page.read_text()
    assert f'<td class="text">{html(BIDI)}</td>' in body
    assert html(STDERR) in body and "\\x1b[31m&lt;script&gt;boom" in body
    assert body.count("</table>") == body.count("<table>")


@needs_ctags
@pytest.mark.slow
def test_a_commit_subject_stays_text_in_history_markdown_text_and_html(tiny, tmp_path):
    with git.Repo(tiny["finder"]) as repo:
        sha = repo.head.commit.hexsha
        assert repo.head.commit.summary == SUBJECT
    page = tmp_path / "history.html"
    runs = [
        _recall(tiny, "history", "--markdown", sha),
        _recall(tiny, "history", sha),
        _recall(tiny, "history", "--html", str(page), sha),
    ]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr
    md, text, _ = (proc.stdout for proc in runs)
    body = page.read_text()
    for out in (md, text, body):
        assert not RAW.search(out), out
    assert "<script" not in md and "<script" not in body and "javascript:" not in md
    assert markdown(SUBJECT) in md
    _assert_tables_whole(md)
    assert shown(SUBJECT)[:40] in text  # text cuts a subject to 40 characters
    assert html(SUBJECT) in body  # the table cell, and inside each point's <title>
    assert f"<title>{html(sha)} {html(SUBJECT)}: " in body


def test_a_history_url_that_is_not_https_is_no_link():
    """A history's JSON may come from a file (a shard, a kept --json): only an https url
    becomes a link, so a javascript: one is dropped, not escaped into an href."""
    counts = {"n": 1, "first": 1, "top10": 1, "found": 1, "errors": 0, "first_pct": 100.0,
              "top10_pct": 100.0, "found_pct": 100.0, "mrr": 1.0, "ndcg10": 1.0}  # fmt: skip
    row = {"sha": "a" * 40, "short": "a" * 12, "date": "2016-07-10", "subject": "s",
           "refs": [], "url": "javascript:alert(1)", "built": False, "cached": True,
           "error": None, **counts, "by_type": {}, "by_repo": {}, "index_s": 1.0,
           "query_s": 2.0}  # fmt: skip
    data = {"schema": 1, "kind": "recall-history", "finder": "f",
            "engine": {"source": "e", "sha256": "0"}, "queries": "q", "sourced": 1,
            "repos": ["gin"], "types": ["abbr3"], "commits": [row]}  # fmt: skip
    page = render_history_html(History.from_json(data))
    assert "href" not in page and "javascript" not in page
    linked = {**data, "commits": [{**row, "url": "https://github.com/a/b"}]}
    https = render_history_html(History.from_json(linked))
    assert '<a href="https://github.com/a/b">' in https


@pytest.mark.parametrize("query", ["plain", "it's", "q\x1b]0;title\x07", "a\\b\u202e'c\x9b"])
def test_an_explain_command_pastes_back_the_exact_query_and_prints_no_control(query):
    """A report prints `recall explain QUERY` to paste: a query holding ESC or U+202E is
    quoted as bash's $'...' with escapes, so the line is safe to show and exact to run."""
    line = explain_command("gin", query, "GetUint8Slice", "abbr3")
    assert not RAW.search(line), line
    word, tail = line.removeprefix("recall explain ").split(" --repo ")
    assert tail == "gin --source GetUint8Slice --type abbr3"
    echoed = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True)
    assert echoed.stdout.decode("utf-8") == query


def test_bisect_shows_a_commit_subject_with_its_controls_escaped():
    bad = Commit("b" * 40, "2026-01-02T00:00:00+00:00", SUBJECT)
    good = Commit("a" * 40, "2026-01-01T00:00:00+00:00", "good")
    verdict = Verdict(
        bad, good, 1, 0, 1, 0, skipped=(bad,), candidates=(bad,), tested=2, what="rank"
    )
    out = bisect_render(verdict)
    assert not RAW.search(out), out
    assert f"first bad commit: {'b' * 12} 2026-01-02 {shown(SUBJECT)}" in out
