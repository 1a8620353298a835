"""Prometheus' wording and ``line:col`` positions for parse errors.

``promql-parser`` reports errors without positions, in its own words ("invalid promql query",
``matrix``/``vector``, names in single quotes). :func:`translate` rewrites them the way the Go
parser words them (``1:14: parse error: unexpected <op:*>``, ``expected type range vector in call
to function "rate", got instant vector``), finding positions with the linear lexer of
:mod:`.limits`. Unknown messages keep their text with the best position found.
"""

from __future__ import annotations

import re

from .limits import Token, position, tokens

_TYPES = {"matrix": "range vector", "vector": "instant vector", "scalar": "scalar", "string": "string"}
_BINARY = {"+", "-", "*", "/", "%", "^", "==", "!=", "<=", ">=", "<", ">"}
_BINARY_WORDS = {"and", "or", "unless", "atan2"}
_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
}
_PUNCT = {
    "(": "left parenthesis '('",
    ")": "right parenthesis ')'",
    "[": "left bracket '['",
    "]": "right bracket ']'",
    "{": "left brace '{'",
    "}": "right brace '}'",
    ",": "comma ','",
    ":": "colon ':'",
    "=": "'='",
    "@": "<@>",
}
_GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
_DURATION = re.compile(r"^\d+(ms|s|m|h|d|w|y)(\d+(ms|s|m|h|d|w|y))*$")


def describe(t: Token) -> str:
    """How the Go lexer names an item in "unexpected ..." messages."""
    low = t.text.lower()
    if t.kind == "op":
        if t.text in _BINARY or t.text in ("=~", "!~"):
            return f"<op:{t.text}>"
        return _PUNCT.get(t.text, repr(t.text))
    if t.kind == "ident":
        if low in _BINARY_WORDS:
            return f"<op:{low}>"
        if low in _KEYWORDS:
            return f"<{low}>"
        return f'identifier "{t.text}"'
    if t.kind == "num":
        return f'number "{t.text}"' if not _DURATION.match(t.text) else f'duration "{t.text}"'
    if t.kind == "str":
        return f"string {t.text}"
    return repr(t.text)


def _err(query: str, offset: int, msg: str) -> str:
    return f'invalid parameter "query": {position(query, offset)}: parse error: {msg}'


def _is_binary(t: Token, prev: Token | None) -> bool:
    if t.kind == "op" and t.text in _BINARY:
        return not (t.text in "+-" and (prev is None or not _ends_operand(prev)))
    return t.kind == "ident" and t.text.lower() in _BINARY_WORDS and prev is not None and _ends_operand(prev)


def _ends_operand(t: Token) -> bool:
    if t.kind in ("num", "str"):
        return True
    if t.kind == "ident":
        return t.text.lower() not in _BINARY_WORDS | _KEYWORDS
    return t.text in (")", "]", "}")


_AGGREGATIONS = {
    "sum",
    "avg",
    "min",
    "max",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
    "limitk",
    "limit_ratio",
}


def _arg_spans(toks: list[Token], j: int) -> list[tuple[int, int]]:
    """(start, end) offsets of the arguments of the call whose ``(`` is ``toks[j]``."""
    args: list[tuple[int, int]] = []
    depth, start = 0, -1
    last_end = toks[j].pos + 1
    for u in toks[j:]:
        if u.kind == "op" and u.text in "([{":
            depth += 1
            if depth == 1:
                continue
        elif u.kind == "op" and u.text in ")]}":
            depth -= 1
            if depth == 0:
                if start >= 0:
                    args.append((start, last_end))
                break
        elif depth == 1 and u.text == ",":
            if start >= 0:
                args.append((start, last_end))
            start = -1
            continue
        if start < 0:
            start = u.pos
        last_end = u.pos + len(u.text)
    return args


def _calls(toks: list[Token], name: str) -> list[tuple[int, list[tuple[int, int]]]]:
    """(name offset, [(arg start, arg end)]) of each call of ``name``, in source order."""
    out = []
    for i, t in enumerate(toks):
        if t.kind != "ident" or t.text != name or i + 1 >= len(toks) or toks[i + 1].text != "(":
            continue
        out.append((t.pos, _arg_spans(toks, i + 1)))
    return out


