"""Chaos Mesh as the Helm chart deploys it, and what its controller-manager writes back.

- :func:`chaos_mesh_objects`: the ``chaos-mesh`` namespace's workloads of chart v2.8
  (``helm install chaos-mesh chaos-mesh/chaos-mesh -n chaos-mesh``, ITBench's ``install_chaos_mesh``):
  the ``chaos-controller-manager`` Deployment (3 replicas, leader-elected), the ``chaos-daemon``
  DaemonSet (one privileged pod per node) and their ServiceAccounts and Services, so that
  ``kubectl -n chaos-mesh get pods`` looks as it does on a real cluster.
- :func:`experiment_status`: an experiment's ``status`` as the controller-manager keeps it:
  ``conditions`` (Selected, AllInjected, AllRecovered, Paused), ``experiment.desiredPhase`` and
  ``experiment.containerRecords`` (one record per picked pod or container, with its Apply/Recover
  events and counts).
- :func:`record_experiment_events`: the Events its recorder writes on the experiment
  (``controllers/utils/recorder``: Normal ``Applied`` "Successfully apply chaos for <id>",
  ``Recovered`` "Successfully recover chaos for <id>", ``Paused`` "Experiment has been paused",
  ``TimeUp`` "Time up according to the duration") and on a Schedule (``Spawned`` "Create new
  object: <name>", Warning ``Forbid`` "Forbid spawning new job because: <name> is still running").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...k8s.times import rfc3339
from ..controllers.events import record_event
from ..controllers.kinds import PODS
from .chaos import ActiveChaos, is_paused, picked_pods, selector_of

if TYPE_CHECKING:
    from ..core import TwinCore as Twin

Obj = dict[str, Any]

NAMESPACE = "chaos-mesh"
VERSION = "v2.8.0"
CONTROLLER = "chaos-controller-manager"
DAEMON = "chaos-daemon"
CONTROLLER_IMAGE = f"ghcr.io/chaos-mesh/chaos-mesh:{VERSION}"
DAEMON_IMAGE = f"ghcr.io/chaos-mesh/chaos-daemon:{VERSION}"
COMPONENT = "chaos-controller-manager"
"""The ``source.component`` of the Events the controller-manager records."""


def _labels(component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "chaos-mesh",
        "app.kubernetes.io/instance": "chaos-mesh",
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "chaos-mesh",
        "app.kubernetes.io/version": VERSION.lstrip("v"),
    }


def _selector(component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "chaos-mesh",
        "app.kubernetes.io/instance": "chaos-mesh",
        "app.kubernetes.io/component": component,
    }


def chaos_mesh_objects() -> list[Obj]:
    """ServiceAccounts, Deployment, DaemonSet and Services of Chaos Mesh in ``chaos-mesh``."""
    meta = {"namespace": NAMESPACE}
    ctrl_env = [
        {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "TEMPLATE_NAMESPACE", "value": NAMESPACE},
        {"name": "ALLOW_HOST_NETWORK_TESTING", "value": "false"},
        {"name": "TARGET_NAMESPACE", "value": NAMESPACE},
        {"name": "CLUSTER_SCOPED", "value": "true"},
        {"name": "TZ", "value": "UTC"},
        {"name": "CHAOS_DAEMON_SERVICE_PORT", "value": "31767"},
        {"name": "BPFKI_PORT", "value": "50051"},
        {"name": "ENABLE_FILTER_NAMESPACE", "value": "false"},
        {"name": "LEADER_ELECT", "value": "true"},
        {"name": "ENABLED_CONTROLLERS", "value": "*"},
        {"name": "ENABLED_WEBHOOKS", "value": "*"},
    ]
    controller = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {**meta, "name": CONTROLLER, "labels": _labels("controller-manager")},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": _selector("controller-manager")},
            "template": {
                "metadata": {
                    "labels": _labels("controller-manager"),
                    "annotations": {"rollme": "install"},
                },
                "spec": {
                    "serviceAccountName": "chaos-controller-manager",
                    "priorityClassName": "",
                    "containers": [
                        {
                            "name": "chaos-mesh",
                            "image": CONTROLLER_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["/usr/local/bin/chaos-controller-manager"],
                            "env": ctrl_env,
                            # the chart requests 25m / 256Mi; left out so that the twin's node
                            # capacity (which scenarios such as kafka-priority-preemption are
                            # sized against) stays the app's
                            "resources": {},
                            "ports": [
                                {"name": "webhook", "containerPort": 9443},
                                {"name": "http", "containerPort": 10080},
                                {"name": "pprof", "containerPort": 10081},
                                {"name": "ctrl", "containerPort": 10082},
                            ],
                        }
                    ],
                },
            },
        },
    }
    daemon = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {**meta, "name": DAEMON, "labels": _labels("chaos-daemon")},
        "spec": {
            "selector": {"matchLabels": _selector("chaos-daemon")},
            "template": {
                "metadata": {"labels": _labels("chaos-daemon")},
                "spec": {
                    "serviceAccountName": "chaos-daemon",
                    "hostIPC": True,
                    "hostPID": True,
                    "containers": [
                        {
                            "name": "chaos-daemon",
                            "image": DAEMON_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "command": [
                                "/usr/local/bin/chaos-daemon",
                                "--runtime",
                                "containerd",
                                "--http-port",
                                "31766",
                                "--grpc-port",
                                "31767",
                                "--pprof",
                                "--ca",
                                "/etc/chaos-daemon/cert/ca.crt",
                                "--cert",
                                "/etc/chaos-daemon/cert/tls.crt",
                                "--key",
                                "/etc/chaos-daemon/cert/tls.key",
                            ],
                            "env": [{"name": "TZ", "value": "UTC"}],
                            "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_PTRACE"]}},
                            "ports": [
                                {"name": "grpc", "containerPort": 31767},
                                {"name": "http", "containerPort": 31766},
                            ],
                        }
                    ],
                },
            },
        },
    }

    def service(name: str, component: str, ports: list[Obj], headless: bool = False) -> Obj:
        spec: Obj = {"selector": _selector(component), "ports": ports}
        if headless:
            spec["clusterIP"] = "None"
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {**meta, "name": name, "labels": _labels(component)},
            "spec": spec,
        }

    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {**meta, "name": CONTROLLER}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {**meta, "name": DAEMON}},
        controller,
        daemon,
        service(
            "chaos-mesh-controller-manager",
            "controller-manager",
            [
                {"name": "webhook", "port": 443, "targetPort": 9443, "protocol": "TCP"},
                {"name": "http", "port": 10080, "targetPort": 10080, "protocol": "TCP"},
            ],
        ),
        service(
            "chaos-daemon",
            "chaos-daemon",
            [
                {"name": "grpc", "port": 31767, "targetPort": 31767, "protocol": "TCP"},
                {"name": "http", "port": 31766, "targetPort": 31766, "protocol": "TCP"},
            ],
            headless=True,
        ),
    ]


# ---------------------------------------------------------------------------------------------- status


def record_ids(twin: Twin, obj: Obj) -> list[str]:
    """The ids of the experiment's records: ``<ns>/<pod>`` per picked pod (``<ns>/<pod>/<container>``
    for the container-level kinds, StressChaos and container-kill), as Chaos Mesh keys them."""
    spec = obj.get("spec") or {}
    meta = obj.get("metadata", {})
    namespaces, labels, names = selector_of(spec, meta.get("namespace", "default"))
    ch = ActiveChaos(
        obj.get("kind", ""), meta.get("name", ""), meta.get("namespace", ""), meta.get("uid", ""), spec,
        0.0, None, str(spec.get("action", "")), namespaces, labels, names,
    )  # fmt: skip
    container_level = obj.get("kind") == "StressChaos" or spec.get("action") == "container-kill"
    ids: list[str] = []
    for p in picked_pods(ch, twin.store.list(PODS)):
        key = f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}"
        if not container_level:
            ids.append(key)
            continue
        wanted = spec.get("containerNames") or []
        for c in p.get("spec", {}).get("containers") or []:
            if not wanted or c.get("name") in wanted:
                ids.append(f"{key}/{c.get('name', '')}")
    return ids


def experiment_status(obj: Obj, ids: list[str], *, injected: bool, paused: bool, now: float) -> Obj:
    """The experiment's new ``status`` after it was applied (``injected``) or recovered."""
    t = rfc3339(now)
    old = {
        str(r.get("id")): r
        for r in ((obj.get("status") or {}).get("experiment") or {}).get("containerRecords") or []
    }
    records = []
    for rid in sorted(set(ids) | set(old)):
        prev = old.get(rid) or {}
        events = list(prev.get("events") or [])
        inj, rec = int(prev.get("injectedCount", 0)), int(prev.get("recoveredCount", 0))
        was_injected = prev.get("phase") == "Injected"
        if injected and rid in ids and not was_injected:
            events.append({"operation": "Apply", "timestamp": t, "type": "Succeeded"})
            inj += 1
        elif (not injected or rid not in ids) and was_injected:
            events.append({"operation": "Recover", "timestamp": t, "type": "Succeeded"})
            rec += 1
        phase = "Injected" if injected and rid in ids else "Not Injected"
        records.append(
            {
                "id": rid,
                "selectorKey": ".",
                "phase": phase,
                "injectedCount": inj,
                "recoveredCount": rec,
                "events": events[-10:],
            }
        )
    selected = bool(ids) or bool(old)
    return {
        "experiment": {"desiredPhase": "Run" if injected else "Stop", "containerRecords": records},
        "conditions": [
            {"type": "Selected", "status": str(selected), "lastTransitionTime": t},
            {"type": "AllInjected", "status": str(injected and selected), "lastTransitionTime": t},
            {"type": "AllRecovered", "status": str(not injected), "lastTransitionTime": t},
            {"type": "Paused", "status": str(paused), "lastTransitionTime": t},
        ],
    }


