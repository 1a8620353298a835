"""Duration expressions (Prometheus 3): ``x[2m*15]``, ``x[step()+1ms]``, ``offset (1m+30s)``,
``offset min_of(step(), 1s)``.

``promql-parser`` only reads literal durations, so before parsing, every non-literal duration
expression inside ``[...]`` and right after ``offset`` is evaluated (``step()`` and ``range()`` are the
query's step and range in seconds; numbers are seconds) and replaced by a literal in milliseconds.
After ``offset`` only one operand is taken (a literal, a parenthesised expression or a call), as in
Prometheus' grammar: ``x offset 100 + 2`` adds 2 to the vector.
"""

from __future__ import annotations

import math
import re

from .values import PromQLError

_LITERAL = re.compile(r"^\s*(\d+(\.\d+)?|(\d+(ms|s|m|h|d|w|y))+)\s*$")
_TOKEN = re.compile(
    r"\s*(?:(?P<dur>(?:\d+(?:ms|s|m|h|d|w|y))+)|(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[-+*/%^(),]))"
)
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0, "y": 31536000.0}


def _dur_seconds(text: str) -> float:
    return sum(float(n) * _UNITS[u] for n, u in re.findall(r"(\d+)(ms|s|m|h|d|w|y)", text))


class _Parser:
    def __init__(self, text: str, step_s: float, range_s: float) -> None:
        self.toks: list[tuple[str, str]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                raise PromQLError(
                    f"1:1: parse error: unexpected character in duration expression: {text[pos:]!r}",
                    "bad_data",
                )
            kind = m.lastgroup or ""
            self.toks.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0
        self.step_s = step_s
        self.range_s = range_s

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        t = self.peek()
        if t is None:
            raise PromQLError("1:1: parse error: unexpected end of duration expression", "bad_data")
        self.i += 1
        return t

    def expect(self, op: str) -> None:
        t = self.take()
        if t != ("op", op):
            raise PromQLError(f"1:1: parse error: expected {op!r} in duration expression", "bad_data")

    def parse(self) -> float:
        v = self.expr()
        if self.peek() is not None:
            raise PromQLError("1:1: parse error: unexpected token in duration expression", "bad_data")
        return v

    def expr(self) -> float:
        v = self.term()
        while (t := self.peek()) is not None and t[0] == "op" and t[1] in "+-":
            self.take()
            r = self.term()
            v = v + r if t[1] == "+" else v - r
        return v

    def term(self) -> float:
        v = self.unary()
        while (t := self.peek()) is not None and t[0] == "op" and t[1] in "*/%":
            self.take()
            r = self.unary()
            if t[1] == "*":
                v *= r
            elif t[1] == "/":
                if r == 0:
                    raise PromQLError("division by zero in duration expression", "bad_data")
                v /= r
            else:
                if r == 0:
                    raise PromQLError("modulo by zero in duration expression", "bad_data")
                v = math.fmod(v, r)
        return v

    def unary(self) -> float:
        t = self.peek()
        if t is not None and t[0] == "op" and t[1] in "+-":
            self.take()
            v = self.unary()
            return -v if t[1] == "-" else v
        return self.power()

    def power(self) -> float:
        base = self.atom()
        t = self.peek()
        if t == ("op", "^"):
            self.take()
            return float(math.pow(base, self.unary()))
        return base

    def atom(self) -> float:
        kind, val = self.take()
        if kind == "dur":
            return _dur_seconds(val)
        if kind == "num":
            return float(val)
        if kind == "op" and val == "(":
            v = self.expr()
            self.expect(")")
            return v
        if kind == "name":
            name = val.lower()
            self.expect("(")
            args: list[float] = []
            if self.peek() != ("op", ")"):
                args.append(self.expr())
                while self.peek() == ("op", ","):
                    self.take()
                    args.append(self.expr())
            self.expect(")")
            if name == "step" and not args:
                return self.step_s
            if name == "range" and not args:
                return self.range_s
            if name == "min_of" and args:
                return min(args)
            if name == "max_of" and args:
                return max(args)
            raise PromQLError(f"1:1: parse error: unknown duration function {val!r}", "bad_data")
        raise PromQLError(f"1:1: parse error: unexpected {val!r} in duration expression", "bad_data")


def evaluate(text: str, step_s: float, range_s: float) -> float:
    """A duration expression's value in seconds."""
    return _Parser(text, step_s, range_s).parse()


def _ms_literal(seconds: float) -> str:
    ms = int(round(seconds * 1000))
    return f"-{-ms}ms" if ms < 0 else f"{ms}ms"


def _match(q: str, i: int, open_c: str, close_c: str) -> int:
    """Index of the bracket closing the one at ``i`` (quotes respected), or -1."""
    depth = 0
    quote = ""
    while i < len(q):
        c = q[i]
        if quote:
            if c == "\\" and quote != "`":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'`":
            quote = c
        elif c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def rewrite(query: str, step_s: float = 0.0, range_s: float = 0.0) -> str:
    """``query`` with every non-literal duration expression replaced by a literal."""
    if "[" not in query and "offset" not in query.lower():
        return query
    out: list[str] = []
    i = 0
    quote = ""
    n = len(query)
    while i < n:
        c = query[i]
        if quote:
            out.append(c)
            if c == "\\" and quote != "`" and i + 1 < n:
                out.append(query[i + 1])
                i += 2
                continue
            if c == quote:
                quote = ""
            i += 1
            continue
        if c in "\"'`":
            quote = c
            out.append(c)
            i += 1
            continue
        if c == "[":
            j = _match(query, i, "[", "]")
            if j < 0:
                out.append(query[i:])
                break
            parts = _split_colon(query[i + 1 : j])
            new = []
            for p in parts:
                if p.strip() == "" or _LITERAL.match(p):
                    new.append(p)
                else:
                    v = evaluate(p, step_s, range_s)
                    if v <= 0 and len(new) == 0:
                        raise PromQLError(
                            "1:1: parse error: range duration must be greater than 0", "bad_data"
                        )
                    new.append(_ms_literal(v))
            out.append("[" + ":".join(new) + "]")
            i = j + 1
            continue
        m = re.match(r"offset\b", query[i:], re.IGNORECASE)
        if m and (i == 0 or not (query[i - 1].isalnum() or query[i - 1] == "_")):
            k = i + m.end()
            ws = re.match(r"\s*([+-]?)\s*", query[k:])
            assert ws is not None
            a = k + ws.end()
            end = -1
            if a < n and query[a] == "(":
                end = _match(query, a, "(", ")")
            else:
                fm = re.match(r"[A-Za-z_][A-Za-z0-9_]*\s*\(", query[a:])
                if fm:
                    end = _match(query, a + fm.end() - 1, "(", ")")
            if end > 0:
                v = evaluate(query[a : end + 1], step_s, range_s)
                v = -v if ws.group(1) == "-" else v
                if int(round(v * 1000)) != 0:  # the parser refuses "offset 0ms": no offset at all
                    out.append(f"{m.group(0)} {_ms_literal(v)}")
                i = end + 1
            else:
                out.append(query[i:k])
                i = k
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _split_colon(s: str) -> list[str]:
    depth = 0
    parts: list[str] = []
    cur: list[str] = []
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == ":" and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts
