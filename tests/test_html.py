import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import git
import numpy as np
import pytest
from conftest import ROOT, needs_chromium, run_cli

from recall.render.html import render_html, source_link

CHROMIUM = shutil.which("chromium") or "chromium"
FIRST_BLUE, UP_GREEN, DOWN_RED = (8, 81, 156), (49, 163, 84), (222, 45, 38)


def _pixels(png: bytes) -> np.ndarray:
    """Decode an 8-bit RGB or RGBA PNG (what Chromium writes) into an h x w x 3 array."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(png):
        size, kind = struct.unpack(">I4s", png[pos : pos + 8])
        body = png[pos + 8 : pos + 8 + size]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + size
    assert depth == 8 and color in (2, 6)
    bpp = 3 if color == 2 else 4
    stride = width * bpp
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:]
        if kind == 0:
            row = line.copy()
        elif kind == 1:
            row = np.cumsum(line.reshape(width, bpp), axis=0, dtype=np.int64) % 256
            row = row.astype(np.uint8).reshape(stride)
        elif kind == 2:
            row = line + prev
        else:
            row = bytearray(line.tobytes())
            up = prev.tobytes()
            for i in range(stride):
                a = row[i - bpp] if i >= bpp else 0
                b, c = up[i], (up[i - bpp] if i >= bpp else 0)
                if kind == 3:
                    row[i] = (row[i] + (a + b) // 2) & 0xFF
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    row[i] = (row[i] + pred) & 0xFF
            row = np.frombuffer(bytes(row), dtype=np.uint8)
        out[y], prev = row, row
    return out.reshape(height, width, bpp)[:, :, :3]


def _chromium(page: Path, tmp: Path) -> tuple[np.ndarray, list[str]]:
    shot = tmp / f"{page.stem}.png"
    proc = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp / ('profile-' + page.stem)}", "--enable-logging=stderr",
         "--v=0", f"--screenshot={shot}", "--window-size=1000,1800", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if re.search("CONSOLE|Uncaught", line)]
    return _pixels(shot.read_bytes()), console


def _has(pixels: np.ndarray, color: tuple[int, int, int]) -> bool:
    return bool(np.all(pixels == np.array(color, dtype=np.uint8), axis=2).any())


@pytest.fixture
def worse_clone(tmp_path: Path) -> Path:
    """This repo's finder, one commit later with a weaker word-start bonus."""
    clone = tmp_path / "clone"
    repo = git.Repo.clone_from(ROOT, clone)
    rank = clone / "recall" / "finders" / "reference" / "rank.py"
    text = rank.read_text()
    assert "BONUS_WORD = 2.5" in text
    rank.write_text(text.replace("BONUS_WORD = 2.5", "BONUS_WORD = 0.5"))
    repo.index.add([str(rank.relative_to(clone))])
    with repo.config_writer() as config:
        config.set_value("user", "name", "test")
        config.set_value("user", "email", "test@example.com")
    repo.index.commit("weaker word-start bonus")
    return clone


@needs_chromium
def test_html_of_a_base_run_renders_charts_and_links_without_console_errors(
    real_cache, gin, worse_clone, tmp_path
):
    page = tmp_path / "report.html"
    proc = run_cli(
        "--cache", str(real_cache), "--repo", "gin", "--type", "abbr2", "--type",
        "consonants", "--finder", str(worse_clone), "--base", "HEAD~1", "--json",
        "--html", str(page),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    lost = report["diff"]["lost_first"]
    assert lost and all(r["source_file"] and r["source_line"] for r in lost)
    assert sum(report["diff"]["moves"].values()) == report["runs"][1]["n"]
    html = page.read_text()
    assert html == render_html(report)
    link = source_link(report["corpus"]["gin"], lost[0]["source_file"], lost[0]["source_line"])
    assert link.startswith(f"https://github.com/gin-gonic/gin/blob/{gin.pin.sha}/")
    assert f'href="{link}"' in html
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")

    pixels, console = _chromium(page, tmp_path)
    assert console == []
    white = np.all(pixels == 255, axis=2)
    assert 0.02 < 1 - white.mean() < 0.9
    assert _has(pixels, FIRST_BLUE) and _has(pixels, UP_GREEN) and _has(pixels, DOWN_RED)


@needs_chromium
def test_the_console_check_sees_a_page_script_error(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><p>x</p><script>undefined_fn();</script>")
    _, console = _chromium(page, tmp_path)
    assert any("Uncaught ReferenceError" in line for line in console)


def _tiny_report(source: str, file: str) -> dict:
    counts = {"n": 1, "first": 1, "top10": 1, "found": 1, "errors": 0, "first_pct": 100.0,
              "top10_pct": 100.0, "found_pct": 100.0, "mrr": 1.0, "ndcg10": 1.0}  # fmt: skip
    run = {"label": "candidate <b>", "bin": "x", "index_s": 0.0, "query_s": 0.0, **counts,
           "by_type": {"abbr3": counts}, "by_repo": {"r": counts},
           "by_language": {"go": counts}, "error_rows": []}  # fmt: skip
    row = {"repo": "r", "query": "<q>", "type": "abbr3", "source": source, "base_rank": 1,
           "new_rank": 2, "new_first": "x", "source_file": file, "source_line": 3}  # fmt: skip
    return {
        "meta": {}, "queries": 1, "sourced": 1, "runs": [run, run],
        "corpus": {"r": {"url": "https://github.com/o/r.git", "sha": "a" * 40, "language": "go"}},
        "diff": {"base": "base", "new": "candidate", "up": 0, "down": 1, "same": 0,
                 "top10_changed": 1, "moves": {"same": 0, "down 1": 1}, "lost_first": [row],
                 "lost_top10": [], "significance": {"summary": "s"}},
    }  # fmt: skip


def test_every_report_string_is_escaped_and_the_page_is_deterministic():
    report = _tiny_report("<script>alert(1)</script>", 'a"b <c>.go')
    page = render_html(report)
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "candidate &lt;b&gt;" in page and "&lt;q&gt;" in page
    assert 'href="https://github.com/o/r/blob/' + "a" * 40 + '/a%22b%20%3Cc%3E.go#L3"' in page
    assert page == render_html(_tiny_report("<script>alert(1)</script>", 'a"b <c>.go'))


def test_source_links_only_for_github_pins_with_a_file():
    pin = {"url": "https://github.com/gin-gonic/gin.git", "sha": "b" * 40}
    assert source_link(pin, "render/x.go", 12) == (
        "https://github.com/gin-gonic/gin/blob/" + "b" * 40 + "/render/x.go#L12"
    )
    assert source_link(pin, None, 12) is None
    assert source_link({"url": "https://gitlab.com/o/r.git", "sha": "b" * 40}, "x", 1) is None
