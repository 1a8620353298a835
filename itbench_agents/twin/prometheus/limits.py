"""Per-request limits of the twin's PromQL API, checked before anything expensive runs.

``promql-parser`` (Rust, called with the GIL held) is quadratic in the nesting depth of the AST:
a 1,000-term ``or`` chain takes ~0.2 s, 5,000 nested parentheses seconds. A linear Python lexer
(:func:`tokens`) therefore checks the query first, so a hostile query is refused in microseconds
with a Prometheus-style ``bad_data`` error (with a ``line:col`` position) instead of freezing the
process:

- :data:`MAX_QUERY_BYTES`: the query text (Prometheus has no limit of its own; Go's form parser
  refuses bodies over 10 MiB, see :data:`MAX_FORM_BYTES`);
- :data:`MAX_DEPTH`: nesting of ``( { [`` and unary operators;
- :data:`MAX_OPERATORS`: binary operators in one query.

Together they bound a parse to a few milliseconds. The tokens also give positions for error
messages (``engine.parse``).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .values import PromQLError

MAX_QUERY_BYTES = 64 * 1024
MAX_DEPTH = 128
MAX_OPERATORS = 256
MAX_FORM_BYTES = 10 << 20  # Go's net/http maxFormSize

BINARY_WORDS = {"and", "or", "unless", "atan2"}
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)
  | (?P<num>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:[a-zA-Z]+\d*)*)
  | (?P<ident>(?:[a-zA-Z_]|:(?=[a-zA-Z_:]))[a-zA-Z0-9_:.]*)
  | (?P<op>==|!=|<=|>=|=~|!~|[-+*/%^<>=,()\[\]{}@:])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    kind: str  # str | num | ident | op | error
    text: str
    pos: int  # 0-based character offset


def tokens(query: str) -> list[Token]:
    """The query's tokens (whitespace and comments dropped); an unlexable character or an
    unterminated string becomes one ``error`` token spanning the rest of the input."""
    out: list[Token] = []
    i, n = 0, len(query)
    while i < n:
        m = _TOKEN.match(query, i)
        if m is None:
            out.append(Token("error", query[i:], i))
            break
        kind = m.lastgroup or "error"
        if kind not in ("ws", "comment"):
            out.append(Token(kind, m.group(), i))
        i = m.end()
    return out


def position(query: str, offset: int) -> str:
    """Prometheus' ``line:col`` (1-based, columns in bytes of the line) of a character offset."""
    before = query[:offset]
    line = before.count("\n") + 1
    col = len(before[before.rfind("\n") + 1 :].encode()) + 1
    return f"{line}:{col}"


def _fail(query: str, offset: int, msg: str) -> PromQLError:
    return PromQLError(
        f'invalid parameter "query": {position(query, offset)}: parse error: {msg}', "bad_data"
    )


def check_query(query: str) -> list[Token]:
    """Refuse queries beyond the limits (``bad_data``); returns the tokens for later use."""
    size = len(query.encode("utf-8", "surrogatepass"))
    if size > MAX_QUERY_BYTES:
        raise PromQLError(
            f'invalid parameter "query": the query is {size} bytes long, more than the limit of '
            f"{MAX_QUERY_BYTES} bytes",
            "bad_data",
        )
    toks = tokens(query)
    depth = 0
    unary = 0  # consecutive unary operators stack up like parentheses
    ops = 0
    prev: Token | None = None
    for t in toks:
        if t.kind == "op" and t.text in "([{":
            depth += 1
            if depth + unary > MAX_DEPTH:
                raise _fail(query, t.pos, f"the expression nests more than {MAX_DEPTH} levels deep")
        elif t.kind == "op" and t.text in ")]}":
            depth = max(0, depth - 1)
        is_binary_op = (
            t.kind == "op" and t.text in ("+", "-", "*", "/", "%", "^", "==", "!=", "<=", ">=", "<", ">")
        ) or (
            t.kind == "ident" and t.text.lower() in BINARY_WORDS and prev is not None and _ends_operand(prev)
        )
        if is_binary_op and t.text in ("+", "-") and (prev is None or not _ends_operand(prev)):
            unary += 1  # a sign, not a binary operator
            if depth + unary > MAX_DEPTH:
                raise _fail(query, t.pos, f"the expression nests more than {MAX_DEPTH} levels deep")
        elif is_binary_op:
            ops += 1
            if ops > MAX_OPERATORS:
                raise _fail(query, t.pos, f"more than {MAX_OPERATORS} binary operators in one query")
        elif t.kind in ("ident", "num", "str") or t.text in ")]}":
            unary = 0
        prev = t
    return toks


