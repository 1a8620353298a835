"""PromQL functions: per-series math, range-vector functions (rate & co., ``*_over_time``), label
manipulation, ``absent``, ``histogram_quantile`` over classic buckets, time functions, sorting."""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
import promql_parser as pp

from . import rangefns
from .aggregations import LABEL_NAME_RX, quantile
from .evaluator import Evaluator
from .values import (
    LabelKey,
    Labels,
    PromQLError,
    RangeVector,
    RSeries,
    Scalar,
    String,
    Value,
    Vector,
    VSeries,
    label_key,
)

Fn = Callable[["Evaluator", list[Any], np.ndarray], Value]
FUNCTIONS: dict[str, Fn] = {}

UNSUPPORTED = {
    "histogram_count",
    "histogram_sum",
    "histogram_avg",
    "histogram_fraction",
    "histogram_stddev",
    "histogram_stdvar",
    "histogram_quantiles",
    "info",
    "double_exponential_smoothing",
    "holt_winters",
    "start_timestamp",
}


def register(*names: str) -> Callable[[Fn], Fn]:
    def deco(fn: Fn) -> Fn:
        for n in names:
            FUNCTIONS[n] = fn
        return fn

    return deco


def _ext_of_args(args: list[Any]) -> str | None:
    from .syntax import selector_ext

    for a in args:
        while isinstance(a, pp.ParenExpr):
            a = a.expr
        if isinstance(a, pp.MatrixSelector):
            ext = selector_ext(a.vector_selector)
            if ext:
                return ext
    return None


def _extended_call(ev: Evaluator, name: str, ext: str, args: list[Any], steps: np.ndarray) -> Value:
    from . import extended

    allowed = extended.ANCHORED_OK if ext == "anchored" else extended.SMOOTHED_OK
    if name not in allowed:
        raise PromQLError(f"{ext} modifier can only be used with: {', '.join(allowed)} - not with {name}")
    rv = ev.eval_range(args[0], steps)
    fn = extended.anchored if ext == "anchored" else extended.smoothed
    out = []
    for s in rv.series:
        ev.check()
        vals = np.zeros(len(rv.ends))
        ok = np.zeros(len(rv.ends), dtype=bool)
        for j, end in enumerate(rv.ends.tolist()):
            r = fn(name, s.ts, s.vals, int(end) - rv.range_ms, int(end), ev.lookback_ms)
            if r is not None:
                vals[j], ok[j] = r, True
        if ok.any():
            out.append(VSeries(s.labels, vals, ok, True))
    return Vector(out)


def call(ev: Evaluator, node: Any, steps: np.ndarray) -> Value:
    name = node.func.name
    ext = _ext_of_args(list(node.args))
    if ext:
        return _extended_call(ev, name, ext, list(node.args), steps)
    fn = FUNCTIONS.get(name)
    if fn is None:
        raise PromQLError(f"function {name!r} is not supported by this engine")
    if name in SORT_FUNCTIONS and ev.start_ms != ev.end_ms:
        ev.warn("sort is ineffective for range queries since results are always ordered by labels", node)
    return fn(ev, list(node.args), steps)


SORT_FUNCTIONS = ("sort", "sort_desc", "sort_by_label", "sort_by_label_desc")
COUNTER_SUFFIXES = ("_total", "_sum", "_count", "_bucket")


# --------------------------------------------------------------------------- instant-vector math
def _math(f: Callable[[np.ndarray], np.ndarray]) -> Fn:
    def run(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
        vec = ev.eval_vector(args[0], steps)
        with np.errstate(all="ignore"):
            return Vector([VSeries(s.labels, f(s.values), s.present, True) for s in vec.series])

    return run


def _sgn(v: np.ndarray) -> np.ndarray:
    return np.sign(v)


_MATH: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "abs": np.abs,
    "ceil": np.ceil,
    "floor": np.floor,
    "exp": np.exp,
    "ln": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "sqrt": np.sqrt,
    "sgn": _sgn,
    "deg": np.degrees,
    "rad": np.radians,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
}
for _name, _f in _MATH.items():
    register(_name)(_math(_f))


