"""The Scenario spec: what a scenario file under ``scenarios/sre/`` contains.

A scenario is data. Its faults are Kubernetes API operations (create / patch / delete, plus two
pieces of sugar: ``flag`` for a flagd feature flag and ``restart`` for ``kubectl rollout restart``),
so the same file injects on the twin and on a live cluster. The ``mitigation`` is a reference
solution in the same shape (used by the oracle agent and by ``itbench scenarios validate``).
The ground truth follows ITBench's v1 ``groups`` format (groups, aliases, fault, propagations).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .complexity import Bucket, bucket_for, complexity_score

SCENARIO_ID = re.compile(r"^(sre|ciso|finops)/[a-z0-9][a-z0-9-]*-v[0-9]+$")

FaultCategory = Literal[
    "Change",
    "Configuration Setting",
    "Resource Saturation",
    "Resource Unavailable",
    "Latency",
    "Other",
    "None",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------------------- operations
def _object_ref(kind: str, namespace: str | None, name: str) -> str:
    """``Kind ns/name`` (``Kind name`` for a cluster-scoped object), as the operations describe themselves."""
    return f"{kind} {namespace + '/' if namespace else ''}{name}"


class Target(_Strict):
    """One Kubernetes object, addressed the way ``kubectl`` does."""

    apiVersion: str
    kind: str
    name: str
    namespace: str | None = None

    def describe(self) -> str:
        return _object_ref(self.kind, self.namespace, self.name)


class CreateOp(_Strict):
    """Create an object (a NetworkPolicy, a ResourceQuota, a Chaos Mesh experiment...)."""

    op: Literal["create"]
    object: dict[str, Any]

    @field_validator("object")
    @classmethod
    def _has_identity(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in ("apiVersion", "kind"):
            if not v.get(key):
                raise ValueError(f"object needs {key}")
        if not (v.get("metadata") or {}).get("name"):
            raise ValueError("object needs metadata.name")
        return v

    def describe(self) -> str:
        m = self.object.get("metadata", {})
        return f"create {_object_ref(self.object['kind'], m.get('namespace'), m['name'])}"


class PatchOp(_Strict):
    """Patch an object: ``strategic`` (strategic-merge), ``merge`` (JSON merge) or ``json`` (RFC 6902)."""

    op: Literal["patch"]
    target: Target
    type: Literal["strategic", "merge", "json"] = "strategic"
    patch: dict[str, Any] | list[dict[str, Any]]

    @model_validator(mode="after")
    def _shape(self) -> PatchOp:
        if self.type == "json" and not isinstance(self.patch, list):
            raise ValueError("a json patch is a list of operations")
        if self.type != "json" and not isinstance(self.patch, dict):
            raise ValueError(f"a {self.type} patch is an object")
        return self

    def describe(self) -> str:
        return f"patch ({self.type}) {self.target.describe()}"


class DeleteOp(_Strict):
    """Delete an object (``missing_ok`` makes a missing object not an error)."""

    op: Literal["delete"]
    target: Target
    missing_ok: bool = False

    def describe(self) -> str:
        return f"delete {self.target.describe()}"


class FlagOp(_Strict):
    """Set a flagd feature flag's ``defaultVariant`` in the flag ConfigMap (JSON inside a key)."""

    op: Literal["flag"]
    name: str
    variant: str
    namespace: str = "otel-demo"
    configmap: str = "flagd-config"
    key: str = "demo.flagd.json"

    def describe(self) -> str:
        return f"flag {self.name}={self.variant} ({self.namespace}/{self.configmap})"


class RestartOp(_Strict):
    """``kubectl rollout restart``: stamp the pod template with a restartedAt annotation."""

    op: Literal["restart"]
    kind: Literal["Deployment", "StatefulSet", "DaemonSet"] = "Deployment"
    name: str
    namespace: str

    def describe(self) -> str:
        return f"rollout restart {self.kind.lower()}/{self.name} -n {self.namespace}"


Operation = Annotated[CreateOp | PatchOp | DeleteOp | FlagOp | RestartOp, Field(discriminator="op")]


def _touches(op: CreateOp | PatchOp | DeleteOp | FlagOp | RestartOp) -> list[str]:
    """``Kind ns/name`` of the objects an operation touches."""
    if isinstance(op, CreateOp):
        m = op.object.get("metadata") or {}
        return [_object_ref(str(op.object["kind"]), m.get("namespace"), str(m["name"]))]
    if isinstance(op, PatchOp | DeleteOp):
        return [op.target.describe()]
    if isinstance(op, FlagOp):
        return [_object_ref("ConfigMap", op.namespace, op.configmap)]
    return [_object_ref(op.kind, op.namespace, op.name)]


