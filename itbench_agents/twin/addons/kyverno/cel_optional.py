"""CEL's optional field syntax (``a.?b.?c.orValue(d)``, ``m[?k].hasValue()``), which Kubernetes and
Kyverno policies use everywhere but the Python CEL packages (``common-expression-language``,
``cel-python``) do not parse, rewritten
into calls of two helper functions that ``cel_eval.py`` registers:

    object.spec.?initContainers.orValue([])       →  kyv_opt(object.spec, ["initContainers"], [])
    c.?securityContext.?privileged.hasValue()      →  kyv_has(c, ["securityContext", "privileged"])

A chain is the operand before the first ``.?`` / ``[?``, then every field or index selector up to
``.orValue(default)``, ``.hasValue()`` or ``.value()``; once a chain is optional, a missing field
anywhere after it yields the default, as CEL's optionals do. A chain without such an ending is an
error naming the expression (never a silently different meaning).
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""(?P<str>[rRbB]{0,2}(?:'''(?:.|\n)*?'''|\"\"\"(?:.|\n)*?\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"))"""
    r"|(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[uU]?)"
    r"|(?P<id>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>\.\?|\[\?|&&|\|\||==|!=|<=|>=|[-+*/%!<>?:.,()\[\]{}])"
    r"|(?P<ws>\s+)",
)


class OptionalSyntaxError(ValueError):
    """An optional chain this rewriter cannot express (no orValue/hasValue/value ending)."""


def tokens(expression: str) -> list[str]:
    out, pos = [], 0
    while pos < len(expression):
        m = _TOKEN.match(expression, pos)
        if m is None:
            raise OptionalSyntaxError(f"cannot read the CEL expression at {expression[pos : pos + 20]!r}")
        if m.lastgroup != "ws":
            out.append(m.group(0))
        pos = m.end()
    return out


_PLAIN_ENDINGS = {"orValue": "kyv_or_value", "hasValue": "kyv_has_value", "value": "kyv_value_of"}


def rewrite(expression: str) -> str:
    """``expression`` with every optional chain replaced; unchanged when it has none. An
    ``.orValue()`` / ``.hasValue()`` / ``.value()`` left over is on a plain (present) value, which
    policies write and CEL engines disagree on: it becomes an explicit identity call."""
    if not any(m in expression for m in (".?", "[?", ".orValue", ".hasValue", ".value(")):
        return expression
    toks = _rewrite_tokens(tokens(expression), expression)
    for k in range(len(toks) - 2):
        if toks[k] == "." and toks[k + 1] in _PLAIN_ENDINGS and toks[k + 2] == "(":
            toks[k + 1] = _PLAIN_ENDINGS[toks[k + 1]]
    return " ".join(toks)


def _rewrite_tokens(toks: list[str], source: str) -> list[str]:
    while True:
        i = next((k for k, t in enumerate(toks) if t in (".?", "[?")), None)
        if i is None:
            return toks
        start = _operand_start(toks, i)
        base = toks[start:i]
        path: list[list[str]] = []
        j = i
        ending: tuple[str, list[str]] | None = None
        while j < len(toks):
            t = toks[j]
            if t in (".", ".?") and j + 1 < len(toks) and re.match(r"^[A-Za-z_]", toks[j + 1]):
                name = toks[j + 1]
                if j + 2 < len(toks) and toks[j + 2] == "(":
                    close = _matching(toks, j + 2)
                    args = toks[j + 3 : close]
                    if name in ("orValue", "hasValue", "value") and t == ".":
                        ending = (name, args)
                        j = close + 1
                    break
                path.append([repr(name)])
                j += 2
            elif t in ("[", "[?"):
                close = _matching(toks, j)
                path.append(toks[j + 1 : close])
                j = close + 1
            else:
                break
        if ending is None:
            raise OptionalSyntaxError(
                f"an optional chain in {source!r} does not end in .orValue(), .hasValue() or .value()"
            )
        name, args = ending
        base_text = _rewrite_tokens(list(base), source)
        keys = [" ".join(_rewrite_tokens(p, source)) for p in path]
        if name == "orValue":
            call = [
                "kyv_opt",
                "(",
                *base_text,
                ",",
                "[",
                ", ".join(keys),
                "]",
                ",",
                *_rewrite_tokens(args, source),
                ")",
            ]
        elif name == "hasValue":
            call = ["kyv_has", "(", *base_text, ",", "[", ", ".join(keys), "]", ")"]
        else:
            call = ["kyv_value", "(", *base_text, ",", "[", ", ".join(keys), "]", ")"]
        toks = toks[:start] + call + toks[j:]


def _matching(toks: list[str], open_at: int) -> int:
    pairs = {"(": ")", "[": "]", "[?": "]", "{": "}"}
    depth = 0
    for k in range(open_at, len(toks)):
        if toks[k] in pairs:
            depth += 1
        elif toks[k] in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return k
    raise OptionalSyntaxError("unbalanced brackets in a CEL expression")


def _matching_back(toks: list[str], close_at: int) -> int:
    depth = 0
    for k in range(close_at, -1, -1):
        if toks[k] in (")", "]", "}"):
            depth += 1
        elif toks[k] in ("(", "[", "[?", "{"):
            depth -= 1
            if depth == 0:
                return k
    raise OptionalSyntaxError("unbalanced brackets in a CEL expression")


def _operand_start(toks: list[str], i: int) -> int:
    """Where the postfix expression that ends just before ``toks[i]`` starts."""
    k = i - 1
    while k >= 0:
        t = toks[k]
        if t == ")":
            o = _matching_back(toks, k)
            k = o - 1 if o > 0 and re.match(r"^[A-Za-z_]", toks[o - 1]) else o  # f(...) or (...)
        elif t == "]":
            k = _matching_back(toks, k) - 1  # x[...]: the indexed operand comes before
            continue
        elif not re.match(r"^[A-Za-z_]", t):
            return k + 1
        if k >= 1 and toks[k - 1] in (".", ".?"):
            k -= 2
            continue
        return k
    return 0
