"""Vectorised range-vector functions: every series of a range vector and every step at once.

All series are concatenated into flat arrays; one ``searchsorted`` on (series, timestamp) keys gives
each window's ``[lo, hi)`` bounds as (series × steps) matrices, on which rate/irate/changes/... are
plain numpy arithmetic, and ``*_over_time`` gather each window into a padded block (chunked to bound
memory). Windows whose values make plain float sums inexact (non-finite values, cancellation) are
recomputed with the exact per-window functions (Kahan sums like Prometheus).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property

import numpy as np

from .limits import charge, checkpoint
from .values import RangeVector, Vector, VSeries

GATHER_BUDGET = 500_000  # elements per gathered block (small: numpy gathers hold the GIL)
# rate & co. run on the flat arrays above this many timestamp groups (when most series are alone)
FLAT_MIN_GROUPS = 8


class Flat:
    """All series of a range vector concatenated, with each window's bounds.

    Series scraped together share their timestamps, so the window bounds are searched once per
    distinct timestamp array (a "group"); the flat arrays are built on first use.
    """

    def __init__(self, rv: RangeVector) -> None:
        charge(len(rv.series) * len(rv.ends))  # one result point per series and step
        checkpoint()
        self.series = rv.series
        self.tss = [np.ascontiguousarray(s.ts, dtype=np.int64) for s in rv.series]
        lens = np.fromiter((len(t) for t in self.tss), dtype=np.int64, count=len(self.tss))
        self.lens = lens
        self.starts = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)  # (S,) flat offsets
        # exact equality of timestamp arrays via their raw bytes
        ids: dict[bytes, int] = {}
        g_ts: list[np.ndarray] = []
        group = np.empty(len(self.tss), dtype=np.int64)
        for i, t in enumerate(self.tss):
            key = t.tobytes()
            g = ids.get(key)
            if g is None:
                g = ids[key] = len(g_ts)
                g_ts.append(t)
            group[i] = g
        self.group = group  # (S,) group of each series
        self.g_members = [[] for _ in g_ts]  # type: list[list[int]]  # series of each group
        for i, g in enumerate(group.tolist()):
            self.g_members[g].append(i)
        self.g_ts = g_ts  # (G,) the timestamps of each group
        lo_t = rv.ends - rv.range_ms
        # (G, n) window [start, end) as indexes into the group's timestamps
        self.g_lo = np.stack([np.searchsorted(t, lo_t, side="right") for t in g_ts])
        self.g_hi = np.stack([np.searchsorted(t, rv.ends, side="right") for t in g_ts])
        self._group_values: dict[int, np.ndarray] = {}

    def group_values(self, g: int) -> np.ndarray:
        """(members, samples) float64 matrix of group ``g``'s values."""
        V = self._group_values.get(g)
        if V is None:
            members = self.g_members[g]
            flat = np.concatenate([self.series[i].vals for i in members], dtype=np.float64)
            V = self._group_values[g] = flat.reshape(len(members), len(self.g_ts[g]))
        return V

    @cached_property
    def ts(self) -> np.ndarray:
        return np.concatenate(self.tss)

    @cached_property
    def vals(self) -> np.ndarray:
        return np.concatenate([s.vals for s in self.series]).astype(np.float64)

    @cached_property
    def is_start(self) -> np.ndarray:
        """(N,) True at the first sample of a series."""
        out = np.zeros(int(self.lens.sum()), dtype=bool)
        out[self.starts[self.lens > 0]] = True
        return out

    @cached_property
    def lo(self) -> np.ndarray:
        """(S, n) window start (inclusive), flat index."""
        return self.g_lo[self.group] + self.starts[:, None]

    @cached_property
    def hi(self) -> np.ndarray:
        """(S, n) window end (exclusive), flat index."""
        return self.g_hi[self.group] + self.starts[:, None]


def flatten(rv: RangeVector) -> Flat:
    return Flat(rv)


def _out(rv: RangeVector, res: np.ndarray, ok: np.ndarray, keep_name: bool = False) -> Vector:
    rows = np.flatnonzero(ok.any(axis=1))
    series = rv.series
    return Vector(
        [
            VSeries(series[i].labels, r, o, not keep_name or series[i].drop_name)
            for i, r, o in zip(rows.tolist(), res[rows], ok[rows], strict=True)
        ]
    )


def _group_take(g_ts: list[np.ndarray], idx: np.ndarray) -> np.ndarray:
    """``g_ts[g][idx[g]]`` per group (0 for an empty group, whose windows are all empty)."""
    return np.stack(
        [t[i] if len(t) else np.zeros(len(i), dtype=np.int64) for t, i in zip(g_ts, idx, strict=True)]
    )


