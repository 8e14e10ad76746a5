"""The command line: one small _add_<cmd> and a thin _cmd_<cmd> per subcommand."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import orjson

from recall import __version__, doctor, explain, history, init, results
from recall import bisect as bisection
from recall import cache as cache_cmd
from recall import pin as pinning
from recall.build import BUILD_TIMEOUT_S, check_build_timeout, finder_root, make_binaries
from recall.corpus import (
    Pin,
    cache_root,
    fetch,
    load_pins,
    mirror_root,
    select_pins,
)
from recall.derive import (
    DEFAULT_SEED,
    RECIPE_SETS,
    NameSource,
    derive_all,
    derive_rows,
    load_settings,
    name_source,
    read_recipe_set,
    recipes,
    typed_recipes,
)
from recall.engine import resolve_engine
from recall.errors import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_LOSS,
    EXIT_OK,
    EXIT_TERMINATED,
    RecallError,
    Terminated,
)
from recall.measure import open_corpus
from recall.queryset import QUERY_SETS, format_queries, query_set_path, read_queries
from recall.render import history as history_page
from recall.run import DEFAULT_REGRESS, check_timeout, cmd_merge, cmd_run
from recall.symbols import checkout_symbols, ctags_version, write_atomic
from recall.terminal import shown

COMMANDS = (
    "run", "fetch", "derive", "doctor", "init", "explain", "pin", "cache", "history", "bisect",
    "results", "merge",
)  # fmt: skip


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache", metavar="DIR",
        help="cache folder (default: $RECALL_CACHE, else the user cache dir for recall)",
    )  # fmt: skip
    parser.add_argument(
        "--mirror", metavar="DIR",
        help="folder of bare mirrors laid out DIR/<host>/<path>, tried before each url "
        "(default: $RECALL_MIRROR)",
    )  # fmt: skip
    parser.add_argument(
        "--corpus", metavar="FILE", default="corpus.json",
        help="the pinned corpora (default: %(default)s)",
    )  # fmt: skip


def _add_build_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--build-timeout", type=float, default=BUILD_TIMEOUT_S, metavar="SECONDS",
        help="seconds a build may take before it is killed (default: %(default)g)",
    )  # fmt: skip


def _add_queries(parser: argparse.ArgumentParser, what: str = "the query set") -> None:
    parser.add_argument(
        "--queries", metavar="SET", default="queries.tsv",
        help=f"{what}: a file, or a committed set's name ({', '.join(QUERY_SETS)}) "
        "(default: %(default)s)",
    )  # fmt: skip


def _add_finder(parser: argparse.ArgumentParser, purpose: str = "") -> None:
    parser.add_argument(
        "--finder", metavar="DIR", default=".", help=f"the finder's repo{purpose} (default: .)"
    )


def _add_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--settings", metavar="FILE", default="derive.json",
        help="per-repo n and seed (default: %(default)s)",
    )  # fmt: skip


def _add_fetch(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fetch", help="fetch the pinned corpora into the cache")
    _add_common(parser)
    parser.add_argument("repos", nargs="*", metavar="REPO", help="pins to fetch (default: all)")
    parser.set_defaults(handler=_cmd_fetch)


def _cmd_fetch(args: argparse.Namespace) -> int:
    corpus = Path(args.corpus)
    pins = select_pins(load_pins(corpus), args.repos, corpus)
    cache, mirror = cache_root(args.cache), mirror_root(args.mirror)
    for pin in pins:
        checkout = fetch(pin, cache, mirror)
        print(f"{pin.name}\t{pin.sha[:12]}\t{checkout.path}")
    return EXIT_OK


def _add_derive(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("derive", help="derive queries from the corpora's names")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    recipes_p = verbs.add_parser("recipes", help="print source, type, query for names")
    recipes_p.add_argument("names", nargs="+", metavar="NAME")
    recipes_p.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="recipe seed (default: %(default)s)"
    )
    recipes_p.add_argument(
        "--set", choices=RECIPE_SETS, default="default", dest="recipe_set",
        help="the query set's recipes (default: %(default)s)",
    )  # fmt: skip
    recipes_p.add_argument(
        "--owner", metavar="OWNER", help="typed set: the name's scope owner, for `qualified`"
    )
    recipes_p.add_argument(
        "--language", metavar="L", default="", help="typed set: the corpus language"
    )
    recipes_p.set_defaults(handler=_cmd_derive_recipes)

    sample_p = verbs.add_parser("sample", help="print queries.tsv rows for one pinned repo")
    _add_common(sample_p)
    sample_p.add_argument("repo", metavar="REPO")
    sample_p.add_argument("--n", type=int, required=True, help="how many names to sample")
    sample_p.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="sampling seed (default: %(default)s)"
    )
    sample_p.set_defaults(handler=_cmd_derive_sample)

    all_p = verbs.add_parser(
        "all", help="regenerate the query sets from their derive settings (hand rows kept)"
    )
    _add_common(all_p)
    all_p.add_argument(
        "--settings", metavar="FILE",
        help="one query set's settings (default: every named set whose settings exist: "
        + ", ".join(f"{q} from {d}" for q, d in QUERY_SETS.values()) + ")",
    )  # fmt: skip
    all_p.add_argument("--queries", metavar="FILE", help="that set's file (default: queries.tsv)")
    all_p.add_argument(
        "--check", action="store_true", help="exit 1 if a result differs from its file"
    )
    all_p.set_defaults(handler=_cmd_derive_all)


def _cmd_derive_recipes(args: argparse.Namespace) -> int:
    for name in args.names:
        if args.recipe_set == "typed":
            made = typed_recipes(name, args.seed, args.owner, args.language)
        else:
            made = recipes(name, args.seed)
        for kind, query in made:
            print(f"{name}\t{kind}\t{query}")
    return EXIT_OK


def _source(pin: Pin, args: argparse.Namespace) -> NameSource:
    cache = cache_root(args.cache)
    checkout = fetch(pin, cache, mirror_root(args.mirror))
    return name_source(checkout_symbols(checkout, cache), pin.language)


def _names(pin: Pin, args: argparse.Namespace) -> list[str]:
    return _source(pin, args).names


def _cmd_derive_sample(args: argparse.Namespace) -> int:
    corpus = Path(args.corpus)
    (pin,) = select_pins(load_pins(corpus), [args.repo], corpus)
    if args.n < 0:
        raise RecallError("--n must be zero or more")
    rows = derive_rows(pin.name, _names(pin, args), args.n, args.seed)
    sys.stdout.buffer.write(format_queries(rows).split(b"\n", 1)[1])
    return EXIT_OK


def _cmd_derive_all(args: argparse.Namespace) -> int:
    if args.settings or args.queries:
        sets = [(Path(args.queries or "queries.tsv"), Path(args.settings or "derive.json"))]
    else:
        named = [(Path(q), Path(d)) for q, d in QUERY_SETS.values()]
        sets = [(queries, settings) for queries, settings in named if settings.exists()]
    pins = load_pins(Path(args.corpus))
    sources: dict[str, NameSource] = {}
    status = EXIT_OK
    for queries, settings_path in sets:
        settings = load_settings(settings_path, pins)
        recipe_set = read_recipe_set(settings_path)
        existing = read_queries(queries, set(pins)) if queries.exists() else []
        for repo in settings:
            if repo not in sources:
                sources[repo] = _source(pins[repo], args)
        data = format_queries(derive_all(sources, settings, existing, recipe_set))
        current = queries.read_bytes() if queries.exists() else b""
        count = data.count(b"\n") - 1
        if args.check:
            if data != current:
                print(f"recall: {queries} differs from what derive all makes now", file=sys.stderr)
                status = EXIT_LOSS
            else:
                print(f"{queries}: up to date ({count} rows)")
            continue
        if data != current:
            write_atomic(queries, data)
        print(f"{queries}: {count} rows")
    return status


def _add_doctor(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("doctor", help="check what the harness will use and whether it works")
    _add_common(parser)
    _add_queries(parser)
    _add_finder(parser, ", where presets look for built binaries")
    parser.set_defaults(handler=_cmd_doctor)


def _cmd_doctor(args: argparse.Namespace) -> int:
    checks = doctor.diagnose(
        cache_root(args.cache), mirror_root(args.mirror), Path(args.corpus),
        query_set_path(args.queries), finder_root(Path(args.finder)),
    )  # fmt: skip
    sys.stdout.write(doctor.render(checks))
    return EXIT_OK if doctor.healthy(checks) else EXIT_FAILURE


def _add_report_flags(p: argparse.ArgumentParser) -> None:
    """How a report is printed and judged: run and merge print the same report."""
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the report as one JSON object")
    out.add_argument("--markdown", action="store_true", help="print the report as Markdown")
    p.add_argument(
        "--fail-on-loss",
        action="store_true",
        help="exit 1 if a source lost #1 or the top 10 (unless accepted), a regress case that "
        "held broke, or a query errored (needs a baseline)",
    )
    p.add_argument(
        "--accept", metavar="FILE",
        help="repo<TAB>query<TAB>source rows of reviewed losses: listed apart, not failing",
    )  # fmt: skip
    p.add_argument(
        "--regress", metavar="FILE",
        help=f"regress cases, repo<TAB>query<TAB>expect (default: {DEFAULT_REGRESS} when "
        "present; its cases for repos the corpus does not pin are skipped)",
    )  # fmt: skip
    p.add_argument("--no-regress", action="store_true", help="skip the regress cases")
    p.add_argument("--misses", action="store_true", help="list every source not ranked #1")
    p.add_argument(
        "--html", metavar="FILE",
        help="also write the report as one self-contained HTML page with charts",
    )  # fmt: skip


def _add_merge(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge",
        help="one report from the files of recall run --shard K/N --save FILE",
        description="Merge the saved runs of every shard of a run into the report the "
        "unsharded run prints (the seconds are the shards' sums). Give the selection "
        "(--queries, --repo, --type, --regress) the shards ran with.",
    )
    _add_common(p)
    p.add_argument("files", nargs="+", metavar="FILE", help="each shard's --save file")
    _add_report_flags(p)
    _add_queries(p)
    p.add_argument("--repo", action="append", metavar="R", help="only this repo (repeatable)")
    p.add_argument("--type", action="append", metavar="T", help="only this type (repeatable)")
    p.set_defaults(handler=cmd_merge)


def _add_results(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "results",
        help="every peer finder and the reference over a query set: docs/RESULTS.md",
        description="Run every peer finder and the reference finder over the query set "
        "(recall run --json each) and write the results page.",
    )
    _add_common(parser)
    results.add_arguments(parser)
    parser.set_defaults(handler=results.write_page)


def _add_init(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("init", help="write a starter recall.toml in the finder's repo")
    parser.add_argument(
        "--preset", metavar="NAME",
        help="start from this preset (default: a blank engine with every key explained)",
    )  # fmt: skip
    _add_finder(parser, ", whose top folder gets recall.toml")
    parser.set_defaults(handler=_cmd_init)


def _cmd_init(args: argparse.Namespace) -> int:
    path = finder_root(Path(args.finder)) / init.FILENAME
    init.write_new(path, init.starter(args.preset))
    print(init.next_step(path, args.preset, Path.cwd()))
    return EXIT_OK


class _Candidate(argparse.Action):
    """--engine and --bin in the order given: the report's runs keep that order."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
        values: object, option_string: str | None = None,
    ) -> None:  # fmt: skip
        kind = "bin" if option_string == "--bin" else "engine"
        namespace.candidates = [*namespace.candidates, (kind, values)]