# ---------------------------------------------------------------------------- alerts and GT
class ExpectedAlert(_Strict):
    """An alert the fault must raise: ``name`` plus a subset of its labels, within ``window_s``."""

    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    window_s: float = 900.0
    """Twin seconds after injection by which the alert must be firing."""


class Group(_Strict):
    """A ground-truth entity group (ITBench v1): a kind, a namespace and a name or name filters."""

    id: str
    kind: str
    namespace: str | None = None
    name: str | None = None
    filter: list[str] = Field(default_factory=list)
    """Regular expressions (full match) on the object name, e.g. ``ad-.*`` for the ad pods."""
    root_cause: bool = False
    key: str | None = None
    """For configuration (a ConfigMap, a Secret): the one key the group stands for — a data key, or
    a flag of a flag document as ``<data key>#<flag>`` (``demo.flagd.json#adFailure``). An entity
    then matches the group only when it names that key too (its ``key`` field, or ``#<key>`` after
    the name; the flag alone will do): the object alone does not name the fault."""

    @model_validator(mode="after")
    def _named(self) -> Group:
        if not self.name and not self.filter:
            raise ValueError("a group needs a name or a filter")
        for f in self.filter:
            try:
                re.compile(f)
            except re.error as e:
                raise ValueError(f"bad filter regex {f!r}: {e}") from e
        return self


class GTEntityRef(_Strict):
    name: str
    kind: str | None = None
    group_id: str


class FaultGT(_Strict):
    entity: GTEntityRef
    condition: str
    category: FaultCategory
    fault_mechanism: str = "custom"


class PropagationGT(_Strict):
    source: str
    target: str
    condition: str = ""
    effect: str = ""


class GroundTruth(_Strict):
    groups: list[Group] = Field(default_factory=list)
    aliases: list[list[str]] = Field(default_factory=list)
    fault: list[FaultGT] = Field(default_factory=list)
    propagations: list[PropagationGT] = Field(default_factory=list)

    @model_validator(mode="after")
    def _refs(self) -> GroundTruth:
        ids = [g.id for g in self.groups]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"duplicate group ids: {sorted(dup)}")
        known = set(ids)
        for a in self.aliases:
            for gid in a:
                if gid not in known:
                    raise ValueError(f"alias names unknown group {gid!r}")
        for f in self.fault:
            if f.entity.group_id not in known:
                raise ValueError(f"fault names unknown group {f.entity.group_id!r}")
        for p in self.propagations:
            for gid in (p.source, p.target):
                if gid not in known:
                    raise ValueError(f"propagation names unknown group {gid!r}")
        return self

    def group(self, gid: str) -> Group:
        for g in self.groups:
            if g.id == gid:
                return g
        raise KeyError(gid)

    def root_causes(self) -> list[Group]:
        return [g for g in self.groups if g.root_cause]


class SolutionStep(_Strict):
    text: str
    command: str | None = None


class Solution(_Strict):
    id: str
    steps: list[SolutionStep]


class Metadata(_Strict):
    itbench_number: int | None = None
    """The ITBench scenario number this one corresponds to, if any."""
    source: str | None = None
    notes: str | None = None


# ---------------------------------------------------------------------------- the scenario
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def _check_namespaces(namespace: str, others: list[str], setup: list[dict[str, Any]]) -> None:
    """``namespaces`` are distinct DNS labels other than ``namespace``; each ``setup`` object is a
    namespaced object (a kind, a name) in one of them (a Namespace is made for each of ``others``)."""
    for ns in others:
        if not _DNS_LABEL.match(ns):
            raise ValueError(f"namespaces: {ns!r} is not a valid namespace name (a DNS label)")
    if namespace in others or len(set(others)) != len(others):
        raise ValueError(f"namespaces must be distinct and other than namespace {namespace!r}: {others}")
    allowed = {namespace, *others}
    for i, obj in enumerate(setup):
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if (
            not isinstance(meta, dict)
            or not obj.get("kind")
            or not obj.get("apiVersion")
            or not meta.get("name")
        ):
            raise ValueError(f"setup[{i}]: an object needs apiVersion, kind and metadata.name")
        if obj["kind"] == "Namespace":
            raise ValueError(f"setup[{i}]: list the namespace in namespaces instead of creating it")
        if meta.get("namespace") not in allowed:
            raise ValueError(
                f"setup[{i}] ({obj['kind']} {meta['name']}): metadata.namespace must be one of "
                f"{sorted(allowed)}, got {meta.get('namespace')!r}"
            )


