"""`recall merge`: the runs of `recall run --shard K/N`, saved on many machines, as one
report, the one the unsharded run makes.

A shard holds every row of some repos (`run.shard_rows`), so a merge takes each repo's
rows from the one file that has them and puts them back in the query set's order. It
refuses anything that would make the merged report differ from an unsharded run: files
that ran other code or data (their meta differ), other runs or labels, a repo in two
files or in none, or rows of a repo that are not the selection's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from recall.analysis.accept import in_selection, read_accepted
from recall.analysis.model import QueryResult, Report, RunResult, UnknownSource
from recall.errors import RecallError
from recall.files import file_sha256
from recall.inputs.corpus import cache_root, load_pins, mirror_root
from recall.inputs.queryset import QueryRow, query_set_path
from recall.inputs.sides import SPLITS, Split
from recall.inputs.suite import locate
from recall.running.measure import Corpora, unknown_sources
from recall.running.results_cache import (
    HISTORY_KIND,
    SAVED_KIND,
    WORKING_TREE,
    Saved,
    code_of,
    load_saved,
    read_saved,
)
from recall.workflows.options import DEFAULT_REGRESS, MergeOptions, listed
from recall.workflows.run import (
    Measured,
    Plan,
    analyse_plan,
    check_judged,
    check_steps,
    data_flags,
    plan_ceiling,
    regress_cases,
    selected_rows,
)

NOUNS = {SAVED_KIND: "run", HISTORY_KIND: "history"}


def shards_kind(files: tuple[str, ...]) -> str:
    """What the files hold, the same in each: a run's shards (SAVED_KIND) or a history's
    (HISTORY_KIND); a mix is refused, naming the odd file."""
    kinds = [read_saved(Path(f), "merge", tuple(NOUNS))["kind"] for f in files]
    for path, kind in zip(files, kinds, strict=True):
        if kind != kinds[0]:
            raise RecallError(
                f"merge {path}: the file of a {NOUNS[kind]} shard, and {files[0]} of a "
                f"{NOUNS[kinds[0]]} shard: merge the shards of one run or of one history"
            )
    return kinds[0]


def shards_selection(
    files: tuple[str, ...],
) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None, Split | None]:
    """The --repo, --type and --split a run's shards ran with, as their files say: the same
    in every file, or the merge refuses (a file from before they said it: no selection; one
    from before --split: every row)."""
    found = [read_saved(Path(f), "merge", (SAVED_KIND,)).get("selection") for f in files]
    for path, selection in zip(files, found, strict=True):
        if selection != found[0]:
            raise RecallError(
                f"merge {path}: ran with another --repo/--type/--split selection than {files[0]}"
            )
    selection = found[0]
    if not isinstance(selection, dict):
        return None, None, None
    repos, types, split = selection.get("repo"), selection.get("type"), selection.get("split")
    if split is not None and split not in SPLITS:
        raise RecallError(f"merge {files[0]}: selection.split must be one of {', '.join(SPLITS)}")
    for flag, value in (("repo", repos), ("type", types)):
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise RecallError(f"merge {files[0]}: selection.{flag} must be a list of strings")
    return (
        None if repos is None else tuple(repos),
        None if types is None else tuple(types),
        split,
    )


def merge_saved(paths: list[Path], asked: list[QueryRow], corpus: Path, queries: Path) -> Saved:
    """The shards' files as one saved run over asked (the rows, then the regress cases),
    each file having run the corpus and queries files as they are now."""
    shards = [load_saved(path, "merge") for path in paths]
    first = shards[0]
    ran = ((first.meta.corpus_sha256, corpus), (first.meta.queries_sha256, queries))
    for digest, source in ran:  # the other files' meta is the first's, below
        if digest != file_sha256(source):
            raise RecallError(
                f"merge {paths[0]}: ran other data than {source} has now (give the "
                "--corpus and --queries the shards ran with)"
            )
    labels = [run.label for run, _key in first.runs]
    owner: dict[str, int] = {}
    for i, (path, shard) in enumerate(zip(paths, shards, strict=True)):
        check_same_meta(path, shard.meta.to_json(), paths[0], first.meta.to_json())
        same = (shard.baseline, shard.explain) == (first.baseline, first.explain)
        if [run.label for run, _key in shard.runs] != labels or not same:
            raise RecallError(f"merge {path}: holds other runs than {paths[0]} ({labels})")
        if len(paths) > 1:
            check_same_code(path, shard, paths[0], first)
        for repo in dict.fromkeys(row.repo for row in shard.rows):
            if repo in owner:
                raise RecallError(f"merge {path}: repo {repo} is in {paths[owner[repo]]} too")
            owner[repo] = i
    wanted = list(dict.fromkeys(row.repo for row in asked))
    for repo in wanted:
        if repo not in owner:
            raise RecallError(f"merge: no file has repo {repo}: give every shard's file")
    for repo, i in owner.items():
        if repo not in wanted:
            raise RecallError(f"merge {paths[i]}: repo {repo} is not in the selection")
    results: list[list[QueryResult | None]] = [[None] * len(asked) for _ in labels]
    for repo in wanted:
        shard, path = shards[owner[repo]], paths[owner[repo]]
        have = [j for j, row in enumerate(shard.rows) if row.repo == repo]
        mine = [j for j, row in enumerate(asked) if row.repo == repo]
        if [shard.rows[j] for j in have] != [asked[j] for j in mine]:
            raise RecallError(
                f"merge {path}: its rows of {repo} are not the selection's "
                "(another query set, --repo/--type/--split selection or regress file)"
            )
        for r, (run, _key) in enumerate(shard.runs):
            for j, k in zip(mine, have, strict=True):
                results[r][j] = run.results[k]
    runs = []
    for r, (run, key) in enumerate(first.runs):
        merged = tuple(result for result in results[r] if result is not None)
        index_s = sum(shard.runs[r][0].index_s for shard in shards)
        query_s = sum(shard.runs[r][0].query_s for shard in shards)
        restarts = sum(shard.runs[r][0].restarts for shard in shards)
        merged_run = RunResult(run.label, run.bin, index_s, query_s, merged, restarts=restarts)
        runs.append((merged_run, key))
    return Saved(first.meta, first.baseline, asked, runs, first.explain)


def check_same_code(path: Path, shard: Saved, first_path: Path, first: Saved) -> None:
    """Each run of a shard ran the code its run in the first file ran: the same commit or
    program, and a working tree of the same content (its digest in the file), or the merge
    refuses the shard, naming both files: a tree edited between two shards' runs merged
    to numbers that no code gives."""
    for (run, key), (_first_run, first_key) in zip(shard.runs, first.runs, strict=True):
        (binary, tree), (first_binary, first_tree) = code_of(key), code_of(first_key)
        if binary != first_binary:
            raise RecallError(
                f"merge {path}: its run {run.label!r} ran other code than {first_path}'s "
                f"({binary} against {first_binary})"
            )
        if tree != first_tree:
            raise RecallError(
                f"merge {path}: its run {run.label!r} ran a tree of other content than "
                f"{first_path}'s (edited between the shards' runs, or holding a file one "
                "of them saved?)"
            )
        if binary == WORKING_TREE.strip() and tree is None:
            raise RecallError(
                f"merge {path}: its run {run.label!r} ran a working tree saved without the "
                f"digest of its content, so it cannot be shown to be {first_path}'s code: "
                "run the shards again with this recall"
            )


def check_same_meta(path: Path, meta: dict, first_path: Path, first_meta: dict) -> None:
    """A shard's file ran the code and data of the first one, or the merge refuses it,
    naming what differs: a merge of other code's numbers would be a wrong report."""
    if meta != first_meta:
        changed = sorted(k for k in meta.keys() | first_meta.keys()
                         if meta.get(k) != first_meta.get(k))  # fmt: skip
        raise RecallError(
            f"merge {path}: ran other code or data than {first_path} ({', '.join(changed)} differ)"
        )


