"""`recall fetch`'s work: the pinned corpora into the cache, each checkout made (or found
made) in turn, so that a run on a machine about to go offline needs no fetch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from recall.inputs.corpus import Checkout, cache_root, fetch, load_pins, mirror_root, select_pins
from recall.inputs.suite import locate
from recall.workflows.options import FetchOptions


def fetch_pins(options: FetchOptions) -> Iterator[Checkout]:
    """Each chosen pin's checkout, fetched now if the cache lacks it, in the corpus's order."""
    corpus = Path(locate("fetch", corpus=options.data.corpus).corpus)
    pins = select_pins(load_pins(corpus), list(options.repos), corpus)
    cache, mirror = cache_root(options.data.cache), mirror_root(options.data.mirror)
    for pin in pins:
        yield fetch(pin, cache, mirror)
