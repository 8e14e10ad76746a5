"""docs/RESULTS-paths.md: the file pickers among the peers, over the path set.

`recall results --queries paths` runs these presets instead of the name finders (a
language server lists no files: docs/engines.md), through the same code as the names'
page, and renders the same page with its wording made true of paths.
"""

from __future__ import annotations

from dataclasses import dataclass

from recall.errors import RecallError
from recall.inputs.queryset import PATH_TYPES
from recall.render.results_entry import Entry
from recall.render.results_page import render_results

# What the names' page says that a path page must say otherwise: (names' text, paths').
WORDING = (
    ("# Results: the reference finder and its peers",
     "# Results on paths: the reference finder's path mode and the file pickers"),
    ("(make results, make results-typed)", "(make results-paths)"),
    ("Rank is by name:", "Rank is by path (the source is a tracked file path):"),
    ("a read of the names list", "a read of the paths list"),
    ("finders that read the names list)", "finders that read the paths list)"),
    ("over the same `{names}` list (the corpus's distinct ctags names, sorted) or, for the "
     "reference finder, its own index of the corpus. fzf and fzy treat `*` as a literal "
     "character, so glob queries find nothing there; subsequence matchers (fzf, fzy, "
     "frizbee with no typos) never find a transposition.",
     "over the same `{names}` list, here the corpus's tracked paths (`git ls-files` at the "
     "pin, sorted). Subsequence matchers (fzf, fzy, frizbee with no typos) never find a "
     "transposition (`basetypo`); fzf's smart case makes a query with a capital "
     "case-sensitive (`basecase`)."),
)  # fmt: skip
# ... and what it says only where the reports hold it (a ceiling, each query's first)
OPTIONAL_WORDING = (
    ("several names can make one query (`tstcnt` from `test_count` and `TestContent`)",
     "several paths can make one query (`.go cont` from gin's `context.go` and `context_test.go`)"),
    ("rank the likeliest of them first (docs/queries.md). It is computed from the recipes "
     "over every name of each corpus",
     "rank the likeliest of them first (docs/queries.md). It is computed from the recipes "
     "over every tracked path of each corpus"),
    ("put the same name first", "put the same path first"),
)  # fmt: skip


@dataclass(frozen=True)
class PathPeer:
    """One column of the paths page, as recall.workflows.results_page.Peer has it
    (`bundled_fzf`: the fzf binary inside the iterfzf wheel, which results_page finds)."""

    label: str
    preset: str
    note: str
    bundled_fzf: bool = False
    package: str | None = None
    npm: str | None = None


# The presets of docs/engines.md's path mode: every finder here that ranks file paths,
# each in the mode its users pick files with (a language server lists no files).
PATH_PEERS = (
    PathPeer(
        "reference",
        "reference-paths",
        "this repo's finder in its path mode (`recall/finders/reference/paths.py`), batch mode",
    ),
    PathPeer("fzf (Debian)", "fzf-paths", "`--scheme=path`, one process per query"),
    PathPeer(
        "fzf (iterfzf)",
        "fzf-paths",
        "`--scheme=path`, the binary inside the iterfzf wheel",
        bundled_fzf=True,
    ),
    PathPeer("fzy", "fzy-paths", "one process per query (fzy has no path mode)"),
    PathPeer(
        "frizbee",
        "frizbee-paths",
        "`max_typos=0`, other options frizbee's defaults (no path mode)",
        package="frizbee",
    ),
    PathPeer(
        "Fuse.js",
        "fusejs-paths",
        "`new Fuse(records, {includeScore: true, keys: [base (weight 2), path]})`",
        npm="fuse.js",
    ),
    PathPeer(
        "fuzzysort",
        "fuzzysort-paths",
        "`fuzzysort.go(q, records, {keys: [base, path], limit})`, its defaults",
        npm="fuzzysort",
    ),
)


def is_paths_page(entries: list[Entry]) -> bool:
    """Do the finders' reports rank paths: is every sourced type of theirs a path type?"""
    by_type = entries[0].report.runs[0].by_type if entries else {}
    types = {kind for kind, counts in by_type.items() if counts.n}
    return bool(types) and types <= set(PATH_TYPES)


def render_paths_page(entries: list[Entry], host: dict[str, str]) -> str:
    """The names' page over the path set's reports, its wording made true of paths; a
    sentence of the names' page that is gone is an error, not a page left half-worded."""
    page = render_results(entries, host)
    for names, paths in WORDING:
        if names not in page:
            raise RecallError(
                f"the names' results page no longer says {names[:50]!r}: the paths page's "
                "wording (WORDING in recall/workflows/results_paths.py) must follow it"
            )
        page = page.replace(names, paths)
    for names, paths in OPTIONAL_WORDING:
        page = page.replace(names, paths)
    return page