def _looks_like(text: str, kind: str) -> bool:
    s = text.strip()
    if kind == "range vector":
        return bool(re.search(r"\]\s*(offset\s+-?\w+|@\s*\S+)?\s*\)*$", s))
    if kind == "string":
        return s[:1] in "\"'`"
    if kind == "scalar":
        return bool(re.fullmatch(r"[-+]?(\d[\w.]*|\.\d+|inf|nan)", s, re.IGNORECASE)) or s.startswith(
            ("scalar(", "time(")
        )
    return not any(_looks_like(s, k) for k in ("range vector", "string", "scalar"))


def _go_number_or_duration(query: str, i: int) -> tuple[bool, int]:
    """Go's ``lexNumberOrDuration`` from offset ``i``: (ok, end offset of what it consumed)."""
    n = len(query)

    def alnum(k: int) -> bool:
        return k < n and (query[k].isascii() and (query[k].isalnum() or query[k] == "_"))

    j = i
    digits = "0123456789"
    if query.startswith(("0x", "0X"), j):
        j += 2
        if j < n and query[j] == "_":
            j += 1
        digits += "abcdefABCDEF"
    if j < n and query[j] == ".":
        j += 1
    if j < n and query[j] in digits:
        j += 1
    dot = exp = False
    bad = False
    while j < n and query[j] in digits + "._eE":
        c = query[j]
        if c == ".":
            if dot or len(digits) > 10:
                j += 1
                bad = True
                break
            dot = True
            j += 1
            if j < n and query[j] in "_.":
                j += 1
                bad = True
                break
            continue
        if c in "eE" and len(digits) == 10:
            if exp:
                j += 1
                bad = True
                break
            exp = True
            j += 1
            if j < n and query[j] in "+-":
                j += 1
            if j >= n or query[j] in "._eE":
                j += j < n
                bad = True
                break
            continue
        if c == "_":
            j += 1
            if j >= n or query[j] in "._eE":
                j += j < n
                bad = True
                break
            continue
        while j < n and query[j] in digits:
            j += 1
    if not bad and j > i and not alnum(j):
        return True, j
    # acceptRemainingDuration
    if j < n and query[j] in "smhdwy":
        j += 1
        if j < n and query[j] == "s":
            j += 1
        while j < n and query[j].isdigit():
            while j < n and query[j].isdigit():
                j += 1
            if not (j < n and query[j] in "smhdw"):
                return False, j
            j += 1
            if j < n and query[j] == "s":
                j += 1
        if not alnum(j):
            return True, j
        return False, j + 1
    return False, j


def _bracket_lex_error(query: str, toks: list[Token]) -> tuple[int, str] | None:
    """The first error of Go's ``lexDurationExpr`` inside ``[...]`` (range and subquery selectors)."""
    n = len(query)
    for t in toks:
        if t.kind != "op" or t.text != "[":
            continue
        i, colon, got = t.pos + 1, False, False
        while True:
            while i < n and query[i] in " \t\r\n":
                i += 1
            if i >= n:
                return i, "unexpected end of input in duration expression"
            c = query[i]
            if c == "]":
                break
            if c == ":":
                if not got:  # Go reports the position after the colon
                    return i + 1, "unexpected colon before duration in duration expression"
                if colon:
                    return i + 1, "unexpected repeated colon in duration expression"
                colon = True
                i += 1
                continue
            if c in "()+-*/%^,":
                i += 1
                continue
            if c.isdigit() or (c == "." and query[i + 1 : i + 2].isdigit()):
                got = True
                ok, j = _go_number_or_duration(query, i)
                if not ok:
                    return i, f"bad number or duration syntax: {_go_quote(query[i:j])}"
                i = j
                continue
            if c in "sSmMrR":
                m = re.match(r"[A-Za-z_]+", query[i:])
                word = m.group().lower() if m else ""
                if word in ("step", "range", "min", "max", "min_of", "max_of"):
                    i += len(word)
                    continue
            return i, f"unexpected character in duration expression: {_go_char(c)}"
    return None


def _go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _go_char(c: str) -> str:
    return "'\\''" if c == "'" else f"'{c}'"


def _regex_error(query: str, toks: list[Token]) -> tuple[int, str] | None:
    """Go's ``error parsing regexp`` for the first invalid ``=~``/``!~`` pattern, at its matcher."""
    from ..loki.regex import RegexError, compile_go

    for i, t in enumerate(toks):
        if t.kind != "op" or t.text not in ("=~", "!~") or i + 1 >= len(toks) or toks[i + 1].kind != "str":
            continue
        raw = toks[i + 1].text
        body = raw[1:-1]
        if raw[0] != "`":
            try:
                body = bytes(body, "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")
            except (UnicodeError, ValueError):
                continue
        try:
            compile_go(body)
        except RegexError as exc:
            return (toks[i - 1].pos if i else t.pos), str(exc)
    return None


