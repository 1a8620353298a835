"""LogQL syntax tree: log queries (selector + pipeline) and metric queries over them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..telemetry.sources import Matcher
from .gotemplate import Template
from .regex import Regex

# ----------------------------------------------------------------------------- pipeline stages


@dataclass(frozen=True)
class LineFilter:
    """``|= "a" or "b"``, ``!= "x"``, ``|~ "re"``, ``!~ "re"``; alternatives are or-ed."""

    op: Literal["|=", "!=", "|~", "!~"]
    values: tuple[str, ...]
    regexes: tuple[Regex, ...] = ()

    def keep(self, line: str) -> bool:
        if self.op in ("|=", "!="):
            hit = any(v in line for v in self.values)
        else:
            hit = any(rx.search(line) is not None for rx in self.regexes)
        return hit if self.op in ("|=", "|~") else not hit


@dataclass(frozen=True)
class ParserStage:
    """``| json``, ``| logfmt``, ``| regexp "..."``, ``| pattern "..."``, ``| unpack``."""

    kind: Literal["json", "logfmt", "regexp", "pattern", "unpack"]
    param: str = ""
    params: tuple[tuple[str, str], ...] = ()  # json/logfmt label extraction: (label, expression)
    strict: bool = False
    keep_empty: bool = False
    regex: Regex | None = None
    pattern_parts: tuple[tuple[str, str], ...] = ()  # ("lit", text) | ("cap", name)


@dataclass(frozen=True)
class StrCmp:
    name: str
    op: Literal["=", "!=", "=~", "!~"]
    value: str
    regex: Regex | None = None


@dataclass(frozen=True)
class NumCmp:
    name: str
    op: Literal["==", "=", "!=", ">", ">=", "<", "<="]
    value: float
    kind: Literal["number", "duration", "bytes"]


@dataclass(frozen=True)
class BoolPred:
    op: Literal["and", "or"]
    left: LabelPred
    right: LabelPred


LabelPred = StrCmp | NumCmp | BoolPred


@dataclass(frozen=True)
class LabelFilter:
    pred: LabelPred


@dataclass(frozen=True)
class LineFormat:
    template: Template


@dataclass(frozen=True)
class LabelFormatItem:
    dst: str
    src: str | None = None  # rename: dst=src
    template: Template | None = None  # dst="{{...}}"


@dataclass(frozen=True)
class LabelFormat:
    items: tuple[LabelFormatItem, ...]


@dataclass(frozen=True)
class DropKeep:
    kind: Literal["drop", "keep"]
    names: tuple[str, ...]
    matchers: tuple[Matcher, ...] = ()


@dataclass(frozen=True)
class Decolorize:
    pass


Stage = LineFilter | ParserStage | LabelFilter | LineFormat | LabelFormat | DropKeep | Decolorize


@dataclass(frozen=True)
class LogQuery:
    matchers: tuple[Matcher, ...]
    stages: tuple[Stage, ...] = ()


# ----------------------------------------------------------------------------- metric queries


@dataclass(frozen=True)
class Unwrap:
    label: str
    conv: Literal["", "duration", "duration_seconds", "bytes"] = ""
    post: tuple[LabelFilter, ...] = ()


@dataclass(frozen=True)
class LogRange:
    log: LogQuery
    range_ns: int
    offset_ns: int = 0
    unwrap: Unwrap | None = None


@dataclass(frozen=True)
class Grouping:
    without: bool
    labels: tuple[str, ...]


@dataclass(frozen=True)
class RangeAgg:
    op: str
    range: LogRange
    param: float | None = None  # quantile_over_time
    grouping: Grouping | None = None


@dataclass(frozen=True)
class VectorAgg:
    op: str
    inner: MetricExpr
    grouping: Grouping | None = None
    param: float | None = None  # topk / bottomk


@dataclass(frozen=True)
class VectorMatching:
    on: bool = False
    labels: tuple[str, ...] = ()
    card: Literal["one-to-one", "many-to-one", "one-to-many"] = "one-to-one"
    include: tuple[str, ...] = ()


@dataclass(frozen=True)
class BinOp:
    op: str
    lhs: MetricExpr
    rhs: MetricExpr
    return_bool: bool = False
    matching: VectorMatching = field(default_factory=VectorMatching)


@dataclass(frozen=True)
class Literal_:
    value: float


@dataclass(frozen=True)
class VectorLit:
    value: float


@dataclass(frozen=True)
class LabelReplace:
    inner: MetricExpr
    dst: str
    replacement: str
    src: str
    regex: Regex


MetricExpr = RangeAgg | VectorAgg | BinOp | Literal_ | VectorLit | LabelReplace
Expr = LogQuery | MetricExpr

RANGE_OPS = frozenset(
    {
        "count_over_time",
        "rate",
        "bytes_over_time",
        "bytes_rate",
        "absent_over_time",
        "sum_over_time",
        "avg_over_time",
        "min_over_time",
        "max_over_time",
        "stddev_over_time",
        "stdvar_over_time",
        "quantile_over_time",
        "first_over_time",
        "last_over_time",
        "rate_counter",
    }
)
RANGE_OPS_NO_UNWRAP = frozenset(
    {"count_over_time", "rate", "bytes_over_time", "bytes_rate", "absent_over_time"}
)
RANGE_OPS_UNWRAP = (RANGE_OPS - RANGE_OPS_NO_UNWRAP) | {"rate"}
VECTOR_OPS = frozenset(
    {"sum", "avg", "min", "max", "count", "stddev", "stdvar", "topk", "bottomk", "sort", "sort_desc"}
)