def _ends_operand(t: Token) -> bool:
    """Whether a binary operator may follow this token (so ``+``/``-`` after it is binary)."""
    if t.kind in ("num", "str"):
        return True
    if t.kind == "ident":
        return t.text.lower() not in BINARY_WORDS and t.text.lower() not in (
            "by",
            "without",
            "on",
            "ignoring",
            "bool",
            "offset",
            "group_left",
            "group_right",
        )
    return t.text in (")", "]", "}")


# --------------------------------------------------------------------------- query budget
class Budget:
    """Time and sample budget of one query, checked cooperatively inside every evaluation loop
    (:func:`checkpoint`), so that ``timeout=2s`` stops a query within about 2 s."""

    def __init__(self, deadline: float | None, max_samples: int, yield_lock: Any = None) -> None:
        self.deadline = deadline
        self.max_samples = max_samples
        self.samples = 0
        self.yield_lock = yield_lock  # the twin's lock: checkpoints step aside while it is taken

    def check(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise PromQLError("query timed out in expression evaluation", "timeout")

    def charge(self, n: int) -> None:
        self.samples += int(n)
        if self.samples > self.max_samples:
            raise PromQLError(
                "query processing would load too many samples into memory in query execution", "execution"
            )


_local = threading.local()


@contextmanager
def active(budget: Budget) -> Iterator[None]:
    """Make ``budget`` the one :func:`checkpoint` and :func:`charge` see in this thread."""
    prev = getattr(_local, "budget", None)
    _local.budget = budget
    try:
        yield
    finally:
        _local.budget = prev


_holders = 0  # threads inside :func:`holding` (waiting for or holding the twin's lock)
_holders_mutex = threading.Lock()
YIELD_MAX_S = 0.05


@contextmanager
def holding(lock: Any) -> Iterator[None]:
    """``with lock`` that other evaluating threads make way for: while any thread is in here,
    :func:`checkpoint` in the others sleeps (up to :data:`YIELD_MAX_S`) instead of competing for
    the GIL, so the twin's lock is held as briefly as the work inside needs."""
    global _holders
    with _holders_mutex:
        _holders += 1
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        with lock:
            yield
    finally:
        _local.depth -= 1
        with _holders_mutex:
            _holders -= 1


def checkpoint() -> None:
    """Raise the timeout error when the current query's deadline has passed (no-op outside one);
    step aside while another thread needs the twin's lock (see :func:`holding`)."""
    b: Budget | None = getattr(_local, "budget", None)
    if b is None:
        return
    if not getattr(_local, "depth", 0):
        end = time.monotonic() + YIELD_MAX_S
        while _holders and time.monotonic() < end:
            time.sleep(0.001)
        lk = b.yield_lock
        if lk is not None:  # someone else (a Kubernetes request, a sync) holds the twin's lock
            while not lk.acquire(blocking=False):
                if time.monotonic() > end:
                    break
                time.sleep(0.001)
            else:
                lk.release()
    if b.deadline is not None and time.monotonic() > b.deadline:
        raise PromQLError("query timed out in expression evaluation", "timeout")


def charge(n: int) -> None:
    """Count ``n`` samples against the current query's ``max_samples`` (no-op outside a query)."""
    b: Budget | None = getattr(_local, "budget", None)
    if b is not None:
        b.charge(n)


# --------------------------------------------------------------------------- string literals
_BYTE_ESCAPES = re.compile(r"(?:\\x[0-9a-fA-F]{2}|\\[0-7]{3})+")


def utf8_escapes(query: str) -> str:
    """Go reads ``\\xHH`` / ``\\NNN`` escapes in PromQL strings as *bytes* of a UTF-8 string
    (``"\\xc5\\xbc"`` is ``ż``); ``promql-parser`` reads each as one Latin-1 character. Runs of such
    escapes that decode as UTF-8 are rewritten to the characters they stand for before parsing."""
    if "\\" not in query:
        return query
    out: list[str] = []
    last = 0
    for t in tokens(query):
        if t.kind != "str" or t.text[0] == "`" or "\\" not in t.text:
            continue

        def fix(m: re.Match[str]) -> str:
            raw = m.group()
            if raw.count("\\") > 1 and raw[1] == "\\":
                return raw
            data = bytes(int(e[1:], 16) if e[0] == "x" else int(e, 8) for e in raw.split("\\")[1:])
            if all(b < 0x80 for b in data):
                return raw
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                return raw
            return raw if any(c in text for c in "\"'\\\n") else text

        fixed = _fix_escapes(t.text, fix)
        if fixed != t.text:
            out.append(query[last : t.pos])
            out.append(fixed)
            last = t.pos + len(t.text)
    if not out:
        return query
    out.append(query[last:])
    return "".join(out)


def _fix_escapes(lit: str, fix: Any) -> str:
    """Apply ``fix`` to the runs of byte escapes of a quoted literal, skipping escaped backslashes."""
    res: list[str] = []
    i, n = 0, len(lit)
    while i < n:
        m = _BYTE_ESCAPES.match(lit, i)
        if m:
            res.append(fix(m))
            i = m.end()
        elif lit[i] == "\\" and i + 1 < n:
            res.append(lit[i : i + 2])
            i += 2
        else:
            res.append(lit[i])
            i += 1
    return "".join(res)


# --------------------------------------------------------------------------- positions
_NOT_CALLS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}


