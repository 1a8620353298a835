"""Extended range selectors (experimental in Prometheus 3): ``x[5m] anchored`` and ``x[5m] smoothed``,
plus ``x smoothed`` on instant selectors.

- ``anchored``: the window's samples plus the last sample at or before the window start (within the
  lookback delta); no extrapolation. Allowed with changes, delta, increase, rate, resets.
- ``smoothed``: values at the window boundaries are interpolated linearly between neighbouring samples
  (counter resets respected for rate/increase); no extrapolation. Allowed with delta, increase, rate.
  On an instant selector the value at ``t`` is interpolated between the samples around ``t``.

``promql-parser`` cannot read the keywords, so :func:`mark` rewrites the query before parsing: the
keyword is removed and the selector gets an internal matcher ``__ext__="anchored"`` that
:func:`split_ext` takes out again.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

EXT_LABEL = "__ext__"
ANCHORED_OK = ("changes", "delta", "increase", "rate", "resets")
SMOOTHED_OK = ("delta", "increase", "rate")

_KEYWORD = re.compile(r"\b(anchored|smoothed)\b")
_TAIL_PATTERNS = [
    re.compile(r"\[[^\[\]]*\]\s*$"),
    re.compile(r"offset\s+[-+]?\s*[0-9a-zA-Z.]+\s*$", re.IGNORECASE),
    re.compile(r"@\s*(start\(\s*\)|end\(\s*\)|[-+]?[0-9.eE+]+)\s*$"),
]


def _outside_strings(q: str) -> list[bool]:
    mask = []
    quote = ""
    esc = False
    for c in q:
        if quote:
            mask.append(False)
            if esc:
                esc = False
            elif c == "\\" and quote != "`":
                esc = True
            elif c == quote:
                quote = ""
        elif c in "\"'`":
            quote = c
            mask.append(False)
        else:
            mask.append(True)
    return mask


def mark(query: str) -> str:
    """Move ``anchored``/``smoothed`` keywords into an internal matcher of their selector."""
    if "anchored" not in query and "smoothed" not in query:
        return query
    out = query
    while True:
        outside = _outside_strings(out)
        m = next((m for m in _KEYWORD.finditer(out) if outside[m.start()]), None)
        if m is None:
            return out
        head, tail = out[: m.start()].rstrip(), out[m.end() :]
        end = len(head.rstrip())
        changed = True
        while changed:
            changed = False
            for p in _TAIL_PATTERNS:
                pm = p.search(head[:end])
                if pm:
                    end = len(head[: pm.start()].rstrip())
                    changed = True
        marker = f'{EXT_LABEL}="{m.group(1)}"'
        if end > 0 and head[end - 1] == "}":
            inner = head[: end - 1].rstrip()
            sep = "" if inner.endswith("{") else ","
            head = head[: end - 1] + sep + marker + head[end - 1 :]
        elif end > 0 and (head[end - 1].isalnum() or head[end - 1] in "_:"):
            head = head[:end] + "{" + marker + "}" + head[end:]
        else:
            return out  # not after a selector: let the parser report it
        out = head + tail


INFO_MARK = "__info_selector__"


def mark_info(query: str) -> str:
    """Prometheus lets ``info()``'s data-label selector match the empty string (``{data=~".*"}``),
    which the parser refuses; give such selectors an internal non-empty matcher that info() drops."""
    if "info" not in query:
        return query
    outside = _outside_strings(query)
    out = query
    for m in reversed(list(re.finditer(r"\binfo\s*\(", query))):
        if not outside[m.start()]:
            continue
        depth, i = 0, m.end() - 1
        comma = -1
        while i < len(out):
            c = out[i]
            if outside[i] if i < len(outside) else True:
                if c in "([{":
                    depth += 1
                elif c in ")]}":
                    depth -= 1
                    if depth == 0:
                        break
                elif c == "," and depth == 1 and comma < 0:
                    comma = i
            i += 1
        if comma < 0:
            continue
        j = comma + 1
        while j < len(out) and out[j].isspace():
            j += 1
        if j < len(out) and out[j] == "{":
            out = out[: j + 1] + f'{INFO_MARK}="1",' + out[j + 1 :]
    return out


def split_ext(matchers: list[Any]) -> tuple[list[Any], str | None]:
    """(matchers without the internal marker, the modifier or None)."""
    ext = None
    keep = []
    for m in matchers:
        if m.name == INFO_MARK:
            continue
        if m.name == EXT_LABEL:
            ext = m.value
        else:
            keep.append(m)
    return keep, ext


# --------------------------------------------------------------------------- evaluation
def _increase_points(vals: list[float], counter: bool) -> float:
    total = 0.0
    for a, b in zip(vals, vals[1:], strict=False):
        total += (b if b < a else b - a) if counter else b - a
    return total


def anchored(
    kind: str, ts: np.ndarray, vals: np.ndarray, start: int, end: int, lookback: int
) -> float | None:
    lo = int(np.searchsorted(ts, start, side="right"))
    hi = int(np.searchsorted(ts, end, side="right"))
    if hi <= lo:
        return None
    pts = vals[lo:hi].tolist()
    if lo > 0 and ts[lo - 1] > start - lookback:
        pts.insert(0, float(vals[lo - 1]))
    if kind in ("increase", "rate"):
        v = _increase_points(pts, True)
        return v / ((end - start) / 1000.0) if kind == "rate" else v
    if kind == "delta":
        return pts[-1] - pts[0]
    if kind == "changes":
        return float(
            sum(1 for a, b in zip(pts, pts[1:], strict=False) if not (a == b or (a != a and b != b)))
        )
    if kind == "resets":
        return float(sum(1 for a, b in zip(pts, pts[1:], strict=False) if b < a))
    raise ValueError(kind)


def smoothed(
    kind: str, ts: np.ndarray, vals: np.ndarray, start: int, end: int, lookback: int
) -> float | None:
    lo = int(np.searchsorted(ts, start, side="right"))  # first sample > start
    hi = int(np.searchsorted(ts, end, side="right"))  # first sample > end
    before = lo - 1 if lo > 0 and ts[lo - 1] > start - lookback else None
    after = hi if hi < len(ts) and ts[hi] - end <= lookback else None
    if hi <= lo and (before is None or after is None):
        return None
    idx = (
        ([before] if before is not None else [])
        + list(range(lo, hi))
        + ([after] if after is not None else [])
    )
    t = [int(ts[i]) for i in idx]
    v = [float(vals[i]) for i in idx]
    counter = kind in ("increase", "rate")
    if counter:
        total = 0.0
        for k in range(len(t) - 1):
            ta, tb, va, vb = t[k], t[k + 1], v[k], v[k + 1]
            inc = vb if vb < va else vb - va
            a, b = max(ta, start), min(tb, end)
            if b > a and tb > ta:
                total += inc * (b - a) / (tb - ta)
        return total / ((end - start) / 1000.0) if kind == "rate" else total
    return _interp(t, v, end) - _interp(t, v, start)


def _interp(t: list[int], v: list[float], at: int) -> float:
    if at <= t[0]:
        return v[0]
    if at >= t[-1]:
        return v[-1]
    k = int(np.searchsorted(np.asarray(t), at, side="right")) - 1
    ta, tb = t[k], t[k + 1]
    return v[k] + (v[k + 1] - v[k]) * (at - ta) / (tb - ta)


def smoothed_instant(ts: np.ndarray, vals: np.ndarray, at: int, lookback: int) -> float | None:
    """Value of a ``smoothed`` instant selector at ``at``."""
    k = int(np.searchsorted(ts, at, side="right")) - 1
    if k < 0 or ts[k] <= at - lookback:
        return None
    if ts[k] == at or k + 1 >= len(ts) or ts[k + 1] - at > lookback:
        return float(vals[k])
    ta, tb = int(ts[k]), int(ts[k + 1])
    return float(vals[k] + (vals[k + 1] - vals[k]) * (at - ta) / (tb - ta))
