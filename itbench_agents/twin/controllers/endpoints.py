"""Endpoints and EndpointSlices for every Service with a selector, from the pods it selects:
ready pods in ``addresses``, the others in ``notReadyAddresses``; ports resolved from
``targetPort`` by number or by container port name."""

from __future__ import annotations

import contextlib
from typing import Any

from ...k8s.readiness import is_ready
from ...k8s.selectors import labels_of, matches_map
from ..kube.errors import ApiError
from ..kube.store import ChangeEvent, clone
from .base import Controller
from .index import is_terminal, owner_ref
from .kinds import ENDPOINTS, ENDPOINTSLICES, PODS, SERVICES

Obj = dict[str, Any]

MANAGED_BY = "endpointslice-controller.k8s.io"

_PodPorts = tuple[Obj, list[tuple[Obj, int]]]
"""A pod with the Service ports that resolve on it: (port spec, target port number)."""


def _resolve_port(svc_port: Obj, pod: Obj) -> int | None:
    tp = svc_port.get("targetPort", svc_port.get("port"))
    if isinstance(tp, int):
        return tp
    if isinstance(tp, str) and tp.isdigit():
        return int(tp)
    for c in pod.get("spec", {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == tp and p.get("protocol", "TCP") == svc_port.get("protocol", "TCP"):
                return int(p["containerPort"])
    return None


def _target_ref(pod: Obj) -> Obj:
    """An address's ``targetRef``: the pod behind it."""
    return {
        "kind": "Pod",
        "namespace": pod["metadata"].get("namespace", ""),
        "name": pod["metadata"]["name"],
        "uid": pod["metadata"]["uid"],
    }


class EndpointsController(Controller):
    name = "endpoint-controller"

    def __init__(self, twin: Any, index: Any) -> None:
        super().__init__(twin, index)
        self._selectors: dict[str, dict[tuple[str, Any], list[tuple[int, str, dict[str, str]]]]] = {}
        """namespace -> one (key, value) of each selector -> (position by name, Service name,
        selector) of the Services with a selector there; dropped on any Service change there, so
        a pod change looks only at the Services that may select it."""
        self._slices: dict[str, dict[str, set[str]]] = {}
        """namespace -> Service name -> names of the EndpointSlices this controller manages for it
        (filled from the store on first use in a namespace, then kept up to date from events)."""
        self._slice_owner: dict[tuple[str, str], str] = {}

    def _selectors_in(self, ns: str) -> dict[tuple[str, Any], list[tuple[int, str, dict[str, str]]]]:
        out = self._selectors.get(ns)
        if out is None:
            out = {}
            for pos, svc in enumerate(self.store.list(SERVICES, ns)):
                sel = svc.get("spec", {}).get("selector")
                if sel:
                    first = next(iter(sel.items()))
                    out.setdefault(first, []).append((pos, svc["metadata"]["name"], sel))
            self._selectors[ns] = out
        return out

    def on_change(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        ns = meta.get("namespace", "")
        if ev.gr == SERVICES:
            self._selectors.pop(ns, None)
            self.enqueue((ns, meta["name"]))
        elif ev.gr == PODS:
            labels = labels_of(ev.obj)
            by_pair = self._selectors_in(ns)
            hits = []
            for kv in labels.items():
                for pos, name, sel in by_pair.get(kv, ()):
                    if matches_map(sel, labels):
                        hits.append((pos, name))
            for _, name in sorted(hits):
                self.enqueue((ns, name))
        elif ev.gr == ENDPOINTSLICES:
            self._track_slice(ev)

    # ------------------------------------------------------------------ managed slices by Service
    def _track_slice(self, ev: ChangeEvent) -> None:
        meta = ev.obj.get("metadata", {})
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        by_svc = self._slices.get(ns)
        if by_svc is None:
            return  # not looked at yet: read from the store on first use
        old = self._slice_owner.pop((ns, name), None)
        if old is not None:
            by_svc.get(old, set()).discard(name)
        svc = self._managed_for(ev.obj)
        if ev.type != "DELETED" and svc is not None:
            by_svc.setdefault(svc, set()).add(name)
            self._slice_owner[(ns, name)] = svc

    @staticmethod
    def _managed_for(obj: Obj) -> str | None:
        labels = obj.get("metadata", {}).get("labels") or {}
        if labels.get("endpointslice.kubernetes.io/managed-by") != MANAGED_BY:
            return None
        svc = labels.get("kubernetes.io/service-name")
        return None if svc is None else str(svc)

    def _managed_slices(self, ns: str, service: str) -> list[Obj]:
        """This controller's EndpointSlices of ``service``, in name order."""
        by_svc = self._slices.get(ns)
        if by_svc is None:
            by_svc = self._slices[ns] = {}
            for s in self.store.list(ENDPOINTSLICES, ns):
                svc = self._managed_for(s)
                if svc is not None:
                    by_svc.setdefault(svc, set()).add(s["metadata"]["name"])
                    self._slice_owner[(ns, s["metadata"]["name"])] = svc
        out = []
        for name in sorted(by_svc.get(service, ())):
            obj = self.store.get(ENDPOINTSLICES, ns, name)
            if obj is not None and self._managed_for(obj) == service:
                out.append(obj)
        return out

    def sync(self, key: tuple[str, str]) -> None:
        ns, name = key
        svc = self.store.get(SERVICES, ns, name)
        if svc is None:
            ep = self.store.get(ENDPOINTS, ns, name)
            if (
                ep is not None
                and (ep["metadata"].get("labels") or {}).get("endpoints.kubernetes.io/managed-by")
                != "external"
            ):
                with contextlib.suppress(ApiError):
                    self.store.delete(ENDPOINTS, ns, name)
            return
        selector = svc.get("spec", {}).get("selector")
        if not selector:
            return
        pods = [
            p
            for p in self.index.pods_selected(ns, selector)
            if not is_terminal(p)
            and p.get("status", {}).get("podIP")
            and not p["metadata"].get("deletionTimestamp")
        ]
        ports = svc.get("spec", {}).get("ports") or []
        # by IP, each with the Service ports it resolves (port spec, target port number)
        resolved: list[_PodPorts] = []
        for pod in sorted(pods, key=lambda p: p["status"]["podIP"]):
            pp = []
            for sp in ports:
                port = _resolve_port(sp, pod)
                if port is not None:
                    pp.append((sp, port))
            resolved.append((pod, pp))
        self._write_endpoints(svc, resolved, ports)
        self._write_slice(svc, resolved, ports)

    def _address(self, pod: Obj) -> Obj:
        a: Obj = {"ip": pod["status"]["podIP"], "targetRef": _target_ref(pod)}
        if pod.get("spec", {}).get("nodeName"):
            a["nodeName"] = pod["spec"]["nodeName"]
        return a

    def _write_endpoints(self, svc: Obj, pods: list[_PodPorts], ports: list[Obj]) -> None:
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        subsets: dict[tuple[tuple[str, int, str], ...], Obj] = {}
        for pod, pod_ports in pods:
            eports = []
            for sp, port in pod_ports:
                ep: Obj = {"port": port, "protocol": sp.get("protocol", "TCP")}
                if sp.get("name"):
                    ep["name"] = sp["name"]
                eports.append(ep)
            if ports and not eports:
                continue
            k = tuple((p.get("name", ""), p["port"], p["protocol"]) for p in eports)
            sub = subsets.setdefault(k, {"ports": eports} if eports else {})
            field = "addresses" if is_ready(pod) else "notReadyAddresses"
            sub.setdefault(field, []).append(self._address(pod))
        labels = dict(svc["metadata"].get("labels") or {})
        if svc.get("spec", {}).get("clusterIP") == "None":
            labels["service.kubernetes.io/headless"] = ""
        obj: Obj = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
        }
        if subsets:
            obj["subsets"] = [subsets[k] for k in sorted(subsets)]
        cur = self.store.get(ENDPOINTS, ns, name)
        if cur is None:
            self.store.create(ENDPOINTS, obj)
            return
        if cur.get("subsets") == obj.get("subsets") and (cur["metadata"].get("labels") or {}) == labels:
            return
        new = clone(cur)
        new["metadata"]["labels"] = labels
        new["metadata"].pop("resourceVersion", None)
        if "subsets" in obj:
            new["subsets"] = obj["subsets"]
        else:
            new.pop("subsets", None)
        self.store.update(ENDPOINTS, new)

    def _write_slice(self, svc: Obj, pods: list[_PodPorts], ports: list[Obj]) -> None:
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        endpoints = []
        slice_ports: list[Obj] = []
        for pod, pod_ports in pods:
            resolved = [
                {"name": sp.get("name", ""), "port": port, "protocol": sp.get("protocol", "TCP")}
                for sp, port in pod_ports
            ]
            if ports and not resolved:
                continue
            for r in resolved:
                if r not in slice_ports:
                    slice_ports.append(r)
            ready = is_ready(pod)
            e: Obj = {
                "addresses": [pod["status"]["podIP"]],
                "conditions": {"ready": ready, "serving": ready, "terminating": False},
                "targetRef": _target_ref(pod),
            }
            if pod.get("spec", {}).get("nodeName"):
                e["nodeName"] = pod["spec"]["nodeName"]
            endpoints.append(e)
        existing = self._managed_slices(ns, name)
        labels = dict(svc["metadata"].get("labels") or {})
        labels["kubernetes.io/service-name"] = name
        labels["endpointslice.kubernetes.io/managed-by"] = MANAGED_BY
        body: Obj = {"endpoints": endpoints or None, "ports": slice_ports or None}
        if existing:
            cur = existing[0]
            for extra in existing[1:]:
                with contextlib.suppress(ApiError):
                    self.store.delete(ENDPOINTSLICES, ns, extra["metadata"]["name"])
            if cur.get("endpoints") == body["endpoints"] and cur.get("ports") == body["ports"]:
                return
            new = clone(cur)
            new["metadata"].pop("resourceVersion", None)
            new.update(body)
            self.store.update(ENDPOINTSLICES, new)
            return
        obj = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-{self.store.random_suffix()}",
                "generateName": f"{name}-",
                "namespace": ns,
                "labels": labels,
                "ownerReferences": [owner_ref(svc, "v1", "Service")],
            },
            "addressType": "IPv4",
            **body,
        }
        self.store.create(ENDPOINTSLICES, obj)
