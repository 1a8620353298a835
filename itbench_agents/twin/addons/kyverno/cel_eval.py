"""CEL for Kyverno and Kubernetes admission policies, on the ``celpy`` package (cel-python).

Adds what Kubernetes' CEL environment has and ``celpy`` lacks: the optional field syntax
(rewritten by ``cel_optional.py`` into ``kyv_opt``/``kyv_has``/``kyv_value``) and the string and
list extensions admission policies use (``upperAscii``, ``lowerAscii``, ``trim``, ``split``,
``join``, ``replace``, ``indexOf``, ``isSorted``, ``sum``, ``min``, ``max``...).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes

from .cel_optional import OptionalSyntaxError, rewrite


class CelError(Exception):
    """A CEL expression that does not compile or fails while evaluating."""


_MISSING = object()


def _walk(base: Any, keys: Any) -> Any:
    cur = base
    for k in keys:
        if isinstance(cur, celtypes.MapType):
            if k not in cur:
                return _MISSING
            cur = cur[k]
        elif isinstance(cur, celtypes.ListType):
            try:
                cur = cur[int(k)]
            except (ValueError, IndexError, TypeError):
                return _MISSING
        else:
            return _MISSING
    return cur


def _opt(base: Any, keys: Any, default: Any) -> Any:
    got = _walk(base, keys)
    return default if got is _MISSING else got


def _has(base: Any, keys: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_walk(base, keys) is not _MISSING)


def _value(base: Any, keys: Any) -> Any:
    got = _walk(base, keys)
    if got is _MISSING:
        raise ValueError("optional.none() dereference")
    return got


def _str(fn: Any) -> Any:
    return lambda s, *a: celtypes.StringType(fn(str(s), *[str(x) if isinstance(x, str) else x for x in a]))


FUNCTIONS: dict[str, Any] = {
    "kyv_opt": _opt,
    "kyv_has": _has,
    "kyv_value": _value,
    # .orValue() / .hasValue() / .value() on a value that is already present (a plain selection)
    "orValue": lambda value, _default: value,
    "hasValue": lambda _value: celtypes.BoolType(True),
    "value": lambda value: value,
    "upperAscii": _str(str.upper),
    "lowerAscii": _str(str.lower),
    "trim": _str(str.strip),
    "replace": lambda s, a, b, *n: celtypes.StringType(str(s).replace(str(a), str(b), *(int(x) for x in n))),
    "split": lambda s, sep, *n: celtypes.ListType(
        [
            celtypes.StringType(p)
            for p in str(s).split(str(sep), *([int(n[0]) - 1] if n and int(n[0]) > 0 else []))
        ]
    ),
    "join": lambda lst, *sep: celtypes.StringType((str(sep[0]) if sep else "").join(str(x) for x in lst)),
    "indexOf": lambda s, sub, *start: celtypes.IntType(str(s).find(str(sub), *(int(x) for x in start))),
    "lastIndexOf": lambda s, sub: celtypes.IntType(str(s).rfind(str(sub))),
    "substring": lambda s, a, *b: celtypes.StringType(str(s)[int(a) : (int(b[0]) if b else None)]),
    "isSorted": lambda lst: celtypes.BoolType(list(lst) == sorted(lst)),
    "sum": lambda lst: sum(lst[1:], lst[0]) if len(lst) else celtypes.IntType(0),
    "min": lambda lst, *rest: min([lst, *rest]) if rest else min(lst),
    "max": lambda lst, *rest: max([lst, *rest]) if rest else max(lst),
}


@lru_cache(maxsize=2048)
def _program(expression: str) -> Any:
    env = celpy.Environment()
    try:
        ast = env.compile(rewrite(expression))
    except (celpy.CELParseError, OptionalSyntaxError) as exc:
        raise CelError(f"compilation failed: {exc}") from None
    return env.program(ast, functions=FUNCTIONS)


def check(expression: str) -> None:
    """Raise CelError when ``expression`` does not compile."""
    _program(expression)


def to_cel(value: Any) -> Any:
    return celpy.json_to_cel(value)


def evaluate(expression: str, activation: dict[str, Any]) -> Any:
    """Evaluate ``expression`` over ``activation`` (values already converted with :func:`to_cel`);
    raises CelError for CEL errors (no such key, bad types...)."""
    try:
        result = _program(expression).evaluate(activation)
    except CelError:
        raise
    except Exception as exc:  # celpy raises its own and Python errors from inside functions
        raise CelError(f"evaluation failed: {exc}") from None
    if isinstance(result, celpy.CELEvalError):
        raise CelError(f"evaluation failed: {result.args[0] if result.args else result}")
    return result
