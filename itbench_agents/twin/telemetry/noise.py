"""Deterministic, stateless noise: every random-looking number is ``hash(seed, key, t)``.

There is no RNG state anywhere in telemetry: the same seed, series labels and time always give the
same value, whichever query asks first. The hash is SplitMix64's finaliser, vectorised with numpy
(``uint64`` arithmetic wraps modulo 2**64, which is exactly what the mixer needs).
"""

from __future__ import annotations

import hashlib

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MASK64 = (1 << 64) - 1


def key64(*parts: object) -> int:
    """A stable 64-bit key for any tuple of printable parts (labels, names, seeds)."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8)
    return int.from_bytes(h.digest(), "little")


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser over a ``uint64`` array (a bijection with good avalanche)."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))  # type: ignore[no-any-return]


def uniform(key: int, ticks: np.ndarray) -> np.ndarray:
    """Uniform [0, 1) numbers, one per integer tick (e.g. a timestamp in ms), for one key."""
    t = np.asarray(ticks, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        z = mix64(t * _M2 ^ np.uint64(key & _MASK64))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))  # type: ignore[no-any-return]


def normal(key: int, ticks: np.ndarray) -> np.ndarray:
    """Standard-normal numbers per tick (Box-Muller over two independent uniforms)."""
    u1 = uniform(key, ticks)
    u2 = uniform(key ^ 0x5DEECE66D, ticks)
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)  # type: ignore[no-any-return]


def ms_since(t: np.ndarray, epoch: float) -> np.ndarray:
    """Milliseconds from ``epoch`` to each ``t``: the ticks noise is drawn at. Telemetry counts them
    from the twin's birth (``TelemetryContext.epoch``), not from 1970, so that a twin started at
    another wall-clock minute draws the same numbers at the same moment of its life."""
    return ((np.asarray(t, dtype=np.float64) - epoch) * 1000).astype(np.int64)  # type: ignore[no-any-return]


def unit(key: int, *parts: object) -> float:
    """One uniform [0, 1) number for a key and extra parts (scalar code paths)."""
    return (key64(key, *parts) >> 11) * (1.0 / (1 << 53))


class Draws:
    """A cheap deterministic sequence of uniforms seeded by ``key64(*parts)`` (a 64-bit LCG with
    an output mix): for hot scalar paths (log lines, spans) that need many numbers per item.
    Same parts → same sequence; callers must draw in a fixed order."""

    __slots__ = ("_x",)

    def __init__(self, *parts: object) -> None:
        self._x = key64(*parts)

    def __call__(self) -> float:
        self._x = (self._x * 6364136223846793005 + 1442695040888963407) & _MASK64
        x = self._x
        x ^= x >> 29
        return (x >> 11) * (1.0 / (1 << 53))


def hex_id(nbytes: int, *parts: object) -> str:
    """A random-looking lowercase hex id of ``nbytes`` bytes derived from ``parts``."""
    return hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=nbytes).hexdigest()
