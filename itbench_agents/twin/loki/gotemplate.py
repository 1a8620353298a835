"""The subset of Go's text/template that LogQL ``line_format`` / ``label_format`` queries use.

Supported: text, ``{{ .label }}``, ``{{ . }}`` is not used by LogQL, ``{{ __line__ }}``,
``{{ __timestamp__ }}``, string/number literals, function calls with arguments, pipelines
(``{{ .x | ToUpper }}``), ``{{ if P }}..{{ else if P }}..{{ else }}..{{ end }}`` and Loki's common
template functions (ToUpper, ToLower, upper, lower, title, trim, trimSpace, trimPrefix, trimSuffix,
replace, default, printf, len, contains, hasPrefix, hasSuffix, substr, eq, ne, lt, gt, not, and, or).
A missing label renders as the empty string (Loki's ``missingkey=zero`` for a string map).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class TemplateError(Exception):
    """Parse or execution error, worded like Go's (``template: line:1: ...``)."""


@dataclass(frozen=True)
class _Text:
    text: str


@dataclass(frozen=True)
class _Operand:
    kind: str  # field | line | ts | str | num | func
    value: Any


@dataclass(frozen=True)
class _Pipeline:
    commands: tuple[tuple[_Operand, ...], ...]


@dataclass(frozen=True)
class _If:
    branches: tuple[tuple[_Pipeline, tuple[Any, ...]], ...]
    otherwise: tuple[Any, ...] = ()


_ACTION = re.compile(r"\{\{(-?)\s*(.*?)\s*(-?)\}\}", re.DOTALL)
_OPERAND = re.compile(
    r'\s*(?:(?P<field>\.[A-Za-z_][A-Za-z0-9_]*)|(?P<dot>\.)(?![A-Za-z_])|(?P<str>"(?:[^"\\]|\\.)*"|`[^`]*`)'
    r"|(?P<num>-?\d+(?:\.\d+)?)|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<pipe>\|)|(?P<lp>\()|(?P<rp>\)))"
)


def _title(s: str) -> str:
    return re.sub(r"(^|\s)(\S)", lambda m: m.group(1) + m.group(2).upper(), s)


def _printf(fmt: str, *args: Any) -> str:
    py = re.sub(r"%v|%s|%q|%d|%f|%g", lambda m: "%r" if m.group(0) == "%q" else "%s", fmt)
    try:
        return py % args
    except (TypeError, ValueError):
        return fmt


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError) as exc:
        raise TemplateError(f"template: line:1: incompatible types for comparison: {v!r}") from exc


FUNCS: dict[str, Callable[..., Any]] = {
    "ToUpper": lambda s: str(s).upper(),
    "ToLower": lambda s: str(s).lower(),
    "upper": lambda s: str(s).upper(),
    "lower": lambda s: str(s).lower(),
    "title": lambda s: _title(str(s)),
    "Title": lambda s: _title(str(s)),
    "trim": lambda s: str(s).strip(),
    "trimSpace": lambda s: str(s).strip(),
    "TrimSpace": lambda s: str(s).strip(),
    "trimPrefix": lambda p, s: str(s)[len(p) :] if str(s).startswith(p) else str(s),
    "trimSuffix": lambda p, s: str(s)[: -len(p)] if p and str(s).endswith(p) else str(s),
    "TrimPrefix": lambda s, p: str(s)[len(p) :] if str(s).startswith(p) else str(s),
    "TrimSuffix": lambda s, p: str(s)[: -len(p)] if p and str(s).endswith(p) else str(s),
    "replace": lambda old, new, s: str(s).replace(str(old), str(new)),
    "Replace": lambda s, old, new, n=-1: str(s).replace(str(old), str(new), int(n)),
    "default": lambda d, v="": v if v not in ("", None) else d,
    "printf": _printf,
    "len": lambda s: len(s),
    "contains": lambda sub, s: str(sub) in str(s),
    "hasPrefix": lambda p, s: str(s).startswith(str(p)),
    "hasSuffix": lambda p, s: str(s).endswith(str(p)),
    "substr": lambda a, b, s: str(s)[int(a) : int(b)],
    "eq": lambda a, *bs: any(a == b for b in bs),
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: _num(a) < _num(b),
    "gt": lambda a, b: _num(a) > _num(b),
    "le": lambda a, b: _num(a) <= _num(b),
    "ge": lambda a, b: _num(a) >= _num(b),
    "not": lambda a: not _truthy(a),
    "and": lambda *a: next((x for x in a if not _truthy(x)), a[-1] if a else ""),
    "or": lambda *a: next((x for x in a if _truthy(x)), a[-1] if a else ""),
}