@register("round")
def _round(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    vec = ev.eval_vector(args[0], steps)
    to = ev.eval_scalar(args[1], steps) if len(args) > 1 else np.ones(len(steps))
    inv = 1.0 / to
    with np.errstate(all="ignore"):
        return Vector(
            [VSeries(s.labels, np.floor(s.values * inv + 0.5) / inv, s.present, True) for s in vec.series]
        )


def _clamp_impl(kind: str) -> Fn:
    def run(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
        vec = ev.eval_vector(args[0], steps)
        if kind == "clamp":
            lo, hi = ev.eval_scalar(args[1], steps), ev.eval_scalar(args[2], steps)
        elif kind == "clamp_min":
            lo, hi = ev.eval_scalar(args[1], steps), np.full(len(steps), np.nan)
        else:
            lo, hi = np.full(len(steps), np.nan), ev.eval_scalar(args[1], steps)
        ok = ~(hi < lo) if kind == "clamp" else np.ones(len(steps), dtype=bool)
        out = []
        for s in vec.series:
            v = s.values
            with np.errstate(all="ignore"):
                if kind != "clamp_max":
                    v = np.where(np.isnan(v), v, np.fmax(v, lo) if kind == "clamp_min" else np.maximum(v, lo))
                if kind != "clamp_min":
                    v = np.where(np.isnan(v), v, np.fmin(v, hi) if kind == "clamp_max" else np.minimum(v, hi))
            if kind == "clamp":
                # Go's math.Max/Min propagate NaN bounds
                v = np.where(np.isnan(lo) | np.isnan(hi), np.nan, v)
            p = s.present & ok
            if p.any():
                out.append(VSeries(s.labels, v, p, True))
        return Vector(out)

    return run


for _k in ("clamp", "clamp_min", "clamp_max"):
    FUNCTIONS[_k] = _clamp_impl(_k)


# --------------------------------------------------------------------------- scalars, vectors, time
@register("time")
def _time(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    return Scalar(steps / 1000.0)


@register("start")
def _start(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    return Scalar(np.full(len(steps), ev.start_ms / 1000.0))


@register("end")
def _end(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    return Scalar(np.full(len(steps), ev.end_ms / 1000.0))


@register("step")
def _step(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    return Scalar(np.full(len(steps), ev.interval_ms / 1000.0))


@register("range")
def _range(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    return Scalar(np.full(len(steps), (ev.end_ms - ev.start_ms) / 1000.0))


def _min_max_of(pick: Callable[..., Any]) -> Fn:
    def run(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
        vals = np.array([ev.eval_scalar(a, steps) for a in args])
        with np.errstate(all="ignore"):
            res = pick(vals, axis=0)  # NaN anywhere → NaN
        return Scalar(np.asarray(res, dtype=np.float64))

    return run


FUNCTIONS["min_of"] = _min_max_of(np.min)
FUNCTIONS["max_of"] = _min_max_of(np.max)


@register("pi")
def _pi(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    return Scalar(np.full(len(steps), math.pi))


@register("vector")
def _vector(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    return Vector(
        [VSeries({}, ev.eval_scalar(args[0], steps).astype(np.float64), np.ones(len(steps), dtype=bool))]
    )


@register("scalar")
def _scalar(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    vec = ev.eval_vector(args[0], steps)
    n = len(steps)
    cnt = np.zeros(n, dtype=np.int64)
    val = np.full(n, np.nan)
    for s in vec.series:
        cnt += s.present
        val = np.where(s.present, s.values, val)
    return Scalar(np.where(cnt == 1, val, np.nan))


@register("timestamp")
def _timestamp(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    vec = ev.eval_vector(args[0], steps)
    out = []
    for s in vec.series:
        ts = s.sample_ts if s.sample_ts is not None else steps
        out.append(VSeries(s.labels, ts / 1000.0, s.present, True))
    return Vector(out)


def _time_fn(extract: Callable[[datetime], float]) -> Fn:
    def run(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
        if args:
            vec = ev.eval_vector(args[0], steps)
            series = vec.series
        else:
            series = [VSeries({}, steps / 1000.0, np.ones(len(steps), dtype=bool))]
        out = []
        for s in series:
            vals = np.full(len(steps), np.nan)
            for j in np.flatnonzero(s.present):
                f = float(s.values[j])
                if math.isnan(f) or math.isinf(f):
                    vals[j] = math.nan
                    continue
                try:
                    vals[j] = extract(datetime.fromtimestamp(int(f), UTC))
                except (OverflowError, OSError, ValueError):
                    vals[j] = math.nan
            out.append(VSeries(s.labels, vals, s.present, True))
        return Vector(out)

    return run


FUNCTIONS.update(
    {
        "minute": _time_fn(lambda d: d.minute),
        "hour": _time_fn(lambda d: d.hour),
        "month": _time_fn(lambda d: d.month),
        "year": _time_fn(lambda d: d.year),
        "day_of_month": _time_fn(lambda d: d.day),
        "day_of_week": _time_fn(lambda d: (d.weekday() + 1) % 7),
        "day_of_year": _time_fn(lambda d: d.timetuple().tm_yday),
        "days_in_month": _time_fn(lambda d: calendar.monthrange(d.year, d.month)[1]),
    }
)


# --------------------------------------------------------------------------- sorting
def _sort_fn(desc: bool) -> Fn:
    def run(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
        vec = ev.eval_vector(args[0], steps)
        if len(steps) != 1:
            return vec

        def key(s: VSeries) -> tuple[int, float]:
            v = float(s.values[0])
            if math.isnan(v):
                return (1, 0.0)
            return (0, -v if desc else v)

        return Vector(sorted([s for s in vec.series if s.present[0]], key=key))

    return run


FUNCTIONS["sort"] = _sort_fn(False)
FUNCTIONS["sort_desc"] = _sort_fn(True)


def _natural_key(v: str) -> list[Any]:
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", v) if p]


def _sort_by_label(desc: bool) -> Fn:
    def run(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
        vec = ev.eval_vector(args[0], steps)
        names = [_string_arg(ev, a, steps) for a in args[1:]]

        def key(s: VSeries) -> list[Any]:
            ks = [_natural_key(s.labels.get(n, "")) for n in names]
            ks.append(sorted(s.labels.items()))  # type: ignore[arg-type]
            return ks

        return Vector(sorted(vec.series, key=key, reverse=desc))

    return run


FUNCTIONS["sort_by_label"] = _sort_by_label(False)
FUNCTIONS["sort_by_label_desc"] = _sort_by_label(True)


# --------------------------------------------------------------------------- labels
def _string_arg(ev: Evaluator, node: Any, steps: np.ndarray) -> str:
    v = ev.eval(node, steps)
    if not isinstance(v, String):
        raise PromQLError("expected string argument")
    return v.value


_GO_GROUP = re.compile(r"\$(\$|\{([^}]*)\}|([A-Za-z0-9_]+))")


def _expand(template: str, m: re.Match[str]) -> str:
    """Go ``regexp.Expand``: ``$1``, ``${1}``, ``$name``, ``${name}``, ``$$``; unknown groups expand empty."""

    def rep(g: re.Match[str]) -> str:
        if g.group(1) == "$":
            return "$"
        name = g.group(2) if g.group(2) is not None else g.group(3)
        try:
            idx: int | str = int(name)
        except ValueError:
            idx = name
        try:
            return m.group(idx) or ""
        except IndexError:
            return ""

    return _GO_GROUP.sub(rep, template)


@register("label_replace")
def _label_replace(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    vec = ev.eval_vector(args[0], steps)
    dst, repl, src, regex = (_string_arg(ev, a, steps) for a in args[1:5])
    from .regex import anchored

    try:
        rx = anchored(regex)  # RE2: Go's syntax, linear time
    except PromQLError:
        raise PromQLError(f"invalid regular expression in label_replace(): {regex}") from None
    if not LABEL_NAME_RX.match(dst):
        raise PromQLError(f"invalid destination label name in label_replace(): {dst}")
    out = []
    for s in vec.series:
        m = rx.match(s.labels.get(src, ""))
        lb = dict(s.labels)
        drop = s.drop_name
        if m is not None:
            val = _expand(repl, m)
            if val:
                lb[dst] = val
            else:
                lb.pop(dst, None)
            if dst == "__name__":
                drop = False
        out.append(VSeries(lb, s.values, s.present, drop, s.sample_ts))
    from .values import merge_series

    return Vector(merge_series(out))


@register("label_join")
def _label_join(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    vec = ev.eval_vector(args[0], steps)
    strs = [_string_arg(ev, a, steps) for a in args[1:]]
    dst, sep, srcs = strs[0], strs[1], strs[2:]
    if not LABEL_NAME_RX.match(dst):
        raise PromQLError(f"invalid destination label name in label_join(): {dst}")
    out = []
    for s in vec.series:
        lb = dict(s.labels)
        val = sep.join(s.labels.get(x, "") for x in srcs)
        if val:
            lb[dst] = val
        else:
            lb.pop(dst, None)
        drop = s.drop_name and dst != "__name__"
        out.append(VSeries(lb, s.values, s.present, drop, s.sample_ts))
    from .values import merge_series

    return Vector(merge_series(out))


def _absent_labels(node: Any) -> Labels:
    while isinstance(node, pp.ParenExpr):
        node = node.expr
    if isinstance(node, pp.MatrixSelector):
        node = node.vector_selector
    if isinstance(node, pp.SubqueryExpr):
        return {}
    if not isinstance(node, pp.VectorSelector):
        return {}
    from .syntax import to_matchers

    groups = to_matchers(node)
    if len(groups) != 1:
        return {}
    lb: Labels = {}
    seen: set[str] = set()
    dup: set[str] = set()
    for m in groups[0]:
        if m.name == "__name__":
            continue
        if m.name in seen:
            dup.add(m.name)
        seen.add(m.name)
        if m.op == "=":
            lb[m.name] = m.value
    for d in dup:
        lb.pop(d, None)
    return lb


@register("absent")
def _absent(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    vec = ev.eval_vector(args[0], steps)
    any_p = np.zeros(len(steps), dtype=bool)
    for s in vec.series:
        any_p |= s.present
    if any_p.all():
        return Vector([])
    return Vector([VSeries(_absent_labels(args[0]), np.ones(len(steps)), ~any_p)])


# --------------------------------------------------------------------------- range-vector functions
def _windows(rv: RangeVector, s: RSeries) -> tuple[np.ndarray, np.ndarray]:
    return rv.bounds(s)


def _extrapolated(kind: str) -> Fn:
    is_counter = kind in ("rate", "increase")
    is_rate = kind == "rate"

    def run(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
        rv = ev.eval_range(args[0], steps)
        out = []
        rng_s = rv.range_ms / 1000.0
        for s in rv.series:
            lo, hi = _windows(rv, s)
            cnt = hi - lo
            ok = cnt >= 2
            if not ok.any():
                continue
            ts, v = s.ts, s.vals
            loc = np.minimum(lo, len(ts) - 1)
            hic = np.clip(hi - 1, 0, len(ts) - 1)
            first_v, last_v = v[loc], v[hic]
            first_t, last_t = ts[loc], ts[hic]
            with np.errstate(all="ignore"):
                result = last_v - first_v
                if is_counter and len(v) > 1:
                    # each window adds the value before every drop inside it, in sample order
                    dropped = np.flatnonzero(v[1:] < v[:-1]) + 1
                    for c in np.flatnonzero(ok):
                        for i in dropped[(dropped > loc[c]) & (dropped <= hic[c])].tolist():
                            result[c] += v[i - 1]
                range_start = rv.ends - rv.range_ms
                dur_start = (first_t - range_start) / 1000.0
                dur_end = (rv.ends - last_t) / 1000.0
                sampled = (last_t - first_t) / 1000.0
                avg_dur = sampled / np.maximum(cnt - 1, 1)
                thr = avg_dur * 1.1
                dur_start = np.where(dur_start >= thr, avg_dur / 2, dur_start)
                if is_counter:
                    to_zero = np.where(
                        (result > 0) & (first_v >= 0),
                        sampled * (first_v / np.where(result == 0, 1, result)),
                        dur_start,
                    )
                    dur_start = np.where(to_zero < dur_start, to_zero, dur_start)
                dur_end = np.where(dur_end >= thr, avg_dur / 2, dur_end)
                factor = (sampled + dur_start + dur_end) / np.where(sampled == 0, 1, sampled)
                if is_rate:
                    factor = factor / rng_s
                result = result * factor
            out.append(VSeries(s.labels, result, ok, True))
        return Vector(out)

    return run


def _fast_extrapolated(is_counter: bool, is_rate: bool) -> Fn:
    def run(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
        rv = ev.eval_range(args[0], steps)
        if is_counter:  # rate / increase: Prometheus' PossibleNonCounterInfo
            names = {s.labels.get("__name__", "") for s in rv.series if len(s.ts)}
            for name in sorted(n for n in names if n and not n.endswith(COUNTER_SUFFIXES)):
                ev.info(
                    "metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "
                    f'"{name}"',
                    args[0],
                )
        return rangefns.extrapolated(rv, is_counter, is_rate)

    return run


FUNCTIONS["rate"] = _fast_extrapolated(True, True)
FUNCTIONS["increase"] = _fast_extrapolated(True, False)
FUNCTIONS["delta"] = _fast_extrapolated(False, False)


FUNCTIONS["irate"] = lambda ev, args, steps: rangefns.instant_delta(ev.eval_range(args[0], steps), True)
FUNCTIONS["idelta"] = lambda ev, args, steps: rangefns.instant_delta(ev.eval_range(args[0], steps), False)


def _per_window(
    f: Callable[[np.ndarray, np.ndarray, int], float | None], *, min_samples: int = 1, keep_name: bool = False
) -> Callable[[Evaluator, RangeVector], Vector]:
    """Apply ``f(ts, vals, step_index)`` to each non-empty window; ``None`` means no output sample."""

    def run(ev: Evaluator, rv: RangeVector) -> Vector:
        out = []
        for s in rv.series:
            ev.check()
            lo, hi = _windows(rv, s)
            n = len(lo)
            vals = np.zeros(n)
            ok = np.zeros(n, dtype=bool)
            for j in range(n):
                a, b = int(lo[j]), int(hi[j])
                if b - a < min_samples:
                    continue
                r = f(s.ts[a:b], s.vals[a:b], j)
                if r is None:
                    continue
                vals[j] = r
                ok[j] = True
            if ok.any():
                out.append(VSeries(s.labels, vals, ok, not keep_name or s.drop_name))
        return Vector(out)

    return run


def _range_fn(
    f: Callable[[np.ndarray, np.ndarray, int], float | None], *, min_samples: int = 1, keep_name: bool = False
) -> Fn:
    inner = _per_window(f, min_samples=min_samples, keep_name=keep_name)

    def run(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
        return inner(ev, ev.eval_range(args[0], steps))

    return run


def kahan_inc(inc: float, total: float, c: float) -> tuple[float, float]:
    """Prometheus' ``kahanSumInc`` (Neumaier variant)."""
    t = total + inc
    if math.isinf(t):
        c = 0.0
    elif abs(total) >= abs(inc):
        c += (total - t) + inc
    else:
        c += (inc - t) + total
    return t, c


def _fsum(v: np.ndarray) -> float:
    total, c = 0.0, 0.0
    for x in v.tolist():
        total, c = kahan_inc(x, total, c)
    return total + c


def _avg_ot(ts: np.ndarray, v: np.ndarray, end: int) -> float:
    total = mean = count = kc = 0.0
    incremental = False
    for f in v.tolist():
        count += 1
        if not incremental:
            ns, nc = kahan_inc(f, total, kc)
            if count == 1 or not math.isinf(ns):
                total, kc = ns, nc
                continue
            incremental = True
            mean = total / (count - 1)
            kc /= count - 1
        if math.isinf(mean):
            if math.isinf(f) and (mean > 0) == (f > 0):
                continue
            if not math.isinf(f) and not math.isnan(f):
                continue
        corrected = mean + kc
        mean, kc = kahan_inc(f / count - corrected / count, mean, kc)
    if incremental:
        return mean + kc
    return total / count + kc / count


def _min_ot(ts: np.ndarray, v: np.ndarray, end: int) -> float:
    return float(np.fmin.reduce(v))


def _max_ot(ts: np.ndarray, v: np.ndarray, end: int) -> float:
    return float(np.fmax.reduce(v))


def _var(v: np.ndarray) -> float:
    count = mean = cmean = aux = caux = 0.0
    for f in v.tolist():
        count += 1
        delta = f - (mean + cmean)
        mean, cmean = kahan_inc(delta / count, mean, cmean)
        aux, caux = kahan_inc(delta * (f - (mean + cmean)), aux, caux)
    return (aux + caux) / count


def _resets(ts: np.ndarray, v: np.ndarray, end: int) -> float:
    return float(np.count_nonzero(v[1:] < v[:-1]))


def _changes(ts: np.ndarray, v: np.ndarray, end: int) -> float:
    a, b = v[1:], v[:-1]
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return float(np.count_nonzero(~same))


def linear_regression(ts: np.ndarray, v: np.ndarray, intercept_ms: int) -> tuple[float, float]:
    if (v == v[0]).all():
        if math.isinf(float(v[0])):
            return math.nan, math.nan
        return 0.0, float(v[0])
    x = (ts - intercept_ms) / 1000.0
    n = float(len(v))
    with np.errstate(all="ignore"):
        sum_x, sum_y = _fsum(x), _fsum(v)
        sum_xy, sum_x2 = _fsum(x * v), _fsum(x * x)
        cov = sum_xy - sum_x * sum_y / n
        var = sum_x2 - sum_x * sum_x / n
        slope = cov / var if var != 0 else math.nan
        intercept = sum_y / n - slope * sum_x / n
    return slope, intercept


def _deriv(ts: np.ndarray, v: np.ndarray, end: int) -> float:
    return linear_regression(ts, v, int(ts[0]))[0]


FUNCTIONS.update(
    {
        "avg_over_time": _range_fn(_avg_ot),
        "sum_over_time": _range_fn(lambda ts, v, e: _fsum(v)),
        "count_over_time": _range_fn(lambda ts, v, e: float(len(v))),
        "min_over_time": _range_fn(_min_ot),
        "max_over_time": _range_fn(_max_ot),
        "stdvar_over_time": _range_fn(lambda ts, v, e: _var(v)),
        "stddev_over_time": _range_fn(
            lambda ts, v, e: math.sqrt(_var(v)) if not math.isnan(_var(v)) else math.nan
        ),
        "last_over_time": _range_fn(lambda ts, v, e: float(v[-1]), keep_name=True),
        "first_over_time": _range_fn(lambda ts, v, e: float(v[0]), keep_name=True),
        "present_over_time": _range_fn(lambda ts, v, e: 1.0),
        "resets": _range_fn(_resets),
        "changes": _range_fn(_changes),
        "deriv": _range_fn(_deriv, min_samples=2),
        "mad_over_time": _range_fn(
            lambda ts, v, e: math.nan if np.isnan(v).any() else quantile(0.5, np.abs(v - quantile(0.5, v)))
        ),
        "ts_of_last_over_time": _range_fn(lambda ts, v, e: float(ts[-1]) / 1000.0),
        "ts_of_first_over_time": _range_fn(lambda ts, v, e: float(ts[0]) / 1000.0),
        "ts_of_max_over_time": _range_fn(
            lambda ts, v, e: (
                float(ts[len(v) - 1 - int(np.nanargmax(v[::-1]))]) / 1000.0
                if not np.isnan(v).all()
                else float(ts[-1]) / 1000.0
            )
        ),
        "ts_of_min_over_time": _range_fn(
            lambda ts, v, e: (
                float(ts[len(v) - 1 - int(np.nanargmin(v[::-1]))]) / 1000.0
                if not np.isnan(v).all()
                else float(ts[-1]) / 1000.0
            )
        ),
    }
)


@register("quantile_over_time")
def _quantile_ot(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    q = ev.eval_scalar(args[0], steps)
    rv = ev.eval_range(args[1], steps)
    if rv.series:
        ev.check_quantiles(q, args[0])
    return rangefns.over_time(rv, "quantile", lambda ts, v, j: quantile(float(q[j]), v), param=q)


@register("predict_linear")
def _predict_linear(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    rv = ev.eval_range(args[0], steps)
    dur = ev.eval_scalar(args[1], steps)

    def f(ts: np.ndarray, v: np.ndarray, j: int) -> float:
        slope, intercept = linear_regression(ts, v, int(steps[j]))
        return slope * float(dur[j]) + intercept

    return rangefns.over_time(rv, "predict_linear", f, param=dur, steps=steps)


def _fast_over_time(kind: str, exact: Callable[[np.ndarray, np.ndarray, int], float | None]) -> Fn:
    def run(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
        return rangefns.over_time(ev.eval_range(args[0], steps), kind, exact)

    return run


for _kind, _exact in {
    "avg": _avg_ot,
    "sum": lambda ts, v, j: _fsum(v),
    "count": lambda ts, v, j: float(len(v)),
    "min": _min_ot,
    "max": _max_ot,
    "stdvar": lambda ts, v, j: _var(v),
    "stddev": lambda ts, v, j: math.sqrt(_var(v)) if not math.isnan(_var(v)) else math.nan,
    "last": lambda ts, v, j: float(v[-1]),
    "first": lambda ts, v, j: float(v[0]),
    "present": lambda ts, v, j: 1.0,
}.items():
    FUNCTIONS[f"{_kind}_over_time"] = _fast_over_time(_kind, _exact)
FUNCTIONS["deriv"] = _fast_over_time("deriv", _deriv)
FUNCTIONS["changes"] = lambda ev, args, steps: rangefns.count_pairs(ev.eval_range(args[0], steps), "changes")
FUNCTIONS["resets"] = lambda ev, args, steps: rangefns.count_pairs(ev.eval_range(args[0], steps), "resets")


@register("absent_over_time")
def _absent_over_time(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    rv = ev.eval_range(args[0], steps)
    any_p = np.zeros(len(steps), dtype=bool)
    for s in rv.series:
        lo, hi = _windows(rv, s)
        any_p |= hi > lo
    if any_p.all():
        return Vector([])
    return Vector([VSeries(_absent_labels(args[0]), np.ones(len(steps)), ~any_p)])


# --------------------------------------------------------------------------- histograms
def _coalesced(buckets: list[tuple[float, float]]) -> list[list[float]] | None:
    """Buckets sorted by bound, counts of equal bounds summed; ``None`` without a ``+Inf`` bucket."""
    buckets = sorted(buckets, key=lambda b: b[0])
    if not buckets or not math.isinf(buckets[-1][0]):
        return None
    co: list[list[float]] = []
    for le, c in buckets:
        if co and co[-1][0] == le:
            co[-1][1] += c
        else:
            co.append([le, c])
    return co


def bucket_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus' ``BucketQuantile`` over classic (le, cumulative count) buckets."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    co = _coalesced(buckets)
    if co is None:
        return math.nan
    # monotonic, ignoring tiny deltas
    prev = co[0][1]
    for i in range(1, len(co)):
        cur = co[i][1]
        if cur == prev:
            continue
        if _almost(prev, cur, 1e-12) or cur < prev:
            co[i][1] = prev
            continue
        prev = cur
    if len(co) < 2:
        return math.nan
    obs = co[-1][1]
    if obs == 0 or math.isnan(obs):
        return math.nan
    rank = q * obs
    b = len(co) - 1
    for i in range(len(co) - 1):
        if co[i][1] >= rank:
            b = i
            break
    if b == len(co) - 1:
        return co[-2][0]
    if b == 0 and co[0][0] <= 0:
        return co[0][0]
    start = 0.0
    end = co[b][0]
    count = co[b][1]
    if b > 0:
        start = co[b - 1][0]
        count -= co[b - 1][1]
        rank -= co[b - 1][1]
    return start + (end - start) * (rank / count)


def bucket_fraction(lower: float, upper: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus' ``BucketFraction``: share of observations between ``lower`` and ``upper`` (classic buckets)."""
    co = _coalesced(buckets)
    if co is None:
        return math.nan
    count = co[-1][1]
    if count == 0 or math.isnan(lower) or math.isnan(upper):
        return math.nan
    if lower >= upper:
        return 0.0
    rank = lower_rank = upper_rank = 0.0
    lower_set = upper_set = False
    for i, (ub, c) in enumerate(co):
        lb = co[i - 1][0] if i > 0 else (0.0 if ub > 0 else -math.inf)

        def interp(v: float, lb: float = lb, ub: float = ub, c: float = c, rank: float = rank) -> float:
            if math.isinf(lb):  # (-Inf, ub]: all observations sit at ub
                return c
            if math.isinf(ub):  # (lb, +Inf]: all observations sit at lb
                return rank
            return rank + (c - rank) * (v - lb) / (ub - lb)

        if not lower_set and lb >= lower:
            lower_rank, lower_set = rank, True
        if not upper_set and lb >= upper:
            upper_rank, upper_set = rank, True
        if lower_set and upper_set:
            break
        if not lower_set and lb < lower < ub:
            lower_rank, lower_set = interp(lower), True
        if not upper_set and lb < upper < ub:
            upper_rank, upper_set = interp(upper), True
        if lower_set and upper_set:
            break
        rank = c
    if not lower_set or lower_rank > count:
        lower_rank = count
    if not upper_set or upper_rank > count:
        upper_rank = count
    return (upper_rank - lower_rank) / count


@register("histogram_fraction")
def _histogram_fraction(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    lo_v = ev.eval_scalar(args[0], steps)
    hi_v = ev.eval_scalar(args[1], steps)
    vec = ev.eval_vector(args[2], steps)
    groups: dict[LabelKey, tuple[Labels, list[tuple[float, VSeries]]]] = {}
    for s in vec.series:
        le = _parse_le(s.labels.get("le", "x"))
        if le is None:
            _bad_bucket_label(ev, s, args[2])
            continue
        lb = {k: v for k, v in s.labels.items() if k != "le"}
        groups.setdefault(label_key(lb), (lb, []))[1].append((le, s))
    out = []
    for lb, members in groups.values():
        present = np.any([m.present for _, m in members], axis=0)
        vals = np.full(len(steps), np.nan)
        for j in np.flatnonzero(present):
            bks = [(le, float(m.values[j])) for le, m in members if m.present[j]]
            vals[j] = bucket_fraction(float(lo_v[j]), float(hi_v[j]), bks)
        out.append(VSeries(lb, vals, present, True))
    return Vector(out)


def _almost(a: float, b: float, eps: float) -> bool:
    if a == b:
        return True
    if math.isnan(a) or math.isnan(b):
        return False
    d = abs(a - b)
    if a == 0 or b == 0 or abs(a) + abs(b) < 2.2250738585072014e-308:
        return d < eps * 2.2250738585072014e-308
    return d / (abs(a) + abs(b)) < eps


def _bad_bucket_label(ev: Evaluator, s: VSeries, node: Any) -> None:
    """Prometheus' BadBucketLabelWarning for a bucket series without a parsable ``le``."""
    if not s.present.any():
        return
    ev.warn(
        f'bucket label "le" is missing or has a malformed value of "{s.labels.get("le", "")}" '
        f'for metric name "{s.labels.get("__name__", "")}"',
        node,
    )


def _parse_le(v: str) -> float | None:
    try:
        return float(v.strip())
    except ValueError:
        return None


@register("histogram_quantile")
def _histogram_quantile(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    q = ev.eval_scalar(args[0], steps)
    vec = ev.eval_vector(args[1], steps)
    ev.check_quantiles(q, args[0])
    n = len(steps)
    groups: dict[LabelKey, tuple[Labels, list[tuple[float, VSeries]]]] = {}
    for s in vec.series:
        le_s = s.labels.get("le")
        if le_s is None:
            _bad_bucket_label(ev, s, args[1])
            continue
        le = _parse_le(le_s)
        if le is None:
            _bad_bucket_label(ev, s, args[1])
            continue
        lb = {k: v for k, v in s.labels.items() if k != "le"}
        groups.setdefault(label_key(lb), (lb, []))[1].append((le, s))
    # per group: bucket bounds (sorted), counts and presence (buckets × steps)
    prepared = []
    for lb, members in groups.values():
        ev.check()
        les = np.array([le for le, _ in members])
        order = np.argsort(les, kind="stable")
        les = les[order]
        V = np.array([members[i][1].values for i in order]).reshape(len(members), n)
        M = np.array([members[i][1].present for i in order]).reshape(len(members), n)
        with np.errstate(all="ignore"):
            distinct = bool((np.diff(les) > 0).all())
        valid = len(les) >= 2 and np.isinf(les[-1]) and les[-1] > 0 and distinct
        prepared.append((lb, les, V, M, valid))
        if valid and len(les) > 1:
            with np.errstate(all="ignore"):
                dec = ((V[1:] < V[:-1]) & M[1:] & M[:-1]).any(axis=0) & M.all(axis=0)
            if dec.any():
                name = members[0][1].labels.get("__name__", "")
                ev.info(
                    "input to histogram_quantile needed to be fixed for monotonicity (see "
                    "https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile) "
                    f'for metric name "{name}"',
                    args[1],
                )
    # the fast path is column-wise, so groups with the same bounds are computed in one batch
    fast_vals: list[np.ndarray | None] = [None] * len(prepared)
    batches: dict[bytes, list[int]] = {}
    for gi, (_, les, _, _, valid) in enumerate(prepared):
        if valid:
            batches.setdefault(les.tobytes(), []).append(gi)
    for idxs in batches.values():
        les = prepared[idxs[0]][1]
        k = len(les)
        counts = np.stack([prepared[gi][2] for gi in idxs], axis=1).reshape(k, len(idxs) * n)
        res = _vector_bucket_quantile(np.tile(q, len(idxs)), les, counts).reshape(len(idxs), n)
        for row, gi in enumerate(idxs):
            fast_vals[gi] = res[row]
    out = []
    for gi, (lb, les, V, M, valid) in enumerate(prepared):
        present: np.ndarray = np.asarray(M.any(axis=0), dtype=bool)
        vals = np.full(n, np.nan)
        fast = M.all(axis=0) & ~np.isnan(V).any(axis=0) & (q >= 0) & (q <= 1)
        if not valid:
            fast[:] = False
        fv = fast_vals[gi]
        if fast.any() and fv is not None:
            cols = np.flatnonzero(fast)
            vals[cols] = fv[cols]
        for j in np.flatnonzero(present & ~fast):
            vals[j] = bucket_quantile(
                float(q[j]), [(les[i], float(V[i, j])) for i in range(len(les)) if M[i, j]]
            )
        out.append(VSeries(lb, vals, present, True))
    return Vector(out)


def _vector_bucket_quantile(q: np.ndarray, les: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``bucket_quantile`` for many steps at once (columns of ``counts``), when every bucket is present,
    the bounds are distinct and end with +Inf, and 0 <= q <= 1."""
    k, m = counts.shape
    c = counts.copy()
    # ensureMonotonicAndIgnoreSmallDeltas: carry the previous kept count over decreases and tiny deltas
    prev = c[0].copy()
    for i in range(1, k):
        cur = c[i]
        with np.errstate(all="ignore"):
            tiny = np.abs(cur - prev) / (np.abs(cur) + np.abs(prev)) < 1e-12
        keep_prev = (cur < prev) | ((cur != prev) & tiny & (prev != 0) & (cur != 0))
        c[i] = np.where(keep_prev, prev, cur)
        prev = c[i]
    obs = c[-1]
    rank = q * obs
    ge = c[:-1] >= rank
    b = np.where(ge.any(axis=0), ge.argmax(axis=0), k - 1)
    cols = np.arange(m)
    bm1 = np.maximum(b - 1, 0)
    start = np.where(b > 0, les[bm1], 0.0)
    end = les[np.minimum(b, k - 1)]
    below = np.where(b > 0, c[bm1, cols], 0.0)
    count = c[np.minimum(b, k - 1), cols] - below
    with np.errstate(all="ignore"):
        res = start + (end - start) * ((rank - below) / count)
    res = np.where(b == k - 1, les[k - 2], res)
    res = np.where((b == 0) & (les[0] <= 0), les[0], res)
    return np.where(obs == 0, np.nan, res)


# --------------------------------------------------------------------------- info()
INFO_IDENTIFYING = ("instance", "job")


def _reference_times(ev: Evaluator, node: Any, steps: np.ndarray) -> np.ndarray:
    """The times the base series of ``info()`` are read at: ``@`` and offsets along its first argument."""
    at: int | None = None
    offset = 0
    while True:
        while isinstance(node, pp.ParenExpr):
            node = node.expr
        if isinstance(node, pp.VectorSelector | pp.SubqueryExpr):
            if node.at is not None and at is None:
                at = ev.at_ms(node.at)
                offset = 0 if at is not None else offset
            from .syntax import td_ms

            offset += td_ms(node.offset)
            if isinstance(node, pp.VectorSelector):
                break
            node = node.expr
        elif isinstance(node, pp.MatrixSelector):
            node = node.vector_selector
        elif isinstance(node, pp.Call) and node.args:
            node = next(
                (a for a in node.args if not isinstance(a, pp.NumberLiteral | pp.StringLiteral)), None
            )
            if node is None:
                break
        elif isinstance(node, pp.AggregateExpr | pp.UnaryExpr):
            node = node.expr
        else:
            break
    base = np.full(len(steps), at, dtype=np.int64) if at is not None else steps
    return base - offset


@register("info")
def _info(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    from .rangefns import vector_lookup
    from .regex import matches as rx_matches
    from .syntax import raw_matchers

    base = ev.eval_vector(args[0], steps)
    raw: list[Any] = []
    if len(args) > 1:
        sel = args[1]
        while isinstance(sel, pp.ParenExpr):
            sel = sel.expr
        raw = raw_matchers(sel)[0]
    name_m = [m for m in raw if m.name == "__name__"]
    data_m = [m for m in raw if m.name != "__name__"]
    from ..telemetry.sources import Matcher

    if not name_m:
        name_m = [Matcher("__name__", "=", "target_info")]
    elif not any(m.op in ("=", "=~") for m in name_m):
        name_m = [*name_m, Matcher("__name__", "=~", ".+_info")]  # only negations: any *_info metric

    def ok(m: Any, value: str) -> bool:
        if m.op == "=":
            return bool(value == m.value)
        if m.op == "!=":
            return bool(value != m.value)
        return rx_matches(m.op, m.value, value)

    ref = _reference_times(ev, args[0], steps)
    n = len(steps)
    # candidate info series: the __name__ matchers plus "has the identifying labels"
    from .syntax import to_matcher

    push = [m if not hasattr(m, "op") or isinstance(m.op, str) else to_matcher(m) for m in name_m]
    cand = ev.fetch(push, int(ref.min()) - ev.lookback_ms, int(ref.max())) if n else []
    rows = vector_lookup(
        [(dict(s.labels), np.asarray(s.timestamps_ms, dtype=np.int64), np.asarray(s.values)) for s in cand],
        ref,
        ev.lookback_ms,
    )
    rows = [r for r in rows if all(ok(m, r[0].get(m.name, "")) for m in name_m)]
    rows = [r for r in rows if all(ok(m, r[0].get(m.name, "")) for m in data_m)]
    by_ident: dict[tuple[str, ...], list[tuple[Labels, np.ndarray, np.ndarray]]] = {}
    for lb, _v, present, sts in rows:
        key = tuple(lb.get(k, "") for k in INFO_IDENTIFYING)
        by_ident.setdefault(key, []).append((lb, present, sts))
    positive = any(m.op in ("=", "=~") for m in name_m)
    empty_ok = all(ok(m, "") for m in data_m)
    wanted = {m.name for m in data_m}
    out: list[VSeries] = []
    for s in base.series:
        if positive and all(ok(m, s.labels.get("__name__", "")) for m in name_m):
            out.append(s)  # info series themselves pass through
            continue
        key = tuple(s.labels.get(k, "") for k in INFO_IDENTIFYING)
        infos = by_ident.get(key, [])
        per_step: dict[tuple[tuple[str, str], ...], np.ndarray] = {}
        for j in np.flatnonzero(s.present):
            latest: dict[str, tuple[int, Labels]] = {}
            for lb, present, sts in infos:
                if present[j]:
                    nm = lb.get("__name__", "")
                    if nm not in latest or int(sts[j]) > latest[nm][0]:
                        latest[nm] = (int(sts[j]), lb)
            if not latest and not empty_ok:
                continue
            new = dict(s.labels)
            added: dict[str, str] = {}
            for _, lb in latest.values():
                for k, v in lb.items():
                    if k == "__name__" or k in INFO_IDENTIFYING and k not in wanted:
                        continue
                    if wanted and k not in wanted:
                        continue
                    if k in added and added[k] != v and k not in s.labels:
                        raise PromQLError(f"conflicting label: {k!r} has different values in info metrics")
                    added.setdefault(k, v)
                    new.setdefault(k, v)
            lk = label_key(new)
            if lk not in per_step:
                per_step[lk] = np.zeros(n, dtype=bool)
            per_step[lk][j] = True
        for lk, present in per_step.items():
            out.append(VSeries(dict(lk), s.values, present, s.drop_name, s.sample_ts))
    from .values import merge_series

    return Vector(merge_series(out))


# --------------------------------------------------------------------------- experimental extras
@register("double_exponential_smoothing")
def _double_exponential_smoothing(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    rv = ev.eval_range(args[0], steps)
    sf_v = ev.eval_scalar(args[1], steps)
    tf_v = ev.eval_scalar(args[2], steps)

    def f(ts: np.ndarray, v: np.ndarray, j: int) -> float | None:
        sf, tf = float(sf_v[j]), float(tf_v[j])
        if not 0 < sf < 1:
            raise PromQLError(f"invalid smoothing factor. Expected: 0 < sf < 1, got: {sf:f}")
        if not 0 < tf < 1:
            raise PromQLError(f"invalid trend factor. Expected: 0 < tf < 1, got: {tf:f}")
        xs = v.tolist()
        s0, s1, b = 0.0, xs[0], xs[1] - xs[0]
        for i in range(1, len(xs)):
            x = sf * xs[i]
            if i - 1 > 0:
                b = tf * (s1 - s0) + (1 - tf) * b
            y = (1 - sf) * (s1 + b)
            s0, s1 = s1, x + y
        return s1

    return _per_window(f, min_samples=2)(ev, rv)


@register("histogram_quantiles")
def _histogram_quantiles(ev: Evaluator, args: list[Any], steps: np.ndarray) -> Value:
    label = _string_arg(ev, args[1], steps)
    if not LABEL_NAME_RX.match(label):
        raise PromQLError(f"invalid quantile label name: {label!r}")
    out: list[VSeries] = []
    for qa in args[2:]:
        qv = ev.eval_scalar(qa, steps)
        res = _histogram_quantile(ev, [qa, args[0]], steps)
        assert isinstance(res, Vector)
        for s in res.series:
            if label in s.labels:
                raise PromQLError(f"label {label!r} already exists on the histogram series")
            lb = dict(s.labels)
            q0 = float(qv[0])
            lb[label] = "NaN" if math.isnan(q0) else repr(q0)
            out.append(VSeries(lb, s.values, s.present, s.drop_name))
    from .values import merge_series

    return Vector(merge_series(out))