def _add_explain(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="one query through each binary, top 10 side by side")
    _add_common(p)
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--repo", required=True, metavar="R", help="the pin the query runs on")
    p.add_argument("--engine", metavar="E", help="preset name or engine TOML file")
    _add_finder(p)
    p.add_argument("--bin", metavar="PATH", help="candidate binary built by hand")
    base = p.add_mutually_exclusive_group()
    base.add_argument("--base", metavar="REF", help="baseline: build REF of the finder repo")
    base.add_argument("--base-bin", metavar="PATH", help="baseline: a binary built by hand")
    p.add_argument(
        "--source", metavar="NAME",
        help="the intended name (default: the query's source in the query set)",
    )  # fmt: skip
    _add_queries(p, "the query set the source is looked up in")
    p.add_argument("--json", action="store_true", help="print the same as one JSON object")
    p.add_argument(
        "--timeout", type=float, default=explain.EXPLAIN_TIMEOUT_S,
        help="seconds for the query (default: %(default)s)",
    )  # fmt: skip
    _add_build_timeout(p)
    p.set_defaults(handler=_cmd_explain)


def _cmd_explain(args: argparse.Namespace) -> int:
    check_timeout(args.timeout)
    check_build_timeout(args.build_timeout)
    corpus, queries = Path(args.corpus), query_set_path(args.queries)
    (pin,) = select_pins(load_pins(corpus), [args.repo], corpus)
    rows = read_queries(queries, None) if queries.exists() else []
    row = explain.pick_row(rows, pin.name, args.query, args.source)
    cache = cache_root(args.cache)
    root = finder_root(Path(args.finder))
    engine = resolve_engine(args.engine, root)
    binaries = make_binaries(
        root, engine, cache, bin_path=args.bin, base=args.base, base_bin=args.base_bin,
        build_timeout=args.build_timeout,
    )  # fmt: skip
    target = open_corpus(pin, cache, mirror_root(args.mirror))
    sides = [explain.explain_one(b, target, row, args.timeout) for b in binaries]
    data = explain.as_json(pin, row, sides)
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        sys.stdout.write(explain.render(data, sides))
    return EXIT_OK


