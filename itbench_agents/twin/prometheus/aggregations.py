"""PromQL aggregation operators (sum, avg, min, max, count, group, stddev, stdvar, topk, bottomk,
quantile, count_values) with ``by``/``without`` grouping, vectorised over steps per group."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .evaluator import Evaluator
from .values import LabelKey, Labels, PromQLError, Vector, VSeries, fmt_label_value, label_key

LABEL_NAME_RX = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def quantile(q: float, vals: np.ndarray) -> float:
    """Prometheus' ``quantile`` (linear interpolation between closest ranks)."""
    if len(vals) == 0 or math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    nan = np.isnan(vals)
    v = np.concatenate((vals[nan], np.sort(vals[~nan])))  # Go's sort puts NaN first
    n = len(v)
    rank = q * (n - 1)
    lo = max(0, math.floor(rank))
    hi = min(n - 1, lo + 1)
    w = rank - math.floor(rank)
    return float(v[lo] * (1 - w) + v[hi] * w)


def _grouping(node: Any) -> tuple[str, list[str]]:
    mod = node.modifier
    if mod is None:
        return "by", []
    return ("by" if str(mod.type).endswith("By") else "without"), list(mod.labels)


def group_labels(labels: Labels, kind: str, names: list[str]) -> Labels:
    if kind == "by":
        return {k: labels[k] for k in names if k in labels}
    drop = set(names) | {"__name__"}
    return {k: v for k, v in labels.items() if k not in drop}


def aggregate(ev: Evaluator, node: Any, steps: np.ndarray) -> Vector:
    op = str(node.op)
    kind, names = _grouping(node)
    param: Any = None
    if op in ("topk", "bottomk", "quantile", "limitk", "limit_ratio"):
        param = ev.eval_scalar(node.param, steps)
    elif op == "count_values":
        p = ev.eval(node.param, steps)
        from .values import String

        if not isinstance(p, String):
            raise PromQLError("expected string parameter for count_values")
        param = p.value
        if not LABEL_NAME_RX.match(param):
            raise PromQLError(f'invalid label name "{param}"')
    vec = ev.eval_vector(node.expr, steps)
    if op == "quantile" and vec.series:
        ev.check_quantiles(param, node.param)
    n = len(steps)
    groups: dict[LabelKey, tuple[Labels, list[VSeries]]] = {}
    if kind == "by":
        # the grouping labels' values identify the group: build its labels once per distinct tuple
        seen: dict[tuple[str | None, ...], list[VSeries]] = {}
        for s in vec.series:
            labels = s.labels
            tk = tuple([labels.get(k) for k in names])
            ms = seen.get(tk)
            if ms is None:
                lb = group_labels(labels, kind, names)
                ms = seen[tk] = groups.setdefault(label_key(lb), (lb, []))[1]
            ms.append(s)
    else:
        for s in vec.series:
            lb = group_labels(s.labels, kind, names)
            groups.setdefault(label_key(lb), (lb, []))[1].append(s)
    out: list[VSeries] = []
    if op in ("topk", "bottomk"):
        return Vector(_topk(ev, groups, param, n, op == "topk"))
    if op == "limitk":
        return Vector(_limitk(ev, groups, param, n))
    if op == "limit_ratio":
        return Vector(_limit_ratio(ev, node, groups, param, n))
    if op == "count_values":
        return Vector(_count_values(groups, param, n))
    if op in ("sum", "count", "group", "min", "max", "avg") and len(groups) > 4:
        return Vector(_grouped_simple(op, groups, n))
    for lb, members in groups.values():
        ev.check()
        V = np.array([m.values for m in members], dtype=np.float64).reshape(len(members), n)
        M = np.array([m.present for m in members], dtype=bool).reshape(len(members), n)
        present: np.ndarray = np.asarray(M.any(axis=0), dtype=bool)
        cnt = M.sum(axis=0)
        with np.errstate(all="ignore"):
            if op == "sum":
                vals = _sum(V, M)
            elif op == "avg":
                vals = _sum(V, M) / np.where(cnt == 0, 1, cnt)
                vals = _avg(V, M, vals)
            elif op == "count":
                vals = cnt.astype(np.float64)
            elif op == "group":
                vals = np.ones(n)
            elif op == "min":
                vals = np.fmin.reduce(np.where(M, V, np.nan), axis=0)
            elif op == "max":
                vals = np.fmax.reduce(np.where(M, V, np.nan), axis=0)
            elif op in ("stddev", "stdvar"):
                var = _welford_var(V, M)
                vals = np.sqrt(var) if op == "stddev" else var
            elif op == "quantile":
                vals = np.array(
                    [quantile(float(param[j]), V[M[:, j], j]) if present[j] else math.nan for j in range(n)]
                )
            else:
                raise PromQLError(f"aggregation {op} is not supported")
        drop = "__name__" in lb and any(m.drop_name for m in members)
        out.append(VSeries(lb, np.asarray(vals, dtype=np.float64), present, drop))
    return Vector(out)


