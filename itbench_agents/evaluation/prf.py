"""Precision / recall / F1 helpers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PRF:
    precision: float
    recall: float
    f1: float

    @classmethod
    def of(cls, tp_pred: int, n_pred: int, tp_gt: int, n_gt: int) -> PRF:
        """``tp_pred`` of ``n_pred`` predictions are right; ``tp_gt`` of ``n_gt`` truths were found.
        Nothing predicted and nothing to find is a perfect score (the no-incident control)."""
        if n_pred == 0 and n_gt == 0:
            return cls(1.0, 1.0, 1.0)
        p = tp_pred / n_pred if n_pred else 0.0
        r = tp_gt / n_gt if n_gt else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return cls(p, r, f)
