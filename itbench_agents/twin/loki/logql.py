"""The LogQL engine: evaluates parsed queries against a :class:`LogSource`.

- Log queries return streams: entries in ``[start, end)``, the first ``limit`` in ``direction``
  order across all streams, split into streams by their labels after the pipeline.
- Metric queries are evaluated on a step grid (``start, start+step, ... <= end``); range
  aggregations see the entries in ``(t - range - offset, t - offset]``, and a series has a point only
  where its window holds samples (Loki omits empty windows). Values are kept as numpy arrays with a
  presence mask per series.
"""

from __future__ import annotations

import heapq
import math
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..telemetry.sources import LogSource, LogStream, Matcher
from .nodes import (
    BinOp,
    Expr,
    Grouping,
    LabelReplace,
    Literal_,
    LogQuery,
    MetricExpr,
    RangeAgg,
    VectorAgg,
    VectorLit,
)
from .parser import parse_logql
from .pipeline import ERROR, Pipeline, eval_pred
from .regex import matches_label, pushdown_ok
from .units import parse_bytes, parse_go_duration

LabelKey = tuple[tuple[str, str], ...]


class QueryError(Exception):
    """A query that parses but cannot be answered (pipeline errors, limits); a 400 in Loki."""


class QueryTimeout(QueryError):
    pass


def select_streams(
    source: LogSource,
    matchers: Sequence[Matcher],
    start_ns: int,
    end_ns: int,
    check: Callable[[], None] | None = None,
) -> list[LogStream]:
    """``source.streams`` with regex matchers applied here, with RE2.

    Sources match selectors with Python's backtracking ``re``; a pattern that could take exponential
    time there is not handed to the source (it then returns a superset) but applied here in linear time.
    ``check`` (the query's deadline check) runs between the chunks of a source that reads long
    windows in chunks (``reads_in_chunks``).
    """
    for_source = [m for m in matchers if m.op in ("=", "!=") or pushdown_ok(m.value)]
    regexes = [m for m in matchers if m.op in ("=~", "!~")]
    if check is not None and getattr(source, "reads_in_chunks", False):
        streams = source.streams(for_source, start_ns, end_ns, check=check)  # type: ignore[call-arg]
    else:
        streams = source.streams(for_source, start_ns, end_ns)
    if not regexes:
        return streams
    return [
        st for st in streams if all(matches_label(m.op, m.value, st.labels.get(m.name, "")) for m in regexes)
    ]


def label_key(labels: dict[str, str]) -> LabelKey:
    return tuple(sorted(labels.items()))


def labels_string(labels: dict[str, str]) -> str:
    """Prometheus' ``{a="b", c="d"}`` rendering (used in pipeline errors and for ordering)."""
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return "{" + inner + "}"


def pipeline_error(labels: dict[str, str]) -> QueryError:
    err = labels.get(ERROR, "")
    return QueryError(
        f"pipeline error: '{err}' for series: '{labels_string(labels)}'.\n"
        f'Use a label filter to intentionally skip this error. (e.g | __error__!="{err}").\n'
        'To skip all potential errors you can match empty errors.(e.g __error__="")\n'
        'The label filter can also be specified after unwrap. (e.g | unwrap latency | __error__="" )\n'
    )


@dataclass
class Stats:
    lines: int = 0
    bytes: int = 0
    returned: int = 0
    post_filter_lines: int = 0


@dataclass
class StreamsResult:
    streams: list[LogStream]
    stats: Stats


@dataclass
class Series:
    labels: dict[str, str]
    values: np.ndarray  # float64, one per step
    present: np.ndarray  # bool, one per step


@dataclass
class Vec:
    series: list[Series]


@dataclass
class Scalar:
    values: np.ndarray


@dataclass
class MetricResult:
    steps_ns: np.ndarray
    value: Vec | Scalar
    stats: Stats = field(default_factory=Stats)


DEADLINE_EXCEEDED = (  # Loki 3's ErrDeadlineExceeded (pkg/util/server), answered with 504
    "request timed out, decrease the duration of the request or add more label matchers (prefer exact match "
    "over regex match) to reduce the amount of data processed"
)


@dataclass
class Limits:
    max_series: int = 500  # limits_config.max_query_series (the answer)
    max_cells: int = 10_000_000  # series x steps inside a query: bounds the twin's memory
    deadline_s: float = 30.0  # bounded cost: a query never holds the twin longer than this


