"""Scenario complexity: the paper's Eq. 6 and the buckets we chose (see docs/metrics.md).

``complexity = ∛(propagation path length × resolution steps × technologies)``

The paper does not publish its Easy/Medium/Hard thresholds. We use **Easy < 1.7 ≤ Medium < 2.7 ≤ Hard**:
with these cut points the paper's own Table 12 (21 patterns) splits 4 / 12 / 5 (19 % / 57 % / 24 %),
the closest split to the reported 24 % / 52 % / 24 % (Fig. 4b) that its tied values allow.
"""

from __future__ import annotations

from typing import Literal

Bucket = Literal["easy", "medium", "hard", "control"]

EASY_BELOW = 1.7
HARD_FROM = 2.7


def complexity_score(propagation_length: int, resolution_steps: int, technologies: int) -> float:
    product = max(1, propagation_length) * max(1, resolution_steps) * max(1, technologies)
    return float(product ** (1.0 / 3.0))


def bucket_for(score: float) -> Bucket:
    if score < EASY_BELOW:
        return "easy"
    if score < HARD_FROM:
        return "medium"
    return "hard"