def extrapolated(rv: RangeVector, is_counter: bool, is_rate: bool) -> Vector:
    """``rate`` / ``increase`` / ``delta``: Prometheus' extrapolatedRate on every window.

    The series of one timestamp group form a (series × samples) matrix whose windows all start and
    end at the same columns, so first/last values are column gathers and every timestamp-derived
    quantity is one row broadcast over the group. When most series have timestamps of their own
    (many small groups), the same arithmetic runs once on the flat arrays instead. Counter resets
    are corrected per window, on the windows that hold a drop only (``_add_window_drops``).
    """
    if not rv.series:
        return Vector([])
    f = flatten(rv)
    if _flat_is_faster(f):
        return _extrapolated_flat(f, rv, is_counter, is_rate)
    g_ok, g_sampled, g_dur_start, g_dur_end, g_div, g_factor = _extrapolation(f, rv, is_rate)
    result = np.zeros((len(rv.series), len(rv.ends)))
    with np.errstate(all="ignore"):
        for g, members in enumerate(f.g_members):
            checkpoint()
            m = len(f.g_ts[g])
            if not m:
                continue
            V = f.group_values(g)
            first_i = np.where(g_ok[g], f.g_lo[g], 0)
            last_i = np.where(g_ok[g], f.g_hi[g] - 1, 0)
            first_v = V[:, first_i]
            res = V[:, last_i]
            res -= first_v
            if is_counter:
                res += 0.0  # -0.0 becomes 0.0
                dropped = V[:, 1:] < V[:, :-1]  # a drop into sample j + 1 of row r
                if dropped.any():
                    r, j = np.nonzero(dropped)
                    rows = np.unique(r)
                    base = (rows * m)[:, None]
                    first, last = base + first_i[None, :], base + last_i[None, :]
                    _add_window_drops(res, rows, V.ravel(), r * m + j + 1, first, last)
                to_zero = g_sampled[g] * (first_v / res)
                r, c = np.nonzero((res > 0) & (first_v >= 0) & (to_zero < g_dur_start[g]))
                pre = res[r, c]
                res *= g_factor[g]
                if len(r):
                    f2 = (g_sampled[g, c] + to_zero[r, c] + g_dur_end[g, c]) / g_div[g, c]
                    if is_rate:
                        f2 = f2 / (rv.range_ms / 1000.0)
                    res[r, c] = pre * f2
            else:
                res *= g_factor[g]
            result[members] = res
    return _out(rv, result, g_ok[f.group])


def _flat_is_faster(f: Flat) -> bool:
    """Many timestamp groups, most series alone in theirs: the per-group loop would dominate."""
    return len(f.g_ts) > FLAT_MIN_GROUPS and 2 * len(f.g_ts) > len(f.series)


def _add_window_drops(
    res: np.ndarray,
    rows: np.ndarray,
    vals: np.ndarray,
    drop_at: np.ndarray,
    first: np.ndarray,
    last: np.ndarray,
) -> None:
    """Counter-reset corrections, window by window, like Prometheus' ``if cur < prev { result += prev }``.

    ``drop_at`` are the (sorted) indexes into ``vals`` of samples lower than the one before;
    ``first`` / ``last`` are (R, n) indexes of each window's first and last sample. For every drop
    inside a window (``first < d <= last``) ``vals[d - 1]`` is added to ``res[rows[i], c]``, one drop
    after the other in sample order; windows without a drop are not touched.
    """
    a = np.searchsorted(drop_at, first, side="right")
    b = np.searchsorted(drop_at, last, side="right")
    wr, wc = np.nonzero(b > a)
    if not len(wr):
        return
    at = a[wr, wc]
    left = b[wr, wc] - at
    prev = vals[drop_at - 1]
    out_r = rows[wr]
    acc = res[out_r, wc]
    sel = np.arange(len(acc))
    k = 0
    while len(sel):
        acc[sel] += prev[at[sel] + k]
        k += 1
        sel = sel[left[sel] > k]
    res[out_r, wc] = acc


