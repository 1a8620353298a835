"""A recursive-descent LogQL parser producing :mod:`nodes` trees, with Loki's error wording.

Errors are :class:`LogQLParseError`, whose ``str`` is what Loki answers with a 400:
``parse error at line 1, col 11: syntax error: unexpected $end, expecting } or ,`` or, for
semantic checks, ``parse error : queries require at least one regexp or equality matcher ...``.
"""

from __future__ import annotations

import re
from typing import NoReturn, cast

from ..telemetry.sources import Matcher, MatchOp
from .gotemplate import Template, TemplateError
from .lexer import KEYWORDS, LexError, Token, line_col, tokenize
from .nodes import (
    RANGE_OPS,
    RANGE_OPS_NO_UNWRAP,
    RANGE_OPS_UNWRAP,
    VECTOR_OPS,
    BinOp,
    BoolPred,
    Decolorize,
    DropKeep,
    Expr,
    Grouping,
    LabelFilter,
    LabelFormat,
    LabelFormatItem,
    LabelPred,
    LabelReplace,
    LineFilter,
    LineFormat,
    Literal_,
    LogQuery,
    LogRange,
    MetricExpr,
    NumCmp,
    ParserStage,
    RangeAgg,
    Stage,
    StrCmp,
    Unwrap,
    VectorAgg,
    VectorLit,
    VectorMatching,
)
from .regex import Regex, RegexError, compile_anchored, compile_go, matches_label
from .units import parse_bytes, parse_go_duration, parse_prom_duration

MAX_QUERY_LENGTH = 131072  # Loki's maxInputSize

EMPTY_SELECTOR_MSG = (
    "queries require at least one regexp or equality matcher that does not have an empty-compatible "
    'value. For instance, app=~".*" does not meet this requirement, but app=~".+" will'
)


class LogQLParseError(ValueError):
    """A LogQL syntax or validation error; ``str(err)`` is Loki's message."""

    def __init__(self, msg: str, line: int = 0, col: int = 0) -> None:
        super().__init__(msg)
        self.msg = msg
        self.line = line
        self.col = col

    def __str__(self) -> str:
        if self.line == 0 and self.col == 0:
            return f"parse error : {self.msg}"
        return f"parse error at line {self.line}, col {self.col}: {self.msg}"


# ----------------------------------------------------------------------------- regex helpers
_LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _pattern_parts(src: str) -> tuple[tuple[str, str], ...]:
    parts: list[tuple[str, str]] = []
    pos = 0
    for m in re.finditer(r"<(_|[A-Za-z_][A-Za-z0-9_]*)>", src):
        if m.start() > pos:
            parts.append(("lit", src[pos : m.start()]))
        elif parts and parts[-1][0] == "cap":
            raise ValueError("consecutive capture not allowed")
        parts.append(("cap", m.group(1)))
        pos = m.end()
    if pos < len(src):
        parts.append(("lit", src[pos:]))
    names = [v for k, v in parts if k == "cap" and v != "_"]
    if not [k for k, _ in parts if k == "cap"]:
        raise ValueError("at least one capture is required")
    if not names:
        raise ValueError("at least one named capture is required")
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"duplicate capture name ({sorted(dup)[0]})")
    return tuple(parts)


# ----------------------------------------------------------------------------- parser
_BIN_PREC = {
    "or": 1,
    "and": 2,
    "unless": 2,
    "==": 3,
    "!=": 3,
    ">": 3,
    ">=": 3,
    "<": 3,
    "<=": 3,
    "+": 4,
    "-": 4,
    "*": 5,
    "/": 5,
    "%": 5,
    "^": 6,
}
_CMP = frozenset({"==", "!=", ">", ">=", "<", "<="})
_STAGE_WORDS = frozenset(
    {"json", "logfmt", "regexp", "pattern", "unpack", "line_format", "label_format", "drop", "keep"}
    | {"decolorize", "unwrap"}
)


