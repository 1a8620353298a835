"""Python's cyclic garbage collector around a twin episode.

A twin holds hundreds of thousands of small dicts (its store, its change log, the health timeline)
and builds them in a burst when it brings the app up with its past. CPython runs a full collection
each time the long-lived heap grows by a quarter, and each one walks the whole heap: about a fifth
of a twin episode's time went to collections that found next to nothing (the twin's objects are
freed by reference counting when it is replaced or closed, not by the collector).

So the harness builds the twin with automatic collection off, then freezes what exists then
(``gc.freeze``: the imported modules and the prepared cluster), so that later collections walk only
what the episode allocates afterwards; closing the backend thaws it again, and the next collection
frees whatever cycles the episode left. Collection stays on for the agent's turn and everything
after the build. A process that froze objects itself is left as it is.
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


def freeze() -> bool:
    """Move every object tracked now to the permanent generation; False (nothing done) where the
    process had already frozen objects of its own."""
    if gc.get_freeze_count():
        return False
    gc.freeze()
    return True


def thaw(frozen: bool) -> None:
    """Undo :func:`freeze` (when it froze)."""
    if frozen:
        gc.unfreeze()
