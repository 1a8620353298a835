"""Chaos Mesh experiments as the twin's custom resources: CRDs, admission checks, active experiments.

The twin serves ``chaos-mesh.org/v1alpha1`` NetworkChaos, HTTPChaos, StressChaos, PodChaos,
JVMChaos and Schedule. An experiment acts while its object exists, is not paused (annotation
``experiment.chaos-mesh.org/pause: "true"``) and its ``duration`` has not run out; a Schedule acts
through the child experiments it creates at each tick (:mod:`.schedule`). What an experiment
*does* is decided in :mod:`.effects`, ``twin/app/network.py`` and the runtime.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...k8s.kinds import CHAOS_MESH_GROUP, CHAOS_MESH_KINDS, CHAOS_MESH_VERSION, GroupResource
from ...k8s.times import parse_rfc3339
from ..controllers.kinds import PODS
from ..kube.store import ObjectStore

Obj = dict[str, Any]
Cause = tuple[str, str, str]


class StoreView(Protocol):
    """What :func:`picked` reads of a cluster view (``app/cluster.py``'s ``ClusterView``); the picks
    are cached in its ``__dict__``."""

    store: ObjectStore


GROUP, VERSION, KINDS = CHAOS_MESH_GROUP, CHAOS_MESH_VERSION, CHAOS_MESH_KINDS
EXPERIMENT_KINDS = [k for k in KINDS if k != "Schedule"]
CHAOS_GRS = {kind: GroupResource(GROUP, plural) for kind, plural in KINDS.items()}
PAUSE_ANNOTATION = "experiment.chaos-mesh.org/pause"

ACTIONS = {
    "NetworkChaos": {"netem", "delay", "loss", "duplicate", "corrupt", "partition", "bandwidth"},
    "PodChaos": {"pod-kill", "pod-failure", "container-kill"},
    "JVMChaos": {"latency", "return", "exception", "stress", "gc", "ruleData", "mysql"},
}
MODES = {"one", "all", "fixed", "fixed-percent", "random-max-percent"}

_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns))+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(s: str | None) -> float | None:
    """Go duration ('30s', '1m30s', '200ms') → seconds; None for None. ValueError when malformed."""
    if s is None or s == "":
        return None
    s = str(s).strip()
    if not _DURATION.match(s):
        raise ValueError(f"invalid duration {s!r}: expected a Go duration such as '30s', '5m' or '1h'")
    return sum(float(n) * _UNITS[u] for n, u in _DURATION_PART.findall(s))


def parse_size(s: str | int | None, of: float | None = None) -> float:
    """Stress sizes: '256MB', '1GB', '512Mi', '80%' (of ``of``) → bytes."""
    if s is None:
        return 0.0
    txt = str(s).strip()
    if txt.endswith("%"):
        return float(txt[:-1]) / 100.0 * (of or 0.0)
    m = re.match(r"^(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?$", txt, re.I)
    if not m:
        raise ValueError(f"invalid size {txt!r}: expected e.g. '256MB', '1GB' or '50%'")
    num, unit = float(m.group(1)), (m.group(2) or "B").upper().rstrip("B")
    mult = {
        "": 1,
        "K": 1e3,
        "M": 1e6,
        "G": 1e9,
        "T": 1e12,
        "KI": 2**10,
        "MI": 2**20,
        "GI": 2**30,
        "TI": 2**40,
    }
    return num * mult[unit]


# ---------------------------------------------------------------------------------------------- CRDs


def _schema_for(kind: str) -> Obj:
    selector = {
        "type": "object",
        "properties": {
            "namespaces": {"type": "array", "items": {"type": "string"}},
            "labelSelectors": {"type": "object", "additionalProperties": {"type": "string"}},
            "expressionSelectors": {"type": "array", "items": {"type": "object"}},
            "pods": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
            },
        },
    }
    common = {
        "selector": selector,
        "mode": {"type": "string", "enum": sorted(MODES)},
        "value": {"type": "string"},
        "duration": {"type": "string"},
        "containerNames": {"type": "array", "items": {"type": "string"}},
    }
    spec: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": dict(common)}
    if kind in ACTIONS:
        spec["properties"]["action"] = {"type": "string", "enum": sorted(ACTIONS[kind])}
    if kind == "Schedule":
        spec["properties"] = {
            "schedule": {"type": "string"},
            "type": {"type": "string", "enum": EXPERIMENT_KINDS},
            "concurrencyPolicy": {"type": "string", "enum": ["Forbid", "Allow"]},
            "historyLimit": {"type": "integer", "minimum": 1},
            "startingDeadlineSeconds": {"type": "integer", "nullable": True},
            # the embedded experiment spec, one key per type (networkChaos, httpChaos, ...)
            **{
                k[0].lower() + k[1:]: {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                for k in EXPERIMENT_KINDS
            },
        }
        spec["required"] = ["schedule", "type"]
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }


def chaos_crds() -> list[Obj]:
    """``apiextensions.k8s.io/v1`` CustomResourceDefinition objects for the Chaos Mesh kinds."""
    out = []
    for kind, plural in KINDS.items():
        cols = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
        if kind in ACTIONS:
            cols.insert(0, {"name": "Action", "type": "string", "jsonPath": ".spec.action"})
        if kind != "Schedule":
            cols.insert(-1, {"name": "Duration", "type": "string", "jsonPath": ".spec.duration"})
        out.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {
                    "name": f"{plural}.{GROUP}",
                    "labels": {"app.kubernetes.io/part-of": "chaos-mesh"},
                },
                "spec": {
                    "group": GROUP,
                    "names": {
                        "kind": kind,
                        "listKind": f"{kind}List",
                        "plural": plural,
                        "singular": kind.lower(),
                        # no categories: the real Chaos Mesh CRDs have none (`kubectl get all` omits them)
                    },
                    "scope": "Namespaced",
                    "versions": [
                        {
                            "name": VERSION,
                            "served": True,
                            "storage": True,
                            "schema": {"openAPIV3Schema": _schema_for(kind)},
                            "subresources": {"status": {}},
                            "additionalPrinterColumns": cols,
                        }
                    ],
                },
            }
        )
    return out


# ---------------------------------------------------------------------------------------------- validation


def validate_chaos(obj: Obj) -> list[Cause]:
    """422 causes for a nonsense Chaos Mesh spec (the real webhook's checks, the useful subset)."""
    kind = obj.get("kind", "")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [("spec", "FieldValueRequired", "Required value: spec is required")]
    if kind == "Schedule":
        return _validate_schedule(spec)
    return _validate_experiment(kind, spec, "spec")


def _validate_schedule(spec: Obj) -> list[Cause]:
    causes: list[Cause] = []
    sched = spec.get("schedule")
    if not isinstance(sched, str) or len(sched.split()) not in (5, 6) and not sched.startswith("@"):
        causes.append(
            ("spec.schedule", "FieldValueInvalid", f"Invalid value: {sched!r}: expected a cron expression")
        )
    kind = spec.get("type")
    if kind not in EXPERIMENT_KINDS:
        causes.append(
            (
                "spec.type",
                "FieldValueNotSupported",
                f"Unsupported value: {kind!r}: supported values: {EXPERIMENT_KINDS}",
            )
        )
        return causes
    key = kind[0].lower() + kind[1:]
    inner = spec.get(key)
    if not isinstance(inner, dict):
        causes.append((f"spec.{key}", "FieldValueRequired", f"Required value: a {kind} spec is required"))
        return causes
    causes += _validate_experiment(kind, inner, f"spec.{key}")
    pol = spec.get("concurrencyPolicy")
    if pol is not None and pol not in ("Forbid", "Allow"):
        causes.append(("spec.concurrencyPolicy", "FieldValueNotSupported", f"Unsupported value: {pol!r}"))
    return causes


def _validate_experiment(kind: str, spec: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []

    def bad(f: str, msg: str, reason: str = "FieldValueInvalid") -> None:
        causes.append((f"{path}.{f}", reason, msg))

    if kind not in EXPERIMENT_KINDS:
        return [("kind", "FieldValueNotSupported", f"Unsupported value: {kind!r}")]
    sel = spec.get("selector")
    if not isinstance(sel, dict):
        bad("selector", "Required value: a pod selector is required", "FieldValueRequired")
    else:
        if "namespaces" in sel and not (
            isinstance(sel["namespaces"], list) and all(isinstance(n, str) for n in sel["namespaces"])
        ):
            bad(
                "selector.namespaces",
                f"Invalid value: {sel['namespaces']!r}: must be a list of namespace names",
            )
        ls = sel.get("labelSelectors")
        if ls is not None and not (isinstance(ls, dict) and all(isinstance(v, str) for v in ls.values())):
            bad("selector.labelSelectors", f"Invalid value: {ls!r}: must map label keys to string values")
    mode = spec.get("mode", "one" if kind != "Schedule" else None)
    if mode not in MODES:
        bad(
            "mode",
            f"Unsupported value: {mode!r}: supported values: {sorted(MODES)}",
            "FieldValueNotSupported",
        )
    elif mode in ("fixed", "fixed-percent", "random-max-percent"):
        v = str(spec.get("value", ""))
        if not v.isdigit() or (mode != "fixed" and not 0 < int(v) <= 100):
            bad("value", f"Invalid value: {spec.get('value')!r}: mode {mode} needs a value (percent 1-100)")
    try:
        d = parse_duration(spec.get("duration"))
        if d is not None and d <= 0:
            bad("duration", f"Invalid value: {spec.get('duration')!r}: must be positive")
    except ValueError as e:
        bad("duration", f"Invalid value: {spec.get('duration')!r}: {e}")
    action = spec.get("action")
    if kind in ACTIONS and action not in ACTIONS[kind]:
        bad(
            "action",
            f"Unsupported value: {action!r}: supported values: {sorted(ACTIONS[kind])}",
            "FieldValueNotSupported",
        )
    if kind == "NetworkChaos":
        direction = spec.get("direction", "to")
        if direction not in ("to", "from", "both"):
            bad("direction", f"Unsupported value: {direction!r}: supported values: both, from, to")
        if action in ("delay", "netem"):
            lat = (spec.get("delay") or {}).get("latency")
            try:
                if action == "delay" and (lat is None or parse_duration(lat) is None):
                    bad(
                        "delay.latency",
                        "Required value: latency is required for action delay",
                        "FieldValueRequired",
                    )
            except ValueError as e:
                bad("delay.latency", f"Invalid value: {lat!r}: {e}")
        if action == "loss":
            loss = (spec.get("loss") or {}).get("loss")
            try:
                if loss is None or not 0 <= float(str(loss).rstrip("%")) <= 100:
                    raise ValueError
            except ValueError:
                bad("loss.loss", f"Invalid value: {loss!r}: loss must be a percentage between 0 and 100")
    elif kind == "HTTPChaos":
        if spec.get("target") not in ("Request", "Response"):
            bad("target", f"Unsupported value: {spec.get('target')!r}: supported values: Request, Response")
        port = spec.get("port")
        if port is not None and not (isinstance(port, int) and 0 < port < 65536):
            bad("port", f"Invalid value: {port!r}: must be a port number")
        acts = [k for k in ("abort", "delay", "replace", "patch") if spec.get(k) not in (None, False)]
        if not acts:
            bad(
                "abort",
                "Required value: one of abort, delay, replace or patch is required",
                "FieldValueRequired",
            )
        if spec.get("delay") is not None:
            try:
                parse_duration(spec["delay"])
            except ValueError as e:
                bad("delay", f"Invalid value: {spec['delay']!r}: {e}")
    elif kind == "StressChaos":
        st = spec.get("stressors")
        if not isinstance(st, dict) or not (st.get("cpu") or st.get("memory")):
            bad("stressors", "Required value: a cpu or memory stressor is required", "FieldValueRequired")
        else:
            cpu, mem = st.get("cpu") or {}, st.get("memory") or {}
            for name, s in (("cpu", cpu), ("memory", mem)):
                if s and not (isinstance(s.get("workers"), int) and s["workers"] > 0):
                    bad(f"stressors.{name}.workers", f"Invalid value: {s.get('workers')!r}: must be > 0")
            if cpu and not (isinstance(cpu.get("load", 100), int) and 0 <= cpu.get("load", 100) <= 100):
                bad("stressors.cpu.load", f"Invalid value: {cpu.get('load')!r}: must be between 0 and 100")
            if mem:
                try:
                    parse_size(mem.get("size", "256MB"), 1.0)
                except ValueError as e:
                    bad("stressors.memory.size", f"Invalid value: {mem.get('size')!r}: {e}")
    elif kind == "PodChaos" and action == "container-kill" and not spec.get("containerNames"):
        bad("containerNames", "Required value: container-kill needs containerNames", "FieldValueRequired")
    elif (
        kind == "JVMChaos"
        and action in ("return", "exception", "latency")
        and not (spec.get("class") and spec.get("method"))
    ):
        bad("class", f"Required value: action {action} needs class and method", "FieldValueRequired")
    return causes


# ---------------------------------------------------------------------------------------------- active experiments


@dataclass(frozen=True)
class ActiveChaos:
    """One experiment in force: what it is and whom it selects."""

    kind: str
    name: str
    namespace: str
    uid: str
    spec: Obj
    start: float
    end: float | None
    action: str = ""
    namespaces: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    pod_names: frozenset[tuple[str, str]] = field(default_factory=frozenset)

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


def selector_of(spec: Obj, default_ns: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], frozenset]:
    sel = spec.get("selector") or {}
    pods = sel.get("pods") or {}
    names = frozenset((ns, n) for ns, lst in pods.items() for n in (lst or []))
    namespaces = tuple(sel.get("namespaces") or ([*pods] if pods else [default_ns]))
    labels = tuple(sorted((sel.get("labelSelectors") or {}).items()))
    return namespaces, labels, names


def active_experiments(
    objs: list[tuple[str, Obj]], now: float, first_seen: dict[str, float]
) -> list[ActiveChaos]:
    """The experiments in force at ``now`` among ``(kind, object)`` pairs (malformed ones are skipped)."""
    out: list[ActiveChaos] = []
    for kind, obj in objs:
        if validate_chaos(obj):
            continue  # written around the admission checks: Chaos Mesh would not inject it either
        meta = obj.get("metadata", {})
        if meta.get("deletionTimestamp"):
            continue
        if is_paused(obj):
            continue
        spec = obj.get("spec") or {}
        if kind == "Schedule":
            continue  # a Schedule acts through the child experiments it creates (schedule.py)
        try:
            duration = parse_duration(spec.get("duration"))
        except ValueError:
            continue
        if kind not in EXPERIMENT_KINDS or not isinstance(spec, dict):
            continue
        uid = meta.get("uid", meta.get("name", ""))
        start = first_seen.get(uid)
        if start is None:
            ts = meta.get("creationTimestamp")
            start = parse_rfc3339(ts) if ts else now
        end = start + duration if duration is not None else None
        if end is not None and now >= end:
            continue
        ns = meta.get("namespace", "default")
        namespaces, labels, names = selector_of(spec, ns)
        out.append(
            ActiveChaos(
                kind=kind,
                name=meta.get("name", ""),
                namespace=ns,
                uid=uid,
                spec=spec,
                start=start,
                end=end,
                action=str(spec.get("action", "")),
                namespaces=namespaces,
                labels=labels,
                pod_names=names,
            )
        )
    return out


def is_paused(obj: Obj) -> bool:
    """Whether ``obj`` carries the Chaos Mesh pause annotation."""
    return str((obj.get("metadata", {}).get("annotations") or {}).get(PAUSE_ANNOTATION, "")).lower() == "true"


def _pod_matches(
    pod: Obj, namespaces: tuple[str, ...], labels: tuple[tuple[str, str], ...], names: frozenset
) -> bool:
    """Whether a Chaos Mesh selector (explicit pod names, else namespaces and labels) matches ``pod``."""
    meta = pod.get("metadata", {})
    ns = meta.get("namespace", "")
    if names:
        return (ns, meta.get("name", "")) in names
    if ns not in namespaces:
        return False
    pl = meta.get("labels") or {}
    return all(pl.get(k) == v for k, v in labels)


def selects(ch: ActiveChaos, pod: Obj) -> bool:
    return _pod_matches(pod, ch.namespaces, ch.labels, ch.pod_names)


def target_selects(ch: ActiveChaos, pod: Obj) -> bool:
    """NetworkChaos ``target`` selector (the other side of the traffic)."""
    tgt = ch.spec.get("target")
    if not isinstance(tgt, dict):
        return False
    return _pod_matches(pod, *selector_of(tgt, ch.namespace))


def pick(ch: ActiveChaos, pods: list[Obj]) -> list[Obj]:
    """The pods an experiment's ``mode`` picks among the selected ones (deterministic: by name)."""
    pods = sorted(pods, key=lambda p: p["metadata"]["name"])
    mode = ch.spec.get("mode", "one")
    if not pods:
        return []
    try:
        value = int(str(ch.spec.get("value", "1")) or 1)
    except ValueError:
        value = 1
    if mode == "all":
        return pods
    if mode == "fixed":
        return pods[:value]
    if mode in ("fixed-percent", "random-max-percent"):
        return pods[: max(1, len(pods) * value // 100)]
    return pods[:1]


def picked_pods(ch: ActiveChaos, pods: list[Obj]) -> list[Obj]:
    """The pods ``ch`` acts on among ``pods``: the selected ones not being deleted, as ``mode`` picks."""
    return pick(ch, [p for p in pods if selects(ch, p) and not p["metadata"].get("deletionTimestamp")])


def picked(view: StoreView, ch: ActiveChaos, pod: Obj) -> bool:
    """Whether ``ch`` acts on ``pod`` (the picks are cached per experiment on ``view``)."""
    if not selects(ch, pod):
        return False
    cache: dict[str, set[str]] = view.__dict__.setdefault("_pick_cache", {})
    if ch.uid not in cache:
        cache[ch.uid] = {p["metadata"]["name"] for p in picked_pods(ch, view.store.list(PODS))}
    return pod["metadata"]["name"] in cache[ch.uid]
