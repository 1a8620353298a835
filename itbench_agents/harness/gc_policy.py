"""Python's cyclic collector around a twin episode.

The twin is built with automatic collection off (``twin/gc_pause.py``: the build allocates
hundreds of thousands of small dicts in a burst, and full collections walked them for about a
fifth of an episode's time). The harness then freezes what exists (``gc.freeze``: the imported
modules and the prepared cluster), so that the collections of the rest of the episode walk only
what it allocates afterwards; closing the backend thaws it again, and the next collection frees
whatever cycles the episode left. A process that froze objects itself is left as it is.
"""

from __future__ import annotations

import gc


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
