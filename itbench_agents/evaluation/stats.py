"""Statistics: mean, standard error, pass@k (Chen et al. 2021) and pass^k (Yao et al. 2024, τ-bench),
time means with ∞."""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def stderr(xs: Sequence[float]) -> float:
    """Standard error of the mean: sample standard deviation (ddof=1) / √n; undefined (NaN) for
    fewer than two values (one trial says nothing about its spread)."""
    n = len(xs)
    if n < 2:
        return math.nan
    m = mean(xs)
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return math.sqrt(var / n)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task: ``1 − C(n−c, k) / C(n, k)`` with n samples, c correct.

    Computed as the numerically stable product of Chen et al.'s reference implementation."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k for one task (τ-bench's reliability): the chance that k trials drawn without
    replacement from the n all pass, ``C(c, k) / C(n, k)`` with n samples, c correct.

    pass^1 is pass@1; pass^k falls with k as fast as the agent is inconsistent, where pass@k rises:
    an agent right on every trial keeps 1, one right on a lucky trial in ten goes to 0 from k = 2."""
    _check(n, c, k)
    if c < k:
        return 0.0
    prod = 1.0
    for i in range(k):
        prod *= (c - i) / (n - i)
    return prod


def _check(n: int, c: int, k: int) -> None:
    if k <= 0 or n <= 0:
        raise ValueError("need n > 0 and k > 0")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} trials (have {n})")
    if c < 0 or c > n:
        raise ValueError("0 <= c <= n")


def finite_mean(xs: Sequence[float | None]) -> float:
    """Mean over finite values (successful runs); ∞ when there are none (the paper's convention)."""
    vals = [x for x in xs if x is not None and math.isfinite(x)]
    return mean(vals) if vals else math.inf


def finite_stderr(xs: Sequence[float | None]) -> float:
    vals = [x for x in xs if x is not None and math.isfinite(x)]
    return stderr(vals) if vals else math.nan
