"""Kyverno's JSON context and ``{{ }}`` variables: JMESPath (the ``jmespath`` package) over
``request.object``, ``request.operation``, ``element``..., with Kyverno's own JMESPath functions.

A string that is one variable keeps the variable's type (``"{{ request.object.spec.replicas }}"``
→ ``3``); a variable inside text is spliced in as text. A variable that resolves to nothing is an
error (``variable x not resolved at path p``), except where the caller supplies a default (Kyverno
reads unresolved variables in preconditions as ``""``). ``\\{{`` escapes a literal ``{{``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

import jmespath
import yaml
from jmespath import exceptions as jp_exceptions
from jmespath import functions

VARIABLE = re.compile(r"(^|[^\\])(\{\{(?:\{[^{}]*\}|[^{}])*\}\})")
ESCAPED = re.compile(r"\\\{\{")


class VariableError(Exception):
    """A variable that cannot be resolved (bad JMESPath, or nothing at that path)."""


class KyvernoFunctions(functions.Functions):
    """The Kyverno JMESPath functions the policies use (``pkg/engine/jmespath``)."""

    @functions.signature({"types": ["string"]})
    def _func_to_upper(self, s: str) -> str:
        return s.upper()

    @functions.signature({"types": ["string"]})
    def _func_to_lower(self, s: str) -> str:
        return s.lower()

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_split(self, s: str, sep: str) -> list[str]:
        return s.split(sep)

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_trim(self, s: str, chars: str) -> str:
        return s.strip(chars)

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_trim_prefix(self, s: str, prefix: str) -> str:
        return s[len(prefix) :] if s.startswith(prefix) else s

    @functions.signature(
        {"types": ["string"]}, {"types": ["string"]}, {"types": ["string"]}, {"types": ["number"]}
    )
    def _func_replace(self, s: str, old: str, new: str, n: float) -> str:
        return s.replace(old, new, int(n)) if n >= 0 else s.replace(old, new)

    @functions.signature({"types": ["string"]}, {"types": ["string"]}, {"types": ["string"]})
    def _func_replace_all(self, s: str, old: str, new: str) -> str:
        return s.replace(old, new)

    @functions.signature({"types": ["string"]}, {"types": ["string", "number"]})
    def _func_regex_match(self, pattern: str, s: Any) -> bool:
        return re.search(pattern, _text(s)) is not None

    @functions.signature(
        {"types": ["string"]}, {"types": ["string", "number"]}, {"types": ["string", "number"]}
    )
    def _func_regex_replace_all(self, pattern: str, s: Any, repl: Any) -> str:
        return re.sub(pattern, re.sub(r"\$\{?(\d+)\}?", r"\\\1", _text(repl)), _text(s))

    @functions.signature(
        {"types": ["string"]}, {"types": ["string", "number"]}, {"types": ["string", "number"]}
    )
    def _func_regex_replace_all_literal(self, pattern: str, s: Any, repl: Any) -> str:
        return re.sub(pattern, lambda _m: _text(repl), _text(s))

    @functions.signature({"types": ["string"]}, {"types": ["string", "number"]})
    def _func_pattern_match(self, pattern: str, s: Any) -> bool:
        from .values import wildcard_match

        return wildcard_match(pattern, _text(s))

    @functions.signature({"types": ["object"]}, {"types": ["object"]})
    def _func_label_match(self, selector: dict[str, Any], labels: dict[str, Any]) -> bool:
        return all(labels.get(k) == v for k, v in selector.items())

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_equal_fold(self, a: str, b: str) -> bool:
        return a.casefold() == b.casefold()

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_compare(self, a: str, b: str) -> int:
        return (a > b) - (a < b)

    @functions.signature({"types": ["string"]})
    def _func_base64_decode(self, s: str) -> str:
        return base64.b64decode(s).decode()

    @functions.signature({"types": ["string"]})
    def _func_base64_encode(self, s: str) -> str:
        return base64.b64encode(s.encode()).decode()

    @functions.signature({"types": ["string"]})
    def _func_parse_json(self, s: str) -> Any:
        return json.loads(s)

    @functions.signature({"types": ["string"]})
    def _func_parse_yaml(self, s: str) -> Any:
        return yaml.safe_load(s)

    @functions.signature({"types": ["string"]}, {"types": ["number"]})
    def _func_truncate(self, s: str, n: float) -> str:
        return s[: max(int(n), 0)]

    @functions.signature({"types": ["object", "array"]}, {"types": ["string"]}, {"types": ["string"]})
    def _func_items(self, obj: Any, key_name: str, value_name: str) -> list[dict[str, Any]]:
        if isinstance(obj, dict):
            return [{key_name: k, value_name: obj[k]} for k in sorted(obj)]
        return [{key_name: i, value_name: v} for i, v in enumerate(obj)]

    @functions.signature({"types": ["array"]}, {"types": ["array"]})
    def _func_object_from_lists(self, keys: list[Any], values: list[Any]) -> dict[str, Any]:
        return {str(k): (values[i] if i < len(values) else None) for i, k in enumerate(keys)}

    @functions.signature({"types": ["number", "string"]}, {"types": ["number", "string"]})
    def _func_add(self, a: Any, b: Any) -> Any:
        return _arith(a, b, lambda x, y: x + y)

    @functions.signature({"types": ["number", "string"]}, {"types": ["number", "string"]})
    def _func_subtract(self, a: Any, b: Any) -> Any:
        return _arith(a, b, lambda x, y: x - y)

    @functions.signature({"types": ["number", "string"]}, {"types": ["number", "string"]})
    def _func_multiply(self, a: Any, b: Any) -> Any:
        return _arith(a, b, lambda x, y: x * y)

    @functions.signature({"types": ["number", "string"]}, {"types": ["number", "string"]})
    def _func_divide(self, a: Any, b: Any) -> Any:
        return _arith(a, b, lambda x, y: x / y)

    @functions.signature({"types": ["number", "string"]}, {"types": ["number", "string"]})
    def _func_modulo(self, a: Any, b: Any) -> Any:
        return _arith(a, b, lambda x, y: x % y)

    @functions.signature({"types": ["number"]}, {"types": ["number"]})
    def _func_round(self, a: float, digits: float) -> float:
        return round(a, int(digits))

    @functions.signature({"types": ["string"]})
    def _func_path_canonicalize(self, s: str) -> str:
        import posixpath

        return posixpath.normpath(s) if s else s


def _text(value: Any) -> str:
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


def _arith(a: Any, b: Any, op: Callable[[Any, Any], Any]) -> Any:
    from .values import parse_quantity

    if isinstance(a, str) or isinstance(b, str):
        qa, qb = parse_quantity(str(a)), parse_quantity(str(b))
        if qa is None or qb is None:
            raise jp_exceptions.JMESPathTypeError("arithmetic", a, "string", ["number", "quantity"])
        return float(op(qa, qb))
    return op(a, b)


_OPTIONS = jmespath.Options(custom_functions=KyvernoFunctions())


def query(expression: str, data: Any) -> Any:
    """Evaluate one JMESPath expression (with Kyverno's functions); raises VariableError."""
    try:
        return jmespath.search(expression, data, options=_OPTIONS)
    except (jp_exceptions.JMESPathError, ValueError, TypeError, KeyError, ZeroDivisionError) as exc:
        raise VariableError(f"JMESPath query failed: {exc}") from None


class Context:
    """The JSON document variables are read from (``request``, ``element``, rule values...)."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self.data: dict[str, Any] = data if data is not None else {}

    def copy(self) -> Context:
        """A context that can be changed (``set``, new top-level keys) without changing this one;
        nested maps are shared until ``set`` writes into them (copy on write)."""
        return Context(dict(self.data))

    def set(self, dotted: str, value: Any) -> None:
        """Set ``a.b.c`` (creating the maps on the way), as a Values file's dotted keys do. The maps
        on the path are copied first, so contexts sharing them are not changed."""
        node = self.data
        parts = dotted.split(".")
        for p in parts[:-1]:
            nxt = node.get(p)
            nxt = dict(nxt) if isinstance(nxt, dict) else {}
            node[p] = nxt
            node = nxt
        node[parts[-1]] = value

    def query(self, expression: str) -> Any:
        return query(expression, self.data)


_NO_VARIABLES: dict[int, Any] = {}


def _has_variables(value: Any) -> bool:
    """Whether a (policy) tree holds a ``{{`` anywhere; remembered per tree object."""
    key = id(value)
    hit = _NO_VARIABLES.get(key)
    if hit is not None and hit[0] is value:
        return bool(hit[1])
    found = "{{" in json.dumps(value, default=str)
    if len(_NO_VARIABLES) > 8192:
        _NO_VARIABLES.clear()
    _NO_VARIABLES[key] = (value, found)
    return found


def substitute(value: Any, ctx: Context, path: str = "/", missing: Any = VariableError) -> Any:
    """Every ``{{ }}`` in ``value`` (strings, nested in maps and lists, keys included) resolved
    from ``ctx``. ``missing`` is what an unresolved variable becomes, or (the default) an error.
    A tree without variables is returned as it is (not copied: do not change it)."""
    if isinstance(value, dict | list) and path == "/" and not _has_variables(value):
        return value
    if isinstance(value, dict):
        return {
            substitute(k, ctx, path, missing) if isinstance(k, str) else k: substitute(
                v, ctx, f"{path}{k}/", missing
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [substitute(v, ctx, f"{path}{i}/", missing) for i, v in enumerate(value)]
    if not isinstance(value, str) or "{{" not in value:
        return value
    text = value
    for _ in range(32):  # nested variables resolve inside out
        m = VARIABLE.search(text)
        if m is None:
            break
        token = m.group(2)
        expression = token[2:-2].strip()
        try:
            result = ctx.query(expression)
        except VariableError as exc:
            if missing is not VariableError:
                result = missing
            else:
                raise VariableError(f"failed to resolve {expression} at path {path}: {exc}") from None
        if result is None:
            if missing is VariableError:
                raise VariableError(f"variable {expression} not resolved at path {path}")
            result = missing
        if text == token:
            return result
        start, end = m.start(2), m.end(2)
        text = text[:start] + _splice(result) + text[end:]
    return ESCAPED.sub("{{", text)


def _splice(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))