def _extrapolated_flat(f: Flat, rv: RangeVector, is_counter: bool, is_rate: bool) -> Vector:
    """The same arithmetic on the flat arrays of all series at once."""
    g_ok, g_sampled, g_dur_start, g_dur_end, g_div, g_factor = _extrapolation(f, rv, is_rate)
    grp = f.group
    ok = g_ok[grp]
    # (an in-bounds index where the window is unused)
    starts = np.where(f.lens > 0, f.starts, 0)[:, None]
    loc = np.where(g_ok, f.g_lo, 0)[grp] + starts
    hic = np.where(g_ok, f.g_hi - 1, 0)[grp] + starts
    v = f.vals
    first_v, last_v = v[loc], v[hic]
    with np.errstate(all="ignore"):
        result = last_v - first_v
        factor = g_factor[grp]
        if is_counter:
            result += 0.0  # -0.0 becomes 0.0
            if len(v) > 1:
                drop_at = np.flatnonzero((v[1:] < v[:-1]) & ~f.is_start[1:]) + 1
                if len(drop_at):
                    _add_window_drops(result, np.arange(len(result)), v, drop_at, loc, hic)
            # a counter is not extrapolated below zero: where the zero point lies inside the start
            # extrapolation, extrapolate only to it (the same arithmetic, on those windows only)
            to_zero = g_sampled[grp] * (first_v / result)
            r, c = np.nonzero((result > 0) & (first_v >= 0) & (to_zero < g_dur_start[grp]))
            if len(r):
                g = grp[r]
                f2 = (g_sampled[g, c] + to_zero[r, c] + g_dur_end[g, c]) / g_div[g, c]
                if is_rate:
                    f2 = f2 / (rv.range_ms / 1000.0)
                factor[r, c] = f2
        result = result * factor
    return _out(rv, result, ok)


