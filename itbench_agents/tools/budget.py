"""Counting observation tokens offline and capping observations (no observation over the budget).

Tokens are counted with tiktoken's ``cl100k_base`` encoding read from the copy bundled in the
litellm wheel (so nothing is downloaded); if that is unavailable we fall back to chars/4.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Any
from unittest import mock

_lock = threading.Lock()
_encoding: Any = None
_loaded = False


def _load_encoding() -> Any:
    global _encoding, _loaded
    with _lock:
        if _loaded:
            return _encoding
        _loaded = True
        try:
            import tiktoken

            spec = importlib.util.find_spec("litellm")
            if spec and spec.submodule_search_locations:
                bundled = (
                    Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
                )
                with mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": str(bundled)}):
                    _encoding = tiktoken.get_encoding("cl100k_base")
        except Exception:  # offline without the bundle: estimate
            _encoding = None
        return _encoding


def count_tokens(text: str) -> int:
    enc = _load_encoding()
    if enc is None:
        return (len(text) + 3) // 4
    return len(enc.encode(text, disallowed_special=()))


def cap_observation(text: str, max_tokens: int) -> tuple[str, bool, int]:
    """Return (text, truncated, tokens); long text keeps its head and tail around a marker."""
    tokens = count_tokens(text)
    if tokens <= max_tokens:
        return text, False, tokens
    enc = _load_encoding()
    marker_budget = 40
    keep = max(max_tokens - marker_budget, 10)
    head_n, tail_n = keep * 3 // 4, keep // 4
    if enc is not None:
        ids = enc.encode(text, disallowed_special=())
        head, tail = enc.decode(ids[:head_n]), enc.decode(ids[-tail_n:])
    else:
        head, tail = text[: head_n * 4], text[-tail_n * 4 :]
    out = f"{head}\n... [{tokens - keep} tokens omitted; narrow the query to see them] ...\n{tail}"
    return out, True, count_tokens(out)