class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        try:
            self.toks = tokenize(src)
        except LexError as exc:
            line, col = line_col(src, exc.pos)
            raise LogQLParseError(exc.msg, line, col) from None
        self.i = 0

    # -- token helpers
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> Token:
        t = self.toks[self.i]
        if self.i < len(self.toks) - 1:
            self.i += 1
        return t

    def is_op(self, *ops: str) -> bool:
        return self.tok.kind == "OP" and self.tok.text in ops

    def is_word(self, *words: str) -> bool:
        return self.tok.kind == "IDENT" and self.tok.text in words

    def fail(self, expecting: tuple[str, ...] = (), tok: Token | None = None) -> NoReturn:
        t = tok or self.tok
        msg = f"syntax error: unexpected {t.display()}"
        if expecting and len(expecting) <= 4:
            msg += ", expecting " + " or ".join(expecting)
        line, col = line_col(self.src, t.pos)
        raise LogQLParseError(msg, line, col)

    def fail_at(self, tok: Token, msg: str) -> NoReturn:
        line, col = line_col(self.src, tok.pos)
        raise LogQLParseError(msg, line, col)

    def expect_op(self, op: str, *alts: str) -> Token:
        if not self.is_op(op):
            self.fail((op, *alts))
        return self.next()

    def expect_kind(self, kind: str, name: str | None = None) -> Token:
        if self.tok.kind != kind or (kind == "IDENT" and self.tok.text in KEYWORDS and name is None):
            self.fail((name or ("IDENTIFIER" if kind == "IDENT" else kind),))
        return self.next()

    # -- entry point
    def parse(self) -> Expr:
        if self.tok.kind == "EOF":
            self.fail()
        expr = self.parse_expr(0)
        if self.tok.kind != "EOF":
            self.fail()
        return expr

    # -- expressions
    def parse_expr(self, min_prec: int) -> Expr:
        left = self.parse_unary()
        while True:
            t = self.tok
            op = t.text if t.kind in ("OP", "IDENT") else ""
            prec = _BIN_PREC.get(op)
            if prec is None or prec < min_prec:
                break
            self.next()
            return_bool = False
            if self.is_word("bool"):
                if op not in _CMP:
                    self.fail()
                self.next()
                return_bool = True
            matching = VectorMatching()
            if self.is_word("on", "ignoring"):
                on = self.next().text == "on"
                labels = self.parse_label_list()
                card = "one-to-one"
                include: tuple[str, ...] = ()
                if self.is_word("group_left", "group_right"):
                    card = "many-to-one" if self.next().text == "group_left" else "one-to-many"
                    if self.is_op("("):
                        include = self.parse_label_list()
                matching = VectorMatching(on, labels, card, include)  # type: ignore[arg-type]
            right = self.parse_expr(prec if op == "^" else prec + 1)  # "^" is right-associative
            lhs = self._metric(left, t)
            rhs = self._metric(right, t)
            if op in _CMP and isinstance(lhs, Literal_) and isinstance(rhs, Literal_) and not return_bool:
                raise LogQLParseError("comparisons between scalars must use BOOL modifier")
            if op in ("and", "or", "unless") and (isinstance(lhs, Literal_) or isinstance(rhs, Literal_)):
                raise LogQLParseError(
                    f"unexpected literal for right leg of logical/set binary operation ({op})"
                )
            left = BinOp(op, lhs, rhs, return_bool, matching)
        return left

    def _metric(self, e: Expr, at: Token) -> MetricExpr:
        if isinstance(e, LogQuery):
            self.fail(tok=at)
        return e

    def parse_unary(self) -> Expr:
        if self.is_op("-", "+"):
            sign = self.next().text
            if self.tok.kind == "NUMBER":
                v = self._number(self.next())
                return Literal_(-v if sign == "-" else v)
            inner = self.parse_unary()
            if isinstance(inner, LogQuery):
                self.fail()
            if sign == "+":
                return inner
            if isinstance(inner, Literal_):
                return Literal_(-inner.value)
            return BinOp("*", inner, Literal_(-1.0))
        return self.parse_primary()

    @staticmethod
    def _number(t: Token) -> float:
        return float(int(t.text, 16)) if t.text.lower().startswith("0x") else float(t.text)

    def parse_primary(self) -> Expr:
        t = self.tok
        if self.is_op("{"):
            return self.parse_log_query(allow_unwrap=False)[0]
        if self.is_op("("):
            self.next()
            inner = self.parse_expr(0)
            self.expect_op(")")
            return inner
        if t.kind == "NUMBER":
            self.next()
            return Literal_(self._number(t))
        if t.kind == "IDENT":
            name = t.text
            if name in RANGE_OPS and self.peek().kind == "OP" and self.peek().text == "(":
                return self.parse_range_agg()
            if name in VECTOR_OPS and (self.peek().text == "(" or self.peek().text in ("by", "without")):
                return self.parse_vector_agg()
            if name == "vector" and self.peek().text == "(":
                self.next()
                self.next()
                num = self.tok
                if num.kind != "NUMBER":
                    self.fail(("NUMBER",))
                self.next()
                self.expect_op(")")
                return VectorLit(self._number(num))
            if name == "label_replace" and self.peek().text == "(":
                return self.parse_label_replace()
        self.fail()

    def parse_label_list(self) -> tuple[str, ...]:
        self.expect_op("(")
        names: list[str] = []
        while not self.is_op(")"):
            if self.tok.kind != "IDENT":
                self.fail(("IDENTIFIER", ")") if not names else ("IDENTIFIER",))
            names.append(self.next().text)
            if self.is_op(","):
                self.next()
            elif not self.is_op(")"):
                self.fail((")", ","))
        self.next()
        return tuple(names)

    def parse_grouping(self) -> Grouping | None:
        if self.is_word("by", "without"):
            without = self.next().text == "without"
            return Grouping(without, self.parse_label_list())
        return None

    def parse_vector_agg(self) -> VectorAgg:
        op = self.next().text
        grouping = self.parse_grouping()
        self.expect_op("(")
        param: float | None = None
        if op in ("topk", "bottomk"):
            if self.tok.kind != "NUMBER":
                self.fail(("NUMBER",))
            param = self._number(self.next())
            self.expect_op(",")
            if param != int(param) or param <= 0:
                raise LogQLParseError(f"invalid parameter ({op}(k, vector)): k must be a positive integer")
        start = self.tok
        inner = self.parse_expr(0)
        if isinstance(inner, LogQuery):
            self.fail(tok=start)
        self.expect_op(")")
        after = self.parse_grouping()
        if grouping and after:
            self.fail()
        return VectorAgg(op, inner, grouping or after, param)

    def parse_label_replace(self) -> LabelReplace:
        self.next()
        self.expect_op("(")
        start = self.tok
        inner = self.parse_expr(0)
        if isinstance(inner, LogQuery):
            self.fail(tok=start)
        args: list[Token] = []
        for _ in range(4):
            self.expect_op(",")
            args.append(self.expect_kind("STRING"))
        self.expect_op(")")
        dst, repl, src, rx = (a.text for a in args)
        try:
            regex = compile_anchored(rx)
        except RegexError as exc:
            raise LogQLParseError(f"invalid regex in label_replace: {exc}") from None
        if not _LABEL_NAME.fullmatch(dst):
            raise LogQLParseError(f"invalid destination label name in label_replace(): {dst}")
        return LabelReplace(inner, dst, repl, src, regex)

    def parse_range_agg(self) -> RangeAgg:
        op_tok = self.next()
        op = op_tok.text
        self.expect_op("(")
        param: float | None = None
        if op == "quantile_over_time":
            if self.tok.kind != "NUMBER":
                self.fail(("NUMBER",))
            param = self._number(self.next())
            self.expect_op(",")
        log_range = self.parse_log_range()
        self.expect_op(")")
        grouping = self.parse_grouping()
        if log_range.unwrap is None and op not in RANGE_OPS_NO_UNWRAP:
            raise LogQLParseError(f"invalid aggregation {op} without unwrap")
        if log_range.unwrap is not None and op not in RANGE_OPS_UNWRAP:
            raise LogQLParseError(f"invalid aggregation {op} with unwrap")
        if grouping is not None and log_range.unwrap is None:
            raise LogQLParseError(f"grouping not allowed for {op} aggregation")
        return RangeAgg(op, log_range, param, grouping)

    def parse_log_range(self) -> LogRange:
        rng: Token | None = None
        if self.is_op("("):
            self.next()
            log, unwrap = self.parse_log_query(allow_unwrap=True)
            if self.tok.kind == "RANGE":  # ({..} |= "x" [5m])
                rng = self.next()
            self.expect_op(")")
        else:
            if not self.is_op("{"):
                self.fail(("{",))
            selector_only, _ = self.parse_selector()
            if self.tok.kind == "RANGE":  # {..}[5m] | json ...
                rng = self.next()
            stages, unwrap = self.parse_pipeline(allow_unwrap=True)
            log = LogQuery(selector_only, stages)
        if rng is None:
            if self.tok.kind != "RANGE":
                self.fail(("RANGE",))
            rng = self.next()
        try:
            range_ns = parse_prom_duration(rng.text)
        except ValueError as exc:
            self.fail_at(rng, str(exc))
        if range_ns <= 0:
            self.fail_at(rng, f"invalid range: {rng.text}")
        offset_ns = 0
        if self.is_word("offset"):
            self.next()
            d = self.tok
            if d.kind not in ("DURATION", "NUMBER"):
                self.fail(("DURATION",))
            self.next()
            try:
                offset_ns = parse_prom_duration(d.text)
            except ValueError as exc:
                self.fail_at(d, str(exc))
        return LogRange(log, range_ns, offset_ns, unwrap)

    # -- log queries
    def parse_selector(self) -> tuple[tuple[Matcher, ...], Token]:
        open_tok = self.expect_op("{")
        matchers: list[Matcher] = []
        while True:
            if self.tok.kind != "IDENT":
                self.fail(("IDENTIFIER",))
            name = self.next()
            if not self.is_op("=", "!=", "=~", "!~"):
                self.fail(("!=", "=", "=~", "!~"))
            op = self.next().text
            val = self.tok
            if val.kind != "STRING":
                self.fail(("STRING",))
            self.next()
            if op in ("=~", "!~"):
                try:
                    compile_anchored(val.text)
                except RegexError as exc:
                    self.fail_at(val, str(exc))
            matchers.append(Matcher(name.text, cast(MatchOp, op), val.text))
            if self.is_op(","):
                self.next()
                continue
            if self.is_op("}"):
                self.next()
                break
            self.fail(("}", ","))
        if all(matches_label(m.op, m.value, "") for m in matchers):
            raise LogQLParseError(EMPTY_SELECTOR_MSG)
        return tuple(matchers), open_tok

    def parse_log_query(self, allow_unwrap: bool) -> tuple[LogQuery, Unwrap | None]:
        matchers, _ = self.parse_selector()
        stages, unwrap = self.parse_pipeline(allow_unwrap)
        return LogQuery(matchers, stages), unwrap

    def parse_pipeline(self, allow_unwrap: bool) -> tuple[tuple[Stage, ...], Unwrap | None]:
        stages: list[Stage] = []
        unwrap: Unwrap | None = None
        while True:
            if self.is_op("|=", "!=", "|~", "!~"):
                if unwrap is not None:
                    self.fail()
                stages.append(self.parse_line_filter())
                continue
            if not self.is_op("|"):
                break
            bar = self.next()
            t = self.tok
            if t.kind == "IDENT" and t.text == "unwrap":
                if not allow_unwrap or unwrap is not None:
                    self.fail()
                unwrap = self.parse_unwrap()
                continue
            if unwrap is not None:  # only label filters may follow unwrap
                if t.kind == "IDENT" and t.text in _STAGE_WORDS:
                    self.fail()
                unwrap = Unwrap(unwrap.label, unwrap.conv, (*unwrap.post, LabelFilter(self.parse_lf_or())))
                continue
            stages.append(self.parse_stage(bar))
        return tuple(stages), unwrap

    def parse_line_filter(self) -> LineFilter:
        op = self.next().text
        values: list[Token] = []
        while True:
            if self.is_word("ip") and self.peek().text == "(":
                self.fail_at(self.tok, "ip() line filters are not supported by this twin")
            if self.tok.kind != "STRING":
                self.fail(("STRING",))
            values.append(self.next())
            if self.is_word("or") and self.peek().kind == "STRING":
                self.next()
                continue
            break
        regexes: list[Regex] = []
        if op in ("|~", "!~"):
            for v in values:
                try:
                    regexes.append(compile_go(v.text))
                except RegexError as exc:
                    self.fail_at(v, str(exc))
        return LineFilter(op, tuple(v.text for v in values), tuple(regexes))  # type: ignore[arg-type]

    def parse_unwrap(self) -> Unwrap:
        self.next()
        if self.tok.kind != "IDENT":
            self.fail(("IDENTIFIER",))
        name = self.next().text
        conv = ""
        if name in ("duration", "duration_seconds", "bytes") and self.is_op("("):
            conv = name
            self.next()
            name = self.expect_kind("IDENT", "IDENTIFIER").text
            self.expect_op(")")
        return Unwrap(name, conv)  # type: ignore[arg-type]

    def _flags(self) -> tuple[bool, bool]:
        strict = keep_empty = False
        while self.is_op("-") and self.peek().kind == "OP" and self.peek().text == "-":
            rest = self.src[self.tok.pos :]
            for flag in ("--strict", "--keep-empty"):
                if rest.startswith(flag):
                    end = self.tok.pos + len(flag)
                    while self.tok.kind != "EOF" and self.tok.pos < end:
                        self.next()
                    if flag == "--strict":
                        strict = True
                    else:
                        keep_empty = True
                    break
            else:
                self.fail()
        return strict, keep_empty

    def _extraction_params(self) -> tuple[tuple[str, str], ...]:
        params: list[tuple[str, str]] = []
        while self.tok.kind == "IDENT" and self.tok.text not in KEYWORDS:
            name = self.next().text
            if self.is_op("="):
                self.next()
                expr = self.expect_kind("STRING").text
            else:
                expr = name
            params.append((name, expr))
            if self.is_op(","):
                self.next()
                continue
            break
        return tuple(params)

    def parse_stage(self, bar: Token) -> Stage:
        t = self.tok
        word = t.text if t.kind == "IDENT" else ""
        if word in ("json", "logfmt"):
            self.next()
            strict, keep_empty = self._flags() if word == "logfmt" else (False, False)
            params = self._extraction_params()
            return ParserStage(word, params=params, strict=strict, keep_empty=keep_empty)  # type: ignore[arg-type]
        if word == "unpack":
            self.next()
            return ParserStage("unpack")
        if word == "regexp":
            self.next()
            s = self.expect_kind("STRING")
            try:
                rx = compile_go(s.text)
            except RegexError as exc:
                raise LogQLParseError(f"invalid regexp parser: {exc}") from None
            if not rx.groupindex:
                raise LogQLParseError("invalid regexp parser: at least one named capture must be supplied")
            return ParserStage("regexp", param=s.text, regex=rx)
        if word == "pattern":
            self.next()
            s = self.expect_kind("STRING")
            try:
                parts = _pattern_parts(s.text)
            except ValueError as exc:
                raise LogQLParseError(f"invalid pattern parser: {exc}") from None
            return ParserStage("pattern", param=s.text, pattern_parts=parts)
        if word == "line_format":
            self.next()
            s = self.expect_kind("STRING")
            return LineFormat(self._template(s, "line_format"))
        if word == "label_format":
            self.next()
            items: list[LabelFormatItem] = []
            while True:
                dst = self.expect_kind("IDENT", "IDENTIFIER").text
                self.expect_op("=")
                v = self.tok
                if v.kind == "IDENT":
                    self.next()
                    items.append(LabelFormatItem(dst, src=v.text))
                elif v.kind == "STRING":
                    self.next()
                    items.append(LabelFormatItem(dst, template=self._template(v, "label_format")))
                else:
                    self.fail(("IDENTIFIER", "STRING"))
                if self.is_op(","):
                    self.next()
                    continue
                break
            dsts = [i.dst for i in items]
            dup = sorted({d for d in dsts if dsts.count(d) > 1})
            if dup:
                raise LogQLParseError(
                    f"multiple label name '{dup[0]}' not allowed in a single format operation"
                )
            return LabelFormat(tuple(items))
        if word in ("drop", "keep"):
            self.next()
            names: list[str] = []
            matchers: list[Matcher] = []
            while True:
                name = self.expect_kind("IDENT", "IDENTIFIER").text
                if self.is_op("=", "!=", "=~", "!~"):
                    op = self.next().text
                    val = self.expect_kind("STRING")
                    if op in ("=~", "!~"):
                        try:
                            compile_anchored(val.text)
                        except RegexError as exc:
                            self.fail_at(val, str(exc))
                    matchers.append(Matcher(name, cast(MatchOp, op), val.text))
                else:
                    names.append(name)
                if self.is_op(","):
                    self.next()
                    continue
                break
            return DropKeep(word, tuple(names), tuple(matchers))  # type: ignore[arg-type]
        if word == "decolorize":
            self.next()
            return Decolorize()
        if t.kind == "IDENT" and word not in KEYWORDS or self.is_op("("):
            return LabelFilter(self.parse_lf_or())
        self.fail()

    def _template(self, tok: Token, stage: str) -> Template:
        try:
            return Template.parse(tok.text)
        except TemplateError as exc:
            raise LogQLParseError(f"stage '| {stage} {_go_quote(tok.text)}' : {exc}") from None

    # -- label filter expressions: or < and (",", "and", juxtaposition)
    def parse_lf_or(self) -> LabelPred:
        left = self.parse_lf_and()
        while self.is_word("or"):
            self.next()
            left = BoolPred("or", left, self.parse_lf_and())
        return left

    def parse_lf_and(self) -> LabelPred:
        left = self.parse_lf_primary()
        while True:
            if self.is_word("and") or self.is_op(","):
                self.next()
            elif not (
                (self.tok.kind == "IDENT" and self.tok.text not in KEYWORDS and self.peek().kind == "OP")
                or self.is_op("(")
            ):
                break
            left = BoolPred("and", left, self.parse_lf_primary())
        return left

    def parse_lf_primary(self) -> LabelPred:
        if self.is_op("("):
            self.next()
            inner = self.parse_lf_or()
            self.expect_op(")")
            return inner
        if self.tok.kind != "IDENT" or self.tok.text in KEYWORDS:
            self.fail(("IDENTIFIER",) if self.tok.kind != "IDENT" else ())
        name = self.next().text
        if not self.is_op("=", "!=", "=~", "!~", "==", ">", ">=", "<", "<="):
            self.fail()
        op = self.next().text
        neg = False
        if self.is_op("-"):
            self.next()
            neg = True
        v = self.tok
        if v.kind == "STRING" and not neg:
            if op not in ("=", "!=", "=~", "!~"):
                self.fail(("NUMBER", "DURATION", "BYTES"))
            self.next()
            rx = None
            if op in ("=~", "!~"):
                try:
                    rx = compile_anchored(v.text)
                except RegexError as exc:
                    self.fail_at(v, str(exc))
            return StrCmp(name, op, v.text, rx)  # type: ignore[arg-type]
        if v.kind in ("NUMBER", "DURATION", "BYTES") and op not in ("=~", "!~"):
            self.next()
            sign = -1.0 if neg else 1.0
            try:
                if v.kind == "NUMBER":
                    return NumCmp(name, op, sign * self._number(v), "number")  # type: ignore[arg-type]
                if v.kind == "DURATION":
                    return NumCmp(name, op, sign * parse_go_duration(v.text), "duration")  # type: ignore[arg-type]
                return NumCmp(name, op, sign * parse_bytes(v.text), "bytes")  # type: ignore[arg-type]
            except ValueError as exc:
                self.fail_at(v, str(exc))
        self.fail(("STRING",) if op in ("=~", "!~") else ())


def _go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def parse_logql(query: str) -> Expr:
    """Parse a LogQL query; raises :class:`LogQLParseError` with Loki's wording."""
    if len(query) > MAX_QUERY_LENGTH:
        raise LogQLParseError(f"input size too long ({len(query)} > {MAX_QUERY_LENGTH})")
    try:
        return _Parser(query).parse()
    except RecursionError:
        raise LogQLParseError("expression nested too deeply") from None


def parse_selector(query: str) -> tuple[Matcher, ...]:
    """Parse a bare stream selector (``/series`` ``match[]``); pipelines are refused like Loki does."""
    expr = parse_logql(query)
    if not isinstance(expr, LogQuery) or expr.stages:
        raise LogQLParseError("only label matchers are supported")
    return expr.matchers
