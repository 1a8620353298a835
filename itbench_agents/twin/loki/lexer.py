"""LogQL tokens: a hand-written scanner with Loki's token names for error messages.

Loki's yacc parser reports ``syntax error: unexpected X, expecting Y`` where keyword and punctuation
tokens print as themselves (``}``, ``|=``, ``by``) and value tokens by kind (``IDENTIFIER``,
``STRING``, ``NUMBER``, ``RANGE``, ``DURATION``, ``BYTES``); the end of input is ``$end``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .units import parse_prom_duration

TokKind = Literal["IDENT", "STRING", "NUMBER", "DURATION", "BYTES", "RANGE", "OP", "EOF"]

# Keywords Loki's lexer turns into their own tokens (so errors print them verbatim).
KEYWORDS = frozenset(
    {
        "by",
        "without",
        "bool",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "offset",
        "or",
        "and",
        "unless",
        "json",
        "logfmt",
        "regexp",
        "pattern",
        "unpack",
        "line_format",
        "label_format",
        "unwrap",
        "drop",
        "keep",
        "decolorize",
        "ip",
    }
)

# Longest first so that "|=" wins over "|" and "!~" over "!".
_OPS: tuple[str, ...] = (
    *("|=", "|~", "!=", "!~", "=~", "==", ">=", "<=", "|", "=", ">", "<", "{", "}", "(", ")", ","),
    *("+", "-", "*", "/", "%", "^", "]"),
)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
# Go duration (time.ParseDuration) and Prometheus duration units.
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h|d|w|y))+")
_BYTES = re.compile(r"\d+(?:\.\d+)?(?:[KMGTPE]i?B|B|[kmgtpe]i?b|b|[KMGTPE]i?b|[kmgtpe]i?B)")


@dataclass(frozen=True)
class Token:
    kind: TokKind
    text: str  # raw text, or the decoded value of a STRING
    pos: int  # offset in the query

    def display(self) -> str:
        """How Loki's parser names this token in a syntax error."""
        if self.kind == "EOF":
            return "$end"
        if self.kind == "OP":
            return self.text
        if self.kind == "IDENT":
            return self.text if self.text in KEYWORDS else "IDENTIFIER"
        return self.kind


class LexError(Exception):
    def __init__(self, msg: str, pos: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.pos = pos


_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    '"': '"',
    "'": "'",
}


def _scan_string(src: str, i: int) -> tuple[str, int]:
    """Decode a Go string literal starting at ``src[i]`` (``"`` or backquote); returns (value, end)."""
    quote = src[i]
    j = i + 1
    if quote == "`":
        end = src.find("`", j)
        if end < 0:
            raise LexError("literal not terminated", i)
        return src[j:end], end + 1
    out: list[str] = []
    while j < len(src):
        c = src[j]
        if c == quote:
            return "".join(out), j + 1
        if c == "\n":
            break
        if c == "\\":
            j += 1
            if j >= len(src):
                break
            e = src[j]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                j += 1
            elif e == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", src[j + 1 : j + 3]):
                out.append(chr(int(src[j + 1 : j + 3], 16)))
                j += 3
            elif e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", src[j + 1 : j + 5]):
                out.append(chr(int(src[j + 1 : j + 5], 16)))
                j += 5
            elif e == "U" and re.fullmatch(r"[0-9a-fA-F]{8}", src[j + 1 : j + 9]):
                cp = int(src[j + 1 : j + 9], 16)
                if cp > 0x10FFFF:
                    raise LexError("escape sequence is invalid Unicode code point", j)
                out.append(chr(cp))
                j += 9
            elif e in "01234567" and re.fullmatch(r"[0-7]{3}", src[j : j + 3]):
                out.append(chr(int(src[j : j + 3], 8)))
                j += 3
            else:
                raise LexError("invalid char escape", j)
            continue
        out.append(c)
        j += 1
    raise LexError("literal not terminated", i)


def tokenize(src: str) -> list[Token]:
    toks: list[Token] = []
    i = 0
    n = len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
            continue
        if c == "#":  # comment to end of line
            nl = src.find("\n", i)
            i = n if nl < 0 else nl + 1
            continue
        if c in '"`':
            val, j = _scan_string(src, i)
            toks.append(Token("STRING", val, i))
            i = j
            continue
        if c == "[":  # a range: Loki's lexer reads up to "]" and parses a Prometheus duration
            close = src.find("]", i)
            if close < 0:
                raise LexError("missing closing ']' in duration", n)
            body = src[i + 1 : close]
            try:
                parse_prom_duration(body)
            except ValueError as exc:
                raise LexError(str(exc), close + 1) from None
            toks.append(Token("RANGE", body, i))
            i = close + 1
            continue
        if c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
            m = _BYTES.match(src, i)
            md = _DURATION.match(src, i)
            mn = _NUMBER.match(src, i)
            best = max(
                ((m, "BYTES"), (md, "DURATION"), (mn, "NUMBER")),
                key=lambda t: t[0].end() if t[0] else -1,
            )
            mm, kind = best
            if mm is not None:
                end = mm.end()
                if end < n and (src[end].isalnum() or src[end] == "_"):
                    raise LexError(f"unexpected character {src[end]!r} after number", end)
                toks.append(Token(kind, mm.group(0), i))  # type: ignore[arg-type]
                i = end
                continue
        m = _IDENT.match(src, i)
        if m:
            toks.append(Token("IDENT", m.group(0), i))
            i = m.end()
            continue
        for op in _OPS:
            if src.startswith(op, i):
                toks.append(Token("OP", op, i))
                i += len(op)
                break
        else:
            raise LexError(f"unexpected character: {c!r}", i)
    toks.append(Token("EOF", "", n))
    return toks


def line_col(src: str, pos: int) -> tuple[int, int]:
    """1-based line and column of offset ``pos`` (Loki's error positions)."""
    line = src.count("\n", 0, pos) + 1
    col = pos - (src.rfind("\n", 0, pos) + 1) + 1
    return line, col
