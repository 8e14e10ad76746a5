"""`make bench`, the reference finder's part: its speed and start-up against frizbee, the
verdict loop, and its scale.

speed: rails through the harness, `--jobs 1`, the reference finder and frizbee (the
    frizbee preset) in alternating rounds in one run (reference, frizbee, reference, ...);
    each side's median query seconds per query, and their ratio (target: at most 1.0).
startup: each finder's batch process started as the harness starts it (its `{python}`,
    its environment, rails's index or names file), timed to its answer to a first
    one-row query, in alternating rounds; each side's median (target: the reference at
    most 0.08 s).
verdict: a one-line change in weights.py, then `recall --base HEAD` with a warm cache,
    on every corpus: the harness and finder of THEN (today's path: its kept indexes are
    known by the whole working tree, so the change indexes every corpus again) and of
    this tree's HEAD (known by what the index reads), each a git repository of its own
    unpacked here with a cache of its own, in alternating rounds, each round a new value;
    each side's median wall seconds (target: at most 10 s).
scale: a synthetic corpus built here from the pinned corpora's names (their words
    recombined into new, distinct identifiers, seeded), written as Python files; the
    finder indexes it (`python -m recall.finders.reference index`: ctags, then the arrays)
    and answers the committed query rows in one `query --batch` process, at 10k, 100k and
    1M names: index seconds and the index process's peak RSS per name, the batch
    process's load seconds (mapping the index, loading the kernel, the skip costs) and
    peak RSS per name (target: at most 1 KB for each process), and ms per query.

    python benchmarks/reference.py [--mirror DIR] [--cache DIR] [--sizes N,N,...]
                                   [--then REF] [ITEM ...]

ITEM is speed, startup, verdict or scale (default: all four). Nothing is written outside a
temporary folder but the recall cache's corpora and kept results (the speed runs use
--no-cache).
"""

from __future__ import annotations

import argparse
import keyword
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recall.inputs.corpus import cache_root, fetch, load_pins, mirror_root  # noqa: E402
from recall.inputs.queryset import read_queries  # noqa: E402
from recall.inputs.recipes import words as split_words  # noqa: E402
from recall.inputs.symbols import checkout_symbols, distinct_names  # noqa: E402
from recall.running.build import extract_archive, resolve_commit  # noqa: E402
from recall.running.interpreter import finder_python  # noqa: E402

ROUNDS = 5  # alternating rounds of the speed item: its ratio is of the medians
STARTS = 21  # alternating starts of each finder in the startup item
VERDICTS = 3  # alternating rounds of the verdict item
# main when issue 45 measured the verdict loop (23.7 s): today's path, for the verdict item
THEN = "97fa97d"
ITEMS = ("speed", "startup", "verdict", "scale")
SIZES = (10_000, 100_000, 1_000_000)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
PER_FILE = 10_000  # definitions per generated file
SCALE_QUERIES = 300  # query rows sent at each size


def recall_json(cache: Path, mirror: Path | None, *args: str) -> dict:
    """The CLI as a child on this checkout's finder; its JSON report."""
    argv = [sys.executable, "-m", "recall", "--cache", str(cache)]
    argv += ["--mirror", str(mirror)] if mirror else []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [*argv, "--finder", str(ROOT), *args, "--json"], cwd=ROOT, env=env,
        capture_output=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"bench: recall {' '.join(args)} failed: {proc.stderr.decode()[-500:]}")
    return orjson.loads(proc.stdout)  # type: ignore[no-any-return]