def _grouped_simple(op: str, groups: dict[LabelKey, tuple[Labels, list[VSeries]]], n: int) -> list[VSeries]:
    """sum/count/group/min/max/avg of many groups at once with ``ufunc.reduceat`` over stacked rows."""
    members = [m for _, ms in groups.values() for m in ms]
    sizes = np.array([len(ms) for _, ms in groups.values()], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    V = np.array([m.values for m in members], dtype=np.float64).reshape(len(members), n)
    M = np.array([m.present for m in members], dtype=bool).reshape(len(members), n)
    present = _reduceat(np.add, M.astype(np.int64), starts, sizes, sizes > 1)
    with np.errstate(all="ignore"):
        if op in ("sum", "avg"):
            X = np.where(M, V, 0.0)
            vals = _reduceat(np.add, X, starts, sizes, sizes > 1)
            # (only groups of more than two members can need the exact sum)
            big = _reduceat(np.maximum, np.abs(X), starts, sizes, sizes > 2)
            risky = (sizes[:, None] > 2) & np.isfinite(vals) & (big > 1e15 * np.maximum(np.abs(vals), 1e-300))
            for g, j in zip(*np.nonzero(risky), strict=True):
                a = int(starts[g])
                vals[g, j] = math.fsum(X[a : a + int(sizes[g]), j].tolist())
            if op == "avg":
                vals = vals / np.maximum(present, 1)
                for g in np.flatnonzero((~np.isfinite(vals) & (present > 0)).any(axis=1)):
                    a = int(starts[g])
                    vals[g] = _avg(V[a : a + int(sizes[g])], M[a : a + int(sizes[g])], vals[g])
        elif op == "count":
            vals = present.astype(np.float64)
        elif op == "group":
            vals = np.ones(present.shape)
        elif op == "min":
            vals = _reduceat(np.fmin, np.where(M, V, np.nan), starts, sizes, sizes > 1)
        else:
            vals = _reduceat(np.fmax, np.where(M, V, np.nan), starts, sizes, sizes > 1)
    out = []
    for g, (lb, ms) in enumerate(groups.values()):
        drop = "__name__" in lb and any(m.drop_name for m in ms)
        out.append(VSeries(lb, vals[g], present[g] > 0, drop))
    return out


def _reduceat(
    ufunc: np.ufunc, A: np.ndarray, starts: np.ndarray, sizes: np.ndarray, need: np.ndarray
) -> np.ndarray:
    """``ufunc.reduceat(A, starts, axis=0)`` on the groups in ``need``; the first row elsewhere.

    A group's reduction depends on its rows only, so the needed groups are reduced on a compacted
    copy of their rows (reduceat costs per group; most groups often have a single member).
    """
    if need.all():
        return ufunc.reduceat(A, starts, axis=0)
    out = A[starts]
    idx = np.flatnonzero(need)
    if len(idx):
        sz = sizes[idx]
        sub_starts = np.concatenate(([0], np.cumsum(sz)[:-1]))
        rows = np.repeat(starts[idx] - sub_starts, sz) + np.arange(int(sz.sum()))
        out[idx] = ufunc.reduceat(A[rows], sub_starts, axis=0)
    return out


def _sum(V: np.ndarray, M: np.ndarray) -> np.ndarray:
    X = np.where(M, V, 0.0)
    s = X.sum(axis=0)
    if X.shape[0] > 2 and np.isfinite(s).all():
        # compensated summation where plain float addition could lose small terms
        big = np.abs(X).max(axis=0)
        risky = big > 1e15 * np.maximum(np.abs(s), 1e-300)
        for j in np.flatnonzero(risky):
            s[j] = math.fsum(X[:, j])
    return s


def _welford_var(V: np.ndarray, M: np.ndarray) -> np.ndarray:
    """Population variance per step by Welford's online algorithm, member by member in input
    order, as Prometheus' ``stddev``/``stdvar`` aggregation does: identical samples give exactly 0."""
    n_steps = V.shape[1]
    count = np.zeros(n_steps)
    mean = np.zeros(n_steps)
    m2 = np.zeros(n_steps)
    for row, present in zip(V, M, strict=True):
        count = count + present
        delta = np.where(present, row - mean, 0.0)
        mean = mean + np.where(present, delta / np.maximum(count, 1), 0.0)
        m2 = m2 + np.where(present, delta * (row - mean), 0.0)
    return m2 / np.maximum(count, 1)


def _avg(V: np.ndarray, M: np.ndarray, mean: np.ndarray) -> np.ndarray:
    # Prometheus falls back to an incremental mean when the sum overflows; do the same.
    bad = ~np.isfinite(mean) & M.any(axis=0)
    for j in np.flatnonzero(bad):
        xs = V[M[:, j], j]
        if np.isfinite(xs).all():
            m = 0.0
            for i, x in enumerate(xs, 1):
                m += x / i - m / i
            mean[j] = m
    return mean


def _topk(
    ev: Evaluator, groups: dict[LabelKey, tuple[Labels, list[VSeries]]], k_vals: np.ndarray, n: int, top: bool
) -> list[VSeries]:
    chosen: dict[int, np.ndarray] = {}
    order: list[VSeries] = []
    ids: dict[int, int] = {}
    for j in range(n):
        if j % 64 == 0:
            ev.check()
        kf = float(k_vals[j])
        if math.isnan(kf):
            raise PromQLError("Parameter value is NaN")
        if kf >= 9.223372036854775807e18 or kf <= -9.223372036854775807e18:
            raise PromQLError(f"Scalar value {kf:g} overflows int64")
        k = int(kf)
        if k < 1:
            continue
        for _, members in groups.values():
            cands = [m for m in members if m.present[j]]
            if not cands:
                continue

            def key(m: VSeries, _j: int = j) -> tuple[int, float]:
                v = float(m.values[_j])
                if math.isnan(v):
                    return (1, 0.0)
                return (0, -v if top else v)

            cands.sort(key=key)
            for m in cands[:k]:
                i = id(m)
                if i not in ids:
                    ids[i] = len(order)
                    order.append(m)
                    chosen[i] = np.zeros(n, dtype=bool)
                chosen[i][j] = True
    if n == 1:
        # instant query: keep the ranked order for `expect ordered`
        return [VSeries(m.labels, m.values, chosen[id(m)], m.drop_name) for m in order]
    return [VSeries(m.labels, m.values, chosen[id(m)], m.drop_name) for m in order]


def _limitk(
    ev: Evaluator, groups: dict[LabelKey, tuple[Labels, list[VSeries]]], k_vals: np.ndarray, n: int
) -> list[VSeries]:
    """Prometheus 3 ``limitk``: per group and step, the first ``k`` series of the group (in the
    input order, which for selectors is Prometheus' label order), values untouched."""
    if not groups:
        return []
    ks = np.zeros(n, dtype=np.int64)
    for j in range(n):
        kf = float(k_vals[j])
        if math.isnan(kf):
            raise PromQLError("Parameter value is NaN")
        if kf >= 9.223372036854775807e18 or kf <= -9.223372036854775807e18:
            raise PromQLError(f"Scalar value {kf:g} overflows int64")
        ks[j] = max(int(kf), 0)
    out: list[VSeries] = []
    for _, members in groups.values():
        ev.check()
        ordered = sorted(members, key=lambda m: label_key(m.labels))
        M = np.array([m.present for m in ordered], dtype=bool).reshape(len(ordered), n)
        rank = np.cumsum(M, axis=0)  # 1-based position among the present members at each step
        keep = M & (rank <= ks[None, :])
        for m, row in zip(ordered, keep, strict=True):
            if row.any():
                out.append(VSeries(m.labels, m.values, row, m.drop_name, m.sample_ts))
    return out


MAX_UINT64_F = float(2**64 - 1)


def _limit_ratio(
    ev: Evaluator,
    node: Any,
    groups: dict[LabelKey, tuple[Labels, list[VSeries]]],
    r_vals: np.ndarray,
    n: int,
) -> list[VSeries]:
    """Prometheus 3 ``limit_ratio``: a series is kept at a step when ``hash(labels) / MaxUint64`` is
    below the ratio (or, for a negative ratio r, at least ``1 + r``); ratios beyond ±1 are capped
    with a warning."""
    from .labelhash import labels_hash
    from .syntax import go_g

    ratios = np.array(r_vals, dtype=np.float64)
    if np.isnan(ratios).any():
        raise PromQLError("Ratio value is NaN")
    for v in np.unique(ratios[np.abs(ratios) > 1]).tolist():
        cap = 1.0 if v > 0 else -1.0
        ev.warn(f"ratio value should be between -1 and 1, got {go_g(v)}, capping to {go_g(cap)}", node.param)
    ratios = np.clip(ratios, -1.0, 1.0)
    out: list[VSeries] = []
    for _, members in groups.values():
        ev.check()
        for m in members:
            off = float(labels_hash(m.labels)) / MAX_UINT64_F
            keep = m.present & (((ratios >= 0) & (off < ratios)) | ((ratios < 0) & (off >= 1.0 + ratios)))
            keep &= ratios != 0
            if keep.any():
                out.append(VSeries(m.labels, m.values, keep, m.drop_name, m.sample_ts))
    return out


def _count_values(groups: dict[LabelKey, tuple[Labels, list[VSeries]]], label: str, n: int) -> list[VSeries]:
    acc: dict[LabelKey, tuple[Labels, np.ndarray]] = {}
    for lb, members in groups.values():
        for m in members:
            for j in np.flatnonzero(m.present):
                nl = dict(lb)
                nl[label] = fmt_label_value(float(m.values[j]))
                k = label_key(nl)
                if k not in acc:
                    acc[k] = (nl, np.zeros(n))
                acc[k][1][j] += 1
    return [VSeries(lb, cnt, cnt > 0) for lb, cnt in acc.values()]
