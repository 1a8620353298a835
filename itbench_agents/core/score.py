"""A named score of an episode, as any persona's scorer gives it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Score(BaseModel):
    """One named score of an episode, from a persona's scorer (CISO: ``personas/ciso/episode.py``):
    its value, why, and what it rests on."""

    value: float
    """1.0 passed, 0.0 failed (a rate when averaged over episodes)."""
    explanation: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.value >= 1.0
