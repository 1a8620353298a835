"""Benign churn: seeded, harmless changes around the fault, so the fault is not the only change.

Issue 12 ("SRE benchmark validity", part 2): on a freshly deployed app every object is created at
deploy time and the fault arrives later, so "what changed since deploy" is the answer key. Each
episode therefore gets a seeded churn plan of 1–3 benign changes, some applied before the fault
(followed by a seeded gap, which also jitters the fault's injection time) and some after it
(before the agent starts), so the fault is neither the only nor always the last change. A fault
that rolls out a root-cause Deployment (:func:`releases`) also gets a ``rollout-restart`` of an
unrelated Deployment after it, where one can be made — also where the fault's own pods cannot be
scheduled, as long as no node is involved — so that the newest ReplicaSet does not name it (the
audit's ``audit-newest-rollout``).

Every change is a Kubernetes API operation (the scenario spec's ``patch`` / ``create`` /
``restart``), applied through the API exactly as a fault is, so the same plan runs on a live
cluster. Only changes the twin's behaviour model is known to ignore are planned:

``rollout-env``      a rolling update that sets ``LOG_LEVEL`` (no app model reads it)
``rollout-image``    a rolling update to another release tag of the same image that the image
                     catalogue holds (only when the environment can check the catalogue)
``rollout-restart``  ``kubectl rollout restart`` of an unrelated Deployment
``hpa``              a new HorizontalPodAutoscaler with sane bounds (min = current replicas)
``networkpolicy``    a new allow-all-ingress NetworkPolicy (only where no policy isolates ingress
                     and the scenario's operations create none: it could only widen access)
``configmap``        an annotation edit on a ConfigMap (its data is unchanged)
``node-label``       a new label on a node that nothing selects

and benign look-alikes of fault signatures (a recovered chaos drill, a paused chaos Schedule, a
feature flag that is on, a CronJob, a failed one-off Job whose alert is chronic noise): see
:mod:`churn_lookalikes`.

A change never touches the fault's footprint: no object the scenario's operations (faults and
mitigation) name, no workload the ground truth names (names or filters), no workload whose name
appears anywhere in the operations (chaos selectors...), no stateful or infrastructure workload
(databases, caches, brokers, flagd, the telemetry pipeline, the load generator). When the scenario's
operations involve nodes or scheduling, no change creates pods (their placement is part of the
fault). A change after the fault also avoids every workload that calls (transitively) into a protected one, since a
restarted caller would meet the fault at start-up. What the plan could not do, and why, is in
:attr:`ChurnPlan.skipped`; a scenario for which no change is possible gets an empty plan with the
reason, never a silent pass.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..k8s.client import KubeApi, KubeApiError
from ..scenario.inject import apply_operation
from ..scenario.spec import CreateOp, DeleteOp, FlagOp, Operation, PatchOp, RestartOp, Scenario, Target
from . import churn_lookalikes as lookalikes

ChurnMode = Literal["default", "none"]
CHURN_MODES: tuple[str, ...] = ("default", "none")
DEFAULT_CHURN: ChurnMode = "default"
Phase = Literal["before", "after"]

MIN_CHANGES, MAX_CHANGES = 1, 3
PRE_GAP_S = (90.0, 300.0)
"""Seeded twin seconds after each pre-fault change (the rollout completes; the fault's time jitters)."""
POST_GAP_S = (15.0, 60.0)
"""Seeded twin seconds between the fault and the first post-fault change."""

INFRA = re.compile(
    r".*(postgres|mysql|mongo|valkey|redis|memcached|kafka|zookeeper|rabbitmq|consul|etcd|flagd|"
    r"otel-?collector|otelcol|collector|jaeger|prometheus|grafana|opensearch|elasticsearch|loki|"
    r"load-?generator|locust).*"
)
"""Workloads churn never touches: state, brokers, discovery, feature flags, telemetry, traffic."""
LOG_LEVELS = ("debug", "info", "warn")
NODE_LABELS = (
    ("infra.example.com/maintenance-window", ("sat-0200", "sun-0200", "sun-0400")),
    ("infra.example.com/rack", ("r07", "r12", "r21")),
)
CONFIGMAP_ANNOTATIONS = ("platform.example.com/reviewed-by", ("sre-oncall", "platform-team", "release-bot"))


def churn_mode(value: str | None) -> ChurnMode:
    v = (value or DEFAULT_CHURN).strip().lower()
    if v not in CHURN_MODES:
        raise ValueError(f"churn must be one of {', '.join(CHURN_MODES)}, got {value!r}")
    return v  # type: ignore[return-value]


@dataclass
class ChurnChange:
    kind: str
    phase: Phase
    target: str
    """``namespace/Kind/name`` (``Kind/name`` for a node) of the object changed or created."""
    ops: list[Operation]
    detail: str
    applied_at: float | None = None
    min_gap_s: float = 0.0
    """Twin seconds that must pass after a ``before`` change before the fault."""
    alert_owner: str | None = None
    """Name prefix of the pods whose alerts the change raises on purpose (a failed Job)."""

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "phase": self.phase,
            "target": self.target,
            "detail": self.detail,
            "operations": [op.describe() for op in self.ops],
            "applied_at": self.applied_at,
        }

    def explains(self, labels: dict[str, str]) -> bool:
        """Whether an alert with ``labels`` is one this change raises on purpose."""
        return self.alert_owner is not None and lookalikes.explains(self.alert_owner, labels)


