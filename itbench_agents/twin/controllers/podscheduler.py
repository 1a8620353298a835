"""kube-scheduler: binds pending pods to nodes.

Filters per node, in the real plugin order (the first failing plugin gives the node's reason):
NodeUnschedulable, TaintToleration... (NoSchedule/NoExecute), NodeAffinity (nodeSelector and
required node affinity), NodeResourcesFit (requests vs allocatable minus bound pods, pod count),
InterPodAffinity (required anti-affinity and affinity). Unschedulable pods get a
``FailedScheduling`` event and ``PodScheduled=False`` with the scheduler's own wording; pods with
a priority may preempt lower-priority pods (``Preempted`` events on the victims).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

from ...k8s.quantity import parse_quantity
from ...k8s.selectors import labels_of, matches, matches_map, node_selector_term_matches
from ...k8s.times import rfc3339
from ..kube.errors import ApiError
from ..kube.pod_deletion import delete_pod
from ..kube.store import ChangeEvent, clone
from .base import Controller
from .events import record_event
from .index import is_terminal
from .kinds import NODES, PODS, PVCS
from .volumes import waits_for_consumer

Obj = dict[str, Any]

UNRESOLVABLE = {
    "node(s) were unschedulable",
    "node(s) didn't match Pod's node affinity/selector",
}
RETRY_S = 300.0
"""Unschedulable pods are retried at least this often (podMaxInUnschedulablePodsDuration)."""


def pod_requests(pod: Obj) -> dict[str, float]:
    spec = pod.get("spec", {})
    req = {"cpu": 0.0, "memory": 0.0}
    for r in req:
        s = sum(
            parse_quantity(((c.get("resources") or {}).get("requests") or {}).get(r))
            for c in spec.get("containers") or []
        )
        init = max(
            (
                parse_quantity(((c.get("resources") or {}).get("requests") or {}).get(r))
                for c in spec.get("initContainers") or []
            ),
            default=0.0,
        )
        req[r] = max(s, init)
    return req


def _tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        op = t.get("operator", "Equal")
        if not t.get("key"):
            if op == "Exists":
                return True
            continue
        if t.get("key") != taint.get("key"):
            continue
        if op == "Exists" or (t.get("value", "") == taint.get("value", "")):
            return True
    return False


def _term_matches_pod(term: Obj, pod_ns: str, other: Obj) -> bool:
    namespaces = term.get("namespaces") or [pod_ns]
    if other["metadata"].get("namespace") not in namespaces and term.get("namespaceSelector") is None:
        return False
    return matches(term.get("labelSelector"), labels_of(other))


class PodScheduler(Controller):
    name = "default-scheduler"

    def __init__(self, twin: Any, index: Any) -> None:
        super().__init__(twin, index)
        self._seen_gen: dict[tuple[str, str], int] = {}
        self._nominated: dict[str, tuple[str, str, str]] = {}
        """uid of a preemptor -> (node, namespace, name): room held for it on that node."""
        self._usage: dict[str, tuple[int, dict[str, float], int, list[Obj]]] = {}
        """node -> (index.node_epoch it was summed at, requests, pod count, pods): reused until a pod
        on the node changes, so scheduling (and retrying) a pod does not re-sum every bound pod."""

    def on_change(self, ev: ChangeEvent) -> None:
        if ev.gr == PODS:
            spec = ev.obj.get("spec", {})
            key = (ev.obj["metadata"].get("namespace", ""), ev.obj["metadata"]["name"])
            gen = int(ev.obj["metadata"].get("generation", 1) or 1)
            if ev.type == "DELETED":
                self._seen_gen.pop(key, None)
            if ev.type == "DELETED" or spec.get("nodeName"):
                self._nominated.pop(ev.obj["metadata"].get("uid", ""), None)
            fresh = ev.type == "ADDED" or self._seen_gen.get(key) != gen
            if ev.type != "DELETED":
                self._seen_gen[key] = gen
            if (
                fresh
                and ev.type != "DELETED"
                and not spec.get("nodeName")
                and not ev.obj["metadata"].get("deletionTimestamp")
            ):
                if spec.get("schedulerName", "default-scheduler") == "default-scheduler":
                    self.enqueue(("pod", ev.obj["metadata"].get("namespace", ""), ev.obj["metadata"]["name"]))
            elif (ev.type == "DELETED" or is_terminal(ev.obj)) and spec.get("nodeName"):
                self.enqueue("retry-all")
        elif ev.gr in (NODES, PVCS):
            self.enqueue("retry-all")

    def sync(self, key: Any) -> None:
        if key == "retry-all":
            for ns_name in sorted(self._pending()):
                self.enqueue(("pod", *ns_name))
            return
        _, ns, name = key
        pod = self.store.get(PODS, ns, name)
        if pod is None or pod.get("spec", {}).get("nodeName") or pod["metadata"].get("deletionTimestamp"):
            return
        self.schedule(pod)

    def _pending(self) -> set[tuple[str, str]]:
        out = set()
        for ns, names in self.index.pods_by_ns.items():
            for n in names:
                p = self.store.get(PODS, ns, n)
                if p is not None and not p.get("spec", {}).get("nodeName") and not is_terminal(p):
                    out.add((ns, n))
        return out

    # ------------------------------------------------------------------ filtering
    def _node_usage(self, node: str) -> tuple[dict[str, float], int, list[Obj]]:
        epoch = self.index.node_epoch.get(node, 0)
        hit = self._usage.get(node)
        if hit is None or hit[0] != epoch:
            hit = (epoch, *self._sum_node(node))
            self._usage[node] = hit
        _, used, count, pods = hit
        return dict(used), count, list(pods)

    def _sum_node(self, node: str) -> tuple[dict[str, float], int, list[Obj]]:
        used = {"cpu": 0.0, "memory": 0.0}
        count = 0
        pods = []
        for p in self.index.pods_on(node):
            if is_terminal(p):
                continue
            r = pod_requests(p)
            used["cpu"] += r["cpu"]
            used["memory"] += r["memory"]
            count += 1
            pods.append(p)
        return used, count, pods

    def filter_node(self, pod: Obj, node: Obj, ignore: set[str] | None = None) -> list[str]:
        """Reasons ``pod`` does not fit ``node`` (empty: it fits). ``ignore``: pod uids to treat as gone."""
        spec = pod.get("spec", {})
        nspec = node.get("spec", {})
        tolerations = spec.get("tolerations") or []
        # NodeUnschedulable
        if nspec.get("unschedulable") and not _tolerates(
            tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
        ):
            return ["node(s) were unschedulable"]
        # TaintToleration
        for taint in nspec.get("taints") or []:
            if taint.get("effect") not in ("NoSchedule", "NoExecute"):
                continue
            if taint.get("key") == "node.kubernetes.io/unschedulable":
                continue
            if not _tolerates(tolerations, taint):
                return [f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"]
        # NodeAffinity
        if spec.get("nodeSelector") and not matches_map(spec["nodeSelector"], labels_of(node)):
            return ["node(s) didn't match Pod's node affinity/selector"]
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or {}
        terms = required.get("nodeSelectorTerms") or []
        if terms and not any(node_selector_term_matches(t, node) for t in terms):
            return ["node(s) didn't match Pod's node affinity/selector"]
        # NodeResourcesFit
        node_name = node["metadata"]["name"]
        used, count, on_node = self._node_usage(node_name)
        if ignore:
            for p in on_node:
                if p["metadata"]["uid"] in ignore:
                    freed = pod_requests(p)
                    used["cpu"] -= freed["cpu"]
                    used["memory"] -= freed["memory"]
                    count -= 1
            on_node = [p for p in on_node if p["metadata"]["uid"] not in ignore]
        prio = int(spec.get("priority", 0) or 0)
        for uid, (nnode, nns, nname) in self._nominated.items():
            if nnode != node_name or uid == pod["metadata"].get("uid"):
                continue
            other = self.store.get(PODS, nns, nname)
            if other is None or int(other.get("spec", {}).get("priority", 0) or 0) < prio:
                continue
            oreq = pod_requests(other)
            used["cpu"] += oreq["cpu"]
            used["memory"] += oreq["memory"]
            count += 1
        alloc = node.get("status", {}).get("allocatable") or {}
        req = pod_requests(pod)
        reasons = []
        if count + 1 > parse_quantity(alloc.get("pods", "110")):
            reasons.append("Too many pods")
        for r in ("cpu", "memory"):
            if req[r] > 0 and used[r] + req[r] > parse_quantity(alloc.get(r, "0")) + 1e-9:
                reasons.append(f"Insufficient {r}")
        if reasons:
            return reasons
        # InterPodAffinity
        affinity = spec.get("affinity") or {}
        ns = pod["metadata"].get("namespace", "")
        anti = (affinity.get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or []
        for term in anti:
            if self._term_hits(term, ns, node, ignore):
                return ["node(s) didn't match pod anti-affinity rules"]
        aff = (affinity.get("podAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []
        for term in aff:
            if not self._term_hits(term, ns, node, ignore) and not _term_matches_pod(term, ns, pod):
                return ["node(s) didn't match pod affinity rules"]
        # existing pods' anti-affinity against this pod
        for other in on_node:
            oaff = ((other.get("spec", {}).get("affinity") or {}).get("podAntiAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            ) or []
            for term in oaff:
                if term.get("topologyKey") == "kubernetes.io/hostname" and _term_matches_pod(
                    term, other["metadata"].get("namespace", ""), pod
                ):
                    return ["node(s) didn't satisfy existing pods anti-affinity rules"]
        return []

    def _term_hits(self, term: Obj, ns: str, node: Obj, ignore: set[str] | None) -> bool:
        """Whether a pod matching ``term`` runs in ``node``'s topology domain."""
        key = term.get("topologyKey", "kubernetes.io/hostname")
        value = labels_of(node).get(key)
        if value is None:
            return False
        for other_node in self.store.list(NODES):
            if labels_of(other_node).get(key) != value:
                continue
            for other in self.index.pods_on(other_node["metadata"]["name"]):
                if is_terminal(other) or (ignore and other["metadata"]["uid"] in ignore):
                    continue
                if _term_matches_pod(term, ns, other):
                    return True
        return False

    # ------------------------------------------------------------------ scheduling
    def schedule(self, pod: Obj) -> None:
        nodes = self.store.list(NODES)
        prefilter = self._prefilter(pod)
        if prefilter is not None:
            msg = (
                f"0/{len(nodes)} nodes are available: {prefilter}. preemption: 0/{len(nodes)} nodes are available: "
                f"{len(nodes)} Preemption is not helpful for scheduling."
            )
            self._unschedulable(pod, msg)
            return
        reasons: dict[str, list[str]] = {}
        feasible = []
        for node in nodes:
            r = self.filter_node(pod, node)
            if r:
                reasons[node["metadata"]["name"]] = r
            else:
                feasible.append(node)
        if feasible:
            self._bind(pod, self._best(pod, feasible))
            return
        hist: Counter[str] = Counter()
        for node_reasons in reasons.values():
            for reason in node_reasons:
                hist[reason] += 1
        parts = sorted(f"{v} {k}" for k, v in hist.items())
        msg = f"0/{len(nodes)} nodes are available: {', '.join(parts)}."
        preempted = self._preempt(pod, nodes, reasons)
        if preempted is None:
            helpless = sum(
                1
                for rs in reasons.values()
                if any(r in UNRESOLVABLE or r.startswith("node(s) had untolerated") for r in rs)
            )
            post = []
            if helpless:
                post.append(f"{helpless} Preemption is not helpful for scheduling")
            if len(nodes) - helpless:
                post.append(f"{len(nodes) - helpless} No preemption victims found for incoming pod")
            msg += f" preemption: 0/{len(nodes)} nodes are available: {', '.join(sorted(post))}."
        self._unschedulable(pod, msg)

    def _prefilter(self, pod: Obj) -> str | None:
        ns = pod["metadata"].get("namespace", "")
        for vol in pod.get("spec", {}).get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim:
                continue
            pvc = self.store.get(PVCS, ns, claim)
            if pvc is None:
                return f'persistentvolumeclaim "{claim}" not found'
            if pvc.get("status", {}).get("phase") != "Bound" and not waits_for_consumer(self.store, pvc):
                return "pod has unbound immediate PersistentVolumeClaims"
        return None

    def _best(self, pod: Obj, nodes: list[Obj]) -> Obj:
        req = pod_requests(pod)

        def score(node: Obj) -> tuple[float, str]:
            used, count, _ = self._node_usage(node["metadata"]["name"])
            alloc = node.get("status", {}).get("allocatable") or {}
            fr = []
            for r in ("cpu", "memory"):
                cap = parse_quantity(alloc.get(r, "1")) or 1.0
                fr.append((used[r] + req[r]) / cap)
            pods_cap = parse_quantity(alloc.get("pods", "110")) or 110.0
            return (sum(fr) / 2 + (count + 1) / pods_cap * 0.01, node["metadata"]["name"])

        return min(nodes, key=score)

    def _bind(self, pod: Obj, node: Obj) -> None:
        node_name = node["metadata"]["name"]
        new = clone(pod)
        new["metadata"].pop("resourceVersion", None)
        new["spec"]["nodeName"] = node_name
        st = new.setdefault("status", {})
        st.pop("nominatedNodeName", None)
        st.setdefault("phase", "Pending")
        conds = [c for c in st.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conds.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339(self.now()),
            }
        )
        st["conditions"] = conds
        try:
            bound = self.store.update(PODS, new)
        except ApiError:
            return
        ns = pod["metadata"].get("namespace", "")
        record_event(
            self.twin,
            bound,
            "Scheduled",
            f"Successfully assigned {ns}/{pod['metadata']['name']} to {node_name}",
            component=self.name,
            action="Binding",
        )

    def _unschedulable(self, pod: Obj, msg: str) -> None:
        st = clone(pod.get("status", {}))
        st.setdefault("phase", "Pending")
        conds = [c for c in st.get("conditions") or [] if c.get("type") != "PodScheduled"]
        prev = next(
            (c for c in pod.get("status", {}).get("conditions") or [] if c.get("type") == "PodScheduled"),
            None,
        )
        conds.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": prev["lastTransitionTime"]
                if prev and prev.get("status") == "False"
                else rfc3339(self.now()),
                "reason": "Unschedulable",
                "message": msg,
            }
        )
        st["conditions"] = conds
        if st != pod.get("status"):
            self.store.update(PODS, {"metadata": dict(pod["metadata"]), "status": st}, status_only=True)
        record_event(
            self.twin, pod, "FailedScheduling", msg, type="Warning", component=self.name, action="Scheduling"
        )
        key = ("pod", pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
        self.twin.scheduler.after(RETRY_S, lambda: self._safe_sync(key), key=(self.name, "flush", key))

    # ------------------------------------------------------------------ preemption
    def _preempt(self, pod: Obj, nodes: list[Obj], reasons: dict[str, list[str]]) -> Obj | None:
        spec = pod.get("spec", {})
        prio = int(spec.get("priority", 0) or 0)
        if spec.get("preemptionPolicy") == "Never":
            return None
        best: tuple[tuple[int, int, str], Obj, list[Obj]] | None = None
        for node in nodes:
            rs = reasons.get(node["metadata"]["name"], [])
            if any(r in UNRESOLVABLE or r.startswith("node(s) had untolerated") for r in rs):
                continue
            candidates = [
                p
                for p in self.index.pods_on(node["metadata"]["name"])
                if not is_terminal(p)
                and int(p.get("spec", {}).get("priority", 0) or 0) < prio
                and not p["metadata"].get("deletionTimestamp")
            ]
            if not candidates:
                continue
            # remove all lower-priority pods, then add back as many as possible (highest priority first)
            ignore = {p["metadata"]["uid"] for p in candidates}
            if self.filter_node(pod, node, ignore):
                continue
            candidates.sort(
                key=lambda p: (-int(p.get("spec", {}).get("priority", 0) or 0), p["metadata"]["name"])
            )
            victims = []
            for p in candidates:
                ignore.discard(p["metadata"]["uid"])
                if self.filter_node(pod, node, ignore):
                    ignore.add(p["metadata"]["uid"])
                    victims.append(p)
            rank = (
                max(int(v.get("spec", {}).get("priority", 0) or 0) for v in victims),
                len(victims),
                node["metadata"]["name"],
            )
            if best is None or rank < best[0]:
                best = (rank, node, victims)
        if best is None:
            return None
        _, node, victims = best
        node_name = node["metadata"]["name"]
        for v in victims:
            record_event(
                self.twin,
                v,
                "Preempted",
                f"Preempted by pod {pod['metadata']['uid']} on node {node_name}",
                component=self.name,
                action="Preempting",
            )
            with contextlib.suppress(ApiError):
                delete_pod(self.store, v)
        self._nominated[pod["metadata"]["uid"]] = (
            node_name,
            pod["metadata"].get("namespace", ""),
            pod["metadata"]["name"],
        )
        fresh = self.store.get(PODS, pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
        if fresh is not None:
            st = clone(fresh.get("status", {}))
            st["nominatedNodeName"] = node_name
            self.store.update(PODS, {"metadata": dict(fresh["metadata"]), "status": st}, status_only=True)
        return node