def _first_op(toks: list[Token], ops: set[str], before_bool: bool = False) -> int:
    for i, t in enumerate(toks):
        if t.text.lower() in ops and (
            not before_bool or (i + 1 < len(toks) and toks[i + 1].text.lower() == "bool")
        ):
            return t.pos
    return toks[0].pos


def translate(query: str, msg: str) -> str:
    """The Prometheus error text (with ``invalid parameter "query"``) for a promql-parser error."""
    toks = tokens(query)
    end = len(query)
    if not toks:
        return _err(query, 0, "no expression found in input")
    fixed = _translate_more(query, toks, msg)
    if fixed is not None:
        return _err(query, fixed[0], fixed[1])
    m = re.match(r"expected type (\w+) in call to function '([^']*)', got (\w+)", msg)
    if m:
        want, fn, got = _TYPES.get(m.group(1), m.group(1)), m.group(2), _TYPES.get(m.group(3), m.group(3))
        off = 0
        calls = _calls(toks, fn)
        if calls:
            name_pos, args = calls[0]
            off = args[0][0] if args else name_pos
            pick = [a for a, b in args if _looks_like(query[a:b], got)]
            pick = pick or [a for a, b in args if not _looks_like(query[a:b], want)]
            if pick:
                off = pick[0]
        return _err(query, off, f'expected type {want} in call to function "{fn}", got {got}')
    m = re.match(r"expected (\d+) argument\(s\) in call to '([^']*)', got (\d+)", msg)
    if m:
        calls = _calls(toks, m.group(2))
        off = calls[0][0] if calls else 0
        return _err(
            query, off, f'expected {m.group(1)} argument(s) in call to "{m.group(2)}", got {m.group(3)}'
        )
    m = re.match(r"unknown function with name '([^']*)'", msg)
    if m:
        off = next((t.pos for t in toks if t.kind == "ident" and t.text == m.group(1)), 0)
        return _err(query, off, f'unknown function with name "{m.group(1)}"')
    m = re.match(r"expected type (\w+) in aggregation expression, got (\w+)", msg)
    if m:
        want, got = _TYPES.get(m.group(1), m.group(1)), _TYPES.get(m.group(2), m.group(2))
        what = "expression" if want == "instant vector" else "parameter"
        off = 0
        for i, t in enumerate(toks):
            if t.kind != "ident" or t.text.lower() not in _AGGREGATIONS:
                continue
            j = i + 1
            if j < len(toks) and toks[j].text.lower() in ("by", "without"):
                while j < len(toks) and toks[j].text != ")":
                    j += 1
                j += 1
            if j < len(toks) and toks[j].text == "(":
                args = _arg_spans(toks, j)
                if args:
                    off = args[-1][0] if what == "expression" else args[0][0]
                    break
        return _err(query, off, f"expected type {want} in aggregation {what}, got {got}")
    m = re.match(r"metric name must not be set twice: '([^']*)' or '([^']*)'", msg)
    if m:
        return _err(
            query, toks[0].pos, f'metric name must not be set twice: "{m.group(1)}" or "{m.group(2)}"'
        )
    if msg.startswith("ranges only allowed for vector selectors"):
        off = next(
            (toks[i + 1].pos for i, t in enumerate(toks[:-1]) if t.text == "]" and toks[i + 1].text == "["), 0
        )
        return _err(query, off, msg)
    if msg.startswith("duration must be greater than 0"):
        off = next(
            (
                t.pos
                for i, t in enumerate(toks)
                if t.kind == "num"
                and i
                and toks[i - 1].text == "["
                and not t.text.lstrip("0ms").rstrip("smhdwy")
            ),
            0,
        )
        return _err(query, off, msg)
    if msg.startswith("unclosed left parenthesis") or msg.startswith("unexpected end of input inside braces"):
        return _err(query, end, msg)
    if msg.startswith("unexpected end of input inside brackets"):
        return _err(query, end, "unclosed left bracket")
    if msg.startswith("unexpected end of input in offset"):
        return _err(query, end, f"unexpected end of input in offset, expected {_OFFSET_EXPECTED}")
    if msg.startswith("unexpected right parenthesis"):
        found = _scan(query, toks)  # Go reports the position after the parenthesis
        return _err(query, found[0] + 1 if found else 0, "unexpected right parenthesis ')'")
    if msg.startswith("unexpected second colon"):
        colons = [t.pos for t in toks if t.text == ":"]
        return _err(query, colons[1] if len(colons) > 1 else 0, "unexpected colon ':'")
    if msg.startswith("unterminated quoted string"):
        off = next((t.pos for t in toks if t.kind == "error"), 0)
        return _err(query, off, "unterminated quoted string")
    m = re.match(r"set operator '(\w+)' not allowed in binary scalar expression", msg)
    if m:
        return _err(
            query, toks[0].pos, f'set operator "{m.group(1)}" not allowed in binary scalar expression'
        )
    if msg.startswith("vector selector must contain at least one non-empty matcher"):
        off = next((t.pos for t in toks if t.text == "{"), 0)
        return _err(query, off, msg)
    if msg.startswith("binary expression must contain only scalar and instant vector types"):
        off = toks[0].pos
        for i, t in enumerate(toks):
            if t.kind == "str" or (t.kind == "ident" and i + 1 < len(toks) and toks[i + 1].text == "["):
                off = t.pos  # the string or range-vector operand
                break
        return _err(query, off, msg)
    m = re.match(r"unary expression only allowed on expressions of type scalar or vector, got: (\w+)", msg)
    if m:
        got = _TYPES.get(m.group(1), m.group(1))
        return _err(
            query,
            toks[0].pos,
            f'unary expression only allowed on expressions of type scalar or instant vector, got "{got}"',
        )
    m = re.match(r"bad number or duration syntax: (.*)", msg)
    if m:
        bad = m.group(1).strip()
        off = next((t.pos for t in toks if t.text.startswith(bad) or bad.startswith(t.text)), 0)
        return _err(query, off, f'bad number or duration syntax: "{bad}"')
    if "invalid promql query" in msg or not msg:
        found = _scan(query, toks)
        if found is not None:
            return _err(query, found[0], found[1])
    return _err(query, 0, msg)