@dataclass
class ChurnPlan:
    mode: ChurnMode
    seed: int
    changes: list[ChurnChange] = field(default_factory=list)
    pre_gaps_s: list[float] = field(default_factory=list)
    """Twin seconds to wait after each ``before`` change (same order)."""
    post_gap_s: float = 0.0
    skipped: list[str] = field(default_factory=list)
    """Change kinds the plan could not use, each with the reason."""
    firing_before_fault: list[str] = field(default_factory=list)
    """Alerts of the namespace firing once the pre-fault changes are done."""
    planted_alerts: list[str] = field(default_factory=list)
    """Those of :attr:`firing_before_fault` a change raises on purpose (chronic noise)."""
    planted_labels: list[dict[str, str]] = field(default_factory=list)
    """The label sets of :attr:`planted_alerts`."""

    def unexplained_alerts(self) -> list[str]:
        """Alerts firing before the fault that no change planted (must be none)."""
        return [a for a in self.firing_before_fault if a not in self.planted_alerts]

    @property
    def before(self) -> list[ChurnChange]:
        return [c for c in self.changes if c.phase == "before"]

    @property
    def after(self) -> list[ChurnChange]:
        return [c for c in self.changes if c.phase == "after"]

    @property
    def targets(self) -> list[str]:
        return [c.target for c in self.changes]

    def describe(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "seed": self.seed,
            "changes": [c.describe() for c in self.changes],
            "pre_gaps_s": self.pre_gaps_s,
            "post_gap_s": self.post_gap_s,
            "skipped": self.skipped,
            "firing_before_fault": self.firing_before_fault,
            "planted_alerts": self.planted_alerts,
        }


# ---------------------------------------------------------------------------- protection
def _strings(doc: Any) -> Iterable[str]:
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _strings(v)


def _op_objects(op: Operation) -> list[tuple[str, str | None, str]]:
    """(kind, namespace, name) of the objects an operation touches."""
    if isinstance(op, CreateOp):
        m = op.object.get("metadata") or {}
        return [(str(op.object.get("kind", "")), m.get("namespace"), str(m.get("name", "")))]
    if isinstance(op, PatchOp | DeleteOp):
        return [(op.target.kind, op.target.namespace, op.target.name)]
    if isinstance(op, FlagOp):
        return [("ConfigMap", op.namespace, op.configmap)]
    if isinstance(op, RestartOp):
        return [(op.kind, op.namespace, op.name)]
    return []  # pragma: no cover - the union is closed


def _key(kind: str, namespace: str | None, name: str) -> str:
    return f"{namespace}/{kind}/{name}" if namespace else f"{kind}/{name}"