def item_speed(cache: Path, mirror: Path | None) -> None:
    """Reference finder against frizbee on rails, --jobs 1, alternating rounds."""
    args = ("--repo", "rails", "--jobs", "1", "--no-cache")
    samples: dict[str, list[float]] = {"reference": [], "frizbee": []}
    n = 0
    for _ in range(ROUNDS):
        for label, extra in (("reference", ()), ("frizbee", ("--engine", "frizbee"))):
            report = recall_json(cache, mirror, *args, *extra)
            run = report["runs"][0]
            n = int(report["queries"])
            samples[label].append(float(run["query_s"]) / n)
    ref, friz = (statistics.median(samples[k]) * 1000 for k in ("reference", "frizbee"))
    rounds = ", ".join(
        f"{a * 1000:.2f}/{b * 1000:.2f}"
        for a, b in zip(samples["reference"], samples["frizbee"], strict=True)
    )
    ratio = ref / friz
    print(f"speed. rails, {n} queries, --jobs 1, {ROUNDS} alternating rounds (reference/"
          f"frizbee ms/query: {rounds}): reference {ref:.2f} ms/query, frizbee {friz:.2f}: "
          f"{ratio:.2f}x (target at most 1.0x: {verdict(ratio <= 1.0)}); load average "
          f"{load()}")  # fmt: skip


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def item_startup(cache: Path, mirror: Path | None) -> None:
    """Each finder's batch process as the harness starts it, to its first answer."""
    pins = load_pins(ROOT / "corpus.json")
    checkout = fetch(pins["rails"], cache, mirror)
    names = distinct_names(checkout_symbols(checkout, cache))
    python = finder_python(cache)
    with tempfile.TemporaryDirectory(prefix="recall-bench-") as folder:
        tmp = Path(folder)
        env = finder_env(tmp / "home")
        db, listed = tmp / "rails.db", tmp / "names.txt"
        listed.write_text("".join(f"{n}\n" for n in names))
        index = [python, "-P", "-m", "recall.finders.reference", "index", str(checkout.path)]
        subprocess.run([*index, "--language", "ruby", "--db", str(db)], env=env, check=True)
        sides = {
            "reference": [python, "-P", "-m", "recall.finders.reference", "query", "--batch",
                          "--db", str(db)],
            "frizbee": [python, "-P", "-m", "recall.finders.kinds.frizbee", "--names",
                        str(listed), "--max-typos", "0"],
        }  # fmt: skip
        times: dict[str, list[float]] = {label: [] for label in sides}
        for _ in range(STARTS):
            for label, argv in sides.items():
                times[label].append(first_answer(argv, env))
    ref, friz = (statistics.median(times[k]) for k in sides)
    print(f"startup. rails, {STARTS} alternating starts of each batch process to its first "
          f"answer: reference {ref:.3f} s (min {min(times['reference']):.3f}), frizbee "
          f"{friz:.3f} s (min {min(times['frizbee']):.3f}): {ref / friz:.2f}x (target at most "
          f"0.08 s: {verdict(ref <= 0.08)}); load average {load()}")  # fmt: skip


