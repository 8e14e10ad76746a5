import json
import subprocess
import sys

from conftest import ROOT

from recall.finders.reference.paths import PathFinder, split_path

PATHS = [
    ".github/FUNDING.yml",
    "docs/gif.md",
    "src/components/Button.tsx",
    "src/components/ButtonGroup.tsx",
    "src/util/button_theme.ts",
    "src/lib.rs",
    "tests/lib_test.rs",
    "lib/router.rs",
    "opt/steam",
    "music/stems/readme.md",
    "music/stems",
]


def first(query: str, paths: list[str] = PATHS) -> str:
    finder = PathFinder(paths)
    return finder.paths[finder.order(query, 1)[0]]


def test_a_basename_that_holds_the_query_beats_folders_that_spell_it():
    # the first report: `gif` ranking .github/FUNDING.yml above the file named gif
    assert first("gif") == "docs/gif.md"


def test_a_prefix_of_the_basename_ranks_the_shortest_basename_first():
    assert first("butt") == "src/components/Button.tsx"
    assert first("stem") == "music/stems"  # the second: not /opt/steam


def test_a_fragment_with_a_slash_is_read_as_folder_then_basename():
    assert first("comp/butt") == "src/components/Button.tsx"
    assert first("util/butt") == "src/util/button_theme.ts"


def test_an_extension_first_filters_by_extension():
    assert first(".rs lib") == "src/lib.rs"
    assert first(".rs rout") == "lib/router.rs"


def test_folder_initials_then_the_basename_find_the_path():
    assert first("scbut") == "src/components/Button.tsx"
    assert first("subut") == "src/util/button_theme.ts"


def test_word_starts_a_typo_and_another_case_find_the_basename():
    assert first("bg") == "src/components/ButtonGroup.tsx"
    assert first("butotngroup") == "src/components/ButtonGroup.tsx"
    assert first("BUTTONGROUP") == "src/components/ButtonGroup.tsx"


def test_every_term_must_match_and_a_path_is_listed_once():
    finder = PathFinder(PATHS)
    assert finder.order(".rs zzz") == []
    listed = finder.order("s")
    assert len(listed) == len(set(listed))


def test_split_path_has_no_extension_for_a_dotfile():
    assert split_path(".github/.gitignore") == ([".github"], ".gitignore", ".gitignore", "")


def test_the_module_answers_the_batch_protocol_from_a_paths_file(tmp_path):
    names = tmp_path / "paths.txt"
    names.write_text("".join(f"{p}\n" for p in PATHS))
    requests = "".join(json.dumps({"id": i, "query": q, "limit": 2}) + "\n"
                       for i, q in enumerate(["comp/butt", "gif"]))  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "recall.finders.reference.paths", "--names", str(names)],
        input=requests, capture_output=True, text=True, cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True,
    )  # fmt: skip
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [a["id"] for a in answers] == [0, 1]
    assert answers[0]["results"][0]["name"] == "src/components/Button.tsx"
    assert answers[1]["results"][0] == {"name": "docs/gif.md", "file": "docs/gif.md"}