def _truthy(v: Any) -> bool:
    return v not in ("", None, False, 0, 0.0)


def _unquote(lit: str) -> str:
    if lit.startswith("`"):
        return lit[1:-1]
    return bytes(lit[1:-1], "utf-8").decode("unicode_escape") if "\\" in lit else lit[1:-1]


def _parse_pipeline(src: str) -> _Pipeline:
    commands: list[tuple[_Operand, ...]] = []
    current: list[_Operand] = []
    pos = 0
    src = src.strip()
    if not src:
        raise TemplateError("template: line:1: missing value for command")
    while pos < len(src):
        m = _OPERAND.match(src, pos)
        if not m or m.end() == pos:
            bad = src[pos:].strip()[:1]
            raise TemplateError(f'template: line:1: unexpected "{bad}" in command')
        pos = m.end()
        if m.group("pipe"):
            if not current:
                raise TemplateError("template: line:1: missing value for command")
            commands.append(tuple(current))
            current = []
        elif m.group("field"):
            current.append(_Operand("field", m.group("field")[1:]))
        elif m.group("dot"):
            current.append(_Operand("dot", None))
        elif m.group("str"):
            current.append(_Operand("str", _unquote(m.group("str"))))
        elif m.group("num"):
            current.append(_Operand("num", float(m.group("num"))))
        elif m.group("ident"):
            name = m.group("ident")
            if name == "__line__":
                current.append(_Operand("line", None))
            elif name == "__timestamp__":
                current.append(_Operand("ts", None))
            elif name in FUNCS:
                current.append(_Operand("func", name))
            else:
                raise TemplateError(f'template: line:1: function "{name}" not defined')
        else:
            raise TemplateError(f'template: line:1: unexpected "{m.group(0).strip()}" in operand')
        while pos < len(src) and src[pos].isspace():
            pos += 1
    if not current:
        raise TemplateError("template: line:1: missing value for command")
    commands.append(tuple(current))
    return _Pipeline(tuple(commands))


@dataclass(frozen=True)
class Template:
    """A compiled template; :meth:`render` fills it from labels, the line and its timestamp."""

    source: str
    nodes: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def parse(cls, source: str) -> Template:
        tokens: list[tuple[str, str]] = []  # ("text", s) | ("action", s)
        pos = 0
        for m in _ACTION.finditer(source):
            text = source[pos : m.start()]
            if m.group(1) == "-":
                text = text.rstrip()
            if tokens and tokens[-1][0] == "trim-next":
                tokens.pop()
                text = text.lstrip()
            if text:
                tokens.append(("text", text))
            tokens.append(("action", m.group(2)))
            if m.group(3) == "-":
                tokens.append(("trim-next", ""))
            pos = m.end()
        rest = source[pos:]
        if "{{" in rest:
            raise TemplateError("template: line:1: unclosed action")
        if tokens and tokens[-1][0] == "trim-next":
            tokens.pop()
            rest = rest.lstrip()
        if rest:
            tokens.append(("text", rest))
        nodes, i, end = _parse_nodes(tokens, 0)
        if end is not None:
            raise TemplateError(f"template: line:1: unexpected {{{{{end}}}}}")
        return cls(source, tuple(nodes))

    def render(self, labels: dict[str, str], line: str = "", ts_ns: int = 0) -> str:
        out: list[str] = []
        _exec(self.nodes, labels, line, ts_ns, out)
        return "".join(out)


