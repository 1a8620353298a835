"""Score a set of Kyverno policies on a CISO scenario by executing them, as the benchmark will score
an agent's: deploy them on the violating environment and read the reports (the paper's pass), then on
the compliant variant (compliance validation). A policy Kyverno refuses scores zero with its reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...k8s.client import KubeApi
from ...twin.kube.errors import ApiError
from .environment import bring_up, deploy_policies, reports
from .posture import Posture, assess
from .spec import CisoScenario


@dataclass(frozen=True)
class PolicyScore:
    detected: bool
    """The paper's pass: a report scoped to an injected workload fails (``kyverno-update``: a result
    of the edited policy fails, and the other policies are unchanged, none added or renamed)."""
    compliant_clean: bool
    """Compliance validation: on the compliant variant the workload is reported and nothing fails."""
    violating: Posture | None = None
    compliant: Posture | None = None
    refused: str = ""
    """Kyverno's refusal of a policy, when it refused one."""
    changed: tuple[str, ...] = ()
    """``kyverno-update``: what the policies changed beyond the edit (added, removed, altered)."""

    @property
    def strict(self) -> bool:
        """Both: the stricter column (issue 28)."""
        return self.detected and self.compliant_clean


def score_policies(scenario: CisoScenario, policies: list[dict[str, Any]], *, seed: int = 0) -> PolicyScore:
    twin = bring_up(scenario, "violating", seed=seed)
    try:
        deploy_policies(twin, policies)
    except ApiError as e:
        return PolicyScore(False, False, refused=e.message)
    violating = assess(reports(twin), scenario.targets())
    other = bring_up(scenario, "compliant", seed=seed)
    deploy_policies(other, policies)
    compliant = assess(reports(other), scenario.targets())
    detected = violating.detected
    changed: tuple[str, ...] = ()
    if scenario.task_class == "kyverno-update":
        changed = tuple(changes_beyond_edit(scenario, policies))
        detected = not changed and any(f.startswith(f"{scenario.edit}/") for f in violating.failing)
    return PolicyScore(
        detected=detected,
        compliant_clean=compliant.evidence and not compliant.detected,
        violating=violating,
        compliant=compliant,
        changed=changed,
    )


def policy_generated(scenario: CisoScenario, policies: list[dict[str, Any]]) -> tuple[bool, str]:
    """ITBench's ``generate_policy`` output task, on the cluster: a policy was deployed (``kyverno``),
    or the policy to edit has rules other than it had (``kyverno-update``)."""
    if scenario.task_class != "kyverno-update":
        names = sorted(_name(p) for p in policies)
        return (bool(names), f"deployed: {', '.join(names)}" if names else "no policy deployed")
    final = {_name(p): p for p in policies}
    before = {_name(p): p for p in scenario.existing}
    edited = scenario.edit in final and _rules(final[scenario.edit]) != _rules(before[scenario.edit])
    return edited, (f"{scenario.edit} edited" if edited else f"{scenario.edit} not edited")


def changes_beyond_edit(scenario: CisoScenario, policies: list[dict[str, Any]]) -> list[str]:
    """ITBench's ``check_unchanged_policies`` and more: a policy added, removed or renamed, or an
    existing one other than ``edit`` whose rules changed."""
    final = {_name(p): p for p in policies}
    before = {_name(p): p for p in scenario.existing}
    out = [f"added {n}" for n in sorted(set(final) - set(before))]
    out += [f"removed {n}" for n in sorted(set(before) - set(final))]
    for name in sorted(set(before) & set(final)):
        if name != scenario.edit and _rules(final[name]) != _rules(before[name]):
            out.append(f"changed {name}")
    return out


def _name(policy: dict[str, Any]) -> str:
    return str((policy.get("metadata") or {}).get("name", ""))


def _rules(policy: dict[str, Any]) -> Any:
    return (policy.get("spec") or {}).get("rules")


POLICY_KINDS = ("ClusterPolicy", "Policy")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def cluster_policies(api: KubeApi) -> list[dict[str, Any]]:
    """The Kyverno policies in a cluster as their authors wrote them (server fields and status
    dropped): what an agent produced, read through the public API (twin or live cluster alike)."""
    out = []
    for kind in POLICY_KINDS:
        for obj in api.list("kyverno.io/v1", kind):
            meta = obj.get("metadata") or {}
            kept = {k: meta[k] for k in ("name", "namespace", "labels") if meta.get(k)}
            annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
            if annotations:
                kept["annotations"] = annotations
            out.append(
                {"apiVersion": "kyverno.io/v1", "kind": kind, "metadata": kept, "spec": obj.get("spec") or {}}
            )
    return out


def score_cluster(scenario: CisoScenario, api: KubeApi, *, seed: int = 0) -> PolicyScore:
    """Score the policies an agent left in its cluster by executing them on fresh violating and
    compliant environments (the agent's own cluster may have been tampered with)."""
    return score_policies(scenario, cluster_policies(api), seed=seed)