def _add_pin(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pin", help="add or move a pin and regenerate that repo's queries")
    _add_common(p)
    p.add_argument("repo", metavar="REPO")
    p.add_argument("url", metavar="URL")
    p.add_argument("sha", metavar="SHA", help="the full 40-hex commit to pin")
    p.add_argument("--language", required=True, metavar="L", help="the corpus language")
    p.add_argument(
        "--n", type=int,
        help=f"names to sample for the repo (default: its derive.json n, else {pinning.DEFAULT_N})",
    )  # fmt: skip
    p.add_argument(
        "--force", action="store_true",
        help="pin even when no name of the repo can be sampled (a language with no names)",
    )  # fmt: skip
    _add_settings(p)
    _add_queries(p, "the query set to update; hand rows are kept")
    p.set_defaults(handler=_cmd_pin)


def _cmd_pin(args: argparse.Namespace) -> int:
    corpus, queries = Path(args.corpus), Path(args.queries)
    change = pinning.pin_repo(
        Pin(args.repo, args.url, args.sha, args.language), args.n,
        corpus=corpus, settings_path=Path(args.settings), queries=queries,
        cache=cache_root(args.cache), mirror=mirror_root(args.mirror), force=args.force,
    )  # fmt: skip
    sys.stdout.write(pinning.render(change, corpus, queries))
    return EXIT_OK


def _add_cache(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("cache", help="list the cache's entries or prune what is not needed")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    list_p = verbs.add_parser("list", help="every checkout, build, symbols and results entry")
    _add_common(list_p)
    list_p.set_defaults(handler=_cmd_cache_list)
    prune_p = verbs.add_parser(
        "prune", help="remove stale entries (never one a running harness holds)"
    )
    _add_common(prune_p)
    prune_p.add_argument(
        "--older-than", type=float, metavar="DAYS", help="also remove entries unused this long"
    )
    prune_p.add_argument(
        "--keep-builds", type=int, metavar="N", help="keep only the N most recently used builds"
    )
    prune_p.add_argument("--dry-run", action="store_true", help="say what would go; remove nothing")
    prune_p.set_defaults(handler=_cmd_cache_prune)


def _cmd_cache_list(args: argparse.Namespace) -> int:
    sys.stdout.write(cache_cmd.render_list(cache_cmd.entries(cache_root(args.cache))))
    return EXIT_OK


def _cmd_cache_prune(args: argparse.Namespace) -> int:
    # written so that NaN, which compares false with every bound, is refused too
    if (args.older_than is not None and not 0 <= args.older_than < float("inf")) or (
        args.keep_builds is not None and args.keep_builds < 0
    ):
        raise RecallError("--older-than and --keep-builds must be zero or more (and finite)")
    corpus = Path(args.corpus)
    pins = load_pins(corpus) if corpus.exists() else None
    try:
        ctags = ctags_version()
    except RecallError:
        ctags = None  # without ctags no symbols key can be told current: keep them all
    cache = cache_root(args.cache)
    chosen = cache_cmd.stale(
        cache_cmd.entries(cache), pins, ctags, older_than_days=args.older_than,
        keep_builds=args.keep_builds, now=time.time(),
    )  # fmt: skip
    sys.stdout.write(cache_cmd.prune(cache, chosen, dry_run=args.dry_run))
    return EXIT_OK


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="measure the finder (the default command)")
    _add_common(p)
    p.add_argument(
        "--engine",
        action=_Candidate,
        metavar="[LABEL=]E",
        help="preset name or engine TOML file; unlabeled: the engine of the baseline and of "
        "--bin (default: recall.toml in the finder repo, else the reference finder); "
        "LABEL=E adds a candidate built from the working tree with engine E (repeatable)",
    )
    p.add_argument(
        "--bin",
        action=_Candidate,
        metavar="[LABEL=]PATH",
        help="a candidate binary built by hand, run with the unlabeled engine (repeatable; "
        "default candidate: the engine built from the working tree)",
    )
    _add_finder(p)
    base = p.add_mutually_exclusive_group()
    base.add_argument("--base", metavar="REF", help="baseline: build REF of the finder repo")
    base.add_argument("--base-bin", metavar="PATH", help="baseline: a binary built by hand")
    base.add_argument(
        "--against", metavar="FILE",
        help="baseline: the last run saved in FILE by --save, without running anything",
    )  # fmt: skip
    p.add_argument(
        "--save", metavar="FILE",
        help="also write every run's per-query results, with their cache keys, to FILE",
    )  # fmt: skip
    p.add_argument(
        "--no-cache", action="store_true",
        help="run every binary even when the results cache holds its results",
    )  # fmt: skip
    _add_report_flags(p)
    p.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="parallel queries: per-query processes, or batch processes over corpora and "
        "shards of their rows (default: %(default)s, the cores)",
    )
    _add_queries(p)
    p.add_argument("--repo", action="append", metavar="R", help="only this repo (repeatable)")
    p.add_argument("--type", action="append", metavar="T", help="only this type (repeatable)")
    p.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds per query before it counts as an error (default: %(default)s)",
    )
    _add_build_timeout(p)
    p.add_argument(
        "--bench", type=int, metavar="REPS",
        help="also time the hand queries through every binary: a warm-up, then REPS reps",
    )  # fmt: skip
    p.add_argument(
        "--allow-empty",
        action="store_true",
        help="accept a binary that returns nothing for 95%% of queries",
    )
    p.add_argument(
        "--shard", type=shard_spec, metavar="K/N",
        help="run shard K of N only (every N-th repo of the selection) and --save its runs "
        "for recall merge; prints no report",
    )  # fmt: skip
    p.set_defaults(handler=cmd_run, candidates=[])


