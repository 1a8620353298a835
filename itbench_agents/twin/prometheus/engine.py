"""PromQL evaluation over a :class:`SeriesSource`, on top of ``promql-parser``'s AST.

Semantics follow Prometheus 3: left-open selector windows ``(t - range, t]``, 5 m lookback for instant
selectors, staleness markers end a series, delayed ``__name__`` removal, ``@`` / negative ``offset``,
subqueries aligned to absolute multiples of their step. Evaluation is range-first and numpy-vectorised
per series: an instant query is a range query with one step.

    engine = Engine(source)
    engine.instant('sum by (service_name) (rate(traces_span_metrics_calls_total[5m]))', t_ms)
    engine.range(query, start_ms, end_ms, step_ms)

Errors raise :class:`PromQLError` with the API error type (``bad_data`` for parse errors, ``execution``
for evaluation errors, ``timeout`` when the query exceeds its time budget).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import promql_parser as pp

from ..telemetry.sources import Matcher, SeriesSource
from .limits import MAX_DEPTH, Budget, Locator, active, check_query, checkpoint, utf8_escapes
from .parse_errors import check_call_types
from .subquery_cache import SubqueryCache, inner_text
from .syntax import (
    ename,
    go_g,
    parse,
    raw_matchers,
    selector_ext,
    td_ms,
    to_matchers,
)
from .values import (
    NAME_LABELS,
    LabelKey,
    Labels,
    PromQLError,
    QueryResult,
    RangeVector,
    RSeries,
    Scalar,
    String,
    Value,
    Vector,
    VSeries,
    finalize_names,
    label_key,
    labels_str,
    merge_series,
    sig_str,
    stale_mask,
)

DEFAULT_LOOKBACK_MS = 300_000
DEFAULT_SUBQUERY_STEP_MS = 60_000
MAX_POINTS_PER_SERIES = 11_000

ARITH_OPS = {"+", "-", "*", "/", "%", "^", "atan2"}
CMP_OPS = {"==", "!=", ">", "<", ">=", "<="}
SET_OPS = {"and", "or", "unless"}


def arith(op: str, lv: Any, rv: Any) -> Any:
    with np.errstate(all="ignore"):
        if op == "+":
            return lv + rv
        if op == "-":
            return lv - rv
        if op == "*":
            return lv * rv
        if op == "/":
            return np.true_divide(lv, rv)
        if op == "%":
            return np.fmod(lv, rv)
        if op == "^":
            return np.power(np.asarray(lv, dtype=float), rv)
        if op == "atan2":
            return np.arctan2(lv, rv)
        if op == "==":
            return lv == rv
        if op == "!=":
            return lv != rv
        if op == ">":
            return lv > rv
        if op == "<":
            return lv < rv
        if op == ">=":
            return lv >= rv
        if op == "<=":
            return lv <= rv
    raise PromQLError(f"operator {op!r} not allowed here")


class Evaluator:
    """Evaluates one query. ``start_ms``/``end_ms`` are the query's own bounds (for ``@ start()/end()``)."""

    def __init__(
        self,
        source: SeriesSource,
        start_ms: int,
        end_ms: int,
        *,
        lookback_ms: int = DEFAULT_LOOKBACK_MS,
        subquery_step_ms: int = DEFAULT_SUBQUERY_STEP_MS,
        deadline: float | None = None,
        max_samples: int = 50_000_000,
        interval_ms: int = 0,
        lock: Any = None,
        floor_ms: int | None = None,
        yield_lock: Any = None,
        subquery_cache: SubqueryCache | None = None,
    ) -> None:
        self.source = source
        self.subquery_cache = subquery_cache
        self.start_ms = start_ms
        self.end_ms = end_ms
        self.interval_ms = interval_ms
        self.lookback_ms = lookback_ms
        self.subquery_step_ms = subquery_step_ms
        self.budget = Budget(deadline, max_samples, yield_lock)
        self.lock = lock
        self.floor_ms = floor_ms
        self.warnings: list[str] = []
        self.infos: list[str] = []
        self.query_text = ""
        self.root: Any = None
        self._locator: Locator | None = None

    # ------------------------------------------------------------------ annotations
    def _pos(self, node: Any) -> str:
        if self._locator is None:
            self._locator = Locator(self.query_text, self.root)
        return self._locator.pos(node)

    def warn(self, msg: str, node: Any) -> None:
        """A Prometheus 3 warning annotation (``PromQL warning: ... (line:col)``), once per text."""
        text = f"PromQL warning: {msg} ({self._pos(node)})"
        if text not in self.warnings:
            self.warnings.append(text)

    def info(self, msg: str, node: Any) -> None:
        text = f"PromQL info: {msg} ({self._pos(node)})"
        if text not in self.infos:
            self.infos.append(text)

    def check_quantiles(self, q: np.ndarray, node: Any) -> None:
        """Prometheus' "quantile value should be between 0 and 1" warning, per distinct value."""
        bad = np.unique(q[np.isnan(q) | (q < 0) | (q > 1)]) if len(q) else q
        for v in bad.tolist():
            self.warn(f"quantile value should be between 0 and 1, got {go_g(v)}", node)

    @property
    def deadline(self) -> float | None:
        return self.budget.deadline

    @property
    def max_samples(self) -> int:
        return self.budget.max_samples

    @property
    def samples(self) -> int:
        return self.budget.samples

    # ------------------------------------------------------------------ budget
    def check(self) -> None:
        checkpoint()  # yields to the twin's lock holders, checks the deadline of the active query
        self.budget.check()

    def charge(self, n: int) -> None:
        self.budget.charge(n)

    def fetch(
        self, matchers: list[Matcher], lo_ms: int, hi_ms: int, windows: list[tuple[int, int]] | None = None
    ) -> list[Any]:
        """``source.select`` under the data lock (when the engine has one), nothing else: the
        evaluation itself runs without it, so the twin's other APIs keep answering. Windows are
        clipped to ``floor_ms`` (no series has samples before it). With ``windows`` (disjoint,
        ascending, inside [lo_ms, hi_ms]) and a source that can (``select_windows``), only the
        samples inside them are fetched."""
        if self.floor_ms is not None and lo_ms < self.floor_ms:
            lo_ms = self.floor_ms
        if hi_ms < lo_ms:
            return []
        parts = None
        if windows is not None and hasattr(self.source, "select_windows"):
            parts = [(max(a, lo_ms), b) for a, b in windows if b >= lo_ms]
        self.check()
        with self.lock if self.lock is not None else contextlib.nullcontext():
            if parts is not None:
                res = self.source.select_windows(matchers, parts)  # type: ignore[attr-defined]
            else:
                res = self.source.select(matchers, lo_ms, hi_ms)
        self.check()
        return list(res)

    # ------------------------------------------------------------------ dispatch
    def eval(self, node: Any, steps: np.ndarray) -> Value:
        self.check()
        if isinstance(node, pp.ParenExpr):
            return self.eval(node.expr, steps)
        if isinstance(node, pp.NumberLiteral):
            return Scalar(np.full(len(steps), float(node.val)))
        if isinstance(node, pp.StringLiteral):
            return String(node.val)
        if isinstance(node, pp.VectorSelector):
            return self.vector_selector(node, steps)
        if isinstance(node, pp.MatrixSelector):
            return self.matrix_selector(node, steps)
        if isinstance(node, pp.SubqueryExpr):
            return self.subquery(node, steps)
        if isinstance(node, pp.UnaryExpr):
            return self.unary(node, steps)
        if isinstance(node, pp.BinaryExpr):
            return self.binary(node, steps)
        if isinstance(node, pp.AggregateExpr):
            from .aggregations import aggregate

            return aggregate(self, node, steps)
        if isinstance(node, pp.Call):
            from .functions import call

            return call(self, node, steps)
        raise PromQLError(f"unsupported expression {type(node).__name__}")

    def eval_vector(self, node: Any, steps: np.ndarray) -> Vector:
        v = self.eval(node, steps)
        if not isinstance(v, Vector):
            raise PromQLError(f"expected instant vector, got {type(v).__name__.lower()}")
        return v

    def eval_scalar(self, node: Any, steps: np.ndarray) -> np.ndarray:
        v = self.eval(node, steps)
        if not isinstance(v, Scalar):
            raise PromQLError(f"expected scalar, got {type(v).__name__.lower()}")
        return v.values

    def eval_range(self, node: Any, steps: np.ndarray) -> RangeVector:
        while isinstance(node, pp.ParenExpr):
            node = node.expr
        v = self.eval(node, steps)
        if not isinstance(v, RangeVector):
            raise PromQLError(f"expected range vector, got {type(v).__name__.lower()}")
        return v

    # ------------------------------------------------------------------ time helpers
    def at_ms(self, at: Any) -> int | None:
        if at is None:
            return None
        kind = ename(at.type)
        if kind == "Start":
            return self.start_ms
        if kind == "End":
            return self.end_ms
        ts = at.at.timestamp()
        return int(round(ts * 1000))

    def effective(self, at: Any, offset: timedelta | None, steps: np.ndarray) -> np.ndarray:
        fixed = self.at_ms(at)
        base = np.full(len(steps), fixed, dtype=np.int64) if fixed is not None else steps
        return base - td_ms(offset)

    def select(
        self, vs: Any, lo_ms: int, hi_ms: int, windows: list[tuple[int, int]] | None = None
    ) -> list[tuple[Labels, np.ndarray, np.ndarray]]:
        """The series ``vs`` selects with their samples in [lo_ms, hi_ms] (only those inside
        ``windows``, where given and the source can: :meth:`fetch`)."""
        from . import regex

        groups = list(zip(to_matchers(vs), raw_matchers(vs), strict=True))
        out: list[tuple[Labels, np.ndarray, np.ndarray]] = []
        seen: set[LabelKey] = set()
        for group, raw in groups:
            post = [(m.name, m.op, m.value) for m in raw if m.op in ("=~", "!~")]
            for _, _, pat in post:
                regex.anchored(pat)  # invalid → bad_data before touching the source
            push = [
                m
                for m, r in zip(group, raw, strict=True)
                if r.op in ("=", "!=") or regex.pushdown_ok(r.value)
            ]
            # the RE2 re-check depends only on the matched labels' values: once per distinct tuple
            verdicts: dict[tuple[str, ...], bool] = {}
            for s in self.fetch(push, lo_ms, hi_ms, windows):
                if post:
                    key = tuple([s.labels.get(n, "") for n, _, _ in post])
                    keep = verdicts.get(key)
                    if keep is None:
                        keep = verdicts[key] = all(
                            regex.matches(op, pat, v) for (_, op, pat), v in zip(post, key, strict=True)
                        )
                    if not keep:
                        continue
                if len(groups) > 1:  # `or` matcher sets may select a series twice
                    k = label_key(s.labels)
                    if k in seen:
                        continue
                    seen.add(k)
                ts = np.asarray(s.timestamps_ms, dtype=np.int64)
                vals = np.asarray(s.values, dtype=np.float64)
                self.charge(len(ts))
                out.append((dict(s.labels), ts, vals))
        self.check()
        return out

    # ------------------------------------------------------------------ selectors
    def vector_selector(self, node: Any, steps: np.ndarray) -> Vector:
        eff = self.effective(node.at, node.offset, steps)
        if len(eff) == 0:
            return Vector([])
        from .rangefns import vector_lookup

        if selector_ext(node) == "smoothed":
            return self._smoothed_selector(node, eff)
        lo, hi = int(eff.min()) - self.lookback_ms, int(eff.max())
        windows = self._sparse_windows(eff) if self.subquery_cache is not None else None
        rows = vector_lookup(self.select(node, lo, hi, windows), eff, self.lookback_ms)
        out = [VSeries(lb, v, ok, sample_ts=sts) for lb, v, ok, sts in rows]
        return Vector(out)

    def _sparse_windows(self, eff: np.ndarray) -> list[tuple[int, int]] | None:
        """The lookback windows of instants far apart (a week-long subquery's hourly grid), merged
        where they overlap; None where they cover over a quarter of the whole span (fetch it all).
        Rule evaluation only (engines with a subquery cache): an agent's query loads and counts
        the samples of the whole span, as before."""
        times = np.unique(eff)
        if len(times) < 2:
            return None
        windows: list[tuple[int, int]] = []
        for t in times.tolist():
            if windows and t - self.lookback_ms <= windows[-1][1]:
                windows[-1] = (windows[-1][0], t)
            else:
                windows.append((t - self.lookback_ms, t))
        covered = sum(b - a for a, b in windows)
        return windows if covered * 4 < int(times[-1]) - int(times[0]) + self.lookback_ms else None

    def _smoothed_selector(self, node: Any, eff: np.ndarray) -> Vector:
        from .extended import smoothed_instant

        out: list[VSeries] = []
        lb_ms = self.lookback_ms
        for labels, ts, vals in self.select(node, int(eff.min()) - lb_ms, int(eff.max()) + lb_ms):
            keep = ~stale_mask(vals)
            ts, vals = ts[keep], vals[keep]
            v = np.zeros(len(eff))
            ok = np.zeros(len(eff), dtype=bool)
            for j, t in enumerate(eff.tolist()):
                r = smoothed_instant(ts, vals, int(t), lb_ms) if len(ts) else None
                if r is not None:
                    v[j], ok[j] = r, True
            if ok.any():
                out.append(VSeries(labels, v, ok))
        return Vector(out)

    def matrix_selector(self, node: Any, steps: np.ndarray) -> RangeVector:
        vs = node.vector_selector
        rng = td_ms(node.range)
        eff = self.effective(vs.at, vs.offset, steps)
        out: list[RSeries] = []
        ext = selector_ext(vs)
        extra = self.lookback_ms if ext else 0
        if len(eff):
            rows = self.select(vs, int(eff.min()) - rng - extra, int(eff.max()) + extra)
            # one staleness check over all samples; only series with stale markers are filtered
            lens = [len(r[2]) for r in rows]
            stale_any = np.zeros(len(rows), dtype=bool)
            if rows and sum(lens):
                stale = stale_mask(np.concatenate([r[2] for r in rows]))
                if stale.any():
                    nz = np.flatnonzero(lens)
                    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))[nz]
                    stale_any[nz] = np.logical_or.reduceat(stale, starts)
            for (labels, ts, vals), has_stale in zip(rows, stale_any.tolist(), strict=True):
                if has_stale:
                    keep = ~stale_mask(vals)
                    ts, vals = ts[keep], vals[keep]
                if len(ts):
                    out.append(RSeries(labels, ts, vals))
        return RangeVector(out, eff, rng, ext)

    def subquery(self, node: Any, steps: np.ndarray) -> RangeVector:
        rng = td_ms(node.range)
        step = td_ms(node.step) if node.step is not None else self.subquery_step_ms
        if step <= 0:
            step = self.subquery_step_ms
        eff = self.effective(node.at, node.offset, steps)
        if len(eff) == 0:
            return RangeVector([], eff, rng)
        lo = int(eff.min()) - rng
        first = (lo // step) * step
        if first <= lo:
            first += step
        hi = int(eff.max())
        n = (hi - first) // step + 1 if hi >= first else 0
        if n > 1_000_000:
            raise PromQLError(
                "query processing would load too many samples into memory in subquery evaluation", "execution"
            )
        grid = first + step * np.arange(max(n, 0), dtype=np.int64)
        cache = self.subquery_cache
        if cache is not None:
            text = inner_text(node.expr)
            if cache.applies(text):
                series = cache.series(text, grid, lambda g: self._inner_series(node.expr, g))
                return RangeVector(series, eff, rng)
        return RangeVector(self._inner_series(node.expr, grid), eff, rng)

    def _inner_series(self, expr: Any, grid: np.ndarray) -> list[RSeries]:
        """A subquery's inner expression at the ``grid`` timestamps, as raw samples."""
        inner = self.eval(expr, grid)
        series: list[RSeries] = []
        if isinstance(inner, Scalar):
            series.append(RSeries({}, grid, inner.values))
        elif isinstance(inner, Vector):
            self.charge(sum(int(s.present.sum()) for s in inner.series))
            for s in finalize_names(inner.series):
                if s.present.any():
                    series.append(RSeries(s.labels, grid[s.present], s.values[s.present]))
        else:
            raise PromQLError("subquery is only allowed on instant vector")
        return series

    # ------------------------------------------------------------------ operators
    def unary(self, node: Any, steps: np.ndarray) -> Value:
        v = self.eval(node.expr, steps)
        if isinstance(v, Scalar):
            return Scalar(-v.values)
        if isinstance(v, Vector):
            return Vector(
                [VSeries(s.labels, -s.values, s.present, drop_name=True) for s in v.series if s.present.any()]
            )
        raise PromQLError("unary expression only allowed on expressions of type scalar or instant vector")

    def binary(self, node: Any, steps: np.ndarray) -> Value:
        op = str(node.op)
        mod = node.modifier
        return_bool = bool(mod.return_bool) if mod is not None else False
        lhs = self.eval(node.lhs, steps)
        rhs = self.eval(node.rhs, steps)
        if isinstance(lhs, Scalar) and isinstance(rhs, Scalar):
            res = arith(op, lhs.values, rhs.values)
            if op in CMP_OPS:
                return Scalar(res.astype(np.float64))
            return Scalar(np.asarray(res, dtype=np.float64))
        if isinstance(lhs, Vector) and isinstance(rhs, Scalar):
            return self._vector_scalar(op, lhs, rhs.values, swap=False, return_bool=return_bool)
        if isinstance(lhs, Scalar) and isinstance(rhs, Vector):
            return self._vector_scalar(op, rhs, lhs.values, swap=True, return_bool=return_bool)
        if isinstance(lhs, Vector) and isinstance(rhs, Vector):
            if op in SET_OPS:
                return self._set_op(op, lhs, rhs, mod)
            return self._vector_vector(op, lhs, rhs, mod, return_bool)
        raise PromQLError(f"binary expression must contain only scalar and instant vector types (op {op})")

    def _vector_scalar(
        self, op: str, vec: Vector, sc: np.ndarray, *, swap: bool, return_bool: bool
    ) -> Vector:
        out = []
        for s in vec.series:
            lv, rv = (sc, s.values) if swap else (s.values, sc)
            res = arith(op, lv, rv)
            if op in CMP_OPS:
                if return_bool:
                    out.append(VSeries(s.labels, res.astype(np.float64), s.present, drop_name=True))
                else:
                    present = s.present & res
                    if present.any():
                        out.append(VSeries(s.labels, s.values, present, s.drop_name))
            else:
                out.append(VSeries(s.labels, np.asarray(res, dtype=np.float64), s.present, drop_name=True))
        return Vector(out)

    @staticmethod
    def _signature(mod: Any) -> Callable[[Labels], LabelKey]:
        matching = mod.matching if mod is not None else None
        names = list(matching.labels) if matching is not None else []
        if matching is not None and ename(matching.type) == "Include":
            on = sorted(set(names))
            return lambda lb: tuple((k, lb.get(k, "")) for k in on)
        excl = set(names) | {"__name__"}
        return lambda lb: tuple(sorted((k, v) for k, v in lb.items() if k not in excl))

    def _set_op(self, op: str, lhs: Vector, rhs: Vector, mod: Any) -> Vector:
        sig = self._signature(mod)
        n = len(lhs.series[0].present) if lhs.series else (len(rhs.series[0].present) if rhs.series else 0)

        def any_by_sig(v: Vector) -> dict[LabelKey, np.ndarray]:
            acc: dict[LabelKey, np.ndarray] = {}
            for s in v.series:
                k = sig(s.labels)
                acc[k] = acc[k] | s.present if k in acc else s.present.copy()
            return acc

        none = np.zeros(n, dtype=bool)
        out: list[VSeries] = []
        if op == "and":
            r = any_by_sig(rhs)
            for s in lhs.series:
                p = s.present & r.get(sig(s.labels), none)
                if p.any():
                    out.append(VSeries(s.labels, s.values, p, s.drop_name, s.sample_ts))
        elif op == "unless":
            r = any_by_sig(rhs)
            for s in lhs.series:
                p = s.present & ~r.get(sig(s.labels), none)
                if p.any():
                    out.append(VSeries(s.labels, s.values, p, s.drop_name, s.sample_ts))
        else:  # or
            left = any_by_sig(lhs)
            out.extend(lhs.series)
            for s in rhs.series:
                p = s.present & ~left.get(sig(s.labels), none)
                if p.any():
                    out.append(VSeries(s.labels, s.values, p, s.drop_name, s.sample_ts))
        return Vector(out)

    def _vector_vector(self, op: str, lhs: Vector, rhs: Vector, mod: Any, return_bool: bool) -> Vector:
        card = ename(mod.card) if mod is not None and mod.card is not None else "OneToOne"
        matching = mod.matching if mod is not None else None
        on = matching is not None and ename(matching.type) == "Include"
        mlabels = list(matching.labels) if matching is not None else []
        include = list(mod.group_labels or []) if mod is not None else []
        fills = getattr(mod, "fill_values", None) if mod is not None else None
        # fill_left pads the many side (lhs unless group_right), fill_right the one side
        fill_many = fills.lhs if fills is not None else None
        fill_one = fills.rhs if fills is not None else None
        sig = self._signature(mod)
        many, one = (rhs, lhs) if card == "OneToMany" else (lhs, rhs)

        one_by_sig: dict[LabelKey, list[VSeries]] = {}
        for s in one.series:
            one_by_sig.setdefault(sig(s.labels), []).append(s)
        for k, group in one_by_sig.items():
            if len(group) > 1:
                cnt = np.sum([g.present for g in group], axis=0)
                if (cnt > 1).any():
                    side = "left" if card == "OneToMany" else "right"
                    a, b = [g for g in group if g.present[int(np.argmax(cnt > 1))]][:2]
                    raise PromQLError(
                        f"found duplicate series for the match group {sig_str(k)} on the {side} hand-side of "
                        f"the operation: [{labels_str(a.labels)}, {labels_str(b.labels)}];many-to-many matching "
                        "not allowed: matching labels must be unique on one side"
                    )
        drop = op in ARITH_OPS or return_bool
        results: list[tuple[LabelKey, LabelKey, VSeries]] = []
        matched: dict[LabelKey, np.ndarray] = {}

        def pair(
            m_lb: Labels,
            m_vals: np.ndarray,
            m_drop: bool,
            o_lb: Labels,
            o_vals: np.ndarray,
            present: np.ndarray,
            k: LabelKey,
        ) -> None:
            fl, fr = (o_vals, m_vals) if card == "OneToMany" else (m_vals, o_vals)
            res = arith(op, fl, fr)
            if op in CMP_OPS:
                if return_bool:
                    vals = res.astype(np.float64)
                else:
                    present = present & res
                    vals = fl
                    if not present.any():
                        return
            else:
                vals = np.asarray(res, dtype=np.float64)
            lb = dict(m_lb)
            if card == "OneToOne":
                if on:
                    lb = {kk: vv for kk, vv in lb.items() if kk in mlabels}
                else:
                    for kk in mlabels:
                        lb.pop(kk, None)
            for ln in include:
                if ln in o_lb:
                    lb[ln] = o_lb[ln]
                else:
                    lb.pop(ln, None)
            results.append((k, label_key(lb), VSeries(lb, vals, present, drop or m_drop)))

        n = len(many.series[0].present) if many.series else (len(one.series[0].present) if one.series else 0)
        none = np.zeros(n, dtype=bool)
        one_any: dict[LabelKey, np.ndarray] = {}
        for k, group in one_by_sig.items():
            one_any[k] = np.any([g.present for g in group], axis=0)
        many_any: dict[LabelKey, np.ndarray] = {}
        for m in many.series:
            k = sig(m.labels)
            for o in one_by_sig.get(k, ()):
                present = m.present & o.present
                if not present.any():
                    continue
                if card == "OneToOne":
                    if k in matched and (matched[k] & present).any():
                        raise PromQLError(
                            "multiple matches for labels: many-to-one matching must be explicit "
                            "(group_left/group_right)"
                        )
                    matched[k] = matched[k] | present if k in matched else present
                pair(m.labels, m.values, m.drop_name, o.labels, o.values, present, k)
            if fill_one is not None:
                missing = m.present & ~one_any.get(k, none)
                if missing.any():
                    pair(m.labels, m.values, m.drop_name, {}, np.full(n, fill_one), missing, k)
            if fill_many is not None:
                many_any[k] = many_any[k] | m.present if k in many_any else m.present.copy()
        if fill_many is not None:
            for k, group in one_by_sig.items():
                for o in group:
                    missing = o.present & ~many_any.get(k, none)
                    if missing.any():
                        pair(
                            {a: b for a, b in k if b},
                            np.full(n, fill_many),
                            False,
                            o.labels,
                            o.values,
                            missing,
                            k,
                        )
        # uniqueness per match group and step
        if card == "OneToOne":
            by_sig: dict[LabelKey, list[VSeries]] = {}
            for k, _, s in results:
                by_sig.setdefault(k, []).append(s)
            for group in by_sig.values():
                if len(group) > 1 and (np.sum([g.present for g in group], axis=0) > 1).any():
                    raise PromQLError(
                        "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)"
                    )
        else:
            by_res: dict[tuple[LabelKey, LabelKey], list[VSeries]] = {}
            for k, rk, s in results:
                by_res.setdefault((k, rk), []).append(s)
            for group in by_res.values():
                if len(group) > 1 and (np.sum([g.present for g in group], axis=0) > 1).any():
                    raise PromQLError(
                        "multiple matches for labels: grouping labels must ensure unique matches"
                    )
        return Vector(merge_series([s for _, _, s in results]))


class Engine:
    """Runs PromQL queries against a series source (the twin's ``metrics`` or any test source)."""

    def __init__(
        self,
        source: SeriesSource,
        *,
        lookback_ms: int = DEFAULT_LOOKBACK_MS,
        subquery_step_ms: int = DEFAULT_SUBQUERY_STEP_MS,
        timeout_s: float | None = 20.0,
        max_samples: int = 50_000_000,
        lock: Any = None,
        floor_ms: int | None = None,
        yield_lock: Any = None,
        subquery_cache: SubqueryCache | None = None,
    ) -> None:
        """``lock`` (e.g. the twin's) is held around each ``source.select`` only; ``floor_ms``
        is the earliest time any series has samples (selects are clipped to it); while another
        thread holds ``yield_lock`` the evaluation pauses at its checkpoints (so a Kubernetes
        request is not slowed down by a heavy query competing for the GIL); ``subquery_cache``
        (the alert engine's) keeps subqueries' inner results between queries."""
        self.subquery_cache = subquery_cache
        self.source = source
        self.lookback_ms = lookback_ms
        self.subquery_step_ms = subquery_step_ms
        self.timeout_s = timeout_s
        self.max_samples = max_samples
        self.lock = lock
        self.floor_ms = floor_ms
        self.yield_lock = yield_lock
        self.deadline: float | None = None  # of the latest query (monotonic), for serialising it

    def _evaluator(self, start_ms: int, end_ms: int, interval_ms: int) -> Evaluator:
        deadline = time.monotonic() + self.timeout_s if self.timeout_s else None
        self.deadline = deadline
        return Evaluator(
            self.source,
            start_ms,
            end_ms,
            lookback_ms=self.lookback_ms,
            subquery_step_ms=self.subquery_step_ms,
            deadline=deadline,
            max_samples=self.max_samples,
            interval_ms=interval_ms,
            lock=self.lock,
            floor_ms=self.floor_ms,
            yield_lock=self.yield_lock,
            subquery_cache=self.subquery_cache,
        )

    def instant(self, query: str, t_ms: int) -> QueryResult:
        return _as_promql_error(self._instant, query, t_ms)

    def range(self, query: str, start_ms: int, end_ms: int, step_ms: int) -> QueryResult:
        return _as_promql_error(self._range, query, start_ms, end_ms, step_ms)

    def _instant(self, query: str, t_ms: int) -> QueryResult:
        from .durations import rewrite
        from .extended import mark, mark_info

        check_query(query)
        text = mark_info(mark(_rewritten(rewrite, query)))
        node = parse(text)
        check_call_types(utf8_escapes(text), node)
        ev = self._evaluator(t_ms, t_ms, 0)
        ev.query_text, ev.root = utf8_escapes(text), node
        steps = np.array([t_ms], dtype=np.int64)
        with active(ev.budget):
            v = ev.eval(node, steps)
            res = self._instant_result(v, t_ms)
        res.warnings, res.infos = ev.warnings, ev.infos
        return res

    def _range(self, query: str, start_ms: int, end_ms: int, step_ms: int) -> QueryResult:
        if step_ms <= 0:
            raise PromQLError(
                'invalid parameter "step": zero or negative query resolution step widths are not accepted. '
                "Try a positive integer",
                "bad_data",
            )
        if end_ms < start_ms:
            raise PromQLError(
                'invalid parameter "end": end timestamp must not be before start time', "bad_data"
            )
        if (end_ms - start_ms) // step_ms > MAX_POINTS_PER_SERIES:
            raise PromQLError(
                "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
                "resolution (?step=XX)",
                "bad_data",
            )
        from .durations import rewrite
        from .extended import mark, mark_info

        check_query(query)
        text = mark_info(mark(_rewritten(rewrite, query, step_ms / 1000.0, (end_ms - start_ms) / 1000.0)))
        node = parse(text)
        check_call_types(utf8_escapes(text), node)
        ev = self._evaluator(start_ms, end_ms, step_ms)
        ev.query_text, ev.root = utf8_escapes(text), node
        steps = start_ms + step_ms * np.arange((end_ms - start_ms) // step_ms + 1, dtype=np.int64)
        with active(ev.budget):
            return self._range_result(ev, node, steps)

    def _range_result(self, ev: Evaluator, node: Any, steps: np.ndarray) -> QueryResult:
        v = ev.eval(node, steps)
        if isinstance(v, RangeVector | String):
            raise PromQLError(
                f'invalid expression type "{"range vector" if isinstance(v, RangeVector) else "string"}" '
                "for range query, must be Scalar or instant Vector",
                "bad_data",
            )
        if isinstance(v, Scalar):
            series = [VSeries({}, v.values, np.ones(len(steps), dtype=bool))]
        else:
            series = finalize_names(v.series)
        matrix = []
        for s in series:
            if s.present.any():
                matrix.append((s.labels, steps[s.present], s.values[s.present]))
        matrix.sort(key=lambda m: _sort_key(m[0]))
        return QueryResult("matrix", matrix=matrix, warnings=ev.warnings, infos=ev.infos)

    @staticmethod
    def _instant_result(v: Value, t_ms: int) -> QueryResult:
        if isinstance(v, Scalar):
            return QueryResult("scalar", scalar=(t_ms, float(v.values[0])))
        if isinstance(v, String):
            return QueryResult("string", string=(t_ms, v.value))
        if isinstance(v, RangeVector):
            matrix = []
            for s in v.series:
                lo, hi = v.bounds(s)
                a, b = int(lo[0]), int(hi[0])
                if b > a:
                    lb = s.labels
                    if s.drop_name and "__name__" in lb:
                        lb = {k: x for k, x in lb.items() if k not in NAME_LABELS}
                    matrix.append((lb, s.ts[a:b], s.vals[a:b]))
            keys = [label_key(m[0]) for m in matrix]
            if len(set(keys)) != len(keys):
                raise PromQLError("vector cannot contain metrics with the same labelset")
            matrix.sort(key=lambda m: _sort_key(m[0]))
            return QueryResult("matrix", matrix=matrix)
        series = finalize_names(v.series)
        return QueryResult(
            "vector", vector=[(s.labels, t_ms, float(s.values[0])) for s in series if s.present[0]]
        )


def _rewritten(rewrite: Callable[..., str], query: str, *args: float) -> str:
    """``rewrite(query, *args)`` (duration expressions); its syntax errors get Prometheus' wording."""
    try:
        return rewrite(query, *args)
    except PromQLError as exc:
        if exc.error_type != "bad_data" or not exc.message.startswith("1:1: parse error: "):
            raise
        from .parse_errors import translate

        msg = translate(query, exc.message.removeprefix("1:1: parse error: "))
        raise PromQLError(msg, "bad_data") from None


def _sort_key(labels: Labels) -> list[tuple[str, str]]:
    return sorted(labels.items())


def _as_promql_error(fn: Callable[..., QueryResult], *args: Any) -> QueryResult:
    """``fn(*args)`` with Python's own failures turned into Prometheus-style errors."""
    try:
        return fn(*args)
    except RecursionError:
        raise PromQLError(
            f'invalid parameter "query": 1:1: parse error: the expression nests more than '
            f"{MAX_DEPTH} levels deep",
            "bad_data",
        ) from None
    except (OverflowError, ValueError, MemoryError) as exc:  # e.g. `x @ 1e300`: out-of-range times
        raise PromQLError(f"query evaluation failed: value out of range ({exc})") from None
