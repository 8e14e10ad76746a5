"""What several test files share: the golden report's fixed results, the fault world's
finder and engine, a clone of this repo with a weaker finder, and a headless Chromium
that screenshots a page.

Test files import these from here, never from one another (a test file is no library:
importing one runs its module fixtures' definitions and shadows fixtures of the same name).
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import git
import numpy as np
from conftest import ROOT, make_repo, run_cli, tiny_suite

from recall.analysis.ceiling import RowCeiling
from recall.analysis.ceiling import summary as ceiling_summary
from recall.analysis.model import (
    EngineMeta,
    Hit,
    Meta,
    QueryResult,
    RegressSection,
    Report,
    RunResult,
)
from recall.analysis.regress import Case
from recall.analysis.report import analyse
from recall.finders.protocol import rank_by_name
from recall.inputs.corpus import Pin
from recall.inputs.queryset import QueryRow
from recall.render.results_entry import Entry

# A clone of this repo whose finder is one commit weaker (test_html, test_typing_report) ----


def weaker_clone(tmp_path: Path) -> Path:
    """This repo cloned, one commit later with a weaker word-start bonus and skipped
    vowels costing as much as other characters: a finder that loses against HEAD (and
    wins a few) on every set, for the reports of a real --base run. Each weakening alone
    leaves some set unmoved since DECISIONS.md entry 12 (the bonus: no gin abbr2 or
    consonants source down; the vowels: no gin typing sequence slower)."""
    clone = tmp_path / "clone"
    repo = git.Repo.clone_from(ROOT, clone)
    weights = clone / "recall" / "finders" / "reference" / "weights.py"
    text = weights.read_text()
    for weight, weaker in (("BONUS_WORD = 2.5", "BONUS_WORD = 0.5"),
                           ("SKIP_VOWEL = 0.15", "SKIP_VOWEL = 0.5")):  # fmt: skip
        assert weight in text
        text = text.replace(weight, weaker)
    weights.write_text(text)
    repo.index.add([str(weights.relative_to(clone))])
    with repo.config_writer() as config:
        config.set_value("user", "name", "test")
        config.set_value("user", "email", "test@example.com")
    repo.index.commit("a weaker word-start bonus, vowels skipped at full cost")
    return clone


# The golden report (tests/golden, test_report, test_report_schema, test_html) ------------


def ranked(source: str, order: list[str], located: bool = True) -> QueryResult:
    hits = [Hit(n, f"{n}.go" if located else None, 7 if located else None) for n in order]
    return rank_by_name(hits, source)


def run_result(label: str, results: list[QueryResult]) -> RunResult:
    return RunResult(label, "bin", 0.0, 0.0, tuple(results))


PINS = {
    "gin": Pin("gin", "https://github.com/gin-gonic/gin", "a" * 40, "go"),
    "flask": Pin("flask", "https://github.com/pallets/flask", "b" * 40, "python"),
}


# What a run writes as its meta (run._meta), for reports and saved files made by hand.
META = Meta(
    recall="0.1.0", python="3.11.7", git="2.39.5", ctags="5.9.0",
    engine=EngineMeta("preset:reference", "e" * 64), corpus_sha256="c" * 64,
    queries_sha256="a" * 64, config=None,
)  # fmt: skip


def golden_report() -> Report:
    """Fixed results for two repos, a regress case, an accepted and a stale accepted loss."""
    rows = [
        QueryRow(repo, f"{repo[:2]}{i}", kind, f"{repo.title()}{i}")
        for repo in ("gin", "flask")
        for i, kind in enumerate(["abbr3", "abbr3", "typo", "glob", "consonants"])
    ] + [QueryRow("gin", "hand0", "hand", "")]
    fill = [f"Other{j}" for j in range(11)]
    base_orders = [[r.source, *fill] for r in rows[:-1]] + [fill]
    new_orders = [
        [*fill[:1], r.source] if i % 3 == 0 else [*fill, r.source] if i == 4 else [r.source]
        for i, r in enumerate(rows[:-1])
    ] + [fill[1:]]
    base = [ranked(r.source, order) for r, order in zip(rows, base_orders, strict=True)]
    new = [ranked(r.source, order) for r, order in zip(rows, new_orders, strict=True)]
    runs = [run_result("base main (0123456789ab)", base), run_result("candidate", new)]
    cases = [Case("gin", "ctx", r"^Gin1\.go:7 Gin1$"), Case("flask", "app", "!_test")]
    chances = [RowCeiling(1, 1.0, 1.0), RowCeiling(2, 0.5, 1.0), RowCeiling(12, 0.25, 0.9)]
    per_row = {row: chances[i % 3] for i, row in enumerate(rows[:-1])}
    languages = {name: pin.language for name, pin in PINS.items()}
    return analyse(
        META, PINS, rows, runs, baseline=True, cases=cases,
        case_results=[(base[1], base[5]), (new[0], new[5])],
        regress=RegressSection("regress.tsv", len(cases), 0),
        accepted=[("gin", "gi0", "Gin0"), ("gin", "x", "X")], explain_flags=[None],
        ceiling=ceiling_summary(rows, per_row, languages),
    )  # fmt: skip


# The fault world (test_faults, test_inputs): a tiny pinned corpus and a finder whose
# build and stages hang, dirty the checkout or echo on request (FAULT=...) ---------------

FAULT_BUILD = """
import os, pathlib, subprocess, time
fault = os.environ.get("FAULT")
if fault == "build" or (fault == "basebuild" and "builds" in os.getcwd()):
    child = subprocess.Popen(["sleep", "300"])  # the build's own child, in its group
    marks = pathlib.Path(os.environ["MARKDIR"])
    (marks / "partial").write_text(f"{os.getpid()} {child.pid}")
    (marks / "partial").rename(marks / fault)  # the marker appears with both pids in it
    time.sleep(300)
