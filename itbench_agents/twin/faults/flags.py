"""flagd feature flags: the flag file in a ConfigMap, its admission check and flag values.

Faults are injected the way ITBench does it: change ``defaultVariant`` of a flag in ConfigMap
``flagd-config`` key ``demo.flagd.json``. What each flag *does* is data in the app's
``behaviour.yaml`` (``flags.effects``); this module only reads values.
"""

from __future__ import annotations

import json
from typing import Any

Obj = dict[str, Any]
Cause = tuple[str, str, str]


def parse_flag_file(text: str) -> dict[str, Any]:
    """The ``flags`` mapping of a flagd file; ValueError with a reason when malformed."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("flags"), dict):
        raise ValueError('expected an object with a "flags" mapping')
    return doc["flags"]  # type: ignore[no-any-return]


def flag_problems(flags: dict[str, Any]) -> list[str]:
    out = []
    for name, flag in flags.items():
        if not isinstance(flag, dict):
            out.append(f"flag {name!r}: expected an object")
            continue
        variants = flag.get("variants")
        if not isinstance(variants, dict) or not variants:
            out.append(f"flag {name!r}: variants must be a non-empty object")
            continue
        dv = flag.get("defaultVariant")
        if dv not in variants:
            out.append(
                f"flag {name!r}: defaultVariant {dv!r} is not one of its variants ({', '.join(map(str, variants))})"
            )
        if flag.get("state", "ENABLED") not in ("ENABLED", "DISABLED"):
            out.append(f"flag {name!r}: state must be ENABLED or DISABLED")
    return out


def flag_values(flags: dict[str, Any]) -> dict[str, float]:
    """Flag name → numeric value of its default variant (bool → 0/1; off/disabled/unknown → 0)."""
    out: dict[str, float] = {}
    for name, flag in flags.items():
        if not isinstance(flag, dict) or flag.get("state", "ENABLED") != "ENABLED":
            continue
        variants = flag.get("variants") or {}
        v = variants.get(flag.get("defaultVariant")) if isinstance(variants, dict) else None
        out[name] = _numeric(v)
    return out


def _numeric(v: Any) -> float:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, int | float):
        return float(v)
    return 0.0


def make_flag_validator(configmap: str, key: str) -> Any:
    """A ConfigMap admission check: the flag file must parse and each defaultVariant must exist."""

    def validate(obj: Obj) -> list[Cause]:
        if obj.get("metadata", {}).get("name") != configmap:
            return []
        data = obj.get("data") or {}
        if key not in data:
            return []
        field = f"data[{key}]"
        try:
            flags = parse_flag_file(str(data[key]))
        except ValueError as e:
            return [(field, "FieldValueInvalid", f"Invalid value: flagd flag file: {e}")]
        return [(field, "FieldValueInvalid", f"Invalid value: {p}") for p in flag_problems(flags)]

    return validate