def _scan(query: str, toks: list[Token]) -> tuple[int, str] | None:
    """The first token a PromQL parser would refuse, by local rules (covers the common typos)."""
    end = len(query)
    depth: list[str] = []
    grouping: list[str] = []  # per open bracket: the grouping keyword before a "(", or ""
    last_group = ""
    prev: Token | None = None
    for i, t in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        before = toks[i - 2] if i >= 2 else None
        if t.kind == "error":
            if t.text[:1] in "\"'`":
                return t.pos, "unterminated quoted string"
            return t.pos, f"unexpected character: {t.text[:1]!r}"
        if t.kind == "op" and t.text in "([{":
            depth.append(t.text)
            kw = prev.text.lower() if prev is not None and prev.kind == "ident" else ""
            grouping.append(kw if t.text == "(" and kw in _GROUPING else "")
        elif t.kind == "op" and t.text in ")]}":
            want = {")": "(", "]": "[", "}": "{"}[t.text]
            if not depth or depth[-1] != want:
                return t.pos, f"unexpected {describe(t)}"
            depth.pop()
            last_group = grouping.pop() if grouping else ""
        low = t.text.lower()
        if depth and depth[-1] == "{" and t.text not in "{}":
            if prev is not None and prev.text in ("{", ","):
                if t.kind not in ("ident", "str"):
                    return t.pos, f'unexpected {go_desc(t)} in label matching, expected identifier or "}}"'
            elif prev is not None and prev.kind == "str" and t.text != ",":
                return t.pos, f'unexpected {go_desc(t)} in label matching, expected "," or "}}"'
        if depth and depth[-1] == "(" and grouping and grouping[-1] and t.text not in "()":
            if prev is not None and prev.text in ("(", ","):
                if t.kind not in ("ident", "str"):
                    return t.pos, f"unexpected {go_desc(t)} in grouping opts, expected label"
            elif t.text != ",":
                return t.pos, f'unexpected {go_desc(t)} in grouping opts, expected "," or ")"'
        in_braces = bool(depth) and depth[-1] == "{"
        in_grouping = bool(grouping) and bool(grouping[-1])
        if (
            t.kind == "ident"
            and low in ("on", "ignoring", "bool")
            and not in_braces
            and not in_grouping
            and (
                prev is None
                or not (_is_binary(prev, before) or (low != "bool" and prev.text.lower() == "bool"))
            )
        ):
            return t.pos, f"unexpected {describe(t)}"
        if (
            t.kind == "ident"
            and low in ("group_left", "group_right")
            and not in_braces
            and not in_grouping
            and (prev is None or prev.text != ")" or last_group not in ("on", "ignoring"))
        ):
            return t.pos, f"unexpected {describe(t)}"
        if depth and depth[-1] == "{" and t.kind == "op" and t.text in ("=", "!=", "=~", "!~"):
            if nxt is None:
                return end, "unexpected end of input inside braces"
            if nxt.kind != "str":
                return nxt.pos, f"unexpected {_in_offset(nxt)} in label matching, expected string"
        if _is_binary(t, prev):
            if nxt is None:
                return end, "unexpected end of input"
            if (
                nxt.kind == "op"
                and nxt.text in _BINARY - {"+", "-"}
                or (nxt.kind == "ident" and nxt.text.lower() in _BINARY_WORDS)
            ):
                return nxt.pos, f"unexpected {describe(nxt)}"
            if nxt.text in (")", "]", "}", ","):
                return nxt.pos, f"unexpected {describe(nxt)}"
        elif t.kind == "ident" and low == "bool" and nxt is None:
            return end, "unexpected end of input"
        elif t.kind == "ident" and low == "offset" and prev is not None and _ends_operand(prev):
            if nxt is None:
                return end, f"unexpected end of input in offset, expected {_OFFSET_EXPECTED}"
            if nxt.kind != "num" and nxt.text not in "+-(" and nxt.text.lower() not in ("step", "range"):
                return nxt.pos, f"unexpected {_in_offset(nxt)} in offset, expected {_OFFSET_EXPECTED}"
            if nxt.text in "+-" and i + 2 >= len(toks):
                return end, f"unexpected end of input in offset, expected {_OFFSET_EXPECTED}"
        elif t.kind == "ident" and low in ("by", "without") and prev is not None:
            if nxt is None:
                return end, 'unexpected end of input in grouping opts, expected "("'
            if nxt.text != "(":
                return nxt.pos, f'unexpected {describe(nxt)} in grouping opts, expected "("'
        elif t.kind == "op" and t.text == "@":
            if nxt is None:
                return end, "unexpected end of input in @, expected timestamp"
            if nxt.kind == "str" or (nxt.kind == "ident" and nxt.text.lower() not in ("start", "end")):
                return nxt.pos, f"unexpected {go_desc(nxt)} in @, expected timestamp"
            if nxt.kind == "ident":
                after = toks[i + 2 : i + 4]
                if len(after) < 1 or after[0].text != "(":
                    return (
                        (after[0].pos, f"unexpected {go_desc(after[0])} in @, expected timestamp")
                        if after
                        else (
                            end,
                            "unexpected end of input in @, expected timestamp",
                        )
                    )
        elif prev is not None and _ends_operand(prev) and _ends_operand(t) and t.kind != "op":
            if (
                prev.kind == "ident"
                and t.kind == "ident"
                and t.text.lower() in _KEYWORDS
                or prev.text in (")", "]", "}")
                and t.kind == "ident"
                and t.text.lower() in _KEYWORDS
            ):
                pass
            elif not (prev.kind == "ident" and prev.text.lower() in _KEYWORDS):
                return t.pos, f"unexpected {describe(t)}"
        prev = t
    if prev is not None and prev.kind == "op" and prev.text in ("+", "-"):
        return end, "unexpected end of input"
    if depth:
        if depth[-1] == "(":
            return end, "unclosed left parenthesis"
        if depth[-1] == "{":
            return end, "unexpected end of input inside braces"
        return end, "unexpected end of input inside brackets"
    if prev is not None and prev.kind == "op" and prev.text in (",", "=", "=~", "!~", "!=", "@", ":"):
        return end, "unexpected end of input"
    return None


