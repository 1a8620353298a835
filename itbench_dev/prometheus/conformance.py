"""Runner for Prometheus' ``promqltest`` scripts (``load`` / ``clear`` / ``eval``), used by the pytest
suite and by ``python -m itbench_dev promql-conformance DIR``.

Native-histogram cases are *skipped with a reason* and counted separately; features this float
engine does not implement (start timestamps) count as failures. Annotation expectations
(``expect warn``/``info``/``no_warn``/``no_info``, ``eval_warn``/``eval_info``) are checked against
the engine's warnings and infos; the optional step-invariance re-runs are not performed (the
instant-vs-range consistency re-check is).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import promql_parser as pp

from itbench_agents.twin.prometheus.engine import Engine
from itbench_agents.twin.prometheus.memstore import MemorySeriesSource
from itbench_agents.twin.prometheus.syntax import to_matchers
from itbench_agents.twin.prometheus.values import Labels, PromQLError, QueryResult, label_key
from itbench_agents.twin.telemetry.sources import STALE_NAN, is_stale, match_all

_NUM = r"[+-]?(?:0[xX][0-9a-fA-F]+|[Ii]nf(?:inity)?|NaN|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_EXPAND = re.compile(rf"^({_NUM})(?:([+-])({_NUM}))?x(\d+)$")
_SINGLE = re.compile(rf"^{_NUM}$")
_INSTANT = re.compile(r"^eval(?:_(fail|warn|ordered|info))?\s+instant\s+(?:at\s+(.+?))?\s+(.+)$")
_RANGE = re.compile(r"^eval(?:_(fail|warn|info))?\s+range\s+from\s+(.+)\s+to\s+(.+)\s+step\s+(.+?)\s+(.+)$")
_RANGE_VEC = re.compile(r"^expect\s+range\s+vector\s+from\s+(.+)\s+to\s+(.+)\s+step\s+(.+)$")

NATIVE_ONLY_FUNCS = (
    "histogram_count",
    "histogram_sum",
    "histogram_avg",
    "histogram_stddev",
    "histogram_stdvar",
)
_NATIVE_ONLY_RX = re.compile(r"\b(" + "|".join(NATIVE_ONLY_FUNCS) + r")\s*\(")
UNSUPPORTED_FUNCS = ("start_timestamp",)
_UNSUPPORTED_RX = re.compile(r"\b(" + "|".join(UNSUPPORTED_FUNCS) + r")\s*\(")
_UNSUPPORTED_SYNTAX = re.compile(r"\b(?!x)x")  # every experimental syntax is supported now


class ScriptError(ValueError):
    pass


def parse_number(s: str) -> float:
    s = s.strip()
    try:
        return float(int(s, 0))
    except ValueError:
        pass
    low = s.lower().lstrip("+-")
    if low in ("inf", "infinity"):
        return -math.inf if s.startswith("-") else math.inf
    if low == "nan":
        return math.nan
    return float(s)


def parse_duration_ms(s: str) -> int:
    s = s.strip()
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    if re.fullmatch(r"0+[a-z]*", s) or s == "0":
        return 0
    if re.fullmatch(r"\d+", s):
        ms = int(s) * 1000
    else:
        td = pp.parse_duration(s)
        ms = (td.days * 86_400_000) + td.seconds * 1000 + td.microseconds // 1000
    return -ms if neg else ms


def split_series(line: str) -> tuple[str, str]:
    """Split a series description into (selector, values text)."""
    i = 0
    n = len(line)
    while i < n and not line[i].isspace() and line[i] != "{":
        i += 1
    if i < n and line[i] == "{":
        quote = ""
        while i < n:
            c = line[i]
            if quote:
                if c == "\\" and quote != "`":
                    i += 2
                    continue
                if c == quote:
                    quote = ""
            elif c in "\"'`":
                quote = c
            elif c == "}":
                i += 1
                break
            i += 1
    return line[:i].strip(), line[i:].strip()


def parse_labels(selector: str) -> Labels:
    if re.fullmatch(r"\{\s*\}", selector):
        return {}
    from itbench_agents.twin.prometheus.limits import utf8_escapes

    node = pp.parse(utf8_escapes(selector))  # Go reads \xHH escapes as UTF-8 bytes
    if not isinstance(node, pp.VectorSelector):
        raise ScriptError(f"not a series selector: {selector}")
    labels: Labels = {}
    if node.name:
        labels["__name__"] = node.name
    for m in node.matchers.matchers:
        labels[m.name] = m.value
    return labels


def expand_values(text: str) -> tuple[list[float | None], bool]:
    """Expand the value items. ``None`` is an omitted position. Returns (values, has_histogram)."""
    out: list[float | None] = []
    has_hist = False
    if "{{" in text:
        has_hist = True
        text = re.sub(
            r"\{\{.*?\}\}(?:[+-]\{\{.*?\}\})?(?:x(\d+))?",
            lambda m: " ".join(["H"] * (int(m.group(1) or 0) + 1)),
            text,
        )
    for item in text.split():
        if item == "H":
            out.append(None)
            continue
        if item == "_":
            out.append(None)
            continue
        m = re.fullmatch(r"_x(\d+)", item)
        if m:
            out.extend([None] * int(m.group(1)))
            continue
        if item == "stale":
            out.append(STALE_NAN)
            continue
        m = _EXPAND.fullmatch(item)
        if m:
            a = parse_number(m.group(1))
            sign, b, k = m.group(2), m.group(3), int(m.group(4))
            d = 0.0 if b is None else parse_number(b) * (-1 if sign == "-" else 1)
            # Go accumulates by repeated addition
            cur = a
            out.append(cur)
            for _ in range(k):
                cur += d
                out.append(cur)
            continue
        if _SINGLE.fullmatch(item):
            out.append(parse_number(item))
            continue
        raise ScriptError(f"bad value item {item!r}")
    return out, has_hist


# --------------------------------------------------------------------------- script model
@dataclass
class EvalCase:
    line: int
    expr: str
    instant: bool
    at_ms: int = 0
    start_ms: int = 0
    end_ms: int = 0
    step_ms: int = 0
    expect_fail: bool = False
    fail_msg: str | None = None
    fail_regex: str | None = None
    ordered: bool = False
    scalar: float | None = None
    string: str | None = None
    range_vec: tuple[int, int, int] | None = None
    series: list[tuple[Labels, list[float | None]]] = field(default_factory=list)
    has_histogram: bool = False
    start_timestamps: bool = False
    # annotation expectations: kind ("warn" | "info") -> [(mode "msg"|"regex"|"", text)]
    expect_annos: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    expect_none: set[str] = field(default_factory=set)  # "warn" / "info" given as no_warn / no_info


@dataclass
class CaseResult:
    file: str
    line: int
    expr: str
    status: str  # pass | fail | skip
    reason: str = ""


@dataclass
class FileReport:
    file: str
    results: list[CaseResult] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def passed(self) -> int:
        return self.count("pass")

    @property
    def failed(self) -> int:
        return self.count("fail")

    @property
    def skipped(self) -> int:
        return self.count("skip")

    @property
    def skipped_nh(self) -> int:
        return sum(1 for r in self.results if r.status == "skip" and r.reason.startswith("native histogram"))

    def rate(self) -> float:
        run = self.passed + self.failed
        return self.passed / run if run else 1.0


def _body(lines: list[str], i: int) -> tuple[list[str], int]:
    body = []
    while i < len(lines) and lines[i]:
        body.append(lines[i])
        i += 1
    return body, i


def _parse_eval(head: str, body: list[str], lineno: int) -> EvalCase:
    m = _INSTANT.match(head)
    if m:
        mod, at, expr = m.group(1), m.group(2), m.group(3)
        case = EvalCase(lineno, expr.strip(), True, at_ms=parse_duration_ms(at or "0"))
    else:
        m = _RANGE.match(head)
        if not m:
            raise ScriptError(f"line {lineno}: bad eval: {head}")
        mod = m.group(1)
        case = EvalCase(
            lineno,
            m.group(5).strip(),
            False,
            start_ms=parse_duration_ms(m.group(2)),
            end_ms=parse_duration_ms(m.group(3)),
            step_ms=parse_duration_ms(m.group(4)),
        )
    if mod == "fail":
        case.expect_fail = True
    elif mod == "ordered":
        case.ordered = True
    elif mod in ("warn", "info"):
        case.expect_annos.setdefault(mod, []).append(("", ""))
    for raw in body:
        line = raw.strip()
        if line.startswith("expected_fail_message "):
            case.fail_msg = line[len("expected_fail_message ") :].strip()
            continue
        if line.startswith("expected_fail_regexp "):
            case.fail_regex = line[len("expected_fail_regexp ") :].strip()
            continue
        rv = _RANGE_VEC.match(line)
        if rv:
            case.range_vec = (
                parse_duration_ms(rv.group(1)),
                parse_duration_ms(rv.group(2)),
                parse_duration_ms(rv.group(3)),
            )
            continue
        if line.startswith("expect string "):
            lit = line[len("expect string ") :].strip()
            case.string = lit[1:-1] if lit.startswith("`") else _go_unquote(lit)
            continue
        words = line.split(None, 1)
        if words and words[0] == "expect":
            rest = words[1] if len(words) > 1 else ""
            kind, _, tail = rest.partition(" ")
            if kind == "fail":
                case.expect_fail = True
                tail = tail.strip()
                if tail.startswith("msg:"):
                    case.fail_msg = tail[4:].strip()
                elif tail.startswith("regex:"):
                    case.fail_regex = tail[6:].strip()
            elif kind == "ordered":
                case.ordered = True
            elif kind in ("warn", "info"):
                tail = tail.strip()
                if tail.startswith("msg:"):
                    case.expect_annos.setdefault(kind, []).append(("msg", tail[4:].strip()))
                elif tail.startswith("regex:"):
                    case.expect_annos.setdefault(kind, []).append(("regex", tail[6:].strip()))
                else:
                    case.expect_annos.setdefault(kind, []).append(("", ""))
            elif kind in ("no_warn", "no_info"):
                case.expect_none.add(kind[3:])
            continue
        if "{{" in line:
            case.has_histogram = True
        try:
            case.scalar = parse_number(line)
            break
        except ValueError:
            pass
        sel, vals = split_series(line)
        values, hist = expand_values(vals)
        case.has_histogram |= hist
        case.series.append((parse_labels(sel), values))
    return case


def _go_unquote(lit: str) -> str:
    import ast

    try:
        return str(ast.literal_eval(lit))
    except (ValueError, SyntaxError):
        return lit.strip("\"'")


# --------------------------------------------------------------------------- comparison
def almost_equal(a: float, b: float, eps: float = 1e-6) -> bool:
    if is_stale(a) or is_stale(b):
        return is_stale(a) and is_stale(b)
    if math.isnan(a) and math.isnan(b):
        return True
    if a == b:
        return True
    absum = abs(a) + abs(b)
    diff = abs(a - b)
    if a == 0 or b == 0 or absum < 2.2250738585072014e-308:
        return diff < eps * 2.2250738585072014e-308
    return diff / absum < eps


def _compare(case: EvalCase, res: QueryResult) -> str | None:
    """None when the result matches the expectations, else a reason."""
    if case.scalar is not None:
        if res.result_type != "scalar" or res.scalar is None:
            return f"expected scalar, got {res.result_type}"
        if not almost_equal(res.scalar[1], case.scalar):
            return f"expected scalar {case.scalar}, got {res.scalar[1]}"
        return None
    if case.string is not None:
        if res.result_type != "string" or res.string is None:
            return f"expected string, got {res.result_type}"
        return (
            None
            if res.string[1] == case.string
            else f"expected string {case.string!r}, got {res.string[1]!r}"
        )
    if case.instant and case.range_vec is None:
        if res.result_type != "vector":
            return f"expected vector, got {res.result_type}"
        got = {label_key(lb): (i, v) for i, (lb, _, v) in enumerate(res.vector)}
        if len(got) != len(case.series) or len(res.vector) != len(case.series):
            return f"expected {len(case.series)} series, got {len(res.vector)}: {[lb for lb, _, _ in res.vector][:5]}"
        for idx, (lb, vals) in enumerate(case.series):
            k = label_key(lb)
            if k not in got:
                return f"missing series {lb}"
            i, v = got[k]
            if len(vals) != 1 or vals[0] is None:
                return f"expected one value for {lb}"
            if not almost_equal(v, vals[0]):
                return f"{lb}: expected {vals[0]}, got {v}"
            if case.ordered and i != idx:
                return f"{lb}: expected at position {idx}, got {i}"
        return None
    if res.result_type != "matrix":
        return f"expected matrix, got {res.result_type}"
    if case.range_vec is not None:
        start, _, step = case.range_vec
    else:
        start, step = case.start_ms, case.step_ms
    got_m = {label_key(lb): (ts, vs) for lb, ts, vs in res.matrix}
    if len(got_m) != len(case.series):
        return f"expected {len(case.series)} series, got {len(got_m)}: {[lb for lb, _, _ in res.matrix][:5]}"
    for lb, vals in case.series:
        k = label_key(lb)
        if k not in got_m:
            return f"missing series {lb}"
        ts, vs = got_m[k]
        exp = [(start + i * step, v) for i, v in enumerate(vals) if v is not None]
        if len(exp) != len(ts):
            return f"{lb}: expected {len(exp)} points, got {len(ts)}"
        for (et, ev_), t, v in zip(exp, ts.tolist(), vs.tolist(), strict=True):
            if et != t or not almost_equal(v, ev_):
                return f"{lb}: expected {ev_}@{et}, got {v}@{t}"
    return None


# --------------------------------------------------------------------------- running
def _selects_histograms(expr: str, nh: list[Labels]) -> bool:
    if not nh:
        return False
    from itbench_agents.twin.prometheus.durations import rewrite
    from itbench_agents.twin.prometheus.extended import mark

    try:
        node = pp.parse(mark(rewrite(expr)))
    except Exception:
        return False
    hit = False

    def visit(n: Any) -> bool:
        nonlocal hit
        if isinstance(n, pp.VectorSelector):
            for group in to_matchers(n):
                if any(match_all(group, lb) for lb in nh):
                    hit = True
        return True

    pp.walk(node, visit)
    return hit


def _skip_reason(case: EvalCase, nh: list[Labels]) -> str | None:
    if case.has_histogram:
        return "native histogram: expected output holds {{...}} samples"
    if _selects_histograms(case.expr, nh):
        return "native histogram: the query selects native-histogram series"
    nm = _NATIVE_ONLY_RX.search(case.expr)
    if nm:
        return f"native histogram: {nm.group(1)}() has no classic-histogram equivalent"
    m = _UNSUPPORTED_RX.search(case.expr)
    if m:
        return f"unsupported: experimental/native-histogram function {m.group(1)}()"
    m2 = _UNSUPPORTED_SYNTAX.search(case.expr)
    if m2:
        return f"unsupported: experimental syntax {m2.group(0)}"
    if case.start_timestamps:
        return "unsupported: start timestamps (@st load lines)"
    return None


def run_script(text: str, name: str = "<script>") -> FileReport:
    lines = [ln.strip() for ln in text.splitlines()]
    lines = ["" if ln.startswith("#") else ln for ln in lines]
    store = MemorySeriesSource()
    engine = Engine(store, timeout_s=30.0, max_samples=50_000_000)
    nh: list[Labels] = []
    st_loaded = False
    report = FileReport(name)
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line:
            i += 1
            continue
        lineno = i + 1
        first = line.split()[0].lower()
        if first == "clear":
            store.clear()
            nh = []
            st_loaded = False
            i += 1
            continue
        if first.startswith("load"):
            body, i = _body(lines, i + 1)
            parts = line.split()
            interval = parse_duration_ms(parts[1]) if len(parts) > 1 else 0
            with_nhcb = parts[0] == "load_with_nhcb"
            for raw in body:
                if re.search(r"@st\s", raw):
                    st_loaded = True
                    continue
                try:
                    sel, vals = split_series(raw)
                    labels = parse_labels(sel)
                    values, hist = expand_values(vals)
                except (ScriptError, ValueError) as exc:
                    report.results.append(CaseResult(name, i, raw, "skip", f"unparsable load line: {exc}"))
                    continue
                if hist:
                    nh.append(labels)
                ts = [k * interval for k, v in enumerate(values) if v is not None]
                vs = [v for v in values if v is not None]
                if vs:
                    store.add(labels, ts, vs)
                if with_nhcb:
                    base = dict(labels)
                    nm = base.get("__name__", "")
                    for suf in ("_bucket", "_count", "_sum"):
                        if nm.endswith(suf):
                            base["__name__"] = nm[: -len(suf)]
                    base.pop("le", None)
                    nh.append(base)
            continue
        if first.startswith("eval"):
            body, i = _body(lines, i + 1)
            try:
                case = _parse_eval(line, body, lineno)
            except (ScriptError, ValueError) as exc:
                report.results.append(CaseResult(name, lineno, line, "fail", f"cannot parse eval: {exc}"))
                continue
            case.start_timestamps = st_loaded or "start_timestamp" in case.expr
            report.results.append(run_case(engine, case, name, nh))
            continue
        raise ScriptError(f"{name}:{lineno}: unknown command {line!r}")
    return report


def run_case(engine: Engine, case: EvalCase, name: str, nh: list[Labels]) -> CaseResult:
    reason = _skip_reason(case, nh)
    if reason and reason.startswith("unsupported"):
        # a feature the engine lacks is a failure, not a skip (only native histograms are skipped)
        return CaseResult(name, case.line, case.expr, "fail", reason)
    if reason:
        return CaseResult(name, case.line, case.expr, "skip", reason)
    try:
        if case.instant:
            res = engine.instant(case.expr, case.at_ms)
        else:
            res = engine.range(case.expr, case.start_ms, case.end_ms, case.step_ms)
    except PromQLError as exc:
        if not case.expect_fail:
            return CaseResult(name, case.line, case.expr, "fail", f"unexpected error: {exc.message}")
        msg = exc.message
        if case.fail_msg is not None and msg.strip() != case.fail_msg.strip():
            return CaseResult(
                name, case.line, case.expr, "fail", f"error message {msg!r} != {case.fail_msg!r}"
            )
        if case.fail_regex is not None and not re.search(case.fail_regex, msg):
            return CaseResult(name, case.line, case.expr, "fail", f"error {msg!r} !~ {case.fail_regex!r}")
        return CaseResult(name, case.line, case.expr, "pass")
    except Exception as exc:  # an engine bug: report, keep running
        return CaseResult(name, case.line, case.expr, "fail", f"crash: {type(exc).__name__}: {exc}")
    if case.expect_fail:
        return CaseResult(name, case.line, case.expr, "fail", "expected an error, query succeeded")
    why = _compare(case, res)
    if why is None:
        why = check_annotations(case, res)
    if why is None:
        why = _range_consistency(engine, case)
    return CaseResult(name, case.line, case.expr, "pass" if why is None else "fail", why or "")


def check_annotations(case: EvalCase, res: QueryResult) -> str | None:
    """Upstream's rules: with ``expect warn`` lines every line must match some warning and every
    warning some line (a bare ``expect warn`` matches any); ``no_warn``: none at all; with neither,
    warnings are not checked. The same for infos."""
    for kind, got in (("warn", res.warnings), ("info", res.infos)):
        if kind in case.expect_none and got:
            return f"expected no {kind} annotations, got {got}"
        lines = case.expect_annos.get(kind)
        if not lines:
            continue
        if not got:
            return f"expected {kind} annotations, got none"

        def ok(line: tuple[str, str], text: str) -> bool:
            mode, want = line
            if mode == "msg":
                return text.strip() == want
            if mode == "regex":
                return re.search(want, text) is not None
            return True

        for line in lines:
            if not any(ok(line, g) for g in got):
                return f"no {kind} annotation matches {line[1]!r}: got {got}"
        for g in got:
            if not any(ok(line, g) for line in lines):
                return f"unexpected {kind} annotation {g!r}"
    return None


def _range_consistency(engine: Engine, case: EvalCase) -> str | None:
    """Upstream's extra check: an instant eval must give the same answer as the sample at ``t`` of a
    range query from t-1m to t+1m (step 1m). Skipped like upstream for ordered/string/range-vector
    expectations and for start()/end()/range()/step()."""
    if not case.instant or case.ordered or case.range_vec is not None or case.string is not None:
        return None
    if re.search(r"\b(start|end|range|step)\s*\(\s*\)", case.expr, re.IGNORECASE):
        return None
    t = case.at_ms
    try:
        res = engine.range(case.expr, t - 60_000, t + 60_000, 60_000)
    except PromQLError as exc:
        return f"range-query consistency: the range query failed: {exc.message}"
    if case.scalar is not None:
        vals = [vs[ts.tolist().index(t)] for lb, ts, vs in res.matrix if t in ts.tolist()]
        if len(vals) != 1 or not almost_equal(float(vals[0]), case.scalar):
            return f"range-query consistency: expected scalar {case.scalar} at t, got {vals}"
        return None
    got = {label_key(lb): float(vs[ts.tolist().index(t)]) for lb, ts, vs in res.matrix if t in ts.tolist()}
    want = {label_key(lb): vals[0] for lb, vals in case.series}
    if set(got) != set(want):
        return f"range-query consistency: series at t differ: {sorted(set(got) ^ set(want))[:3]}"
    for k, v in want.items():
        if v is None or not almost_equal(got[k], v):
            return f"range-query consistency: {dict(k)} expected {v}, got {got[k]}"
    return None


def run_file(path: Path) -> FileReport:
    return run_script(path.read_text(encoding="utf-8"), path.name)


def run_dir(folder: Path) -> list[FileReport]:
    return [run_file(p) for p in sorted(Path(folder).glob("*.test"))]


def summary(reports: list[FileReport]) -> dict[str, float]:
    passed = sum(r.passed for r in reports)
    failed = sum(r.failed for r in reports)
    skipped = sum(r.skipped for r in reports)
    skipped_nh = sum(r.skipped_nh for r in reports)
    non_nh = passed + failed + (skipped - skipped_nh)
    return {
        "passed": passed,
        "failed": failed,
        "skipped": skipped,
        "skipped_native_histogram": skipped_nh,
        "skipped_unsupported": skipped - skipped_nh,
        "rate_run": passed / (passed + failed) if passed + failed else 1.0,
        "rate_non_nh": passed / non_nh if non_nh else 1.0,
    }


def skip_reasons(reports: list[FileReport]) -> Counter[str]:
    return Counter(
        r.reason.split(":")[0] + ": " + r.reason.split(":")[1].strip()[:60]
        for rep in reports
        for r in rep.results
        if r.status == "skip"
    )


__all__ = ["run_dir", "run_file", "run_script", "summary", "FileReport", "CaseResult", "np"]