def first_answer(argv: list[str], env: dict[str, str]) -> float:
    """Seconds from starting argv to its answer to one request, as the harness sends it."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"id":0,"query":"apba","limit":1}\n')
    proc.stdin.flush()
    line = proc.stdout.readline()
    seconds = time.perf_counter() - started
    proc.stdin.close()
    proc.wait()
    if b'"results"' not in line:
        raise SystemExit(f"bench: {argv[3]} answered {line[:200]!r}")
    return seconds


def item_verdict(cache: Path, mirror: Path | None, then: str) -> None:
    """Today's path and this tree's, each its own harness and finder in a repository of
    its own, after a one-line change in weights.py, alternating."""
    with tempfile.TemporaryDirectory(prefix="recall-bench-") as folder:
        tmp = Path(folder)
        sides = {"today": resolve_commit(ROOT, then), "new": resolve_commit(ROOT, "HEAD")}
        trees = {label: repository(tmp / label, commit) for label, commit in sides.items()}
        walls: dict[str, list[float]] = {label: [] for label in sides}
        for k in range(VERDICTS + 1):  # the first round warms each side's cache
            for label, tree in trees.items():
                weights = tree / "recall" / "finders" / "reference" / "weights.py"
                text = re.sub(r"(?m)^BONUS_WORD = [0-9.]+", f"BONUS_WORD = {2.5 + k / 1000}",
                              weights.read_text())  # fmt: skip
                weights.write_text(text)
                env = {**os.environ, "PYTHONPATH": str(tree)}
                argv = [sys.executable, "-m", "recall", "--cache", str(tmp / f"cache-{label}")]
                argv += ["--mirror", str(mirror)] if mirror else []
                started = time.perf_counter()
                proc = subprocess.run([*argv, "--base", "HEAD", "--json"], cwd=tree, env=env,
                                      capture_output=True, check=False)  # fmt: skip
                if proc.returncode != 0:
                    raise SystemExit(f"bench: {label}: {proc.stderr.decode()[-500:]}")
                if k:
                    walls[label].append(time.perf_counter() - started)
    today, new = (statistics.median(walls[k]) for k in sides)
    pairs = zip(walls["today"], walls["new"], strict=True)
    rounds = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in pairs)
    print(f"verdict. a one-line change in weights.py, then recall --base HEAD with a warm cache, "
          f"every corpus, {VERDICTS} alternating rounds (today/new s: {rounds}): today's path "
          f"({then}) {today:.1f} s, this tree's {new:.1f} s (target at most 10 s: "
          f"{verdict(new <= 10)}); load average {load()}")  # fmt: skip


def repository(tree: Path, commit: str) -> Path:
    """commit of this repository unpacked into tree, made a repository of one commit."""
    import git

    extract_archive(ROOT, commit, tree)
    repo = git.Repo.init(tree, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "bench")
        config.set_value("user", "email", "bench@example.com")
    repo.git.add("--all")
    repo.git.commit("--quiet", "-m", f"{commit[:12]}, unpacked")
    return tree


def corpus_names(cache: Path, mirror: Path | None) -> list[str]:
    """Every distinct name of the pinned corpora, sorted."""
    pins = load_pins(ROOT / "corpus.json")
    names: set[str] = set()
    for repo in sorted(pins):
        checkout = fetch(pins[repo], cache, mirror)
        names.update(distinct_names(checkout_symbols(checkout, cache)))
    return sorted(names)


def synthetic(names: list[str], count: int, seed: int = 35) -> list[str]:
    """count distinct identifiers: the corpora's own first (those that are identifiers),
    then new ones, each the first words of one real name and the last words of another,
    in the first one's convention (snake_case where it has an underscore, else camel)."""
    real = [n for n in names if IDENTIFIER.match(n) and not keyword.iskeyword(n)]
    words = [(n, split_words(n)) for n in real]
    words = [(n, w) for n, w in words if w]
    out = list(dict.fromkeys(real))[:count]
    seen = set(out)
    rng = random.Random(seed)
    while len(out) < count:
        (a, wa), (_b, wb) = rng.choice(words), rng.choice(words)
        parts = wa[: rng.randint(1, len(wa))] + wb[rng.randint(0, len(wb) - 1) :]
        if "_" in a or a.islower():
            name = "_".join(parts)
        else:
            name = "".join(p[:1].upper() + p[1:] for p in parts)
        if name[0].isdigit():
            name = "n" + name
        if name not in seen and not keyword.iskeyword(name):
            seen.add(name)
            out.append(name)
    return out


def write_tree(folder: Path, names: list[str]) -> None:
    """The names as Python functions, PER_FILE to a file."""
    folder.mkdir(parents=True)
    for k in range(0, len(names), PER_FILE):
        body = "".join(f"def {n}(): pass\n" for n in names[k : k + PER_FILE])
        (folder / f"m{k // PER_FILE:04d}.py").write_text(body)


def finder_env(home: Path) -> dict[str, str]:
    """This checkout's finder, in folders of the bench's own, as the harness runs it."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "LC_ALL": "C.UTF-8",
           "TZ": "UTC", "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    for name, sub in (("HOME", "home"), ("XDG_CACHE_HOME", "cache"), ("TMPDIR", "tmp")):
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[name] = str(home / sub)
    if "RECALL_KERNEL_CACHE" in os.environ:
        env["RECALL_KERNEL_CACHE"] = os.environ["RECALL_KERNEL_CACHE"]
    return env


def high_water(pid: int) -> int:
    """A live process's peak RSS in bytes since its exec (VmHWM). Not wait4's ru_maxrss,
    which keeps the high-water mark of the forking parent (this script, holding a million
    names) across the exec."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"bench: no VmHWM in /proc/{pid}/status")