class Locator:
    """Where calls, aggregations and their arguments start in the query text, for annotation
    positions (``promql-parser``'s AST has none). Calls are matched to AST nodes by order of
    appearance: a pre-order walk visits same-named calls in source order."""

    def __init__(self, query: str, root: Any) -> None:
        import promql_parser as pp

        self.query = query
        toks = tokens(query)
        occ: dict[str, list[tuple[int, list[int]]]] = {}
        for i, t in enumerate(toks):
            if t.kind != "ident" or t.text.lower() in _NOT_CALLS:
                continue
            j = i + 1
            if j < len(toks) and toks[j].text.lower() in ("by", "without"):
                j = _skip_group(toks, j + 1)
            if j < len(toks) and toks[j].text == "(":
                occ.setdefault(t.text, []).append((t.pos, _arg_starts(toks, j)))
        self.offsets: dict[int, int] = {}
        self._keep: list[Any] = []  # the nodes whose ids are keys (alive, so ids stay unique)
        seen: dict[str, int] = {}
        stack = [root]
        while stack:  # pre-order, children left to right, through the attributes the evaluator uses
            node = stack.pop()
            if node is None:
                continue
            self._keep.append(node)
            kids: list[Any] = []
            args: list[Any] = []
            name = ""
            if isinstance(node, pp.Call):
                name, args = node.func.name, list(node.args)
                kids = args
            elif isinstance(node, pp.AggregateExpr):
                name = str(node.op)
                args = [a for a in (node.param, node.expr) if a is not None]
                kids = args
            elif isinstance(node, pp.BinaryExpr):
                kids = [node.lhs, node.rhs]
            elif isinstance(node, pp.ParenExpr | pp.UnaryExpr | pp.SubqueryExpr):
                kids = [node.expr]
            if name:
                k = seen.get(name, 0)
                seen[name] = k + 1
                found = occ.get(name, [])
                if k < len(found):
                    pos, starts = found[k]
                    self.offsets[id(node)] = pos
                    for a, off in zip(args, starts, strict=False):
                        self.offsets.setdefault(id(a), off)
                        self._keep.append(a)
            stack.extend(reversed(kids))

    def pos(self, node: Any) -> str:
        return position(self.query, self.offsets.get(id(node), 0))


def _skip_group(toks: list[Token], j: int) -> int:
    """Index after a ``(labels)`` group starting at ``toks[j]``."""
    if j < len(toks) and toks[j].text == "(":
        while j < len(toks) and toks[j].text != ")":
            j += 1
        return j + 1
    return j


def _arg_starts(toks: list[Token], j: int) -> list[int]:
    """Start offsets of the arguments of the call whose ``(`` is ``toks[j]``."""
    starts: list[int] = []
    depth = 0
    expect = True
    for t in toks[j:]:
        if t.kind == "op" and t.text in "([{":
            depth += 1
            if depth == 1:
                continue
        elif t.kind == "op" and t.text in ")]}":
            depth -= 1
            if depth == 0:
                break
        elif depth == 1 and t.text == ",":
            expect = True
            continue
        if expect and depth >= 1:
            starts.append(t.pos)
            expect = False
    return starts