class Scenario(_Strict):
    """One benchmark scenario."""

    id: str
    persona: Literal["sre", "ciso", "finops"] = "sre"
    name: str
    description: str
    app: str
    """App id under ``scenarios/apps/`` (``otel-demo``, ``hotel-reservation``) or a folder."""
    namespace: str
    """The app's namespace (the agent's kubectl allow-list)."""
    namespaces: list[str] = Field(default_factory=list)
    """The team's other namespaces (a dev namespace...), each created with the app: the agent's
    credential, the end-state snapshots and a FinOps incident's cost scores cover them as they cover
    ``namespace`` (:attr:`task_namespaces`)."""
    setup: list[dict[str, Any]] = Field(default_factory=list)
    """Objects deployed with the app, before its past, in one of :attr:`task_namespaces`: part of
    the healthy baseline like the app's own manifests (what the team runs in ``namespaces``)."""
    metadata: Metadata = Field(default_factory=Metadata)
    control: bool = False
    """A no-fault control: nothing is wrong, the right diagnosis is "no incident". Its ``faults`` may
    hold benign changes (a scale-up...) that must not be mistaken for an incident."""
    faults: list[Operation] = Field(default_factory=list)
    mitigation: list[Operation] = Field(default_factory=list)
    alerts: list[ExpectedAlert] = Field(default_factory=list)
    ground_truth: GroundTruth = Field(default_factory=GroundTruth)
    solutions: list[Solution] = Field(default_factory=list)
    technologies: list[str] = Field(default_factory=list)
    resolution_steps: int | None = None
    """Steps of the reference resolution (Eq. 6); defaults to the number of mitigation operations."""
    tags: list[str] = Field(default_factory=list)
    settle_s: float = 300.0
    """Twin seconds to fast-forward after the agent finishes before mitigation is evaluated."""
    red_herrings: list[Operation] = Field(default_factory=list)
    """Benign changes the scenario itself declares, applied before the fault (``harness/churn.py``);
    one that touches an object of the fault's or mitigation's operations is an error."""

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not SCENARIO_ID.match(v):
            raise ValueError(f"id must look like 'sre/<name>-v<N>' (lowercase, digits, dashes), got {v!r}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        if self.control:
            if self.alerts:
                raise ValueError("a control scenario expects no alert")
            if self.ground_truth.root_causes():
                raise ValueError("a control scenario has no root cause")
        else:
            if not self.faults:
                raise ValueError("a fault scenario needs at least one fault operation")
            if not self.ground_truth.root_causes():
                raise ValueError("ground_truth needs at least one group with root_cause: true")
            if not self.alerts:
                raise ValueError("a fault scenario needs at least one expected alert")
            if not self.mitigation:
                raise ValueError("a fault scenario needs a mitigation (the reference solution)")
            if not self.ground_truth.fault:
                raise ValueError("ground_truth.fault is empty")
        _check_namespaces(self.namespace, self.namespaces, self.setup)
        if not self.id.startswith(self.persona + "/"):
            raise ValueError(f"id {self.id!r} does not start with the persona {self.persona!r}")
        footprint = {ref for op in (*self.faults, *self.mitigation) for ref in _touches(op)}
        for op in self.red_herrings:
            hit = sorted(set(_touches(op)) & footprint)
            if hit:
                raise ValueError(
                    f"red herring {op.describe()!r} collides with the fault's footprint: {', '.join(hit)}"
                )
        return self

    # ------------------------------------------------------------------ derived
    @property
    def task_namespaces(self) -> list[str]:
        """The app's namespace first, then the team's other namespaces."""
        return [self.namespace, *self.namespaces]

    def setup_objects(self) -> list[dict[str, Any]]:
        """What the scenario deploys with the app: a Namespace for each of :attr:`namespaces`,
        then :attr:`setup` (copies)."""
        import copy

        made = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in self.namespaces]
        return [*made, *copy.deepcopy(self.setup)]

    @property
    def propagation_length(self) -> int:
        """Entities on the longest ground-truth propagation path (1 when there are no propagations)."""
        from .propagation import gt_chain

        return max(1, len(gt_chain(self.ground_truth)))

    @property
    def steps(self) -> int:
        return self.resolution_steps if self.resolution_steps is not None else max(1, len(self.mitigation))

    @property
    def complexity(self) -> float:
        """The paper's Eq. 6: cube root of propagation length × resolution steps × technologies."""
        if self.control:
            return 0.0
        return complexity_score(self.propagation_length, self.steps, max(1, len(self.technologies)))

    @property
    def complexity_bucket(self) -> Bucket:
        return "control" if self.control else bucket_for(self.complexity)

    @property
    def categories(self) -> list[str]:
        if self.control:
            return ["None"]
        return sorted({f.category for f in self.ground_truth.fault})

    @property
    def category(self) -> str:
        """One label for tables: the single fault category, or "Multiple"."""
        cats = self.categories
        return cats[0] if len(cats) == 1 else "Multiple"

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "app": self.app,
            "itbench": self.metadata.itbench_number,
            "category": self.category,
            "complexity": round(self.complexity, 2),
            "bucket": self.complexity_bucket,
            "alerts": [a.name for a in self.alerts],
            "tags": self.tags,
        }