def _add_commits_run(p: argparse.ArgumentParser) -> None:
    """The run flags that history and bisect measure each commit with."""
    _add_common(p)
    _add_finder(p)
    p.add_argument(
        "--engine",
        metavar="E",
        help="preset name or engine TOML file "
        "(default: recall.toml in the finder repo, else the reference finder)",
    )
    _add_queries(p)
    p.add_argument("--repo", action="append", metavar="R", help="only this repo (repeatable)")
    p.add_argument("--type", action="append", metavar="T", help="only this type (repeatable)")
    p.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds per query before it counts as an error (default: %(default)s)",
    )
    _add_build_timeout(p)
    p.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="parallel queries: per-query processes, or batch processes over corpora and "
        "shards of their rows (default: %(default)s, the cores)",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="run every commit even when the results cache holds its results",
    )
    p.add_argument(
        "--allow-empty",
        action="store_true",
        help="accept a commit that returns nothing for 95%% of queries",
    )


def _add_history(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="measure the finder at many commits of its repo")
    p.add_argument(
        "revs", nargs="*", metavar="RANGE|REF",
        help="a range as git rev-list takes it (A..B), or refs (default with --tags: tags)",
    )  # fmt: skip
    p.add_argument(
        "--tags",
        nargs="?",
        const="*",
        metavar="PATTERN",
        help="every tag matching PATTERN (a glob; default: all), oldest first",
    )
    p.add_argument("--first-parent", action="store_true", help="a range's first parents only")
    p.add_argument(
        "--every",
        type=int,
        default=1,
        metavar="N",
        help="every Nth commit, counted back from the newest (default: 1)",
    )
    p.add_argument("--by", choices=("type", "repo"), help="also a table and chart per type or repo")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the history as one JSON object")
    out.add_argument("--markdown", action="store_true", help="print the history as Markdown")
    p.add_argument("--html", metavar="FILE", help="also write a page with SVG charts to FILE")
    _add_commits_run(p)
    p.set_defaults(handler=_cmd_history)