# Range aggregations whose ``sum`` over series equals the aggregation over the merged samples:
# ``sum by (g) (count_over_time(...))`` is computed per group directly (no per-line series).
_ADDITIVE = frozenset({"count_over_time", "rate", "bytes_over_time", "bytes_rate", "sum_over_time"})
_COUNTING = frozenset({"count_over_time", "rate", "bytes_over_time", "bytes_rate"})


class Engine:
    """Evaluates LogQL over one log source."""

    def __init__(self, source: LogSource, limits: Limits | None = None) -> None:
        self.source = source
        self.limits = limits or Limits()
        self._deadline = math.inf

    # ----------------------------------------------------------------- entry points
    def parse(self, query: str) -> Expr:
        return parse_logql(query)

    def select_logs(
        self, expr: LogQuery, start_ns: int, end_ns: int, limit: int, direction: str = "backward"
    ) -> StreamsResult:
        self._deadline = time.monotonic() + self.limits.deadline_s
        stats = Stats()
        streams = select_streams(self.source, expr.matchers, start_ns, end_ns, self._check_deadline)
        pipeline = Pipeline(expr.stages)
        backward = direction == "backward"
        out: dict[LabelKey, LogStream] = {}
        if limit <= 0:
            return StreamsResult([], stats)
        for n, (ts, line, base) in enumerate(_merge(streams, start_ns, end_ns, backward)):
            if n & 0xFFF == 0:
                self._check_deadline()
            stats.lines += 1
            stats.bytes += len(line)
            res = pipeline.process(ts, line, base)
            if res is None:
                continue
            new_line, labels = res
            key = label_key(labels)
            st = out.get(key)
            if st is None:
                st = out[key] = LogStream(dict(labels), [])
            st.entries.append((ts, new_line))
            stats.returned += 1
            if stats.returned >= limit:
                break
        stats.post_filter_lines = stats.returned
        result = sorted(out.values(), key=lambda s: labels_string(s.labels))
        return StreamsResult(result, stats)

    def eval_metric(self, expr: MetricExpr, steps_ns: np.ndarray) -> MetricResult:
        self._deadline = time.monotonic() + self.limits.deadline_s
        stats = Stats()
        value = self._eval(expr, steps_ns, stats)
        if isinstance(value, Vec):
            value = Vec([s for s in value.series if s.present.any()])
            if len(value.series) > self.limits.max_series:
                raise QueryError(f"maximum of series ({self.limits.max_series}) reached for a single query")
        return MetricResult(steps_ns, value, stats)

    # ----------------------------------------------------------------- evaluation
    def _check_deadline(self) -> None:
        if time.monotonic() > self._deadline:
            raise QueryTimeout(DEADLINE_EXCEEDED)

    def _eval(self, e: MetricExpr, steps: np.ndarray, stats: Stats) -> Vec | Scalar:
        if isinstance(e, Literal_):
            return Scalar(np.full(len(steps), e.value, dtype=float))
        if isinstance(e, VectorLit):
            return Vec([Series({}, np.full(len(steps), e.value, dtype=float), np.ones(len(steps), bool))])
        if isinstance(e, RangeAgg):
            return self._range_agg(e, steps, stats)
        if isinstance(e, VectorAgg):
            if (
                e.op == "sum"
                and isinstance(e.inner, RangeAgg)
                and e.inner.op in _ADDITIVE
                and e.inner.grouping is None
            ):
                return self._range_agg(e.inner, steps, stats, regroup=e.grouping or Grouping(False, ()))
            inner = self._eval(e.inner, steps, stats)
            if isinstance(inner, Scalar):
                raise QueryError(f"unexpected literal for {e.op} aggregation")
            return _vector_agg(e, inner, len(steps))
        if isinstance(e, LabelReplace):
            inner = self._eval(e.inner, steps, stats)
            if isinstance(inner, Scalar):
                raise QueryError("unexpected literal for label_replace")
            return _label_replace(e, inner)
        assert isinstance(e, BinOp)
        return _binop(e, self._eval(e.lhs, steps, stats), self._eval(e.rhs, steps, stats))

    def _range_agg(
        self, e: RangeAgg, steps: np.ndarray, stats: Stats, regroup: Grouping | None = None
    ) -> Vec:
        lr = e.range
        grouping = e.grouping if e.grouping is not None else regroup
        lo_ns = int(steps[0]) - lr.range_ns - lr.offset_ns
        hi_ns = int(steps[-1]) - lr.offset_ns
        streams = select_streams(self.source, lr.log.matchers, lo_ns + 1, hi_ns + 1, self._check_deadline)
        pipeline = Pipeline(lr.log.stages)
        samples: dict[LabelKey, tuple[dict[str, str], list[int], list[float]]] = {}
        unwrap = lr.unwrap
        op = e.op
        max_series = max(self.limits.max_cells // len(steps), 1)
        n = 0

        def slot_for(labels: dict[str, str]) -> tuple[dict[str, str], list[int], list[float]]:
            key = label_key(labels)
            slot = samples.get(key)
            if slot is None:
                if len(samples) >= max_series:  # refuse before the memory is spent
                    raise QueryError(
                        f"maximum of series ({max_series}) reached for a single query; "
                        "aggregate with a sum by, or reduce the label cardinality or the time range"
                    )
                slot = samples[key] = (labels, [], [])
            return slot

        if unwrap is None and pipeline.only_line_filters:  # labels stay the stream's: no per-line work
            count_bytes = op in ("bytes_over_time", "bytes_rate")
            for stream in streams:
                self._check_deadline()
                labels = {k: v for k, v in stream.labels.items() if v}
                slot = slot_for(_group_labels(labels, grouping) if grouping is not None else labels)
                for ts, line in stream.entries:
                    if ts <= lo_ns or ts > hi_ns:
                        continue
                    n += 1
                    if n & 0xFFF == 0:  # per chunk of lines, not only per stream
                        self._check_deadline()
                    stats.lines += 1
                    stats.bytes += len(line)
                    if pipeline.keep_line(line):
                        slot[1].append(ts)
                        slot[2].append(float(len(line.encode())) if count_bytes else 1.0)
            streams = []
        for stream in streams:
            for ts, line in stream.entries:
                if ts <= lo_ns or ts > hi_ns:
                    continue
                n += 1
                if n & 0xFFF == 0:
                    self._check_deadline()
                stats.lines += 1
                stats.bytes += len(line)
                res = pipeline.process(ts, line, stream.labels)
                if res is None:
                    continue
                new_line, labels = res
                if unwrap is not None:
                    raw = labels.pop(unwrap.label, None)
                    try:
                        if raw is None:
                            raise ValueError(f"label {unwrap.label!r} not found")
                        v = _unwrap_value(raw, unwrap.conv)
                    except ValueError as exc:
                        v = 0.0
                        if not labels.get(ERROR):
                            labels[ERROR] = "SampleExtractionErr"
                            labels["__error_details__"] = str(exc)
                    if not all(eval_pred(f.pred, labels) for f in unwrap.post):
                        continue
                elif op in ("bytes_over_time", "bytes_rate"):
                    v = float(len(new_line.encode()))
                else:
                    v = 1.0
                if labels.get(ERROR):
                    raise pipeline_error(labels)
                slot = slot_for(_group_labels(labels, grouping) if grouping is not None else labels)
                slot[1].append(ts)
                slot[2].append(v)
        for key in [k for k, v in samples.items() if not v[1]]:
            del samples[key]  # streams whose lines were all filtered out
        stats.post_filter_lines += sum(len(s[1]) for s in samples.values())
        ends = steps - lr.offset_ns
        starts = ends - lr.range_ns
        range_s = lr.range_ns / 1e9
        if op == "absent_over_time":
            present_any = np.zeros(len(steps), bool)
            for _, tss, _ in samples.values():
                arr = np.sort(np.asarray(tss, dtype=np.int64))
                present_any |= np.searchsorted(arr, ends, "right") > np.searchsorted(arr, starts, "right")
            lbls = {m.name: m.value for m in lr.log.matchers if m.op == "="}
            return Vec([Series(lbls, np.ones(len(steps)), ~present_any)])
        if op in _COUNTING and len(samples) > 32:
            return _counting_windows(op, list(samples.values()), steps, lr.offset_ns, lr.range_ns)
        out: list[Series] = []
        for labels, tss, vals in samples.values():
            self._check_deadline()  # per series: many series x many steps is the heavy part
            order = np.argsort(np.asarray(tss, dtype=np.int64), kind="stable")
            ts_arr = np.asarray(tss, dtype=np.int64)[order]
            v_arr = np.asarray(vals, dtype=float)[order]
            lo = np.searchsorted(ts_arr, starts, "right")
            hi = np.searchsorted(ts_arr, ends, "right")
            counts = hi - lo
            present = counts > 0
            csum = np.concatenate(([0.0], np.cumsum(v_arr)))
            sums = csum[hi] - csum[lo]
            if op == "count_over_time":
                values = counts.astype(float)
            elif op in ("rate", "bytes_rate"):
                values = sums / range_s
            elif op in ("bytes_over_time", "sum_over_time"):
                values = sums
            elif op == "avg_over_time":
                values = np.divide(sums, counts, out=np.zeros(len(steps)), where=present)
            else:
                values = np.zeros(len(steps))
                for i in np.nonzero(present)[0]:
                    values[i] = _window_fn(op, v_arr[lo[i] : hi[i]], e.param, range_s)
            out.append(Series(labels, values, present))
        return Vec(out)


def _merge(
    streams: list[LogStream], start_ns: int, end_ns: int, backward: bool
) -> Iterator[tuple[int, str, dict[str, str]]]:
    def gen(idx: int, st: LogStream) -> Iterator[tuple[int, int, int, str, dict[str, str]]]:
        entries = sorted(st.entries, key=lambda e: e[0], reverse=backward)
        for seq, (ts, line) in enumerate(entries):
            if start_ns <= ts < end_ns:
                yield (-ts if backward else ts), idx, seq, line, st.labels

    order = sorted(range(len(streams)), key=lambda i: labels_string(streams[i].labels))
    for key, _, _, line, labels in heapq.merge(*(gen(rank, streams[i]) for rank, i in enumerate(order))):
        yield (-key if backward else key), line, labels


def _counting_windows(
    op: str,
    samples: list[tuple[dict[str, str], list[int], list[float]]],
    steps: np.ndarray,
    off: int,
    rng: int,
) -> Vec:
    """count/rate/bytes for many series at once: each sample adds to the contiguous run of steps whose
    window holds it (t - off - rng < ts <= t - off), accumulated with difference arrays. Integer sums,
    so exact."""
    n = len(steps)
    lengths = np.fromiter((len(t) for _, t, _ in samples), dtype=np.int64, count=len(samples))
    sid = np.repeat(np.arange(len(samples)), lengths)
    ts = np.fromiter((x for _, t, _ in samples for x in t), dtype=np.int64, count=int(lengths.sum()))
    vals = np.fromiter((x for _, _, v in samples for x in v), dtype=float, count=int(lengths.sum()))
    start = int(steps[0])
    step = int(steps[1] - steps[0]) if n > 1 else 1
    k0 = np.maximum(-((start - ts - off) // step), 0)  # ceil((ts + off - start) / step)
    k1 = np.minimum(-((start - ts - off - rng) // step) - 1, n - 1)
    ok = k0 <= k1
    sid, k0, k1, vals = sid[ok], k0[ok], k1[ok], vals[ok]
    counts = np.zeros((len(samples), n + 1))
    np.add.at(counts, (sid, k0), 1.0)
    np.add.at(counts, (sid, k1 + 1), -1.0)
    counts = np.cumsum(counts, axis=1)[:, :n]
    if op in ("bytes_over_time", "bytes_rate"):
        sums = np.zeros((len(samples), n + 1))
        np.add.at(sums, (sid, k0), vals)
        np.add.at(sums, (sid, k1 + 1), -vals)
        values = np.cumsum(sums, axis=1)[:, :n]
    else:
        values = counts
    if op in ("rate", "bytes_rate"):
        values = values / (rng / 1e9)
    present = counts > 0.5
    return Vec([Series(labels, values[i], present[i]) for i, (labels, _, _) in enumerate(samples)])


def _unwrap_value(raw: str, conv: str) -> float:
    if conv in ("duration", "duration_seconds"):
        return parse_go_duration(raw)
    if conv == "bytes":
        return parse_bytes(raw)
    try:
        return float(raw.strip())
    except ValueError:
        raise ValueError(f'strconv.ParseFloat: parsing "{raw}": invalid syntax') from None


def _window_fn(op: str, vals: np.ndarray, param: float | None, range_s: float) -> float:
    if op == "min_over_time":
        return float(vals.min())
    if op == "max_over_time":
        return float(vals.max())
    if op == "stddev_over_time":
        return float(vals.std())
    if op == "stdvar_over_time":
        return float(vals.var())
    if op == "first_over_time":
        return float(vals[0])
    if op == "last_over_time":
        return float(vals[-1])
    if op == "quantile_over_time":
        return _quantile(param if param is not None else 0.5, vals)
    if op == "rate_counter":
        inc = 0.0
        prev = vals[0]
        for v in vals[1:]:
            inc += v - prev if v >= prev else v
            prev = v
        return inc / range_s
    raise QueryError(f"unsupported range aggregation {op}")


def _quantile(q: float, vals: np.ndarray) -> float:
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    s = np.sort(vals)
    rank = q * (len(s) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(s) - 1)
    w = rank - lo
    return float(s[lo] * (1 - w) + s[hi] * w)


def _group_labels(labels: dict[str, str], g: Grouping) -> dict[str, str]:
    if g.without:
        return {k: v for k, v in labels.items() if k not in g.labels}
    return {k: labels[k] for k in g.labels if k in labels}


def _vector_agg(e: VectorAgg, inner: Vec, n: int) -> Vec:
    if e.op in ("sort", "sort_desc"):
        return inner
    groups: dict[LabelKey, tuple[dict[str, str], list[Series]]] = {}
    for s in inner.series:
        g = _group_labels(s.labels, e.grouping) if e.grouping else {}
        slot = groups.setdefault(label_key(g), (g, []))
        slot[1].append(s)
    out: list[Series] = []
    for glabels, members in groups.values():
        vals = np.stack([m.values for m in members])
        pres = np.stack([m.present for m in members])
        cnt = pres.sum(axis=0)
        present = cnt > 0
        if e.op in ("topk", "bottomk"):
            k = int(e.param or 0)
            chosen = np.zeros_like(pres)
            for i in np.nonzero(present)[0]:
                idx = np.nonzero(pres[:, i])[0]
                col = vals[idx, i]
                order = np.argsort(-col if e.op == "topk" else col, kind="stable")[:k]
                chosen[idx[order], i] = True
            for j, m in enumerate(members):
                if chosen[j].any():
                    out.append(Series(dict(m.labels), m.values.copy(), chosen[j]))
            continue
        masked = np.where(pres, vals, 0.0)
        sums = masked.sum(axis=0)
        if e.op == "sum":
            values = sums
        elif e.op == "count":
            values = cnt.astype(float)
        elif e.op == "avg":
            values = np.divide(sums, cnt, out=np.zeros(n), where=present)
        elif e.op == "min":
            values = np.where(pres, vals, np.inf).min(axis=0)
        elif e.op == "max":
            values = np.where(pres, vals, -np.inf).max(axis=0)
        else:  # stddev / stdvar (population)
            mean = np.divide(sums, cnt, out=np.zeros(n), where=present)
            var = np.divide(
                np.where(pres, (vals - mean) ** 2, 0.0).sum(axis=0), cnt, out=np.zeros(n), where=present
            )
            values = np.sqrt(var) if e.op == "stddev" else var
        out.append(Series(glabels, values, present))
    return Vec(out)


def _label_replace(e: LabelReplace, inner: Vec) -> Vec:
    repl = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: f"\\g<{m.group(1) or m.group(2)}>", e.replacement)
    out: list[Series] = []
    for s in inner.series:
        labels = dict(s.labels)
        m = e.regex.match(labels.get(e.src, ""))
        if m:
            try:
                new = m.expand(repl)
            except Exception:  # a reference to a group the regex lacks
                new = ""
            if new:
                labels[e.dst] = new
            else:
                labels.pop(e.dst, None)
        out.append(Series(labels, s.values, s.present))
    return Vec(out)


_ARITH = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.divide,
    "%": np.fmod,
    "^": np.power,
}
_CMPS = {
    "==": np.equal,
    "!=": np.not_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "<": np.less,
    "<=": np.less_equal,
}


def _apply(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op in _ARITH:
            return np.asarray(_ARITH[op](a, b), dtype=float)
        return np.asarray(_CMPS[op](a, b), dtype=bool)


def _signature(labels: dict[str, str], e: BinOp) -> LabelKey:
    m = e.matching
    if m.on:
        return tuple((k, labels.get(k, "")) for k in sorted(m.labels))
    return tuple(sorted((k, v) for k, v in labels.items() if k not in m.labels))


def _result_labels(lhs: dict[str, str], rhs: dict[str, str], e: BinOp) -> dict[str, str]:
    m = e.matching
    if m.card == "one-to-one":
        if m.on:
            return {k: v for k, v in lhs.items() if k in m.labels}
        return {k: v for k, v in lhs.items() if k not in m.labels}
    out = dict(lhs)
    for k in m.include:
        if k in rhs:
            out[k] = rhs[k]
        else:
            out.pop(k, None)
    return out


def _binop(e: BinOp, lhs: Vec | Scalar, rhs: Vec | Scalar) -> Vec | Scalar:
    op = e.op
    if isinstance(lhs, Scalar) and isinstance(rhs, Scalar):
        r = _apply(op, lhs.values, rhs.values)
        return Scalar(r.astype(float))
    if isinstance(lhs, Scalar) or isinstance(rhs, Scalar):
        vec = rhs if isinstance(lhs, Scalar) else lhs
        sc = lhs if isinstance(lhs, Scalar) else rhs
        assert isinstance(vec, Vec) and isinstance(sc, Scalar)
        out: list[Series] = []
        for s in vec.series:
            a, b = (sc.values, s.values) if isinstance(lhs, Scalar) else (s.values, sc.values)
            r = _apply(op, a, b)
            if op in _CMPS:
                if e.return_bool:
                    out.append(Series(dict(s.labels), r.astype(float), s.present.copy()))
                else:
                    out.append(Series(dict(s.labels), s.values.copy(), s.present & r))
            else:
                out.append(Series(dict(s.labels), r, s.present.copy()))
        return Vec(out)
    assert isinstance(lhs, Vec) and isinstance(rhs, Vec)
    if op in ("and", "or", "unless"):
        return _set_op(e, lhs, rhs)
    if e.matching.card == "one-to-many":
        swapped = BinOp(op, e.rhs, e.lhs, e.return_bool, e.matching)
        return _vector_match(swapped, rhs, lhs, swap=True)
    return _vector_match(e, lhs, rhs, swap=False)


def _vector_match(e: BinOp, many: Vec, one: Vec, swap: bool) -> Vec:
    index: dict[LabelKey, Series] = {}
    for s in one.series:
        sig = _signature(s.labels, e)
        if sig in index:
            raise QueryError(
                "found duplicate series for the match group "
                f"{labels_string(dict(sig))} on the {'left' if swap else 'right'} hand-side of the operation"
            )
        index[sig] = s
    out: list[Series] = []
    seen: set[LabelKey] = set()
    for s in many.series:
        sig = _signature(s.labels, e)
        other = index.get(sig)
        if other is None:
            continue
        if e.matching.card == "one-to-one":
            if sig in seen:
                raise QueryError(
                    "found duplicate series for the match group "
                    f"{labels_string(dict(sig))} on the {'right' if swap else 'left'} hand-side of the operation"
                )
            seen.add(sig)
        a, b = (other.values, s.values) if swap else (s.values, other.values)
        present = s.present & other.present
        r = _apply(e.op, a, b)
        labels = _result_labels(s.labels, other.labels, e)
        if e.op in _CMPS:
            if e.return_bool:
                out.append(Series(labels, r.astype(float), present))
            else:
                out.append(Series(labels, s.values.copy(), present & r))
        else:
            out.append(Series(labels, r, present))
    return Vec(out)


def _set_op(e: BinOp, lhs: Vec, rhs: Vec) -> Vec:
    n = len(lhs.series[0].values) if lhs.series else (len(rhs.series[0].values) if rhs.series else 0)
    rhs_present: dict[LabelKey, np.ndarray] = {}
    for s in rhs.series:
        sig = _signature(s.labels, e)
        rhs_present[sig] = rhs_present.get(sig, np.zeros(n, bool)) | s.present
    out: list[Series] = []
    if e.op == "and":
        for s in lhs.series:
            p = rhs_present.get(_signature(s.labels, e))
            if p is not None:
                out.append(Series(dict(s.labels), s.values.copy(), s.present & p))
        return Vec(out)
    if e.op == "unless":
        for s in lhs.series:
            p = rhs_present.get(_signature(s.labels, e), np.zeros(n, bool))
            out.append(Series(dict(s.labels), s.values.copy(), s.present & ~p))
        return Vec(out)
    lhs_present: dict[LabelKey, np.ndarray] = {}
    for s in lhs.series:
        sig = _signature(s.labels, e)
        lhs_present[sig] = lhs_present.get(sig, np.zeros(n, bool)) | s.present
        out.append(Series(dict(s.labels), s.values.copy(), s.present.copy()))
    for s in rhs.series:
        p = lhs_present.get(_signature(s.labels, e), np.zeros(n, bool))
        out.append(Series(dict(s.labels), s.values.copy(), s.present & ~p))
    return Vec(out)