def _in_offset(t: Token) -> str:
    if t.kind == "op" and t.text in ")]},":
        return f'"{t.text}"'
    return describe(t)


_VT = {"Vector": "instant vector", "Matrix": "range vector", "Scalar": "scalar", "String": "string"}


def static_type(node: object) -> str | None:
    """The PromQL type of an AST node (``None`` when unknown)."""
    import promql_parser as pp

    while isinstance(node, pp.ParenExpr | pp.UnaryExpr):
        node = node.expr
    if isinstance(node, pp.NumberLiteral):
        return "scalar"
    if isinstance(node, pp.StringLiteral):
        return "string"
    if isinstance(node, pp.VectorSelector | pp.AggregateExpr):
        return "instant vector"
    if isinstance(node, pp.MatrixSelector | pp.SubqueryExpr):
        return "range vector"
    if isinstance(node, pp.BinaryExpr):
        a, b = static_type(node.lhs), static_type(node.rhs)
        return "scalar" if a == b == "scalar" else "instant vector"
    if isinstance(node, pp.Call):
        return _VT.get(str(node.func.return_type).rsplit(".", 1)[-1])
    return None


def check_call_types(query: str, root: object) -> None:
    """The argument type checks of Go's parser that ``promql-parser`` skips (``ln(0)``: a scalar
    where an instant vector is expected): a ``bad_data`` error with Prometheus' wording."""
    import promql_parser as pp

    from .limits import Locator
    from .values import PromQLError

    stack = [root]
    keep = []
    while stack:
        node = stack.pop()
        keep.append(node)
        if isinstance(node, pp.Call):
            f = node.func
            types = [_VT.get(str(t).rsplit(".", 1)[-1]) for t in f.arg_types]
            args = list(node.args)
            for i, a in enumerate(args):
                if not types:
                    break
                want = types[i] if i < len(types) else (types[-1] if f.variadic == -1 else None)
                got = static_type(a)
                if want is None or got is None or want == got:
                    continue
                if {want, got} <= {"instant vector", "scalar", "string", "range vector"}:
                    pos = Locator(query, root).pos(a)
                    raise PromQLError(
                        f'invalid parameter "query": {pos}: parse error: expected type {want} in call to '
                        f'function "{f.name}", got {got}',
                        "bad_data",
                    )
            stack.extend(reversed(args))
        elif isinstance(node, pp.AggregateExpr):
            stack.extend(x for x in (node.expr, node.param) if x is not None)
        elif isinstance(node, pp.BinaryExpr):
            stack.extend([node.rhs, node.lhs])
        elif isinstance(node, pp.ParenExpr | pp.UnaryExpr | pp.SubqueryExpr):
            stack.append(node.expr)
        elif isinstance(node, pp.MatrixSelector):
            stack.append(node.vector_selector)


