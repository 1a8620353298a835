"""Value types of the PromQL evaluator and the query result shape the HTTP API serialises.

The evaluator works "range-first" like Prometheus: every expression is evaluated over all steps of
the query at once, so a series is one numpy array of values plus a presence mask over the steps.
An instant query is a range query with a single step.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Labels = dict[str, str]
LabelKey = tuple[tuple[str, str], ...]


def label_key(labels: Labels) -> LabelKey:
    return tuple(sorted(labels.items()))


def labels_str(labels: Labels) -> str:
    """Prometheus 3's ``labels.String()``: ``{__name__="x", a="1"}``, names sorted."""
    return "{" + ", ".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items())) + "}"


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class PromQLError(Exception):
    """A query error with the Prometheus API error type (bad_data → 400, execution → 422, timeout → 503)."""

    def __init__(self, message: str, error_type: str = "execution") -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type


@dataclass
class VSeries:
    """One series of an instant-vector expression, evaluated over all steps."""

    labels: Labels
    values: np.ndarray  # float64, one per step
    present: np.ndarray  # bool, one per step
    drop_name: bool = False  # delayed __name__ removal (Prometheus 3 semantics)
    sample_ts: np.ndarray | None = None  # int64 ms of the selected sample (for timestamp())


@dataclass
class Vector:
    series: list[VSeries]


@dataclass
class Scalar:
    values: np.ndarray  # float64, one per step


@dataclass
class String:
    value: str


@dataclass
class RSeries:
    """Raw samples of one series (stale markers removed) for range-vector functions."""

    labels: Labels
    ts: np.ndarray  # int64 ms
    vals: np.ndarray  # float64
    drop_name: bool = False


@dataclass
class RangeVector:
    """A range vector over all steps: per step ``i`` the window is ``(ends[i] - range_ms, ends[i]]``."""

    series: list[RSeries]
    ends: np.ndarray  # int64 ms, window end per step (after @ and offset)
    range_ms: int
    ext: str | None = (
        None  # "anchored" | "smoothed" (extended range selectors); samples then reach beyond the window
    )

    def bounds(self, s: RSeries) -> tuple[np.ndarray, np.ndarray]:
        lo = np.searchsorted(s.ts, self.ends - self.range_ms, side="right")
        hi = np.searchsorted(s.ts, self.ends, side="right")
        return lo, hi


Value = Vector | Scalar | String | RangeVector


# --------------------------------------------------------------------------- query results
ResultType = Literal["vector", "matrix", "scalar", "string"]


@dataclass
class QueryResult:
    result_type: ResultType
    vector: list[tuple[Labels, int, float]] = field(default_factory=list)
    matrix: list[tuple[Labels, np.ndarray, np.ndarray]] = field(default_factory=list)
    scalar: tuple[int, float] | None = None
    string: tuple[int, str] | None = None
    warnings: list[str] = field(default_factory=list)
    infos: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """The ``data`` object of a Prometheus ``/api/v1/query(_range)`` response."""
        if self.result_type == "vector":
            res: object = [{"metric": lb, "value": [t / 1000, fmt_float(v)]} for lb, t, v in self.vector]
        elif self.result_type == "matrix":
            res = [
                {
                    "metric": lb,
                    "values": [[int(t) / 1000, fmt_float(float(v))] for t, v in zip(ts, vs, strict=True)],
                }
                for lb, ts, vs in self.matrix
            ]
        elif self.result_type == "scalar":
            assert self.scalar is not None
            res = [self.scalar[0] / 1000, fmt_float(self.scalar[1])]
        else:
            assert self.string is not None
            res = [self.string[0] / 1000, self.string[1]]
        return {"resultType": self.result_type, "result": res}


STREAM_POINTS = 100_000
"""A matrix with this many points is sent in chunks (:func:`success_chunks`): joining and encoding
one body of a hundred megabytes holds the GIL for hundreds of milliseconds, and every endpoint of
the twin, the Kubernetes API included, would wait for it."""
CHUNK_CHARS = 1 << 16


def success_body(res: QueryResult, deadline: float | None = None) -> bytes:
    """``json.dumps({"status": "success", "data": res.to_json(), ...}, separators=(",", ":"))``,
    byte for byte, written directly (a million points in about a second instead of several) and
    checked against ``deadline`` (monotonic) series by series: 503 ``timeout`` past it."""
    return "".join(_success_parts(res, deadline)).encode()


def success_chunks(res: QueryResult, deadline: float | None = None) -> bytes | Iterator[bytes]:
    """:func:`success_body`, as an iterator of chunks when the matrix is large (every deadline
    check is done before the first chunk, so a timeout is still a clean 503)."""
    parts = _success_parts(res, deadline)
    if res.result_type != "matrix" or sum(len(ts) for _, ts, _ in res.matrix) < STREAM_POINTS:
        return "".join(parts).encode()
    return _chunked(parts)