"""
FAULT_FINDER = r"""
import json, os, pathlib, sys, time
mode, stage = os.environ.get("FAULT", ""), sys.argv[1]
if mode == stage:
    with open(pathlib.Path(os.environ["MARKDIR"]) / stage, "a") as mark:
        mark.write(f"{os.getpid()}\n")
    time.sleep(300)
if stage == "index":
    sys.exit(0)
query, names = sys.argv[2], open(sys.argv[3]).read().splitlines()
if mode == "dirty":
    pathlib.Path("lib", "written-by-finder.txt").write_text("x")
if mode == "echo":
    with open(pathlib.Path(os.environ["MARKDIR"]) / "queries", "a", encoding="utf-8") as log:
        log.write(json.dumps(query) + "\n")
    print(query)  # then every name: an answer that names nothing in the corpus is refused
    print("\n".join(names))
    sys.exit(0)
if mode == "peek":
    with open(pathlib.Path(os.environ["MARKDIR"]) / "peek", "a") as log:
        log.write("edited\n" if "edited by hand" in open("lib/alpha.py").read() else "pin\n")
print("\n".join(sorted(n for n in names if query.lower() in n.lower())))
"""
FAULT_ENGINE = """[engine]
build = ["{python}", "{tree}/build.py"]
bin = ["{python}", "{tree}/finder.py"]
index = ["{bin}", "index"]
query = ["{bin}", "query", "{query}", "{names}"]
output = "lines"
pass_env = ["MARKDIR", "FAULT"]
"""
FAULT_ROWS = [
    ("alpha", "alpha_function"), ("beta", "BetaClass"), ("gamma", "gamma_delta"),
    ("epsilon", "epsilon_value"), ("delta", "gamma_delta"), ("func", "alpha_function"),
]  # fmt: skip


def fault_world(tmp_path: Path) -> dict:
    """A tiny pinned corpus, a finder repo with a build, and fresh TMPDIR, HOME and cache."""
    rows = [f"{q}\texact\t{s}" for q, s in FAULT_ROWS]
    files = {"finder.py": FAULT_FINDER, "build.py": FAULT_BUILD, "recall.toml": FAULT_ENGINE}
    paths = tiny_suite(tmp_path, rows, files)
    dirs = {name: tmp_path / name for name in ("tmp", "home", "cache", "marks")}
    for path in dirs.values():
        path.mkdir()
    return {**paths, **dirs}


def fault_args(world: dict, *extra: str) -> list[str]:
    return [
        "--finder", str(world["finder"]), "--corpus", str(world["corpus"]),
        "--queries", str(world["queries"]), "--cache", str(world["cache"]),
        "--allow-empty", "--json", "--jobs", "2", *extra,
    ]  # fmt: skip


def fault_env(world: dict, fault: str = "") -> dict[str, str]:
    return {
        "TMPDIR": str(world["tmp"]), "HOME": str(world["home"]),
        "MARKDIR": str(world["marks"]), "FAULT": fault, "PYTHONPATH": str(ROOT),
        "RECALL_MIRROR": "",  # the fixture pins are in no mirror: no fallback line on stderr
    }  # fmt: skip


# A page in headless Chromium (test_html, test_history) ---------------------------------

CHROMIUM = shutil.which("chromium") or "chromium"
FIRST_BLUE, UP_GREEN, DOWN_RED = (8, 81, 156), (49, 163, 84), (222, 45, 38)


def png_pixels(png: bytes) -> np.ndarray:
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


def chromium(page: Path, tmp: Path) -> tuple[np.ndarray, list[str]]:
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
    return png_pixels(shot.read_bytes()), console


def has_color(pixels: np.ndarray, color: tuple[int, int, int]) -> bool:
    return bool(np.all(pixels == np.array(color, dtype=np.uint8), axis=2).any())


DEEP = b"[" * 100_000 + b"]" * 100_000  # JSON nested past any parser's depth
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000


def one_line_exit_2(proc, *needles: str) -> None:  # type: ignore[no-untyped-def]
    """The CLI refused in one `recall: ...` line, exit 2, naming each needle."""
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("recall: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def tiny_pin(tmp_path: Path) -> Pin:
    """A pin of a one-file python repo made in tmp_path/up."""
    upstream = make_repo(tmp_path / "up", {"a.py": "def alpha_function():\n    pass\n"})
    return Pin("tiny", (tmp_path / "up").as_uri(), upstream.head.commit.hexsha, "python")


def kept_entries(entries: list[dict]) -> list[Entry]:
    """Results pages' entries as `recall results --reports` keeps them, read back: each
    report completed with the parts a page does not draw (no error, no regress case, a
    ceiling with no group), as `recall run --json` writes them."""
    run_parts = {"cached": False, "error_rows": [], "off_corpus": 0, "off_corpus_first": [],
                 "dirtied": [], "restarts": 0, "regress": None}  # fmt: skip
    ceiling = {"n": 8, "first": 7.0, "top10": 8.0, "first_pct": 87.5, "top10_pct": 100.0,
               "first_ci": [7, 8], "top10_ci": [8, 8], "by_type": {}, "by_repo": {},
               "by_language": {}}  # fmt: skip
    typed = []
    for entry in entries:
        report = {"ceiling": ceiling, "unknown_sources": {"count": 0, "first": []},
                  "split": None} | entry["report"]  # fmt: skip
        report["runs"] = [run_parts | run for run in report["runs"]]
        typed.append(Entry.from_json(entry | {"report": report}))
    return typed


def saved_gin_run(preset: str, cache: Path, tmp_path: Path) -> dict:
    """A preset's run over gin's abbr3 and typo rows, as `--save` wrote it: what the tests
    of a library finder compare with the library called directly."""
    saved = tmp_path / "saved.json"
    proc = run_cli(
        "--engine", preset, "--repo", "gin", "--type", "abbr3", "--type", "typo",
        "--cache", str(cache), "--save", str(saved), "--no-regress",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(saved.read_text())