def merge(options: MergeOptions) -> Report:
    """The report of a run from the files its shards saved, as the unsharded run makes
    it (the seconds are the shards' sums): the Python API's `recall.merge`. With no
    --repo, --type or --split selection given, the one the files hold."""
    if shards_kind(options.files) != SAVED_KIND:
        raise RecallError(
            f"merge {options.files[0]}: the file of a history's shard: recall.merge_history "
            "merges those"
        )
    if options.data.repos is None and options.data.types is None and options.split is None:
        repos, types, split = shards_selection(options.files)
        selection = dataclasses.replace(options.data, repos=repos, types=types)
        options = dataclasses.replace(options, data=selection, split=split)
    found = locate("merge", corpus=options.data.corpus, queries=options.data.queries)
    corpus_path, queries_path = Path(found.corpus), query_set_path(found.queries or "")
    pins = load_pins(corpus_path)
    selected = selected_rows(
        queries_path, pins, listed(options.data.repos), listed(options.data.types),
        options.split,
    )  # fmt: skip
    all_rows, rows, steps = selected.all_rows, selected.rows, selected.steps
    if selected.judgments:
        check_judged(queries_path, accept=options.accept, regress=options.regress,
                     misses=options.misses)  # fmt: skip
    if not rows:
        raise RecallError(
            f"merge: {queries_path} has no rows of the shards' selection "
            "(give the --queries the shards ran with)"
        )
    cases, skipped = regress_cases(
        options.no_regress, options.regress, found.default_regress, pins, rows
    )
    files = [Path(f) for f in options.files]
    merged = merge_saved(files, rows + [case.row for case in cases], corpus_path, queries_path)
    if (options.needs_baseline or options.accept) and not merged.baseline:
        raise RecallError("--fail-on-loss and --accept need shards run with a baseline")
    accepted = (
        in_selection(read_accepted(Path(options.accept)), all_rows, rows)
        if options.accept
        else None
    )
    explain = merged.explain or [None] * len(merged.runs)
    measured = [
        Measured(run, key, len(rows), flags)
        for (run, key), flags in zip(merged.runs, explain, strict=True)
    ]
    cache, mirror = cache_root(options.data.cache), mirror_root(options.data.mirror)
    corpora = Corpora(pins, cache, mirror)
    unknown: tuple[UnknownSource, ...] = ()
    if not (options.strict_queries or found.committed):
        unknown = unknown_sources(rows, corpora.open(rows), all_rows)
    check_steps(steps, rows, corpora, queries_path)
    data = data_flags(options.data, found, found.config)
    plan = Plan(
        rows, cases, skipped, accepted, corpora, unknown, data,
        options.regress or DEFAULT_REGRESS, options.split, options.misses, steps,
        selected.judgments,
    )  # fmt: skip
    return analyse_plan(
        plan, measured, has_base=merged.baseline, meta=merged.meta, ceiling=plan_ceiling(plan),
        bench=None,
    )  # fmt: skip