@dataclass
class Protection:
    """What churn must not touch for one scenario."""

    objects: set[str]
    """``namespace/Kind/name`` of every object the scenario's operations touch."""
    tokens: set[str]
    """Every string inside the scenario's operations (names, selector values...)."""
    gt_names: set[str]
    gt_filters: list[str]
    creates_netpol: bool
    touches_nodes: bool
    creates_quota: bool = False
    """The operations create a ResourceQuota or LimitRange (new pods would count against it)."""
    pins_nodes: bool = False
    """The operations involve nodes themselves (Node objects, node names, taints, tolerations), so
    where any pod runs is part of the fault; a selector or affinity of the faulty workload's own
    pods (``touches_nodes`` without this) concerns only the pods the scenario names."""

    @classmethod
    def of(cls, scenario: Scenario) -> Protection:
        ops = [*scenario.faults, *scenario.mitigation]
        objects = {_key(k, ns, n) for op in ops for k, ns, n in _op_objects(op)}
        tokens: set[str] = set()
        for op in ops:
            tokens.update(_strings(op.model_dump(mode="json")))
        kinds = {k for op in ops for k, _, _ in _op_objects(op)}
        blob = json.dumps([op.model_dump(mode="json") for op in ops])
        gt_names = {g.name for g in scenario.ground_truth.groups if g.name}
        gt_filters = [f for g in scenario.ground_truth.groups for f in g.filter]
        return cls(
            objects=objects,
            tokens=tokens,
            gt_names=gt_names,
            gt_filters=gt_filters,
            creates_netpol="NetworkPolicy" in kinds,
            creates_quota=bool({"ResourceQuota", "LimitRange"} & kinds),
            touches_nodes="Node" in kinds
            or any(w in blob for w in ("nodeSelector", "nodeName", "affinity", "taint", "toleration")),
            pins_nodes="Node" in kinds or any(w in blob for w in ("nodeName", "taint", "toleration")),
        )

    def names_workload(self, name: str) -> bool:
        """The scenario names this workload (operations, ground truth, or a pod of it by filter)."""
        if name in self.tokens or name in self.gt_names:
            return True
        pod_like = f"{name}-5d9c7b8f6d-x2k4q"
        return any(re.fullmatch(f, name) or re.fullmatch(f, pod_like) for f in self.gt_filters)


def scheduling_sensitive(scenario: Scenario) -> bool:
    """Whether the scenario's operations involve nodes or scheduling (node names, selectors,
    affinity, taints): its outcome depends on where pods run, so nothing may move them (no past
    rollouts in the twin's history, no churn that creates pods)."""
    return Protection.of(scenario).touches_nodes


def upstream_of(protected: set[str], edges: Sequence[tuple[str, str]]) -> set[str]:
    """Workloads that call (transitively) into ``protected`` (edges are caller → callee)."""
    callers: dict[str, set[str]] = {}
    for a, b in edges:
        callers.setdefault(b, set()).add(a)
    out: set[str] = set()
    todo = list(protected)
    while todo:
        for c in callers.get(todo.pop(), ()):
            if c not in out and c not in protected:
                out.add(c)
                todo.append(c)
    return out


