"""Counting tokens offline: tiktoken's ``cl100k_base`` encoding read from the copy bundled in the
litellm wheel (so nothing is downloaded); where that is unavailable, chars/4."""

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


def encoding() -> Any:
    """tiktoken's cl100k_base, loaded once, or None where it cannot be (count by chars/4 then)."""
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
    enc = encoding()
    if enc is None:
        return (len(text) + 3) // 4
    return len(enc.encode(text, disallowed_special=()))