_OFFSET_EXPECTED = "number, duration, step(), or range()"
_BRACKET_MSGS = (
    "bad number or duration syntax",
    "missing unit character in duration",
    "unexpected character inside brackets",
    "unexpected token in duration expression",
    "unexpected end of duration expression",
    "unexpected end of input inside brackets",
    "unexpected second colon",
    "not a valid duration string",
    "range duration must be greater",
    "duration must be greater",
    "expected ",
    "unexpected '",
    "unknown duration function",
)


def go_desc(t: Token) -> str:
    """Go's ``Item.desc()`` of a token in the parser's "unexpected ..." messages."""
    if t.kind == "op" and t.text not in _BINARY | {"=~", "!~"} and t.text != "@":
        return _go_quote(t.text)
    if t.kind in ("str", "num"):
        kind = "string" if t.kind == "str" else ("duration" if _DURATION.match(t.text) else "number")
        val = t.text
        return f"{kind} {_go_quote(val[:10]) + '...' if len(val) > 10 else _go_quote(val)}"
    return describe(t)


def _unmatched(toks: list[Token], closer: str) -> int | None:
    opener = {")": "(", "]": "[", "}": "{"}[closer]
    depth = 0
    for t in toks:
        if t.kind == "op" and t.text == opener:
            depth += 1
        elif t.kind == "op" and t.text == closer:
            if depth == 0:
                return t.pos
            depth -= 1
    return None


