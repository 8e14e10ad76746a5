"""kind = "node": the adapter as a real node process over the real pinned packages, the
install into the cache, the engine table, and each npm preset on gin checked against the
package called directly by a node script of its own."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, commit_files, make_repo, needs_tool, run_cli
from helpers import saved_gin_run

from recall.errors import RecallError
from recall.finders.engine import load_preset, parse_engine
from recall.finders.kinds.node import (
    BOOT,
    DRIVERS,
    FOLDER,
    MARKER,
    lock_folder,
    node_modules,
    pinned,
    required,
)
from recall.inputs.symbols import checkout_symbols, distinct_names

pytestmark = [needs_tool("node", "nodejs"), needs_tool("npm")]

ADAPTER = ROOT / "recall" / "finders" / "kinds" / "node" / "adapter.js"
FIXTURE = ROOT / "tests" / "fixtures" / "node-finder"  # a finder's package.json and lock
NAMES = ["TestFloatLimits", "foo_bar", "test_float_limits", "tesla"]
TE = [{"name": "TestFloatLimits"}, {"name": "test_float_limits"}, {"name": "tesla"}]  # "te"
PRESETS = {
    "fusejs": "fuse.js",
    "fuzzysort": "fuzzysort",
    "fzf-js": "fzf",
    "match-sorter": "match-sorter",
    "fast-fuzzy": "fast-fuzzy",
    "ufuzzy": "@leeoniya/ufuzzy",
}

# Each package called as its README shows, written here apart from the adapter's
# drivers: argv is the node_modules folder, the package, a names file and a queries
# file (one JSON string a line); it prints one JSON list of names per query.
DIRECT = r"""
const fs = require("fs");
const path = require("path");
const [modules, pkg, namesFile, queriesFile] = process.argv.slice(2);
const names = fs.readFileSync(namesFile, "utf8").split("\n").filter((n) => n !== "");
const queries = fs.readFileSync(queriesFile, "utf8").split("\n").filter((q) => q).map(JSON.parse);
const need = (name) => require(path.join(modules, name));
async function main() {
  let search;
  if (pkg === "fuse.js") {
    const Fuse = need("fuse.js");
    const fuse = new Fuse(names, { includeScore: true });
    search = (q) => fuse.search(q).map((r) => r.item);
  } else if (pkg === "fuzzysort") {
    const fuzzysort = need("fuzzysort");
    const prepared = names.map((n) => fuzzysort.prepare(n));
    search = (q) => fuzzysort.go(q, prepared, { limit: 0 }).map((r) => r.target);
  } else if (pkg === "fzf") {
    const { Fzf } = await import(path.join(modules, "fzf", "dist", "fzf.es.js"));
    const fzf = new Fzf(names);
    search = (q) => fzf.find(q).map((e) => e.item);
  } else if (pkg === "match-sorter") {
    const { matchSorter } = need("match-sorter");
    search = (q) => matchSorter(names, q);
  } else if (pkg === "fast-fuzzy") {
    const searcher = new (need("fast-fuzzy").Searcher)(names);
    search = (q) => searcher.search(q);
  } else {
    const uFuzzy = need("@leeoniya/ufuzzy");
    const u = new uFuzzy({ intraIns: 1 });
    search = (q) => {
      const idxs = u.filter(names, q);
      if (!idxs || idxs.length === 0) return [];
      const info = u.info(idxs, names, q);
      return u.sort(info, names, q).map((i) => names[info.idx[i]]);
    };
  }
  for (const q of queries) process.stdout.write(JSON.stringify(search(q)) + "\n");
}
main();
"""


@pytest.fixture(scope="module")
def modules(real_cache: Path) -> Path:
    """The pinned packages, installed once into the session's cache (the runs below
    then find them installed)."""
    return node_modules(FOLDER, real_cache)


def _names_file(tmp_path: Path, names: list[str]) -> Path:
    path = tmp_path / "names.txt"
    path.write_text("".join(f"{n}\n" for n in names), encoding="utf-8")
    return path


def _adapter(
    tmp_path: Path, modules: Path, package: str, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess:
    names = _names_file(tmp_path, NAMES)
    return subprocess.run(
        ["node", str(ADAPTER), "--package", package, "--names", str(names),
         "--modules", str(modules), *args],
        input=stdin, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def _direct(tmp_path: Path, modules: Path, package: str, names: list[str], queries: list[str]):
    script, queries_file = tmp_path / "direct.js", tmp_path / "queries.jsonl"
    script.write_text(DIRECT)
    queries_file.write_text("".join(json.dumps(q) + "\n" for q in queries))
    names_file = _names_file(tmp_path, names)
    proc = subprocess.run(
        ["node", str(script), str(modules), package, str(names_file), str(queries_file)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _request(query: object, limit: object = 0, **extra: object) -> str:
    return json.dumps({**extra, "query": query, "limit": limit}) + "\n"


@pytest.mark.slow
def test_the_install_is_one_folder_per_lock_with_every_pinned_package(modules, real_cache):
    assert modules.parent.parent == real_cache / "node"
    assert (modules.parent / MARKER).is_file()
    for package, version in pinned().items():
        meta = json.loads((modules / package / "package.json").read_text())
        assert meta["version"] == version
    assert node_modules(FOLDER, real_cache) == modules  # installed once, then found
    assert not [p for p in (real_cache / "node").iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.slow
def test_the_adapter_answers_ids_limits_and_bare_lists_as_fuse_does(tmp_path, modules):
    stdin = _request("tesflolim", id=0) + _request("fobar", 2, id=1) + _request("tes", 1)
    proc = _adapter(tmp_path, modules, "fuse.js", stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    expected = _direct(tmp_path, modules, "fuse.js", NAMES, ["tesflolim", "fobar", "tes"])
    assert [line["id"] for line in lines[:2]] == [0, 1]
    assert [row["name"] for row in lines[0]["results"]] == expected[0]
    assert [row["name"] for row in lines[1]["results"]] == expected[1][:2]
    assert [row["name"] for row in lines[2]] == expected[2][:1]  # no id: the bare list


@pytest.mark.slow
def test_bad_requests_and_a_failing_package_are_that_line_s_error_and_it_goes_on(tmp_path, modules):
    stdin = (
        "not json\n" + "[1]\n" + _request(3, id=1) + _request("tes", -1, id=2)
        + _request("tes", 1.5, id=3) + _request("foo_bar", id=4)
    )  # fmt: skip
    proc = _adapter(tmp_path, modules, "match-sorter", stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert all(line["error"].startswith("bad request: ") for line in lines[:5])
    assert [line.get("id") for line in lines[:5]] == [None, None, 1, 2, 3]
    assert lines[5] == {"id": 4, "results": [{"name": "foo_bar"}]}
    # keys with a threshold and no key: match-sorter itself throws, for each query
    options = json.dumps({"keys": [{"threshold": 1}]})
    stdin = _request("tes", id=0) + _request("foo", id=1)
    proc = _adapter(tmp_path, modules, "match-sorter", "--options", options, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["id"] for line in lines] == [0, 1]
    assert all(line["error"].startswith("TypeError: ") for line in lines)


@pytest.mark.slow
def test_each_line_is_answered_as_it_is_read(tmp_path, modules):
    names = _names_file(tmp_path, NAMES)
    argv = ["node", str(ADAPTER), "--package", "fuzzysort", "--names", str(names),
            "--modules", str(modules)]  # fmt: skip
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as proc:
        for i, query in enumerate(["tes", "foo"]):
            proc.stdin.write(_request(query, id=i))
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["id"] == i  # stdin still open
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0


@pytest.mark.slow
def test_one_query_and_names_split_on_newlines_only(tmp_path, modules):
    names = _names_file(tmp_path, ["odd\rname", "odd\u2028other", "plain", ""])
    proc = subprocess.run(
        ["node", str(ADAPTER), "--package", "match-sorter", "--names", str(names),
         "--modules", str(modules), "--query", "odd", "--limit", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(row["name"] for row in json.loads(proc.stdout)) == ["odd\rname", "odd\u2028other"]


@pytest.mark.parametrize("package", ["fuse.js", "left-pad"])
def test_a_package_that_cannot_be_loaded_is_one_line_on_stderr_and_exit_2(tmp_path, package):
    empty = tmp_path / "node_modules"
    empty.mkdir()
    proc = _adapter(tmp_path, empty, package, stdin=_request("tes"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"node adapter: cannot load {package}: ")
    assert len(proc.stderr.splitlines()) == 1


@pytest.mark.slow
def test_a_failed_install_is_one_line_naming_npm_s_reason_and_leaves_nothing(tmp_path):
    folder = tmp_path / "pins"
    folder.mkdir()
    shutil.copyfile(FOLDER / "package-lock.json", folder / "package-lock.json")
    (folder / "package.json").write_text('{"dependencies": {"left-pad": "1.3.0"}}')
    cache = tmp_path / "cache"
    with pytest.raises(RecallError, match=r"^npm ci failed \(exit \d+\): .*in sync") as caught:
        node_modules(folder, cache)
    assert "\n" not in str(caught.value)
    assert "complete log" not in str(caught.value)
    left = [p.name for p in (cache / "node").iterdir()]
    assert all(name.endswith((".lock", ".inuse")) for name in left), left


def test_the_lock_is_recall_s_in_its_tree_the_finder_s_where_it_names_the_package(tmp_path):
    recall_tree = tmp_path / "recall"
    recall_tree.joinpath("recall/finders/kinds/node").mkdir(parents=True)
    (recall_tree / "recall/finders/kinds/node/adapter.js").write_text("")
    assert lock_folder(recall_tree, "fuzzy") == recall_tree / "recall/finders/kinds/node"
    finder = tmp_path / "finder"
    shutil.copytree(FIXTURE, finder)
    assert lock_folder(finder, "fuzzy") == finder
    assert lock_folder(finder, "fuse.js") == FOLDER  # a preset, from any finder's repo
    assert lock_folder(tmp_path, None) == FOLDER  # a server's {node_modules}
    with pytest.raises(RecallError, match=r"package left-pad is in neither .*package\.json "):
        lock_folder(finder, "left-pad")
    assert required("left-pad", finder) == (
        f"package left-pad is in neither {finder / 'package.json'} nor recall's own pins"
    )
    assert required("fuzzy", finder) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "needs package = an npm package"),
        ('package = "left-pad"', r"package 'left-pad' has no driver .*function ="),
        ('package = "typescript"', r"package 'typescript' has no driver"),
        ('package = "fuse.js"\nname_key = "x"', "name_key goes with function"),
        ('package = "fuzzy"\nfunction = "filter"\narguments = ["names"]', "arguments must"),
        ('package = "fuzzy"\nfunction = 3', "function must be"),
        ("package = 3", "needs package"),
        ('package = "fuse.js"\nbin = ["x"]', "unknown key 'bin' for kind 'node'"),
        ('package = "fuse.js"\ncallable = "a:b"', "unknown key 'callable' for kind 'node'"),
        ('package = "fuse.js"\noptions = 3', "options must be a table"),
        ('package = "fuse.js"\nenv = "X=1"', "env must be a table"),
    ],
)
def test_a_node_engine_table_that_cannot_run_names_the_key_and_file(text, message):
    with pytest.raises(RecallError, match=f"^node.toml: .*{message}"):
        parse_engine(f'[engine]\nkind = "node"\n{text}\n'.encode(), "node.toml")


def test_the_packages_said_to_have_a_driver_are_the_adapter_s_drivers():
    import re

    keys = re.findall(r'^  (?:"([^"]+)"|(\w+)): \(mod, names, options\)', ADAPTER.read_text(), re.M)
    assert sorted(quoted or bare for quoted, bare in keys) == sorted(DRIVERS)
    assert required("fuzzy", ROOT) == (
        f"package fuzzy is not pinned in {ROOT / 'recall/finders/kinds/node/package.json'}"
    )


def test_a_node_engine_runs_the_adapter_of_the_tree_under_test():
    engine = load_preset("ufuzzy")
    assert engine.kind == "node"
    assert engine.bin == ("node", "-e", BOOT, "{tree}", str(FOLDER / "adapter.js"))
    assert engine.batch[:3] == ("{bin}", "--package", "@leeoniya/ufuzzy")
    assert json.loads(engine.batch[engine.batch.index("--options") + 1]) == {"intraIns": 1}
    assert "--query" in engine.query and "{limit}" in engine.query


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.slow
def test_each_node_preset_on_gin_ranks_as_the_package_called_directly(
    preset, modules, real_cache, gin, tmp_path
):
    document = saved_gin_run(preset, real_cache, tmp_path)
    results = document["runs"][-1]["results"]
    assert len(results) == len(document["rows"]) > 150
    names = list(distinct_names(checkout_symbols(gin, real_cache)))
    queries = [row[1] for row in document["rows"]]
    direct = _direct(tmp_path, modules, PRESETS[preset], names, queries)
    for (_repo, query, _type, source), (rank, top, error, _off_corpus), hits in zip(
        document["rows"], results, direct, strict=True
    ):
        assert error is None
        assert rank == (hits.index(source) + 1 if source in hits else None), query
        assert [row[0] for row in top] == hits[:10], query


@pytest.mark.slow
def test_a_base_runs_its_own_adapter(tmp_path, modules, real_cache, gin):
    """The base commit's adapter answers in reverse; the working tree's is recall's own:
    the base's numbers are its adapter's, not the working tree's."""
    files = {
        f"recall/finders/kinds/node/{name}": (FOLDER / name).read_text()
        for name in ("adapter.js", "package.json", "package-lock.json")
    }
    good = files["recall/finders/kinds/node/adapter.js"]
    reversed_cut = "return (limit ? list.slice(0, limit) : list).reverse();"
    files["recall/finders/kinds/node/adapter.js"] = good.replace(
        "return limit ? list.slice(0, limit) : list;", reversed_cut
    )
    assert reversed_cut in files["recall/finders/kinds/node/adapter.js"]
    repo = make_repo(tmp_path / "finder", files, "an adapter that answers backwards")
    commit_files(repo, {"recall/finders/kinds/node/adapter.js": good}, "the real adapter")
    proc = run_cli(
        "--finder", str(tmp_path / "finder"), "--engine", "match-sorter", "--base", "HEAD~1",
        "--repo", "gin", "--type", "abbr3", "--cache", str(real_cache), "--json", "--no-regress",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    base, candidate = json.loads(proc.stdout)["runs"]
    assert base["found"] == candidate["found"] > 0
    assert base["first"] < candidate["first"]


def test_node_missing_from_path_is_one_line_and_exit_2(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "git").symlink_to(shutil.which("git"))
    proc = run_cli(
        "--engine", "fusejs", "--repo", "gin", "--type", "abbr3", "--no-regress",
        "--cache", str(tmp_path / "cache"), env={"PATH": str(folder)},
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == (
        "recall: preset:fusejs: program 'node' not found on PATH "
        "(kind 'node' runs Node.js: apt-get install nodejs npm)\n"
    )


FUZZY_DIRECT = r"""
const fs = require("fs");
const path = require("path");
const [modules, namesFile, queriesFile] = process.argv.slice(2);
const fuzzy = require(path.join(modules, "fuzzy"));
const names = fs.readFileSync(namesFile, "utf8").split("\n").filter((n) => n !== "");
for (const line of fs.readFileSync(queriesFile, "utf8").split("\n").filter((q) => q)) {
  const hits = fuzzy.filter(JSON.parse(line), names).map((hit) => hit.string);
  process.stdout.write(JSON.stringify(hits) + "\n");
}
"""
FUZZY_ENGINE = """[engine]
kind = "node"
package = "fuzzy"
function = "filter"  # fuzzy.filter(query, names, options): [{string, score, index}]
name_key = "string"
"""


def test_a_finder_s_own_package_and_lock_run_as_the_package_called_directly(
    tmp_path, real_cache, gin
):
    """The npm package fuzzy, which recall does not pin: the finder's repo names it in its
    package.json and lock, and its recall.toml says how to call it."""
    finder = tmp_path / "finder"
    files = {name: (FIXTURE / name).read_text() for name in ("package.json", "package-lock.json")}
    make_repo(finder, {**files, "recall.toml": FUZZY_ENGINE})
    saved = tmp_path / "saved.json"
    proc = run_cli(
        "--finder", str(finder), "--repo", "gin", "--type", "abbr3", "--cache", str(real_cache),
        "--corpus", str(ROOT / "corpus.json"), "--queries", str(ROOT / "queries.tsv"),
        "--save", str(saved), "--no-regress", cwd=finder,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    modules = node_modules(finder, real_cache)  # installed by the run: found, not redone
    assert (modules / "fuzzy" / "package.json").is_file() and modules.parent != FOLDER
    document = json.loads(saved.read_text())
    names = list(distinct_names(checkout_symbols(gin, real_cache)))
    script, queries = tmp_path / "direct.js", tmp_path / "queries.jsonl"
    script.write_text(FUZZY_DIRECT)
    queries.write_text("".join(json.dumps(row[1]) + "\n" for row in document["rows"]))
    direct = subprocess.run(
        ["node", str(script), str(modules), str(_names_file(tmp_path, names)), str(queries)],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.splitlines()  # fmt: skip
    found = 0
    for (_repo, query, _type, source), (rank, top, error, _off_corpus), line in zip(
        document["rows"], document["runs"][-1]["results"], direct, strict=True
    ):
        hits = json.loads(line)
        assert error is None
        assert rank == (hits.index(source) + 1 if source in hits else None), query
        assert [row[0] for row in top] == list(dict.fromkeys(hits))[:10], query
        found += rank is not None
    assert found > 0


def test_a_package_the_finder_s_lock_does_not_name_is_refused_before_anything_runs(tmp_path):
    finder = tmp_path / "finder"
    files = {name: (FIXTURE / name).read_text() for name in ("package.json", "package-lock.json")}
    make_repo(finder, {**files, "recall.toml": FUZZY_ENGINE.replace('"fuzzy"', '"left-pad"')})
    cache = tmp_path / "cache"
    proc = run_cli(
        "--finder", str(finder), "--repo", "gin", "--cache", str(cache),
        "--corpus", str(ROOT / "corpus.json"), "--queries", str(ROOT / "queries.tsv"), cwd=finder,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == (
        f"recall: {finder / 'recall.toml'}: package left-pad is in neither "
        f"{finder / 'package.json'} nor recall's own pins; install: npm install "
        "--package-lock-only --save-exact left-pad (in the finder's repo)\n"
    )
    assert not (cache / "corpora").exists() and not (cache / "node").exists()


# A package of our own, written into a node_modules folder of the test's: each export is a
# way a package can misbehave, called through --call as a package without a driver is.
HAND_PACKAGE = r"""
const starts = (query, names) => names.filter((n) => n.toLowerCase().startsWith(query.slice(0, 2)));
console.log("loading the package");
exports.shapes = (query, names) => {
  const hits = starts(query, names);
  return {
    string: hits[0], object: { [hits[0]]: 1 }, map: new Map([[hits[0], 1]]), number: 3,
    bytes: new Uint8Array(3), nameless: [{ other: hits[0] }], promise: Promise.resolve(hits[0]),
    set: new Set(hits), generator: (function* () { yield* hits; })(), array: hits,
  }[query.slice(2)];
};
exports.chatty = (query, names) => {
  console.log("searching for", query);
  console.info("and again");
  process.stdout.write("written straight to stdout\n");
  return starts(query, names);
};
"""


def _hand_package(tmp_path: Path) -> Path:
    """node_modules holding the package `hand` (HAND_PACKAGE)."""
    folder = tmp_path / "node_modules" / "hand"
    folder.mkdir(parents=True)
    (folder / "package.json").write_text('{"name": "hand", "version": "1.0.0", "main": "i.js"}')
    (folder / "i.js").write_text(HAND_PACKAGE)
    return tmp_path / "node_modules"


def _call(function: str) -> str:
    return json.dumps({"function": function, "arguments": ["query", "names"], "name_key": ""})


def test_what_a_package_prints_goes_to_stderr_and_the_answers_stay_in_step(tmp_path):
    """Was: console.log put a line among the answers, and the run stopped with "answers
    are out of step", saying nothing of the package."""
    modules = _hand_package(tmp_path)
    stdin = _request("te", id=0) + _request("fo", id=1)
    proc = _adapter(tmp_path, modules, "hand", "--call", _call("chatty"), stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert answers == [{"id": 0, "results": TE}, {"id": 1, "results": [{"name": "foo_bar"}]}]
    for said in ("loading the package", "searching for fo", "and again", "written straight"):
        assert said in proc.stderr
    one = _adapter(tmp_path, modules, "hand", "--call", _call("chatty"), "--query", "fo")
    assert one.returncode == 0 and json.loads(one.stdout) == [{"name": "foo_bar"}]


def test_a_return_value_that_is_not_a_list_of_hits_is_that_query_s_error(tmp_path):
    """Was: a string was iterated a letter at a time (Array.from), a plain object was no
    hits at all. A string, an object, a Map, a number, a typed array or a hit without a
    name is that query's error; an array, a Set or a generator is the hits."""
    modules = _hand_package(tmp_path)
    refused = ["string", "object", "map", "number", "bytes", "nameless", "promise"]
    taken = ["set", "generator", "array"]
    stdin = "".join(_request(f"te{shape}", id=i) for i, shape in enumerate(refused + taken))
    proc = _adapter(tmp_path, modules, "hand", "--call", _call("shapes"), stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    types = ["string", "Object", "Map", "number", "Uint8Array", None, "string"]
    for line, type_ in zip(lines, types, strict=False):
        expected = (
            'TypeError: a hit must be a name or an object with a string "name"'
            if type_ is None
            else f"TypeError: the function returned a value of type {type_}, not a list of "
            "hits (a single name is [name])"
        )
        assert line == {"id": line["id"], "error": expected}
    assert [line.get("results") for line in lines[len(refused) :]] == [TE] * len(taken)
