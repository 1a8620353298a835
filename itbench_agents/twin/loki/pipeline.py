"""Running a LogQL pipeline over one log entry: line filters, parsers, label filters, formatting.

Semantics follow Loki: parsers add labels (a name clashing with a stream label gets ``_extracted``),
parse failures set ``__error__`` / ``__error_details__`` and keep the line, numeric label filters let
lines that already carry an error through, and a missing label reads as the empty string.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

from .gotemplate import TemplateError
from .nodes import (
    BoolPred,
    Decolorize,
    DropKeep,
    LabelFilter,
    LabelFormat,
    LabelPred,
    LineFilter,
    LineFormat,
    NumCmp,
    ParserStage,
    Stage,
    StrCmp,
)
from .regex import matches_label
from .units import parse_bytes, parse_go_duration

ERROR = "__error__"
ERROR_DETAILS = "__error_details__"

_NON_LABEL = re.compile(r"[^A-Za-z0-9_]")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_JSON_PATH = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_\-]*)|\[(\d+)\]|\["([^"]*)"\]')


@functools.lru_cache(maxsize=65536)
def sanitize_label(key: str) -> str:
    key = key.strip()
    if not key:
        return key
    if key[0].isdigit():
        key = "_" + key
    return _NON_LABEL.sub("_", key)


def _set_parsed(labels: dict[str, str], base: Mapping[str, str], key: str, value: str) -> None:
    if key in base:
        key = key + "_extracted"
    labels[key] = value


def _json_text(v: Any) -> str | None:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, dict | list):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _flatten(obj: dict[str, Any], prefix: str, labels: dict[str, str], base: Mapping[str, str]) -> None:
    for k, v in obj.items():
        key = sanitize_label(k)
        if not key:
            continue
        full = f"{prefix}_{key}" if prefix else key
        if isinstance(v, dict):
            _flatten(v, full, labels, base)
        elif isinstance(v, list):
            continue  # Loki's json parser skips arrays
        else:
            text = _json_text(v)
            if text is not None:
                _set_parsed(labels, base, full, text)


def _json_path(obj: Any, expr: str) -> str:
    pos = 0
    cur = obj
    while pos < len(expr):
        m = _JSON_PATH.match(expr, pos)
        if not m or m.end() == pos:
            return ""
        pos = m.end()
        if m.group(2) is not None:
            idx = int(m.group(2))
            if not isinstance(cur, list) or idx >= len(cur):
                return ""
            cur = cur[idx]
        else:
            key = m.group(1) if m.group(1) is not None else m.group(3)
            if not isinstance(cur, dict) or key not in cur:
                return ""
            cur = cur[key]
    return _json_text(cur) or ""


# Numbers keep their text ("1.50" stays "1.50"), as Loki's parser reads them.
_DECODER = json.JSONDecoder(parse_float=str, parse_int=str, parse_constant=str)


def _load_json(line: str) -> Any:
    return _DECODER.decode(line)


def _json(stage: ParserStage, line: str, labels: dict[str, str], base: Mapping[str, str]) -> None:
    try:
        obj = _load_json(line)
    except (ValueError, RecursionError) as exc:
        labels[ERROR] = "JSONParserErr"
        labels[ERROR_DETAILS] = str(exc)
        return
    if stage.params:
        for name, expr in stage.params:
            _set_parsed(labels, base, name, _json_path(obj, expr))
        return
    if not isinstance(obj, dict):
        labels[ERROR] = "JSONParserErr"
        labels[ERROR_DETAILS] = "Value looks like object, but can't find closing '}' symbol"
        return
    _flatten(obj, "", labels, base)


def _unpack(line: str, labels: dict[str, str], base: Mapping[str, str]) -> str:
    try:
        obj = _load_json(line)
    except (ValueError, RecursionError) as exc:
        labels[ERROR] = "JSONParserErr"
        labels[ERROR_DETAILS] = str(exc)
        return line
    if not isinstance(obj, dict):
        labels[ERROR] = "JSONParserErr"
        labels[ERROR_DETAILS] = "expecting json object"
        return line
    for k, v in obj.items():
        if k == "_entry" and isinstance(v, str):
            line = v
        elif isinstance(v, str):
            _set_parsed(labels, base, sanitize_label(k), v)
    return line


class LogfmtError(ValueError):
    pass


def parse_logfmt(line: str, strict: bool, keep_empty: bool) -> list[tuple[str, str]]:
    """Key/value pairs in go-logfmt's reading; in non-strict mode malformed pairs are skipped."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(line)
    while i < n:
        while i < n and line[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        start = i
        while i < n and line[i] not in ' \t\r\n="':
            i += 1
        key = line[start:i]
        if i < n and line[i] == '"':
            if strict:
                raise LogfmtError(f"logfmt syntax error at pos {i + 1} : unexpected '\"'")
            while i < n and line[i] not in " \t\r\n":
                i += 1
            continue
        if not key:
            if strict:
                raise LogfmtError(f"logfmt syntax error at pos {i + 1} : unexpected '='")
            while i < n and line[i] not in " \t\r\n":
                i += 1
            continue
        if i >= n or line[i] != "=":
            if keep_empty:
                out.append((key, ""))
            continue
        i += 1  # '='
        if i < n and line[i] == '"':
            i += 1
            buf: list[str] = []
            closed = False
            while i < n:
                c = line[i]
                if c == "\\" and i + 1 < n:
                    nxt = line[i + 1]
                    buf.append({"n": "\n", "t": "\t", "r": "\r"}.get(nxt, nxt))
                    i += 2
                    continue
                if c == '"':
                    closed = True
                    i += 1
                    break
                buf.append(c)
                i += 1
            if not closed:
                if strict:
                    raise LogfmtError(f"logfmt syntax error at pos {n + 1} : unterminated quoted value")
                break
            value = "".join(buf)
        else:
            vstart = i
            while i < n and line[i] not in " \t\r\n":
                i += 1
            value = line[vstart:i]
            if strict and ('"' in value or "=" in value):
                raise LogfmtError(f"logfmt syntax error at pos {vstart + 1} : invalid value")
        if value or keep_empty:
            out.append((key, value))
    return out


def _logfmt(stage: ParserStage, line: str, labels: dict[str, str], base: Mapping[str, str]) -> None:
    try:
        pairs = parse_logfmt(line, stage.strict, stage.keep_empty)
    except LogfmtError as exc:
        labels[ERROR] = "LogfmtParserErr"
        labels[ERROR_DETAILS] = str(exc)
        return
    if stage.params:
        found = dict(pairs)
        for name, key in stage.params:
            if key in found:
                _set_parsed(labels, base, name, found[key])
        return
    for k, v in pairs:
        key = sanitize_label(k)
        if key:
            _set_parsed(labels, base, key, v)


def _pattern(stage: ParserStage, line: str, labels: dict[str, str], base: Mapping[str, str]) -> None:
    parts = stage.pattern_parts
    pos = 0
    idx = 0
    if parts and parts[0][0] == "lit":
        if not line.startswith(parts[0][1]):
            return
        pos = len(parts[0][1])
        idx = 1
    while idx < len(parts):
        kind, name = parts[idx]
        if kind != "cap":  # a literal right after a literal cannot happen (parser merges them)
            idx += 1
            continue
        if idx + 1 < len(parts):
            lit = parts[idx + 1][1]
            end = line.find(lit, pos)
            if end < 0:
                return
            value = line[pos:end]
            pos = end + len(lit)
            idx += 2
        else:
            value = line[pos:]
            pos = len(line)
            idx += 1
        if name != "_":
            _set_parsed(labels, base, name, value)


def _numeric(value: str, kind: str) -> float:
    if kind == "duration":
        return parse_go_duration(value)
    if kind == "bytes":
        return parse_bytes(value)
    v = value.strip()
    if not v or "_" in v:
        raise ValueError(f'strconv.ParseFloat: parsing "{value}": invalid syntax')
    try:
        return float(v)
    except ValueError:
        raise ValueError(f'strconv.ParseFloat: parsing "{value}": invalid syntax') from None


def _cmp(op: str, a: float, b: float) -> bool:
    if op in ("==", "="):
        return a == b
    if op == "!=":
        return a != b
    if op == ">":
        return a > b
    if op == ">=":
        return a >= b
    if op == "<":
        return a < b
    return a <= b


def eval_pred(pred: LabelPred, labels: dict[str, str]) -> bool:
    if isinstance(pred, BoolPred):
        if pred.op == "and":
            return eval_pred(pred.left, labels) and eval_pred(pred.right, labels)
        return eval_pred(pred.left, labels) or eval_pred(pred.right, labels)
    if isinstance(pred, StrCmp):
        v = labels.get(pred.name, "")
        if pred.op == "=":
            return v == pred.value
        if pred.op == "!=":
            return v != pred.value
        assert pred.regex is not None
        hit = pred.regex.match(v) is not None
        return hit if pred.op == "=~" else not hit
    assert isinstance(pred, NumCmp)
    if labels.get(ERROR):
        return True  # only string filters can drop lines that already failed
    raw = labels.get(pred.name)
    if raw is None:
        return False
    try:
        num = _numeric(raw, pred.kind)
    except ValueError as exc:
        labels[ERROR] = "LabelFilterErr"
        labels[ERROR_DETAILS] = str(exc)
        return True
    return _cmp(pred.op, num, pred.value)


class Pipeline:
    """A compiled stage list; :meth:`process` returns ``(line, labels)`` or ``None`` if filtered out."""

    def __init__(self, stages: tuple[Stage, ...]) -> None:
        self.stages = stages
        self.line_filters = tuple(s for s in stages if isinstance(s, LineFilter))
        self.only_line_filters = len(self.line_filters) == len(stages)

    def keep_line(self, line: str) -> bool:
        return all(f.keep(line) for f in self.line_filters)

    def process(self, ts_ns: int, line: str, base: Mapping[str, str]) -> tuple[str, dict[str, str]] | None:
        labels = dict(base)
        for st in self.stages:
            if isinstance(st, LineFilter):
                if not st.keep(line):
                    return None
            elif isinstance(st, ParserStage):
                if st.kind == "json":
                    _json(st, line, labels, base)
                elif st.kind == "logfmt":
                    _logfmt(st, line, labels, base)
                elif st.kind == "regexp":
                    assert st.regex is not None
                    m = st.regex.search(line)
                    if m:
                        for name, value in m.groupdict().items():
                            _set_parsed(labels, base, sanitize_label(name), value or "")
                elif st.kind == "pattern":
                    _pattern(st, line, labels, base)
                else:
                    line = _unpack(line, labels, base)
            elif isinstance(st, LabelFilter):
                if not eval_pred(st.pred, labels):
                    return None
            elif isinstance(st, LineFormat):
                try:
                    line = st.template.render(labels, line, ts_ns)
                except TemplateError as exc:
                    labels[ERROR] = "TemplateFormatErr"
                    labels[ERROR_DETAILS] = str(exc)
            elif isinstance(st, LabelFormat):
                snapshot = dict(labels)
                for item in st.items:
                    if item.src is not None:
                        if item.src in snapshot:
                            labels[item.dst] = snapshot[item.src]
                            if item.src != item.dst:
                                labels.pop(item.src, None)
                    elif item.template is not None:
                        try:
                            labels[item.dst] = item.template.render(snapshot, line, ts_ns)
                        except TemplateError as exc:
                            labels[ERROR] = "TemplateFormatErr"
                            labels[ERROR_DETAILS] = str(exc)
            elif isinstance(st, DropKeep):
                labels = _drop_keep(st, labels)
            elif isinstance(st, Decolorize):
                line = _ANSI.sub("", line)
        for k in [k for k, v in labels.items() if v == ""]:
            del labels[k]  # an empty label value is no label (Prometheus labels semantics)
        return line, labels


def _drop_keep(st: DropKeep, labels: dict[str, str]) -> dict[str, str]:
    def named(k: str, v: str) -> bool:
        return k in st.names or any(m.name == k and matches_label(m.op, m.value, v) for m in st.matchers)

    if st.kind == "drop":
        return {k: v for k, v in labels.items() if not named(k, v)}
    return {k: v for k, v in labels.items() if named(k, v)}