def _parse_nodes(tokens: list[tuple[str, str]], i: int) -> tuple[list[Any], int, str | None]:
    """Nodes until ``{{end}}``/``{{else...}}`` (returned as the stop word) or the end."""
    nodes: list[Any] = []
    while i < len(tokens):
        kind, val = tokens[i]
        i += 1
        if kind == "text":
            nodes.append(_Text(val))
            continue
        word = val.split(None, 1)[0] if val.split() else ""
        if word in ("end", "else"):
            return nodes, i, val
        if word == "if":
            branches: list[tuple[_Pipeline, tuple[Any, ...]]] = []
            cond = _parse_pipeline(val[2:])
            otherwise: tuple[Any, ...] = ()
            while True:
                body, i, stop = _parse_nodes(tokens, i)
                if stop is None:
                    raise TemplateError("template: line:1: unexpected EOF")
                branches.append((cond, tuple(body)))
                if stop == "end":
                    break
                rest = stop[4:].strip()
                if rest.startswith("if"):
                    cond = _parse_pipeline(rest[2:])
                    continue
                body, i, stop = _parse_nodes(tokens, i)
                if stop != "end":
                    raise TemplateError("template: line:1: expected end; found EOF")
                otherwise = tuple(body)
                break
            nodes.append(_If(tuple(branches), otherwise))
            continue
        if word in ("range", "with", "define", "template", "block"):
            raise TemplateError(f"template: line:1: unsupported action {word!r} in this twin")
        nodes.append(_parse_pipeline(val))
    return nodes, i, None


def _eval_pipeline(p: _Pipeline, labels: dict[str, str], line: str, ts_ns: int) -> Any:
    value: Any = None
    for idx, cmd in enumerate(p.commands):
        args: list[Any] = []
        func: str | None = None
        for j, op in enumerate(cmd):
            if op.kind == "func":
                if j != 0:
                    raise TemplateError(f"template: line:1: can't give argument to non-function {op.value}")
                func = op.value
            elif op.kind == "field":
                args.append(labels.get(op.value, ""))
            elif op.kind == "dot":
                args.append(labels)
            elif op.kind == "line":
                args.append(line)
            elif op.kind == "ts":
                args.append(_format_ts(ts_ns))
            elif op.kind == "num":
                v = op.value
                args.append(int(v) if float(v).is_integer() else v)
            else:
                args.append(op.value)
        if idx > 0:
            args.append(value)
        if func is None:
            if len(args) != 1:
                raise TemplateError("template: line:1: can't give argument to non-function")
            value = args[0]
        else:
            try:
                value = FUNCS[func](*args)
            except TemplateError:
                raise
            except (TypeError, ValueError, IndexError) as exc:
                raise TemplateError(f"template: line:1: error calling {func}: {exc}") from exc
    return value


def _format_ts(ts_ns: int) -> str:
    import datetime as _dt

    secs, ns = divmod(ts_ns, 1_000_000_000)
    dt = _dt.datetime.fromtimestamp(secs, tz=_dt.UTC)
    frac = f".{ns:09d}".rstrip("0").rstrip(".") if ns else ""
    return dt.strftime("%Y-%m-%d %H:%M:%S") + frac + " +0000 UTC"


def _to_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{v[k]}" for k in sorted(v)) + "]"
    return "" if v is None else str(v)


def _exec(nodes: tuple[Any, ...], labels: dict[str, str], line: str, ts_ns: int, out: list[str]) -> None:
    for node in nodes:
        if isinstance(node, _Text):
            out.append(node.text)
        elif isinstance(node, _Pipeline):
            out.append(_to_text(_eval_pipeline(node, labels, line, ts_ns)))
        elif isinstance(node, _If):
            for cond, body in node.branches:
                if _truthy(_eval_pipeline(cond, labels, line, ts_ns)):
                    _exec(body, labels, line, ts_ns, out)
                    break
            else:
                _exec(node.otherwise, labels, line, ts_ns, out)
