"""Token usage and cost of one model call (litellm's cost map, read offline)."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any


def usage_of(message: Any) -> tuple[int, int]:
    """(input, output) tokens from an AIMessage's ``usage_metadata`` (0, 0 when absent)."""
    meta = getattr(message, "usage_metadata", None) or {}
    return int(meta.get("input_tokens", 0) or 0), int(meta.get("output_tokens", 0) or 0)


@lru_cache(maxsize=256)
def _prices(model: str) -> tuple[float, float] | None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm

        info = litellm.get_model_info(model)
    except Exception:
        return None
    return float(info.get("input_cost_per_token") or 0.0), float(info.get("output_cost_per_token") or 0.0)


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> float:
    """Cost in USD by litellm's model price map; 0.0 for scripted / unknown / self-hosted models."""
    if model.startswith("scripted:"):
        return 0.0
    prices = _prices(model)
    if prices is None:
        return 0.0
    return input_tokens * prices[0] + output_tokens * prices[1]
