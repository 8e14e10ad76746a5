"""The subcommands, one module each: `add_parser(sub)` defines the command's flags and
`run(args)` does its work (or calls the stage modules that do) and returns the exit
status. The order here is the order `recall --help` lists them in."""

from __future__ import annotations

from types import ModuleType

from recall.commands import (
    bisect,
    cache,
    derive,
    doctor,
    explain,
    fetch,
    history,
    init,
    merge,
    pin,
    results,
    run,
)

MODULES: dict[str, ModuleType] = {
    "fetch": fetch, "derive": derive, "run": run, "doctor": doctor, "init": init,
    "explain": explain, "pin": pin, "cache": cache, "history": history, "bisect": bisect,
    "results": results, "merge": merge,
}  # fmt: skip
