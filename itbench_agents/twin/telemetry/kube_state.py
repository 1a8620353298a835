"""kube-state-metrics: one sample function per resource type (names and labels as KSM v2).

Each function maps one object version to its samples; :mod:`.objseries` turns versions into
series over time. Only series KSM v2 really emits are produced (e.g. ``_waiting_reason`` exists
only while the container waits, with the current reason as a label).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...k8s.kinds import GroupResource
from ...k8s.quantity import parse_quantity
from ...k8s.times import parse_rfc3339
from .context import TelemetryContext
from .objseries import ObjectFamily, Sample
from .sources import MetricMetadata

Obj = dict[str, Any]
KSM = {"job": "kube-state-metrics"}
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
POD_REASONS = ("Evicted", "NodeAffinity", "NodeLost", "Shutdown", "UnexpectedAdmissionError")


def _g(help_: str) -> MetricMetadata:
    return MetricMetadata("gauge", help_)


def _c(help_: str) -> MetricMetadata:
    return MetricMetadata("counter", help_)


def _meta(o: Obj) -> Obj:
    return o.get("metadata") or {}


def _created(o: Obj) -> float:
    try:
        return parse_rfc3339(_meta(o).get("creationTimestamp") or "")
    except ValueError:
        return 0.0


def _bool3(v: Any) -> dict[str, float]:
    s = str(v).lower()
    return {c: float(s == c) for c in ("true", "false", "unknown")}


def _resources(res: Obj, base: dict[str, str], metric: str) -> Iterator[Sample]:
    for rname, q in (res or {}).items():
        unit = {"cpu": "core", "memory": "byte", "ephemeral-storage": "byte"}.get(rname, "integer")
        yield (
            metric,
            {**base, "resource": rname.replace(".", "_").replace("/", "_"), "unit": unit},
            parse_quantity(q),
        )


# --------------------------------------------------------------------------- pods
POD_META = {
    "kube_pod_info": _g("Information about pod."),
    "kube_pod_owner": _g("Information about the Pod's owner."),
    "kube_pod_created": _g("Unix creation timestamp."),
    "kube_pod_start_time": _g("Start time in unix timestamp for a pod."),
    "kube_pod_status_phase": _g("The pods current phase."),
    "kube_pod_status_ready": _g("Describes whether the pod is ready to serve requests."),
    "kube_pod_status_scheduled": _g("Describes the status of the scheduling process for the pod."),
    "kube_pod_status_unschedulable": _g("Describes the unschedulable status for the pod."),
    "kube_pod_status_reason": _g("The pod status reasons."),
    "kube_pod_container_info": _g("Information about a container in a pod."),
    "kube_pod_container_status_waiting": _g("Describes whether the container is currently in waiting state."),
    "kube_pod_container_status_waiting_reason": _g(
        "Describes the reason the container is currently in waiting state."
    ),
    "kube_pod_container_status_running": _g("Describes whether the container is currently in running state."),
    "kube_pod_container_status_terminated": _g(
        "Describes whether the container is currently in terminated state."
    ),
    "kube_pod_container_status_terminated_reason": _g(
        "Describes the reason the container is currently in terminated state."
    ),
    "kube_pod_container_status_last_terminated_reason": _g(
        "Describes the last reason the container was in terminated state."
    ),
    "kube_pod_container_status_last_terminated_exitcode": _g(
        "Describes the exit code for the last container in terminated state."
    ),
    "kube_pod_container_status_ready": _g("Describes whether the containers readiness check succeeded."),
    "kube_pod_container_status_restarts_total": _c("The number of container restarts per container."),
    "kube_pod_container_resource_requests": _g("The number of requested request resource by a container."),
    "kube_pod_container_resource_limits": _g("The number of requested limit resource by a container."),
    "kube_pod_init_container_status_waiting_reason": _g(
        "Describes the reason the init container is currently in waiting state."
    ),
    "kube_pod_init_container_status_running": _g(
        "Describes whether the init container is currently in running state."
    ),
    "kube_pod_init_container_status_restarts_total": _c("The number of restarts for the init container."),
    "kube_pod_init_container_status_terminated_reason": _g(
        "Describes the reason the init container is currently in terminated state."
    ),
}


def pod_samples(o: Obj) -> Iterator[Sample]:
    m, spec, st = _meta(o), o.get("spec") or {}, o.get("status") or {}
    base = {"namespace": m.get("namespace", ""), "pod": m.get("name", ""), "uid": m.get("uid", "")}
    node = spec.get("nodeName", "") or ""
    owners = m.get("ownerReferences") or []
    ctrl = next((r for r in owners if r.get("controller")), owners[0] if owners else {})
    yield (
        "kube_pod_info",
        {
            **base,
            "node": node,
            "host_ip": st.get("hostIP", "") or "",
            "pod_ip": st.get("podIP", "") or "",
            "created_by_kind": ctrl.get("kind", "<none>"),
            "created_by_name": ctrl.get("name", "<none>"),
            "priority_class": spec.get("priorityClassName", "") or "",
            "host_network": str(bool(spec.get("hostNetwork"))).lower(),
        },
        1.0,
    )
    yield (
        "kube_pod_owner",
        {
            **base,
            "owner_kind": ctrl.get("kind", "<none>"),
            "owner_name": ctrl.get("name", "<none>"),
            "owner_is_controller": str(bool(ctrl.get("controller"))).lower() if ctrl else "<none>",
        },
        1.0,
    )
    yield "kube_pod_created", base, _created(o)
    if st.get("startTime"):
        yield "kube_pod_start_time", base, parse_rfc3339(st["startTime"])
    phase = st.get("phase") or "Pending"
    for p in PHASES:
        yield "kube_pod_status_phase", {**base, "phase": p}, float(p == phase)
    conds = {c.get("type"): c for c in st.get("conditions") or []}
    if "Ready" in conds:
        for c, v in _bool3(conds["Ready"].get("status")).items():
            yield "kube_pod_status_ready", {**base, "condition": c}, v
    if "PodScheduled" in conds:
        sched = conds["PodScheduled"]
        for c, v in _bool3(sched.get("status")).items():
            yield "kube_pod_status_scheduled", {**base, "condition": c}, v
        if str(sched.get("status")).lower() == "false" and sched.get("reason") == "Unschedulable":
            yield "kube_pod_status_unschedulable", base, 1.0
    for r in POD_REASONS:
        yield "kube_pod_status_reason", {**base, "reason": r}, float(st.get("reason") == r)
    containers = {c.get("name"): c for c in spec.get("containers") or []}
    for cname, c in containers.items():
        cl = {**base, "container": cname, "node": node}
        yield from _resources(
            (c.get("resources") or {}).get("requests") or {}, cl, "kube_pod_container_resource_requests"
        )
        yield from _resources(
            (c.get("resources") or {}).get("limits") or {}, cl, "kube_pod_container_resource_limits"
        )
    for cs in st.get("containerStatuses") or []:
        yield from _container_samples(base, cs, init=False)
    for cs in st.get("initContainerStatuses") or []:
        yield from _container_samples(base, cs, init=True)


def _container_samples(base: dict[str, str], cs: Obj, *, init: bool) -> Iterator[Sample]:
    cl = {**base, "container": cs.get("name", "")}
    state = cs.get("state") or {}
    pre = "kube_pod_init_container" if init else "kube_pod_container"
    if not init:
        yield (
            "kube_pod_container_info",
            {
                **cl,
                "image": cs.get("image", ""),
                "image_id": cs.get("imageID", ""),
                "container_id": cs.get("containerID", ""),
            },
            1.0,
        )
        yield "kube_pod_container_status_waiting", cl, float("waiting" in state)
        yield "kube_pod_container_status_terminated", cl, float("terminated" in state)
        yield "kube_pod_container_status_ready", cl, float(bool(cs.get("ready")))
        last = (cs.get("lastState") or {}).get("terminated")
        if last:
            yield (
                "kube_pod_container_status_last_terminated_reason",
                {**cl, "reason": last.get("reason", "")},
                1.0,
            )
            yield "kube_pod_container_status_last_terminated_exitcode", cl, float(last.get("exitCode") or 0)
    yield f"{pre}_status_running", cl, float("running" in state)
    if "waiting" in state and (state["waiting"] or {}).get("reason"):
        yield f"{pre}_status_waiting_reason", {**cl, "reason": state["waiting"]["reason"]}, 1.0
    if "terminated" in state and (state["terminated"] or {}).get("reason"):
        yield f"{pre}_status_terminated_reason", {**cl, "reason": state["terminated"]["reason"]}, 1.0
    yield f"{pre}_status_restarts_total", cl, float(cs.get("restartCount") or 0)


# --------------------------------------------------------------------------- workloads
DEPLOY_META = {
    "kube_deployment_created": _g("Unix creation timestamp."),
    "kube_deployment_spec_replicas": _g("Number of desired pods for a deployment."),
    "kube_deployment_spec_paused": _g(
        "Whether the deployment is paused and will not be processed by the deployment controller."
    ),
    "kube_deployment_status_replicas": _g("The number of replicas per deployment."),
    "kube_deployment_status_replicas_available": _g("The number of available replicas per deployment."),
    "kube_deployment_status_replicas_unavailable": _g("The number of unavailable replicas per deployment."),
    "kube_deployment_status_replicas_updated": _g("The number of updated replicas per deployment."),
    "kube_deployment_status_replicas_ready": _g("The number of ready replicas per deployment."),
    "kube_deployment_status_observed_generation": _g("The generation observed by the deployment controller."),
    "kube_deployment_metadata_generation": _g(
        "Sequence number representing a specific generation of the desired state."
    ),
    "kube_deployment_status_condition": _g("The current status conditions of a deployment."),
}


def deployment_samples(o: Obj) -> Iterator[Sample]:
    m, spec, st = _meta(o), o.get("spec") or {}, o.get("status") or {}
    base = {"namespace": m.get("namespace", ""), "deployment": m.get("name", "")}
    yield "kube_deployment_created", base, _created(o)
    yield (
        "kube_deployment_spec_replicas",
        base,
        float(spec.get("replicas", 1) if spec.get("replicas") is not None else 1),
    )
    yield "kube_deployment_spec_paused", base, float(bool(spec.get("paused")))
    for f, metric in (
        ("replicas", "kube_deployment_status_replicas"),
        ("availableReplicas", "kube_deployment_status_replicas_available"),
        ("unavailableReplicas", "kube_deployment_status_replicas_unavailable"),
        ("updatedReplicas", "kube_deployment_status_replicas_updated"),
        ("readyReplicas", "kube_deployment_status_replicas_ready"),
    ):
        yield metric, base, float(st.get(f) or 0)
    yield "kube_deployment_status_observed_generation", base, float(st.get("observedGeneration") or 0)
    yield "kube_deployment_metadata_generation", base, float(m.get("generation") or 0)
    for c in st.get("conditions") or []:
        for s, v in _bool3(c.get("status")).items():
            yield (
                "kube_deployment_status_condition",
                {**base, "condition": c.get("type", ""), "status": s, "reason": c.get("reason", "") or ""},
                v,
            )


RS_META = {
    "kube_replicaset_spec_replicas": _g("Number of desired pods for a ReplicaSet."),
    "kube_replicaset_status_replicas": _g("The number of replicas per ReplicaSet."),
    "kube_replicaset_status_ready_replicas": _g("The number of ready replicas per ReplicaSet."),
    "kube_replicaset_owner": _g("Information about the ReplicaSet's owner."),
}


def replicaset_samples(o: Obj) -> Iterator[Sample]:
    m, spec, st = _meta(o), o.get("spec") or {}, o.get("status") or {}
    base = {"namespace": m.get("namespace", ""), "replicaset": m.get("name", "")}
    yield "kube_replicaset_spec_replicas", base, float(spec.get("replicas") or 0)
    yield "kube_replicaset_status_replicas", base, float(st.get("replicas") or 0)
    yield "kube_replicaset_status_ready_replicas", base, float(st.get("readyReplicas") or 0)
    for r in m.get("ownerReferences") or []:
        yield (
            "kube_replicaset_owner",
            {
                **base,
                "owner_kind": r.get("kind", ""),
                "owner_name": r.get("name", ""),
                "owner_is_controller": str(bool(r.get("controller"))).lower(),
            },
            1.0,
        )


STS_META = {
    "kube_statefulset_replicas": _g("Number of desired pods for a StatefulSet."),
    "kube_statefulset_status_replicas_ready": _g("The number of ready replicas per StatefulSet."),
}


def statefulset_samples(o: Obj) -> Iterator[Sample]:
    m, spec, st = _meta(o), o.get("spec") or {}, o.get("status") or {}
    base = {"namespace": m.get("namespace", ""), "statefulset": m.get("name", "")}
    yield (
        "kube_statefulset_replicas",
        base,
        float(spec["replicas"]) if spec.get("replicas") is not None else 1.0,
    )
    yield "kube_statefulset_status_replicas_ready", base, float(st.get("readyReplicas") or 0)


HPA_META = {
    "kube_horizontalpodautoscaler_info": _g("Information about this autoscaler."),
    "kube_horizontalpodautoscaler_spec_min_replicas": _g(
        "Lower limit for the number of pods that can be set by the autoscaler, default 1."
    ),
    "kube_horizontalpodautoscaler_spec_max_replicas": _g(
        "Upper limit for the number of pods that can be set by the autoscaler; cannot be smaller than MinReplicas."
    ),
    "kube_horizontalpodautoscaler_spec_target_metric": _g(
        "The metric specifications used by this autoscaler when calculating the desired replica count."
    ),
    "kube_horizontalpodautoscaler_status_current_replicas": _g(
        "Current number of replicas of pods managed by this autoscaler."
    ),
    "kube_horizontalpodautoscaler_status_desired_replicas": _g(
        "Desired number of replicas of pods managed by this autoscaler."
    ),
    "kube_horizontalpodautoscaler_status_condition": _g("The condition of this autoscaler."),
}


def hpa_samples(o: Obj) -> Iterator[Sample]:
    m, spec, st = _meta(o), o.get("spec") or {}, o.get("status") or {}
    base = {"namespace": m.get("namespace", ""), "horizontalpodautoscaler": m.get("name", "")}
    ref = spec.get("scaleTargetRef") or {}
    yield (
        "kube_horizontalpodautoscaler_info",
        {**base, "scaletargetref_kind": ref.get("kind", ""), "scaletargetref_name": ref.get("name", "")},
        1.0,
    )
    yield "kube_horizontalpodautoscaler_spec_min_replicas", base, float(spec.get("minReplicas") or 1)
    yield "kube_horizontalpodautoscaler_spec_max_replicas", base, float(spec.get("maxReplicas") or 0)
    for mt in spec.get("metrics") or []:
        res = mt.get("resource") or {}
        target = res.get("target") or {}
        if res.get("name") and target.get("averageUtilization") is not None:
            yield (
                "kube_horizontalpodautoscaler_spec_target_metric",
                {**base, "metric_name": res["name"], "metric_target_type": "utilization"},
                float(target["averageUtilization"]),
            )
    yield "kube_horizontalpodautoscaler_status_current_replicas", base, float(st.get("currentReplicas") or 0)
    yield "kube_horizontalpodautoscaler_status_desired_replicas", base, float(st.get("desiredReplicas") or 0)
    for c in st.get("conditions") or []:
        for s, v in _bool3(c.get("status")).items():
            yield (
                "kube_horizontalpodautoscaler_status_condition",
                {**base, "condition": c.get("type", ""), "status": s},
                v,
            )


# --------------------------------------------------------------------------- namespace-level objects
QUOTA_META = {"kube_resourcequota": _g("Information about resource quota.")}


def quota_samples(o: Obj) -> Iterator[Sample]:
    m, spec, st = _meta(o), o.get("spec") or {}, o.get("status") or {}
    base = {"namespace": m.get("namespace", ""), "resourcequota": m.get("name", "")}
    hard = st.get("hard") or spec.get("hard") or {}
    for r, q in hard.items():
        yield "kube_resourcequota", {**base, "resource": r, "type": "hard"}, parse_quantity(q)
    used = st.get("used") or {}
    for r in hard:
        yield "kube_resourcequota", {**base, "resource": r, "type": "used"}, parse_quantity(used.get(r, 0))


NODE_META = {
    "kube_node_info": _g("Information about a cluster node."),
    "kube_node_spec_unschedulable": _g("Whether a node can schedule new pods."),
    "kube_node_spec_taint": _g("The taint of a cluster node."),
    "kube_node_status_condition": _g("The condition of a cluster node."),
    "kube_node_status_capacity": _g("The capacity for different resources of a node."),
    "kube_node_status_allocatable": _g(
        "The allocatable for different resources of a node that are available for scheduling."
    ),
    "kube_node_labels": _g("Kubernetes labels converted to Prometheus labels."),
}


def node_samples(o: Obj) -> Iterator[Sample]:
    m, spec, st = _meta(o), o.get("spec") or {}, o.get("status") or {}
    base = {"node": m.get("name", "")}
    info = st.get("nodeInfo") or {}
    addrs = {a.get("type"): a.get("address") for a in st.get("addresses") or []}
    yield (
        "kube_node_info",
        {
            **base,
            "kernel_version": info.get("kernelVersion", ""),
            "os_image": info.get("osImage", ""),
            "container_runtime_version": info.get("containerRuntimeVersion", ""),
            "kubelet_version": info.get("kubeletVersion", ""),
            "kubeproxy_version": info.get("kubeProxyVersion", ""),
            "internal_ip": addrs.get("InternalIP", "") or "",
            "provider_id": spec.get("providerID", "") or "",
        },
        1.0,
    )
    yield "kube_node_spec_unschedulable", base, float(bool(spec.get("unschedulable")))
    for t in spec.get("taints") or []:
        yield (
            "kube_node_spec_taint",
            {
                **base,
                "key": t.get("key", ""),
                "value": t.get("value", "") or "",
                "effect": t.get("effect", ""),
            },
            1.0,
        )
    for c in st.get("conditions") or []:
        for s, v in _bool3(c.get("status")).items():
            yield "kube_node_status_condition", {**base, "condition": c.get("type", ""), "status": s}, v
    yield from _resources(st.get("capacity") or {}, base, "kube_node_status_capacity")
    yield from _resources(st.get("allocatable") or {}, base, "kube_node_status_allocatable")
    labels = {"label_" + _sanitize(k): str(v) for k, v in (m.get("labels") or {}).items()}
    yield "kube_node_labels", {**base, **labels}, 1.0


def _sanitize(k: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in k)


SVC_META = {
    "kube_service_info": _g("Information about service."),
    "kube_service_spec_type": _g("Type about service."),
}


def service_samples(o: Obj) -> Iterator[Sample]:
    m, spec = _meta(o), o.get("spec") or {}
    base = {"namespace": m.get("namespace", ""), "service": m.get("name", ""), "uid": m.get("uid", "")}
    yield (
        "kube_service_info",
        {
            **base,
            "cluster_ip": spec.get("clusterIP", "") or "",
            "external_name": spec.get("externalName", "") or "",
            "load_balancer_ip": "",
        },
        1.0,
    )
    yield "kube_service_spec_type", {**base, "type": spec.get("type", "ClusterIP") or "ClusterIP"}, 1.0


EP_META = {
    "kube_endpoint_info": _g("Information about endpoint."),
    "kube_endpoint_address": _g("Information about Endpoint available and non available addresses."),
    "kube_endpoint_address_available": _g("Number of addresses available in endpoint."),
    "kube_endpoint_address_not_ready": _g("Number of addresses not ready in endpoint"),
}


def endpoints_samples(o: Obj) -> Iterator[Sample]:
    m = _meta(o)
    base = {"namespace": m.get("namespace", ""), "endpoint": m.get("name", "")}
    yield "kube_endpoint_info", base, 1.0
    ready = not_ready = 0
    for sub in o.get("subsets") or []:
        nports = max(len(sub.get("ports") or []), 1)
        for a in sub.get("addresses") or []:
            ready += nports
            yield "kube_endpoint_address", {**base, "ip": a.get("ip", ""), "ready": "true"}, 1.0
        for a in sub.get("notReadyAddresses") or []:
            not_ready += nports
            yield "kube_endpoint_address", {**base, "ip": a.get("ip", ""), "ready": "false"}, 1.0
    yield "kube_endpoint_address_available", base, float(ready)
    yield "kube_endpoint_address_not_ready", base, float(not_ready)


PVC_META = {
    "kube_persistentvolumeclaim_info": _g("Information about persistent volume claim."),
    "kube_persistentvolumeclaim_resource_requests_storage_bytes": _g(
        "The capacity of storage requested by the persistent volume claim."
    ),
    "kube_persistentvolumeclaim_status_phase": _g("The phase the persistent volume claim is currently in."),
}


def pvc_samples(o: Obj) -> Iterator[Sample]:
    m, spec, st = _meta(o), o.get("spec") or {}, o.get("status") or {}
    base = {"namespace": m.get("namespace", ""), "persistentvolumeclaim": m.get("name", "")}
    info = {"storageclass": spec.get("storageClassName") or "", "volumename": spec.get("volumeName") or ""}
    yield "kube_persistentvolumeclaim_info", {**base, **info}, 1.0
    wanted = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    if wanted is not None:
        yield "kube_persistentvolumeclaim_resource_requests_storage_bytes", base, parse_quantity(wanted)
    phase = st.get("phase") or "Pending"
    for p in ("Lost", "Bound", "Pending"):
        yield "kube_persistentvolumeclaim_status_phase", {**base, "phase": p}, float(p == phase)


PV_META = {
    "kube_persistentvolume_info": _g("Information about persistentvolume."),
    "kube_persistentvolume_capacity_bytes": _g("Persistentvolume capacity in bytes."),
    "kube_persistentvolume_claim_ref": _g("Information about the Persistent Volume Claim Reference."),
    "kube_persistentvolume_status_phase": _g(
        "The phase indicates if a volume is available, bound to a claim, or released by a claim."
    ),
}


def pv_samples(o: Obj) -> Iterator[Sample]:
    m, spec, st = _meta(o), o.get("spec") or {}, o.get("status") or {}
    base = {"persistentvolume": m.get("name", "")}
    yield "kube_persistentvolume_info", {**base, "storageclass": spec.get("storageClassName") or ""}, 1.0
    yield (
        "kube_persistentvolume_capacity_bytes",
        base,
        parse_quantity((spec.get("capacity") or {}).get("storage", 0)),
    )
    ref = spec.get("claimRef") or {}
    if ref.get("name"):
        claim = {"claim_namespace": ref.get("namespace") or "", "name": ref["name"]}
        yield "kube_persistentvolume_claim_ref", {**base, **claim}, 1.0
    phase = st.get("phase") or "Pending"
    for p in ("Pending", "Available", "Bound", "Released", "Failed"):
        yield "kube_persistentvolume_status_phase", {**base, "phase": p}, float(p == phase)


NS_META = {"kube_namespace_status_phase": _g("kubernetes namespace status phase.")}


def namespace_samples(o: Obj) -> Iterator[Sample]:
    m, st = _meta(o), o.get("status") or {}
    phase = st.get("phase") or "Active"
    for p in ("Active", "Terminating"):
        yield "kube_namespace_status_phase", {"namespace": m.get("name", ""), "phase": p}, float(p == phase)


def kube_state_families(ctx: TelemetryContext) -> list[ObjectFamily]:
    specs = [
        (GroupResource("", "pods"), pod_samples, POD_META),
        (GroupResource("apps", "deployments"), deployment_samples, DEPLOY_META),
        (GroupResource("apps", "replicasets"), replicaset_samples, RS_META),
        (GroupResource("apps", "statefulsets"), statefulset_samples, STS_META),
        (GroupResource("autoscaling", "horizontalpodautoscalers"), hpa_samples, HPA_META),
        (GroupResource("", "resourcequotas"), quota_samples, QUOTA_META),
        (GroupResource("", "nodes"), node_samples, NODE_META),
        (GroupResource("", "services"), service_samples, SVC_META),
        (GroupResource("", "endpoints"), endpoints_samples, EP_META),
        (GroupResource("", "persistentvolumeclaims"), pvc_samples, PVC_META),
        (GroupResource("", "persistentvolumes"), pv_samples, PV_META),
        (GroupResource("", "namespaces"), namespace_samples, NS_META),
    ]
    return [ObjectFamily(ctx, gr, fn, meta, KSM) for gr, fn, meta in specs]  # type: ignore[arg-type]