def _chunked(parts: list[str]) -> Iterator[bytes]:
    batch: list[str] = []
    size = 0
    for p in parts:
        batch.append(p)
        size += len(p)
        if size >= CHUNK_CHARS:
            yield "".join(batch).encode()
            batch, size = [], 0
    if batch:
        yield "".join(batch).encode()


def _success_parts(res: QueryResult, deadline: float | None) -> list[str]:
    import json
    import time

    def dump(obj: object) -> str:
        return json.dumps(obj, separators=(",", ":"))

    out: list[str] = ['{"status":"success","data":']
    if res.result_type == "matrix":
        out.append('{"resultType":"matrix","result":[')
        tcache: dict[int, str] = {}  # series of a range query share their steps
        for i, (lb, ts, vs) in enumerate(res.matrix):
            if deadline is not None and i % 64 == 0 and time.monotonic() > deadline:
                raise PromQLError("query timed out in expression evaluation", "timeout")
            heads = []
            for t in ts.tolist():
                h = tcache.get(t)
                if h is None:
                    h = tcache[t] = f'[{t / 1000!r},"'
                heads.append(h)
            vals = [
                r[:-2] if r[-2:] == ".0" else (r if "e" not in r and "n" not in r else fmt_float(float(r)))
                for r in map(repr, vs.tolist())
            ]
            pts = '"],'.join(map(str.__add__, heads, vals))
            out.append(
                ("," if i else "")
                + (
                    f'{{"metric":{dump(lb)},"values":[{pts}"]]}}'
                    if heads
                    else f'{{"metric":{dump(lb)},"values":[]}}'
                )
            )
        out.append("]}")
    else:
        out.append(dump(res.to_json()))
    if res.warnings:
        out.append(',"warnings":' + dump(res.warnings))
    if res.infos:
        out.append(',"infos":' + dump(res.infos))
    out.append("}")
    return out


def fmt_float(v: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'f', -1, 64)`` as Prometheus' JSON writes sample values."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    r = repr(float(v))
    if "e" in r or "E" in r:
        return np.format_float_positional(v, trim="-")
    if r.endswith(".0"):
        return r[:-2]
    return r


def fmt_label_value(v: float) -> str:
    """Value formatting of ``count_values`` (same as the JSON sample format)."""
    return fmt_float(v)


STALE_BITS = np.uint64(0x7FF0000000000002)


def stale_mask(vals: np.ndarray) -> np.ndarray:
    """Boolean mask of the staleness markers in ``vals``."""
    return np.ascontiguousarray(vals, dtype=np.float64).view(np.uint64) == STALE_BITS


NAME_LABELS = ("__name__", "__type__", "__unit__")  # dropped together (type-and-unit labels)


def sig_str(k: LabelKey) -> str:
    """A label set as Prometheus prints a match group's signature."""
    return "{" + ", ".join(f'{a}="{b}"' for a, b in k) + "}"


def merge_series(series: Sequence[VSeries], *, final: bool = False) -> list[VSeries]:
    """Combine series with identical label sets (disjoint presence); overlap is Prometheus' duplicate error."""
    by: dict[LabelKey, VSeries] = {}
    order: list[LabelKey] = []
    for s in series:
        k = label_key(s.labels)
        cur = by.get(k)
        if cur is None:
            by[k] = s
            order.append(k)
            continue
        if (cur.present & s.present).any():
            raise PromQLError("vector cannot contain metrics with the same labelset")
        vals = np.where(s.present, s.values, cur.values)
        sts = None
        if cur.sample_ts is not None and s.sample_ts is not None:
            sts = np.where(s.present, s.sample_ts, cur.sample_ts)
        by[k] = VSeries(cur.labels, vals, cur.present | s.present, cur.drop_name and s.drop_name, sts)
    return [by[k] for k in order]


def finalize_names(series: Sequence[VSeries]) -> list[VSeries]:
    """Apply delayed ``__name__`` removal and merge the series that become identical."""
    if not any(s.drop_name for s in series):
        return merge_series(series)  # e.g. `a or b` yields one label set from both sides at different steps
    out = []
    for s in series:
        if s.drop_name and "__name__" in s.labels:
            lb = {k: v for k, v in s.labels.items() if k not in NAME_LABELS}
            out.append(VSeries(lb, s.values, s.present, False, s.sample_ts))
        else:
            out.append(VSeries(s.labels, s.values, s.present, False, s.sample_ts))
    return merge_series(out)
