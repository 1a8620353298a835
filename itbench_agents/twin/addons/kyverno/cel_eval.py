"""CEL for Kyverno and Kubernetes admission policies, on the ``common-expression-language``
package (Python bindings of the Rust ``cel`` crate).

Adds what Kubernetes' CEL environment has and the package lacks: the optional field syntax
(rewritten by ``cel_optional.py`` into ``kyv_opt``/``kyv_has``/``kyv_value``) and the string and
list extensions admission policies use (``upperAscii``, ``lowerAscii``, ``trim``, ``split``,
``join``, ``replace``, ``indexOf``, ``isSorted``, ``sum``, ``min``, ``max``...). Values go in and
come out as plain Python values.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import cel

from .cel_optional import OptionalSyntaxError, rewrite


class CelError(Exception):
    """A CEL expression that does not compile or fails while evaluating."""


_MISSING = object()


def _walk(base: Any, keys: Any) -> Any:
    cur = base
    for k in keys:
        if isinstance(cur, dict):
            if k not in cur:
                return _MISSING
            cur = cur[k]
        elif isinstance(cur, list):
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


def _has(base: Any, keys: Any) -> bool:
    return _walk(base, keys) is not _MISSING


def _value(base: Any, keys: Any) -> Any:
    got = _walk(base, keys)
    if got is _MISSING:
        raise ValueError("optional.none() dereference")
    return got


def _split(s: str, sep: str, *n: int) -> list[str]:
    if n and int(n[0]) > 0:
        return s.split(sep, int(n[0]) - 1)
    return s.split(sep)


FUNCTIONS: dict[str, Any] = {
    "kyv_opt": _opt,
    "kyv_has": _has,
    "kyv_value": _value,
    # .orValue() / .hasValue() / .value() on a value that is already present (a plain selection)
    "kyv_or_value": lambda value, _default: value,
    "kyv_has_value": lambda _value: True,
    "kyv_value_of": lambda value: value,
    "upperAscii": lambda s: str(s).upper(),
    "lowerAscii": lambda s: str(s).lower(),
    "trim": lambda s: str(s).strip(),
    "replace": lambda s, a, b, *n: str(s).replace(str(a), str(b), *(int(x) for x in n)),
    "split": _split,
    "join": lambda lst, *sep: (str(sep[0]) if sep else "").join(str(x) for x in lst),
    "indexOf": lambda s, sub, *start: str(s).find(str(sub), *(int(x) for x in start)),
    "lastIndexOf": lambda s, sub: str(s).rfind(str(sub)),
    "substring": lambda s, a, *b: str(s)[int(a) : (int(b[0]) if b else None)],
    "isSorted": lambda lst: list(lst) == sorted(lst),
    "sum": lambda lst: sum(lst),
    "min": lambda lst, *rest: min([lst, *rest]) if rest else min(lst),
    "max": lambda lst, *rest: max([lst, *rest]) if rest else max(lst),
}


@lru_cache(maxsize=2048)
def _program(expression: str) -> Any:
    try:
        return cel.compile(rewrite(expression))
    except (ValueError, OptionalSyntaxError) as exc:
        raise CelError(f"compilation failed: {exc}") from None


def context_for(activation: dict[str, Any]) -> Any:
    """A CEL context holding ``activation`` converted once (the conversion costs ~15 times an
    evaluation): :func:`evaluate` with ``context=`` reuses it, setting only ``variables`` anew."""
    return cel.Context(variables=activation, functions=FUNCTIONS)


def evaluate(expression: str, activation: dict[str, Any], context: Any = None) -> Any:
    """Evaluate ``expression`` over ``activation``; raises CelError for CEL errors (no such key,
    no such overload...). ``context``: :func:`context_for` of an activation with the same values
    but ``variables``, which is taken from ``activation``."""
    program = _program(expression)
    try:
        if context is None:
            context = cel.Context(variables=activation, functions=FUNCTIONS)
        else:
            context.add_variable("variables", activation.get("variables") or {})
        return program.execute(context)
    except (TypeError, RuntimeError, ValueError, KeyError, IndexError) as exc:
        raise CelError(f"evaluation failed: {exc}") from None
