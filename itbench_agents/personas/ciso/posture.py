"""The CISO posture scorer, by executing what was deployed: read the PolicyReports Kyverno wrote
and decide as ITBench's Kyverno evaluator does (``evaluation/main.py``, ../shared/reference/itbench.md
§3.5): the control is assessed when some report whose ``scope`` is an injected workload has
``summary.fail > 0``. Compliance validation (ITBench-Lite's metric): the same policies on the
compliant variant report no failure for it.

Blind to the reference policy: only the cluster's reports and the scenario's workload names are read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
Target = tuple[str, str, str, str]  # apiVersion, kind, namespace, name


@dataclass(frozen=True)
class Posture:
    detected: bool
    """Some report scoped to an injected workload has a failure (the paper's pass)."""
    evidence: bool
    """Some report is scoped to an injected workload at all (``evidence_available``)."""
    failing: list[str] = field(default_factory=list)
    """``policy/rule`` of the failing results on the targets."""


def scoped_to(report: Obj, target: Target) -> bool:
    scope = report.get("scope") or {}
    api_version, kind, namespace, name = target
    return (
        scope.get("apiVersion") == api_version
        and scope.get("kind") == kind
        and (scope.get("namespace") or "") == namespace
        and scope.get("name") == name
    )


def assess(reports: Iterable[Obj], targets: Iterable[Target]) -> Posture:
    targets = list(targets)
    mine = [r for r in reports if any(scoped_to(r, t) for t in targets)]
    failing = sorted(
        {
            f"{res.get('policy')}/{res.get('rule')}"
            for r in mine
            for res in r.get("results") or []
            if res.get("result") == "fail"
        }
    )
    detected = any(int((r.get("summary") or {}).get("fail") or 0) > 0 for r in mine)
    return Posture(detected=detected, evidence=bool(mine), failing=failing)