def _extrapolation(
    f: Flat, rv: RangeVector, is_rate: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group and window: whether it holds two samples, sampled interval, start/end
    extrapolation, divisor and the factor."""
    g_cnt = f.g_hi - f.g_lo
    g_ok = g_cnt >= 2
    g_first_t = _group_take(f.g_ts, np.where(g_ok, f.g_lo, 0))
    g_last_t = _group_take(f.g_ts, np.where(g_ok, f.g_hi - 1, 0))
    with np.errstate(all="ignore"):
        ends = rv.ends[None, :]
        g_dur_start = (g_first_t - (ends - rv.range_ms)) / 1000.0
        g_dur_end = (ends - g_last_t) / 1000.0
        g_sampled = (g_last_t - g_first_t) / 1000.0
        g_avg_dur = g_sampled / np.maximum(g_cnt - 1, 1)
        g_thr = g_avg_dur * 1.1
        g_dur_start = np.where(g_dur_start >= g_thr, g_avg_dur / 2, g_dur_start)
        g_dur_end = np.where(g_dur_end >= g_thr, g_avg_dur / 2, g_dur_end)
        g_div = np.where(g_sampled == 0, 1.0, g_sampled)
        g_factor = (g_sampled + g_dur_start + g_dur_end) / g_div
        if is_rate:
            g_factor = g_factor / (rv.range_ms / 1000.0)
    return g_ok, g_sampled, g_dur_start, g_dur_end, g_div, g_factor


def instant_delta(rv: RangeVector, is_rate: bool) -> Vector:
    if not rv.series:
        return Vector([])
    f = flatten(rv)
    ok = (f.hi - f.lo) >= 2
    last = np.where(ok, f.hi - 1, 0)
    prev = np.where(ok, f.hi - 2, 0)
    lv, pv = f.vals[last], f.vals[prev]
    with np.errstate(all="ignore"):
        if is_rate:
            res = np.where(lv < pv, lv, lv - pv)
            dt = (f.ts[last] - f.ts[prev]) / 1000.0
            ok = ok & (dt != 0)
            res = res / np.where(dt == 0, 1.0, dt)
        else:
            res = lv - pv
    return _out(rv, res, ok)


def count_pairs(rv: RangeVector, kind: str) -> Vector:
    """``changes`` / ``resets``: prefix sums of per-sample 0/1 indicators (exact integer counts, so
    differences of one running sum over all series are safe here, unlike sums of values)."""
    if not rv.series:
        return Vector([])
    f = flatten(rv)
    v = f.vals
    ind = np.zeros(len(v))
    if len(v) > 1:
        a, b = v[1:], v[:-1]
        hit = ~((a == b) | (np.isnan(a) & np.isnan(b))) if kind == "changes" else a < b
        ind[1:] = hit & ~f.is_start[1:]
    cum = np.cumsum(ind)
    ok = (f.hi - f.lo) >= 1
    loc = np.where(ok, f.lo, 0)
    hic = np.where(ok, f.hi - 1, 0)
    return _out(rv, cum[hic] - cum[loc], ok)


def _blocks(f: Flat) -> Iterator[tuple[tuple[slice, slice], np.ndarray, np.ndarray, np.ndarray]]:
    """Chunks ``(rows, steps)`` with gathered windows: (index, G values, T timestamps, mask), padded
    to the widest window of the chunk and at most :data:`GATHER_BUDGET` elements each (a single
    series with many wide windows is split by steps); the query budget is checked per chunk."""
    S, n = f.lo.shape
    cnt = f.hi - f.lo
    i = 0
    while i < S:
        checkpoint()
        width = 1
        j = i
        while j < S:
            w = max(width, int(cnt[j].max(initial=0)))
            if j > i and (j - i + 1) * n * max(w, 1) > GATHER_BUDGET:
                break
            width = w
            j += 1
        rows = slice(i, j)
        if (j - i) * n * max(width, 1) <= GATHER_BUDGET:
            col_slices = [slice(0, n)]
        else:  # one row alone is over the budget: split its steps
            per = max(1, GATHER_BUDGET // max(width, 1))
            col_slices = [slice(c, min(n, c + per)) for c in range(0, n, per)]
        for cols in col_slices:
            checkpoint()
            lo = f.lo[rows, cols]
            w_c = max(int(cnt[rows, cols].max(initial=0)), 1)
            idx = lo[:, :, None] + np.arange(w_c)[None, None, :]
            mask = idx < f.hi[rows, cols][:, :, None]
            idx = np.where(mask, idx, 0)
            yield (rows, cols), f.vals[idx], f.ts[idx], mask
        i = j


def over_time(
    rv: RangeVector,
    kind: str,
    exact: Callable[[np.ndarray, np.ndarray, int], float | None],
    param: np.ndarray | None = None,
    steps: np.ndarray | None = None,
) -> Vector:
    """``<kind>_over_time``, ``deriv``, ``predict_linear``, ``quantile_over_time`` vectorised;
    ``exact(ts, vals, step)`` recomputes windows the fast path cannot do exactly."""
    if not rv.series:
        return Vector([])
    f = flatten(rv)
    cnt = f.hi - f.lo
    min_samples = 2 if kind in ("deriv", "predict_linear") else 1
    ok = cnt >= min_samples
    res = np.zeros(cnt.shape)
    redo = np.zeros(cnt.shape, dtype=bool)
    keep_name = kind in ("last", "first")
    for rows, G, T, M in _blocks(f):
        cols = rows[1]
        c = cnt[rows]
        cs = np.maximum(c, 1)
        with np.errstate(all="ignore"):
            X = np.where(M, G, 0.0)
            finite = np.where(M, np.isfinite(G), True).all(axis=-1)
            if kind in ("sum", "avg", "stdvar", "stddev"):
                s = X.sum(axis=-1)
                big = np.abs(X).max(axis=-1, initial=0.0)
                risky = ~finite | ~np.isfinite(s) | (big > 1e12 * np.abs(s))
                mean = s / cs
                if kind == "sum":
                    r = s
                elif kind == "avg":
                    r = mean
                else:
                    D = np.where(M, G - mean[..., None], 0.0)
                    var = (D * D).sum(axis=-1) / cs
                    hi_v = np.where(M, G, -np.inf).max(axis=-1)
                    lo_v = np.where(M, G, np.inf).min(axis=-1)
                    var = np.where(hi_v == lo_v, 0.0, var)
                    r = np.sqrt(var) if kind == "stddev" else var
                    risky = ~finite | (big > 1e6 * np.maximum(np.sqrt(np.abs(var)), 1e-300))
                    risky &= hi_v != lo_v
                redo[rows] = risky
            elif kind == "count":
                r = c.astype(np.float64)
            elif kind == "present":
                r = np.ones(c.shape)
            elif kind == "min":
                r = np.fmin.reduce(np.where(M, G, np.nan), axis=-1)
            elif kind == "max":
                r = np.fmax.reduce(np.where(M, G, np.nan), axis=-1)
            elif kind == "last":
                r = f.vals[np.maximum(f.hi[rows] - 1, 0)]
            elif kind == "first":
                r = f.vals[f.lo[rows]]
            elif kind == "quantile":
                assert param is not None
                q = param[None, cols]
                srt = np.sort(np.where(M, G, np.inf), axis=-1)
                rank = q * (c - 1)
                fl = np.floor(np.nan_to_num(rank, nan=0.0, posinf=0.0, neginf=0.0))
                lo_i = np.clip(fl, 0, np.maximum(c - 1, 0)).astype(np.int64)
                hi_i = np.minimum(lo_i + 1, np.maximum(c - 1, 0))
                w = rank - fl
                a = np.take_along_axis(srt, lo_i[..., None], axis=-1)[..., 0]
                b = np.take_along_axis(srt, hi_i[..., None], axis=-1)[..., 0]
                r = a * (1 - w) + b * w
                r = np.where(q < 0, -np.inf, np.where(q > 1, np.inf, r))
                r = np.where(np.isnan(q) & np.ones_like(r, dtype=bool), np.nan, r)
                redo[rows] = ~np.where(M, ~np.isnan(G), True).all(axis=-1) | ~np.isfinite(r) & (q >= 0) & (
                    q <= 1
                )
            elif kind in ("deriv", "predict_linear"):
                if kind == "deriv":
                    t0 = f.ts[f.lo[rows]]
                else:
                    assert steps is not None
                    t0 = np.broadcast_to(steps[None, cols], c.shape)
                x = np.where(M, (T - t0[..., None]) / 1000.0, 0.0)
                n_ = cs.astype(np.float64)
                sx, sy = x.sum(-1), X.sum(-1)
                sxy, sxx = (x * X).sum(-1), (x * x).sum(-1)
                cov = sxy - sx * sy / n_
                varx = sxx - sx * sx / n_
                slope = cov / varx
                intercept = sy / n_ - slope * sx / n_
                y0 = G[..., 0]
                const = np.where(M, y0[..., None] == G, True).all(axis=-1)
                slope = np.where(const, 0.0, slope)
                intercept = np.where(const, y0, intercept)
                if kind == "deriv":
                    r = slope
                else:
                    assert param is not None
                    r = slope * param[None, cols] + intercept
                redo[rows] = ~finite
            else:
                raise ValueError(kind)
        res[rows] = r
    redo &= ok
    for k, (ri, ci) in enumerate(zip(*np.nonzero(redo), strict=True)):
        if k % 256 == 0:
            checkpoint()
        wa, wb = int(f.lo[ri, ci]), int(f.hi[ri, ci])
        val = exact(f.ts[wa:wb], f.vals[wa:wb], int(ci))
        if val is None:
            ok[ri, ci] = False
        else:
            res[ri, ci] = val
    return _out(rv, res, ok, keep_name=keep_name)


def vector_lookup(
    series: list[tuple[dict[str, str], np.ndarray, np.ndarray]], eff: np.ndarray, lookback_ms: int
) -> list[tuple[dict[str, str], np.ndarray, np.ndarray, np.ndarray]]:
    """Instant-selector lookups for many series at once: (labels, values, present, sample_ts) rows.

    Series are looked up in chunks of about :data:`GATHER_BUDGET` (series × steps) elements, with
    the query budget checked in between: numpy holds the GIL through each call."""
    series = [s for s in series if len(s[1])]
    if not series:
        return []
    charge(len(series) * len(eff))  # every step of every series may hold a point (Prometheus counts them)
    per = max(1, GATHER_BUDGET // max(len(eff), 1))
    out: list[tuple[dict[str, str], np.ndarray, np.ndarray, np.ndarray]] = []
    for i in range(0, len(series), per):
        checkpoint()
        out.extend(_vector_lookup(series[i : i + per], eff, lookback_ms))
    return out


def _vector_lookup(
    series: list[tuple[dict[str, str], np.ndarray, np.ndarray]], eff: np.ndarray, lookback_ms: int
) -> list[tuple[dict[str, str], np.ndarray, np.ndarray, np.ndarray]]:
    from .values import stale_mask

    S = len(series)
    lens = np.array([len(s[1]) for s in series], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
    ts = np.concatenate([s[1] for s in series]).astype(np.int64)
    vals = np.concatenate([s[2] for s in series]).astype(np.float64)
    base = int(min(ts.min(), eff.min()))
    span = int(max(ts.max(), eff.max())) - base + 1
    if span * (S + 1) >= 2**62:
        idx = np.stack(
            [np.searchsorted(s[1], eff, side="right") - 1 + starts[i] for i, s in enumerate(series)]
        )
    else:
        sid = np.repeat(np.arange(S, dtype=np.int64), lens)
        keys = sid * span + (ts - base)
        row = (np.arange(S, dtype=np.int64) * span)[:, None]
        idx = np.searchsorted(keys, row + (eff - base)[None, :], side="right") - 1
    ok = idx >= starts[:, None]
    idxc = np.where(ok, idx, 0)
    sts = ts[idxc]
    v = vals[idxc]
    ok &= sts > eff[None, :] - lookback_ms
    ok &= ~stale_mask(v)
    out = []
    for k, i in enumerate(np.flatnonzero(ok.any(axis=1)).tolist()):
        if k % 1024 == 0:
            checkpoint()
        out.append((series[i][0], v[i], ok[i], sts[i]))
    return out