def measure_size(tmp: Path, names: list[str], queries: list[str]) -> str:
    """Index names, then answer queries in one batch process: the figures' line."""
    tree, db = tmp / f"tree-{len(names)}", tmp / f"finder-{len(names)}.db"
    write_tree(tree, names)
    env = finder_env(tmp / "home")
    finder = [sys.executable, "-P", "-m", "recall.finders.reference"]
    # the kernel compiled beforehand, so that the compiler's memory is not the figure's
    build = "from recall.finders.reference import kernel; kernel.build()"
    subprocess.run([sys.executable, "-P", "-c", build], env=env, check=True)
    started = time.perf_counter()
    index_rss = peak_of([*finder, "index", str(tree), "--language", "python", "--db", str(db)],
                        env)  # fmt: skip
    index_s = time.perf_counter() - started
    proc = subprocess.Popen(
        [*finder, "query", "--batch", "--db", str(db)], env=env, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    started = time.perf_counter()
    times = []
    for k, query in enumerate([queries[0], *queries]):
        proc.stdin.write(orjson.dumps({"id": k, "query": query, "limit": 0}) + b"\n")
        proc.stdin.flush()
        asked = time.perf_counter()
        answer = orjson.loads(proc.stdout.readline())
        if "results" not in answer:
            raise SystemExit(f"bench: the finder failed on {query!r}: {answer}")
        if k == 0:
            load_s = time.perf_counter() - started  # the first answer: load and one query
        else:
            times.append(time.perf_counter() - asked)
    rss = high_water(proc.pid)
    proc.stdin.close()
    if proc.wait() != 0:
        raise SystemExit("bench: the batch process failed")
    per_name = rss / len(names)
    median, mean = (1000 * f(times) for f in (statistics.median, statistics.mean))
    return (
        f"{len(names):>9,} names: index {index_s:6.1f} s, peak RSS {index_rss / 2**20:5.0f} MB "
        f"({index_rss / len(names):6.0f} B/name); load {load_s:5.1f} s, peak RSS "
        f"{rss / 2**20:5.0f} MB ({per_name:6.0f} B/name), {median:6.2f} ms/query (median of "
        f"{len(times)}, mean {mean:.2f})"
    )


# Runs argv and prints its peak RSS in bytes: a small process of its own, so that the
# high-water mark its child inherits across the exec (Linux keeps the forking parent's)
# is this one's, some megabytes, and not the bench's, which holds a million names.
PEAK = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def peak_of(argv: list[str], env: dict[str, str]) -> int:
    """Run argv to its end; its peak RSS in bytes."""
    proc = subprocess.run([sys.executable, "-c", PEAK, *argv], env=env, check=True,
                          stdout=subprocess.PIPE)  # fmt: skip
    return int(proc.stdout.splitlines()[-1])


def item_scale(cache: Path, mirror: Path | None, sizes: tuple[int, ...]) -> None:
    """The synthetic corpus at each size."""
    names = synthetic(corpus_names(cache, mirror), max(sizes))
    pins = load_pins(ROOT / "corpus.json")
    rows = read_queries(ROOT / "queries.tsv", set(pins))
    queries = [r.query for r in random.Random(35).sample(rows, min(SCALE_QUERIES, len(rows)))]
    print(
        f"scale. a synthetic corpus from the pinned corpora's names, {len(queries)} query "
        "rows of queries.tsv at each size (target: at most 1 KB of peak RSS per name, for "
        f"the index process and for the query process); load average {load()}"
    )
    with tempfile.TemporaryDirectory(prefix="recall-bench-") as tmp:
        for size in sizes:
            print("  " + measure_size(Path(tmp), names[:size], queries), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", help="the recall cache (default: as recall chooses)")
    parser.add_argument("--mirror", help="offline corpus mirrors (default: $RECALL_MIRROR)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="names per corpus")
    parser.add_argument("--then", default=THEN, help=f"today's path (default {THEN})")
    parser.add_argument("items", nargs="*", metavar="ITEM", help=", ".join(ITEMS))
    args = parser.parse_args()
    for item in args.items:
        if item not in ITEMS:
            parser.error(f"unknown item {item!r} (one of {', '.join(ITEMS)})")
    cache, mirror = cache_root(args.cache), mirror_root(args.mirror)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    for item in args.items or ITEMS:
        if item == "speed":
            item_speed(cache, mirror)
        elif item == "startup":
            item_startup(cache, mirror)
        elif item == "verdict":
            item_verdict(cache, mirror, args.then)
        else:
            item_scale(cache, mirror, sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