# ---------------------------------------------------------------------------- planning
def scenario_seed(tag: str, seed: int, scenario_id: str) -> int:
    """A seed for one harness plan (``tag``) of one scenario and trial seed."""
    h = hashlib.sha256(f"{tag}:{seed}:{scenario_id}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def churn_seed(seed: int, scenario_id: str) -> int:
    return scenario_seed("churn", seed, scenario_id)


def _containers(dep: dict[str, Any]) -> list[dict[str, Any]]:
    return list((((dep.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [])


def _isolates_ingress(policy: dict[str, Any]) -> bool:
    """Whether a NetworkPolicy isolates the pods it selects for ingress (its ``policyTypes``, by
    default Ingress)."""
    spec = policy.get("spec") or {}
    return "Ingress" in (spec.get("policyTypes") or ["Ingress"])


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _list(api: KubeApi, api_version: str, kind: str, ns: str | None) -> list[dict[str, Any]]:
    try:
        return sorted(api.list(api_version, kind, ns), key=_name)
    except KubeApiError:
        return []


def _other_tag(image: str, image_ok: Callable[[str], bool]) -> str | None:
    """Another release tag of ``image`` (``2.2.0-cart`` → ``2.1.3-cart``) the registry holds."""
    repo, sep, tag = image.rpartition(":")
    if not sep or "/" in tag:
        return None
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)(-.+)?", tag)
    if not m:
        return None
    suffix = m.group(4) or ""
    for cand in ("2.1.3", "2.0.2", "2.2.0", "1.12.0"):
        alt = f"{repo}:{cand}{suffix}"
        if alt != image and image_ok(alt):
            return alt
    return None


def plan_churn(
    scenario: Scenario,
    api: KubeApi,
    seed: int,
    mode: ChurnMode = DEFAULT_CHURN,
    *,
    edges: Sequence[tuple[str, str]] = (),
    image_ok: Callable[[str], bool] | None = None,
) -> ChurnPlan:
    """A seeded churn plan for ``scenario`` on the cluster ``api`` reaches (read-only).

    ``edges``: the app's call graph as (caller workload, callee workload); ``image_ok``: whether
    the registry holds an image reference (without it no image change is planned)."""
    plan = ChurnPlan(mode=mode, seed=seed)
    if mode != "none":
        _plan_benign(plan, scenario, api, seed, edges, image_ok)
    # the scenario's own red herrings come first (scenario data: applied with churn off too)
    herrings = [
        ChurnChange("red-herring", "before", _key(*_op_objects(op)[0]), [op], op.describe())
        for op in scenario.red_herrings
    ]
    if herrings:
        r = random.Random(churn_seed(seed, scenario.id + ":red-herrings"))
        plan.changes[:0] = herrings
        plan.pre_gaps_s[:0] = [float(round(r.uniform(*PRE_GAP_S))) for _ in herrings]
    if not plan.changes and mode != "none":
        plan.skipped.append("no benign change possible for this scenario")
    return plan


def _plan_benign(
    plan: ChurnPlan,
    scenario: Scenario,
    api: KubeApi,
    seed: int,
    edges: Sequence[tuple[str, str]],
    image_ok: Callable[[str], bool] | None,
) -> None:
    rng = random.Random(churn_seed(seed, scenario.id))
    ns = scenario.namespace
    prot = Protection.of(scenario)
    deployments = _list(api, "apps/v1", "Deployment", ns)
    protected: set[str] = set()
    eligible: list[dict[str, Any]] = []
    for d in deployments:
        n = _name(d)
        if _key("Deployment", ns, n) in prot.objects or prot.names_workload(n):
            protected.add(n)
        elif INFRA.fullmatch(n) or not _containers(d):
            continue
        else:
            eligible.append(d)
    upstream = upstream_of(protected, edges)
    hpas = _list(api, "autoscaling/v2", "HorizontalPodAutoscaler", ns)
    with_hpa = {str(((h.get("spec") or {}).get("scaleTargetRef") or {}).get("name", "")) for h in hpas}
    netpols = _list(api, "networking.k8s.io/v1", "NetworkPolicy", ns)
    configmaps = [
        c
        for c in _list(api, "v1", "ConfigMap", ns)
        if _key("ConfigMap", ns, _name(c)) not in prot.objects
        and _name(c) not in prot.tokens
        and _name(c) != "kube-root-ca.crt"
    ]
    nodes = [n for n in _list(api, "v1", "Node", None) if _key("Node", None, _name(n)) not in prot.objects]

    n_changes = rng.randint(MIN_CHANGES, MAX_CHANGES)
    phases: list[Phase] = [rng.choice(("before", "after")) for _ in range(n_changes)]
    if n_changes >= 2 and len(set(phases)) == 1:
        phases[rng.randrange(n_changes)] = "after" if phases[0] == "before" else "before"
    used: set[str] = set()

    def workloads(phase: Phase) -> list[dict[str, Any]]:
        return [
            d for d in eligible if _name(d) not in used and (phase == "before" or _name(d) not in upstream)
        ]

    def make(
        kind: str, phase: Phase, r: random.Random = rng, own_scheduling_ok: bool = False
    ) -> ChurnChange | str:
        """A change of ``kind`` in ``phase`` (a rollout drawn with ``r``), or why there is none.
        ``own_scheduling_ok``: a rollout may be made where the scenario's scheduling terms concern
        only its own workloads (never rolled out: they are in its footprint) and no node."""
        moves = kind in ("rollout-env", "rollout-image", "rollout-restart", "hpa")
        if moves and (prot.pins_nodes if own_scheduling_ok else prot.touches_nodes):
            return "the scenario's operations involve nodes or scheduling (new pods would move the placement)"
        if kind in ("rollout-env", "rollout-image", "rollout-restart", "hpa", "networkpolicy"):
            pool = workloads(phase)
            if kind == "hpa":
                pool = [
                    d
                    for d in pool
                    if _name(d) not in with_hpa
                    and all(
                        ((c.get("resources") or {}).get("requests") or {}).get("cpu") for c in _containers(d)
                    )
                ]
            if kind == "networkpolicy":
                if prot.creates_netpol:
                    return "the scenario's operations create NetworkPolicies"
                if any(_isolates_ingress(np) for np in netpols):
                    return "the namespace already isolates ingress (a new allow could widen access)"
            if kind == "rollout-image":
                if image_ok is None:
                    return "no image catalogue to check tags against"
                pool = [d for d in pool if _other_tag(str(_containers(d)[0].get("image", "")), image_ok)]
            if not pool:
                return f"no eligible workload {'after the fault' if phase == 'after' else ''}".strip()
            d = r.choice(pool)
            name = _name(d)
            used.add(name)
            target = Target(apiVersion="apps/v1", kind="Deployment", name=name, namespace=ns)
            c0 = _containers(d)[0]
            if kind == "rollout-env":
                old = next(
                    (e.get("value") for e in c0.get("env") or [] if e.get("name") == "LOG_LEVEL"), None
                )
                level = r.choice([v for v in LOG_LEVELS if v != old])
                patch = {
                    "spec": {
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": c0["name"], "env": [{"name": "LOG_LEVEL", "value": level}]}
                                ]
                            }
                        }
                    }
                }
                return ChurnChange(
                    kind, phase, _key("Deployment", ns, name),
                    [PatchOp(op="patch", target=target, type="strategic", patch=patch)],
                    f"rolling update of {name}: LOG_LEVEL={level}",
                )  # fmt: skip
            if kind == "rollout-image":
                assert image_ok is not None
                alt = _other_tag(str(c0.get("image", "")), image_ok)
                patch = {"spec": {"template": {"spec": {"containers": [{"name": c0["name"], "image": alt}]}}}}
                return ChurnChange(
                    kind, phase, _key("Deployment", ns, name),
                    [PatchOp(op="patch", target=target, type="strategic", patch=patch)],
                    f"rolling update of {name}: image {c0.get('image')} → {alt}",
                )  # fmt: skip
            if kind == "rollout-restart":
                return ChurnChange(
                    kind, phase, _key("Deployment", ns, name),
                    [RestartOp(op="restart", kind="Deployment", name=name, namespace=ns)],
                    f"rollout restart of {name}",
                )  # fmt: skip
            if kind == "hpa":
                replicas = int((d.get("spec") or {}).get("replicas") or 1)
                hpa = {
                    "apiVersion": "autoscaling/v2",
                    "kind": "HorizontalPodAutoscaler",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {
                        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                        "minReplicas": replicas,
                        "maxReplicas": replicas + 2,
                        "metrics": [
                            {
                                "type": "Resource",
                                "resource": {
                                    "name": "cpu",
                                    "target": {"type": "Utilization", "averageUtilization": 90},
                                },
                            }
                        ],
                    },
                }
                return ChurnChange(
                    kind, phase, _key("HorizontalPodAutoscaler", ns, name), [CreateOp(op="create", object=hpa)],
                    f"new HPA for {name} ({replicas}–{replicas + 2} replicas at 90% CPU)",
                )  # fmt: skip
            labels = ((d.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            if not labels:
                return f"{name} has no matchLabels selector"
            pol_name = f"allow-{name}-ingress"
            pol = {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": {"name": pol_name, "namespace": ns},
                "spec": {
                    "podSelector": {"matchLabels": dict(labels)},
                    "policyTypes": ["Ingress"],
                    "ingress": [{}],
                },
            }
            return ChurnChange(
                kind, phase, _key("NetworkPolicy", ns, pol_name), [CreateOp(op="create", object=pol)],
                f"new allow-all-ingress NetworkPolicy for {name}",
            )  # fmt: skip
        if kind in lookalikes.MAKERS:
            return make_lookalike(kind, phase)
        if kind == "configmap":
            pool = [c for c in configmaps if _name(c) not in used]
            if not pool:
                return "no ConfigMap outside the scenario's footprint"
            cm = rng.choice(pool)
            used.add(_name(cm))
            key, values = CONFIGMAP_ANNOTATIONS
            value = rng.choice(values)
            target = Target(apiVersion="v1", kind="ConfigMap", name=_name(cm), namespace=ns)
            return ChurnChange(
                kind, phase, _key("ConfigMap", ns, _name(cm)),
                [PatchOp(op="patch", target=target, type="merge", patch={"metadata": {"annotations": {key: value}}})],
                f"annotation {key}={value} on ConfigMap {_name(cm)}",
            )  # fmt: skip
        if kind == "node-label":
            if prot.touches_nodes:
                return "the scenario's operations involve nodes or scheduling"
            pool = [n for n in nodes if _name(n) not in used]
            if not pool:
                return "no node"
            node = rng.choice(pool)
            used.add(_name(node))
            key, values = rng.choice(NODE_LABELS)
            value = rng.choice(values)
            target = Target(apiVersion="v1", kind="Node", name=_name(node))
            return ChurnChange(
                kind, phase, _key("Node", None, _name(node)),
                [PatchOp(op="patch", target=target, type="merge", patch={"metadata": {"labels": {key: value}}})],
                f"label {key}={value} on node {_name(node)}",
            )  # fmt: skip
        raise ValueError(f"unknown churn kind {kind!r}")  # pragma: no cover

    def make_lookalike(kind: str, phase: Phase) -> ChurnChange | str:
        ctx = lookalikes.LookalikeContext(
            rng=rng,
            namespace=ns,
            api=api,
            pool=workloads(phase),
            protected_objects=prot.objects,
            creates_pods_ok=not (prot.touches_nodes or prot.creates_quota),
        )
        got = lookalikes.MAKERS[kind](ctx)
        if isinstance(got, str):
            return got
        if got.before_only and phase == "after":
            return "only before the fault"
        return ChurnChange(
            kind, phase, got.target, got.ops, got.detail,
            min_gap_s=got.min_gap_s, alert_owner=got.alert_owner,
        )  # fmt: skip

    kinds = [
        "rollout-env",
        "rollout-image",
        "rollout-restart",
        "hpa",
        "networkpolicy",
        "configmap",
        "node-label",
        *lookalikes.WEIGHTS,
    ]
    weights = [4, 2, 3, 2, 1, 2, 1, *lookalikes.WEIGHTS.values()]
    for phase in phases:
        order = _weighted_order(rng, kinds, weights)
        for kind in order:
            got = make(kind, phase)
            if isinstance(got, ChurnChange):
                plan.changes.append(got)
                break
            note = f"{kind} ({phase}): {got}"
            if note not in plan.skipped:
                plan.skipped.append(note)
    if releases(scenario):
        # a release fault is not the last rollout: a benign restart after it, where one can be
        # made (a restart always makes a new ReplicaSet; a LOG_LEVEL or image change may bring
        # back an old one), drawn apart so that the rest of the plan is what it was
        got = make(
            "rollout-restart",
            "after",
            random.Random(churn_seed(seed, scenario.id + ":after-release")),
            own_scheduling_ok=True,
        )
        if isinstance(got, ChurnChange):
            plan.changes.append(got)
        else:
            plan.skipped.append(f"rollout-restart (after the release): {got}")
    plan.pre_gaps_s = [max(float(round(rng.uniform(*PRE_GAP_S))), c.min_gap_s) for c in plan.before]
    plan.post_gap_s = float(round(rng.uniform(*POST_GAP_S))) if plan.after else 0.0


def releases(scenario: Scenario) -> bool:
    """Whether a fault rolls out a Deployment that is a right answer — a root cause, or an alias of
    one — with a new ReplicaSet (a patch of its pod template, or a restart). Such a fault gets a
    benign rollout after it, so that "the last rollout" alone does not name it (the audit's
    ``audit-newest-rollout``)."""
    roots = answer_deployments(scenario)
    for op in scenario.faults:
        if isinstance(op, RestartOp) and op.kind == "Deployment" and op.name in roots:
            return True
        if (
            isinstance(op, PatchOp)
            and op.target.kind == "Deployment"
            and op.target.name in roots
            and "template" in json.dumps(op.patch)
        ):
            return True
    return False


def answer_deployments(scenario: Scenario) -> set[str]:
    """Names of the Deployments the ground truth accepts as a root cause: those in a root cause's
    alias class (the diagnosis scorer's own classes, ``evaluation/entities.py``)."""
    from ..evaluation.entities import AliasIndex

    gt = scenario.ground_truth
    aliases = AliasIndex(gt)
    right = aliases.root_cause_classes()
    return {g.name for g in gt.groups if g.kind == "Deployment" and g.name and aliases.cls(g.id) in right}


def _weighted_order(rng: random.Random, kinds: list[str], weights: list[int]) -> list[str]:
    """``kinds`` in a seeded order drawn by weight without replacement."""
    pool = list(zip(kinds, weights, strict=True))
    out: list[str] = []
    while pool:
        total = sum(w for _, w in pool)
        x = rng.uniform(0, total)
        for i, (k, w) in enumerate(pool):
            x -= w
            if x <= 0 or i == len(pool) - 1:
                out.append(k)
                pool.pop(i)
                break
    return out


# ---------------------------------------------------------------------------- checks and apply
def collisions(plan: ChurnPlan, scenario: Scenario) -> list[str]:
    """Changes of ``plan`` that touch the scenario's footprint (must be none; reported, never hidden)."""
    prot = Protection.of(scenario)
    bad = []
    for c in plan.changes:
        kind, name = c.target.split("/")[-2:]
        named = kind == "Deployment" and prot.names_workload(name) and c.kind != "red-herring"
        if c.target in prot.objects or named:
            bad.append(f"{c.kind} {c.target} collides with the fault's footprint")
    return bad


def apply_change(api: KubeApi, change: ChurnChange, now: Callable[[], _dt.datetime], at: float) -> None:
    for op in change.ops:
        apply_operation(api, op, now)
    change.applied_at = at


# ---------------------------------------------------------------------------- environment hooks
def _image_checker(twin: Any) -> Callable[[str], bool] | None:
    catalogue = getattr(getattr(twin, "behaviour", None), "catalogue", None)
    find = getattr(catalogue, "find", None)
    if not callable(find):
        return None
    return lambda image: find(image) is not None


def run_before(env: Any, mode: ChurnMode) -> ChurnPlan:
    """Plan the churn of ``env`` (a ``TwinEnvironment``) and apply its pre-fault changes, each
    followed by its seeded gap. Raises ``ValueError`` when a change would touch the footprint."""
    edges = [(a, b) for _, a, b in env.call_edges()]
    plan = plan_churn(env.scenario, env.api, env.seed, mode, edges=edges, image_ok=_image_checker(env.twin))
    bad = collisions(plan, env.scenario)
    if bad:
        raise ValueError(f"churn for {env.scenario.id} (seed {env.seed}): " + "; ".join(bad))
    for change, gap in zip(plan.before, plan.pre_gaps_s, strict=True):
        apply_change(env.api, change, env._now_dt, env.now())
        env.backend.sync()
        env.backend.advance(gap, step=env.step_s)
    from .endstate import alert_identity
    from .firing import incident_alerts

    firing = [
        a.get("labels") or {}
        for a in incident_alerts(env.endpoints.prometheus_url, *env.scenario.task_namespaces)
    ]
    plan.firing_before_fault = sorted(alert_identity(labels) for labels in firing)
    plan.planted_labels = [labels for labels in firing if any(c.explains(labels) for c in plan.before)]
    plan.planted_alerts = sorted(alert_identity(labels) for labels in plan.planted_labels)
    return plan


def run_after(env: Any, plan: ChurnPlan) -> None:
    """Apply the post-fault changes of ``plan`` after its gap; the baseline then records the
    objects they changed as they are now (the harness changed them, not the agent)."""
    if not plan.after:
        return
    env.backend.advance(plan.post_gap_s, step=env.step_s)
    for change in plan.after:
        apply_change(env.api, change, env._now_dt, env.now())
    env.backend.sync()
    baseline = getattr(env, "baseline", None)
    if baseline is None:
        return
    from .endstate import snapshot_of

    now = snapshot_of(env.api, [change.target for change in plan.after], baseline.namespaces)
    for change in plan.after:
        if change.target in now:
            baseline.objects[change.target] = now[change.target]