def record_experiment_events(twin: Twin, obj: Obj, before: Obj | None, after: Obj, reason: str = "") -> None:
    """Events for the record transitions between two statuses (``before`` None: a new experiment),
    plus ``reason`` (``Paused`` / ``TimeUp``) when given."""
    if reason == "Paused":
        record_event(twin, obj, "Paused", "Experiment has been paused", component=COMPONENT)
    elif reason == "TimeUp":
        record_event(twin, obj, "TimeUp", "Time up according to the duration", component=COMPONENT)
    prev = {
        str(r.get("id")): r.get("phase")
        for r in (((before or {}).get("experiment") or {}).get("containerRecords") or [])
    }
    for r in (after.get("experiment") or {}).get("containerRecords") or []:
        rid, phase = str(r.get("id")), r.get("phase")
        if phase == prev.get(rid):
            continue
        if phase == "Injected":
            record_event(twin, obj, "Applied", f"Successfully apply chaos for {rid}", component=COMPONENT)
        elif prev.get(rid) == "Injected":
            record_event(twin, obj, "Recovered", f"Successfully recover chaos for {rid}", component=COMPONENT)


def is_paused_status(obj: Obj) -> bool:
    conds = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}
    return conds.get("Paused") == "True"


def pause_changed(obj: Obj) -> bool:
    """Whether the experiment's pause annotation disagrees with its status (a pause or a resume to
    write back); False for an experiment without status yet."""
    if not (obj.get("status") or {}).get("conditions"):
        return False
    return is_paused(obj) != is_paused_status(obj)


def schedule_spawned(twin: Twin, sched: Obj, child_name: str) -> None:
    record_event(twin, sched, "Spawned", f"Create new object: {child_name}", component=COMPONENT)


def schedule_forbid(twin: Twin, sched: Obj, running: str) -> None:
    record_event(
        twin,
        sched,
        "Forbid",
        f"Forbid spawning new job because: {running} is still running",
        type="Warning",
        component=COMPONENT,
    )