def _cmd_history(args: argparse.Namespace) -> int:
    check_build_timeout(args.build_timeout)
    plan = history.make_plan(args)
    if args.tags is not None and args.revs:
        raise RecallError("history: give --tags or RANGE|REF..., not both")
    if args.tags is not None:
        commits = history.tag_commits(plan.root, args.tags)
    elif not args.revs:
        raise RecallError("history: give a RANGE (A..B), REFs, or --tags [PATTERN]")
    elif history.is_range(args.revs):
        commits = history.range_commits(plan.root, args.revs, first_parent=args.first_parent)
    else:
        commits = history.listed_commits(plan.root, args.revs)
    points = history.history(plan, history.thin(commits, args.every))
    data = history.as_json(plan, points)
    if args.html:
        page = history_page.render_html(data, by=args.by).encode("utf-8")
        try:
            write_atomic(Path(args.html), page)
        except OSError as exc:
            raise RecallError(f"--html {args.html}: cannot write: {exc.strerror or exc}") from None
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        sys.stdout.write(history_page.render(data, by=args.by, markdown=args.markdown))
    return EXIT_OK if any(point.ok for point in points) else EXIT_FAILURE


def _add_bisect(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bisect", help="the first commit where a query's rank or #1 rate changed")
    p.add_argument("--good", required=True, metavar="REF", help="a commit before the change")
    p.add_argument("--bad", required=True, metavar="REF", help="a commit after it")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--query",
        metavar="REPO:QUERY",
        help="bad = the query's rank differs from its rank at --good",
    )
    what.add_argument(
        "--metric",
        choices=("first_pct",),
        help="bad = the #1 rate fell by --drop points or more from --good's",
    )
    p.add_argument("--drop", type=float, metavar="PTS", help="with --metric: points of #1 %%")
    p.add_argument("--source", metavar="NAME", help="with --query: the intended name, when the "
                   "query set has the query for several")  # fmt: skip
    _add_commits_run(p)
    p.set_defaults(handler=_cmd_bisect)


