"""Python's cyclic collector paused while a twin is built.

A twin holds hundreds of thousands of small dicts (its store, its change log, the health
timeline) and builds them in a burst when it brings an app up with its past. CPython runs a full
collection each time the long-lived heap grows by a quarter, and each one walks the whole heap to
find next to nothing (the twin's objects are freed by reference counting when replaced): about a
fifth of a build's time. ``Twin.for_app`` builds with automatic collection off; what the build
left in cycles is collected once it is back on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collection_paused() -> Iterator[None]:
    """Automatic collection off inside the block (as it was, after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
