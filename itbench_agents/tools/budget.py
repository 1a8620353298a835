"""Capping observations to a token budget (no observation over the budget); tokens are counted
offline by ``llm/tokens.py``.
"""

from __future__ import annotations

from ..llm.tokens import count_tokens, encoding


def cap_observation(text: str, max_tokens: int) -> tuple[str, bool, int]:
    """Return (text, truncated, tokens); long text keeps its head and tail around a marker."""
    tokens = count_tokens(text)
    if tokens <= max_tokens:
        return text, False, tokens
    enc = encoding()
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