def _cmd_bisect(args: argparse.Namespace) -> int:
    check_build_timeout(args.build_timeout)
    if args.metric and (args.drop is None or not args.drop > 0):
        raise RecallError("--metric first_pct needs --drop PTS, above 0")
    if args.drop is not None and not args.metric:
        raise RecallError("--drop goes with --metric first_pct")
    if args.source is not None and not args.query:
        raise RecallError("--source goes with --query")
    if args.query and not args.repo:
        args.repo = [args.query.partition(":")[0]]
    plan = history.make_plan(args)
    row = bisection.query_row(plan, args.query, args.source) if args.query else None
    if row is not None:
        what = f"rank of {row.source} ({row.repo}:{row.query})"
        rank = bisection.rank_of(plan, row)
        verdict = bisection.bisect(plan, args.good, args.bad, rank, lambda g, v: v != g)
    else:
        what, drop = "#1 %", args.drop

        def fell(good: float | int | None, value: float | int | None) -> bool:
            return good is not None and value is not None and good - value >= drop - 1e-9

        verdict = bisection.bisect(plan, args.good, args.bad, bisection.first_pct(plan), fell)
    sys.stdout.write(bisection.render(plan, verdict, what, row))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="recall",
        description="Measure how often a fuzzy symbol finder ranks the intended name first.",
        epilog="With no command, recall runs `recall run`: see `recall run --help` for its flags.",
    )
    parser.add_argument("--version", action="version", version=f"recall {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_fetch(sub)
    _add_derive(sub)
    _add_run(sub)
    _add_doctor(sub)
    _add_init(sub)
    _add_explain(sub)
    _add_pin(sub)
    _add_cache(sub)
    _add_history(sub)
    _add_bisect(sub)
    _add_results(sub)
    _add_merge(sub)
    return parser


def shard_spec(text: str) -> tuple[int, int]:
    """K/N with 1 <= K <= N, for --shard."""
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError(f"{text!r}: give K/N with 1 <= K <= N, as 2/3")
    return int(k), int(n)


GLOBAL_VALUE_FLAGS = ("--cache", "--mirror", "--corpus")  # every command takes these


def command_first(argv: list[str]) -> list[str]:
    """The command name first, so that global flags may stand before it (`recall --mirror
    DIR fetch gin`) as well as after it; no command named means `run`."""
    i = 0
    while i < len(argv):
        if argv[i] in GLOBAL_VALUE_FLAGS:
            i += 2
        elif argv[i].startswith(tuple(f"{flag}=" for flag in GLOBAL_VALUE_FLAGS)):
            i += 1
        else:
            break
    if i < len(argv) and argv[i] in (*COMMANDS, "-h", "--help", "--version"):
        return [argv[i], *argv[:i], *argv[i + 1 :]]
    return ["run", *argv]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(command_first(list(sys.argv[1:] if argv is None else argv)))
    restore = _raise_on_sigterm()
    try:
        return args.handler(args)
    except RecallError as exc:  # shown(): one line, and no finder's ESC reaches the terminal
        print(f"recall: {shown(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    except Terminated:
        print("recall: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("recall: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:  # a full or read-only disk where no stage expected one
        print(f"recall: {exc.filename or 'I/O'}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        restore()


def _raise_on_sigterm() -> Callable[[], None]:
    """From here on SIGTERM raises Terminated where the harness is, so it unwinds as
    Ctrl-C does; returns what puts the handler before it back. Only the CLI installs
    it (outside the main thread no handler can be set): importing recall must not
    change a host program's signals."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, _terminate)

    def restore() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)

    return restore


def _terminate(_signum: int, _frame: FrameType | None) -> None:
    # A second SIGTERM must not cut the cleanup the first one started short; a handler
    # rather than SIG_IGN, because an ignored signal stays ignored in every child.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: None)
    raise Terminated