def _translate_more(query: str, toks: list[Token], msg: str) -> tuple[int, str] | None:
    """Errors whose wording or position needs the query's tokens (Prometheus 3's lexer and grammar)."""
    end = len(query)
    if msg.startswith(_BRACKET_MSGS) and "[" in query:
        found = _bracket_lex_error(query, toks)
        if found is not None:
            return found
        for i, t in enumerate(toks[:-1]):
            if t.text != "[":
                continue
            nxt = toks[i + 1]
            if nxt.text == "]":
                return nxt.pos, (f'unexpected "]" in subquery or range selector, expected {_OFFSET_EXPECTED}')
            if nxt.text == "-" and msg.startswith(("unexpected character inside brackets", "range duration")):
                return nxt.pos, "duration must be greater than 0"
        m = re.match(r"not a valid duration string: (.*)", msg)
        if m:
            bad = m.group(1).strip().strip("'\"")
            off = next((t.pos for t in toks if t.text == bad), 0)
            return off, f"not a valid duration string: {_go_quote(bad)}"
    if msg.startswith("unexpected right bracket"):
        at = _unmatched(toks, "]")
        return (at if at is not None else 0), "unexpected right bracket ']'"
    if msg.startswith("unexpected right brace"):
        at = _unmatched(toks, "}")
        return (at if at is not None else 0), "unexpected character: '}'"
    m = re.match(r"invalid label matcher, expected label matching operator after '(.*)'", msg)
    if m:
        for i, t in enumerate(toks[:-1]):
            if t.kind == "ident" and t.text == m.group(1) and i and toks[i - 1].text in "{,":
                return toks[i + 1].pos, (
                    f"unexpected {go_desc(toks[i + 1])} in label matching, expected label matching operator"
                )
        return end, "unexpected end of input inside braces"
    if msg.startswith("unexpected '=' in label matching"):
        off = next((t.pos + 1 for t in toks if t.text == "=="), 0)
        return off, 'unexpected "=" in label matching, expected string'
    if msg.startswith("illegal regex for"):
        return _regex_error(query, toks)
    m = re.match(r"unexpected character inside braces: '(.)'", msg)
    if m:
        depth = 0
        for t in toks:
            if t.text == "{":
                depth += 1
            elif t.text == "}":
                depth -= 1
            elif depth > 0 and t.text.startswith(m.group(1)):
                return t.pos, msg
    if msg.startswith("vector matching only allowed between vectors"):
        return toks[0].pos, "vector matching only allowed between instant vectors"
    if msg.startswith("comparisons between scalars must use BOOL modifier"):
        return _first_op(toks, {"==", "!=", "<", ">", "<=", ">="}), msg
    if msg.startswith("bool modifier can only be used on comparison operators"):
        return _first_op(toks, _BINARY | _BINARY_WORDS, before_bool=True), msg
    m = re.match(r"no grouping allowed for '(\w+)' operation", msg)
    if m:
        return toks[0].pos, f'no grouping allowed for "{m.group(1)}" operation'
    m = re.match(r"(@|offset) modifier must be preceded by an vector selector or matrix selector", msg)
    if m:
        return toks[0].pos, (
            f"{m.group(1)} modifier must be preceded by an instant vector selector or range vector selector "
            "or a subquery"
        )
    if msg.startswith("unexpected end of input in @"):
        return end, "unexpected end of input in @, expected timestamp"
    if msg.startswith("unexpected end of input in offset"):
        return end, f"unexpected end of input in offset, expected {_OFFSET_EXPECTED}"
    if msg.startswith("unterminated quoted string"):
        bad = next((t for t in toks if t.kind == "error"), None)
        if bad is not None and bad.text.startswith("`"):
            return bad.pos, "unterminated raw string"
    m = re.match(r"unknown escape sequence '(.)'", msg)
    if m:
        c = m.group(1)
        off = next((t.pos for t in toks if t.kind in ("str", "error") and "\\" + c in t.text), 0)
        return off, f"unknown escape sequence U+{ord(c):04X} {_go_char(c)}"
    if msg.startswith("ParseFloatError"):
        for t in toks:
            if t.kind == "num" and t.text in msg:
                ok, j = _go_number_or_duration(query, t.pos)
                if not ok:
                    return t.pos, f"bad number or duration syntax: {_go_quote(query[t.pos : j])}"
                return t.pos, (
                    f"error parsing number: strconv.ParseFloat: parsing {_go_quote(t.text)}: invalid syntax"
                )
    if msg.startswith("unexpected character after '!'"):
        off = next((i for i, c in enumerate(query) if c == "!" and query[i + 1 : i + 2] not in ("=", "~")), 0)
        return off, msg
    if msg.startswith("ranges only allowed for vector selectors"):
        for i, t in enumerate(toks[1:], 1):
            if t.text == "[" and (toks[i - 1].text in (")", "]") or toks[i - 1].kind in ("str", "num")):
                return t.pos, msg
    if msg.startswith("no offset modifiers allowed before range"):
        for i, t in enumerate(toks[1:], 1):
            if t.text == "[" and toks[i - 1].kind == "num":
                return t.pos, msg
    return None
