"""Kyverno conditions (``preconditions``, ``deny.conditions``, foreach preconditions): ``any`` /
``all`` lists of ``{key, operator, value}`` with Kyverno's operators
(``pkg/engine/variables/operator``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from .values import compare, parse_duration_pair, parse_quantity, wildcard_match
from .variables import Context, VariableError, substitute


class ConditionError(Exception):
    """A condition that cannot be evaluated (unknown operator, unresolved variable)."""


def evaluate_block(block: Any, ctx: Context, missing: Any = VariableError) -> bool:
    """A conditions block: a plain list (all must hold) or ``{any: [...], all: [...]}``.
    ``missing`` is what unresolved variables read as (preconditions: ``""``)."""
    if block is None:
        return True
    if isinstance(block, list):
        return all(evaluate(c, ctx, missing) for c in block)
    if not isinstance(block, dict):
        raise ConditionError(f"conditions must be a list or a map with any/all, not {type(block).__name__}")
    any_of = block.get("any") or []
    all_of = block.get("all") or []
    if any_of and not any(evaluate(c, ctx, missing) for c in any_of):
        return False
    return all(evaluate(c, ctx, missing) for c in all_of)


def evaluate(condition: dict[str, Any], ctx: Context, missing: Any = VariableError) -> bool:
    try:
        key = substitute(condition.get("key"), ctx, "/key/", missing)
        value = substitute(condition.get("value"), ctx, "/value/", missing)
    except VariableError as exc:
        raise ConditionError(str(exc)) from None
    op = str(condition.get("operator", "")).lower()
    handler = _OPERATORS.get(op)
    if handler is None:
        raise ConditionError(f"unknown condition operator {condition.get('operator')!r}")
    return handler(key, value)


# ------------------------------------------------------------------------- operators
def equals(key: Any, value: Any) -> bool:
    if isinstance(key, bool):
        return isinstance(value, bool) and key == value
    if isinstance(key, int | float):
        return _number_equals(float(key), value)
    if isinstance(key, str):
        durations = parse_duration_pair(key, value)
        if durations is not None:
            return durations[0] == durations[1]
        qk = parse_quantity(key)
        if qk is not None and isinstance(value, str):
            qv = parse_quantity(value)
            return qv is not None and qk == qv
        return isinstance(value, str) and wildcard_match(value, key)
    if isinstance(key, dict | list):
        return key == value
    return False


def _number_equals(key: float, value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return float(value) == key
    if isinstance(value, str):
        try:
            return float(value) == key
        except ValueError:
            return False
    return False


def _numeric(op: str) -> Callable[[Any, Any], bool]:
    def handler(key: Any, value: Any) -> bool:
        if isinstance(key, bool):
            return False
        if isinstance(key, int | float):
            return _number_compare(float(key), value, op)
        if isinstance(key, str):
            durations = parse_duration_pair(key, value)
            if durations is not None:
                return compare(durations[0], durations[1], op)
            qk = parse_quantity(key)
            if qk is not None and isinstance(value, str):
                qv = parse_quantity(value)
                if qv is not None:
                    return compare(qk, qv, op)
            try:
                return _number_compare(float(key), value, op)
            except ValueError:
                return _semver_compare(key, value, op)
        return False

    return handler


def _number_compare(key: float, value: Any, op: str) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return compare(key, float(value), op)
    if isinstance(value, str):
        durations = parse_duration_pair(key, value)
        if durations is not None:
            return compare(durations[0], durations[1], op)
        try:
            return compare(key, float(value), op)
        except ValueError:
            return False
    return False


def _semver_compare(key: str, value: Any, op: str) -> bool:
    def parse(v: Any) -> tuple[int, ...] | None:
        try:
            return tuple(int(p) for p in str(v).lstrip("v").split("-")[0].split("."))
        except ValueError:
            return None

    k, v = parse(key), parse(value)
    if k is None or v is None or len(k) != 3 or len(v) != 3:
        return False
    return compare(Decimal(0), Decimal((v > k) - (v < k)), op)


def _duration(op: str) -> Callable[[Any, Any], bool]:
    def handler(key: Any, value: Any) -> bool:
        durations = parse_duration_pair(key, value)
        if durations is None:
            return False
        return compare(durations[0], durations[1], op)

    return handler


def _strings(value: Any) -> list[str] | None:
    """The set a membership operator compares against: a list, or a string holding a JSON list
    or one value (None: not a valid set)."""
    if isinstance(value, list):
        return [_go_text(v) for v in value]
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return [_go_text(value)]
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [value]
        if isinstance(parsed, list):
            return [_go_text(v) for v in parsed]
        return [value]
    return None


def _go_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v == int(v):
        return str(int(v))
    if isinstance(v, dict | list):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _keys(key: Any) -> list[str] | None:
    if isinstance(key, list):
        return [_go_text(k) for k in key]
    if isinstance(key, str | int | float):
        return [_go_text(key)]
    return None


def _either(a: str, b: str) -> bool:
    return wildcard_match(a, b) or wildcard_match(b, a)


def _in_range(key: str, value: Any) -> bool | None:
    from .values import _matches_one, operator_of

    if isinstance(value, str) and operator_of(value) == "in-range":
        return _matches_one(key, value)
    return None


def _membership(key: Any, value: Any) -> tuple[list[str], list[str], list[bool] | None] | None:
    """The key's strings, the value's, and (when the value is a range ``a-b``) whether each key
    falls in it; None when either side is not a valid set."""
    keys, values = _keys(key), _strings(value)
    if keys is None or values is None:
        return None
    ranged = [_in_range(k, value) for k in keys]
    if ranged and ranged[0] is not None:
        return keys, values, [bool(r) for r in ranged]
    return keys, values, None


def any_in(key: Any, value: Any) -> bool:
    m = _membership(key, value)
    if m is None:
        return False
    keys, values, ranged = m
    return any(ranged) if ranged is not None else any(_either(k, v) for k in keys for v in values)


def all_in(key: Any, value: Any) -> bool:
    m = _membership(key, value)
    if m is None:
        return False
    keys, values, ranged = m
    return all(ranged) if ranged is not None else all(any(_either(k, v) for v in values) for k in keys)


def any_not_in(key: Any, value: Any) -> bool:
    m = _membership(key, value)
    if m is None:
        return False
    keys, values, ranged = m
    if ranged is not None:
        return not all(ranged)
    return any(not any(_either(k, v) for v in values) for k in keys)


def all_not_in(key: Any, value: Any) -> bool:
    m = _membership(key, value)
    if m is None:
        return False
    keys, values, ranged = m
    return not any(ranged) if ranged is not None else not any(_either(k, v) for k in keys for v in values)


def _in(key: Any, value: Any) -> bool:
    """The deprecated ``In``: a string key is one of the values; a list key is a subset."""
    values = _strings(value)
    if values is None:
        return False
    if isinstance(key, list):
        return all(_go_text(k) in values for k in key)
    if isinstance(key, str | int | float):
        return any(wildcard_match(v, _go_text(key)) for v in values)
    return False


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "equals": equals,
    "equal": equals,
    "notequals": lambda k, v: not equals(k, v),
    "notequal": lambda k, v: not equals(k, v),
    "in": _in,
    "notin": lambda k, v: not _in(k, v),
    "anyin": any_in,
    "allin": all_in,
    "anynotin": any_not_in,
    "allnotin": all_not_in,
    "greaterthan": _numeric(">"),
    "greaterthanorequals": _numeric(">="),
    "lessthan": _numeric("<"),
    "lessthanorequals": _numeric("<="),
    "durationgreaterthan": _duration(">"),
    "durationgreaterthanorequals": _duration(">="),
    "durationlessthan": _duration("<"),
    "durationlessthanorequals": _duration("<="),
}
