"""Piecewise-constant functions of time and their integrals, evaluated with numpy.

Health is piecewise constant between snapshots, so every rate (requests/s, CPU cores, bytes) is a
:class:`Profile`: breakpoints ``times`` and one value per segment (the last segment extends to
infinity). A counter is the integral of a rate profile from some start; :meth:`Profile.integral`
evaluates it at many times at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Profile:
    """``value(t) = values[i]`` for ``times[i] <= t < times[i+1]``; undefined (NaN) before ``times[0]``."""

    times: np.ndarray  # float64, ascending
    values: np.ndarray  # float64, same length (or 2-D: one row per segment)
    _cum: np.ndarray | None = field(default=None, repr=False)

    @staticmethod
    def build(times: list[float], values: list[float] | list[list[float]] | np.ndarray) -> Profile:
        return Profile(np.asarray(times, dtype=np.float64), np.asarray(values, dtype=np.float64))

    @property
    def start(self) -> float:
        return float(self.times[0]) if len(self.times) else float("inf")

    def index(self, t: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.times, t, side="right") - 1  # type: ignore[no-any-return]

    def at(self, t: np.ndarray) -> np.ndarray:
        """Values at ``t`` (rows for a 2-D profile); NaN before the first breakpoint."""
        i = self.index(t)
        out = self.values[np.clip(i, 0, None)].astype(np.float64, copy=True)
        out[i < 0] = np.nan
        return out

    def cumulative(self) -> np.ndarray:
        """Integral from ``times[0]`` to each breakpoint."""
        if self._cum is None:
            widths = np.diff(self.times)
            seg = self.values[:-1] * (widths if self.values.ndim == 1 else widths[:, None])
            zero = np.zeros((1,) + self.values.shape[1:])
            self._cum = np.concatenate([zero, np.cumsum(seg, axis=0)])
        return self._cum

    def integral(self, t: np.ndarray) -> np.ndarray:
        """∫ value from ``times[0]`` to ``t`` (0 before the start), vectorised over ``t``."""
        if not len(self.times):
            shape = (len(t),) + self.values.shape[1:]
            return np.zeros(shape)
        i = self.index(t)
        ic = np.clip(i, 0, None)
        dt = np.asarray(t, dtype=np.float64) - self.times[ic]
        cum = self.cumulative()
        if self.values.ndim == 1:
            out = cum[ic] + self.values[ic] * dt
        else:
            out = cum[ic] + self.values[ic] * dt[:, None]
        out[i < 0] = 0.0
        return out  # type: ignore[no-any-return]

    def first_positive(self) -> float:
        """The first time the value is > 0 (inf if never); for 2-D profiles, any column."""
        v = self.values if self.values.ndim == 1 else self.values.max(axis=1)
        idx = np.nonzero(v > 0)[0]
        return float(self.times[idx[0]]) if len(idx) else float("inf")
