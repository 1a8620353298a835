"""Server-side ``meta.k8s.io/v1 Table`` rendering: the columns ``kubectl get`` prints on a real cluster.

Each printer returns the cells of one row; column definitions carry ``priority: 1`` for the
``-o wide`` extras. Ages are computed against the twin's clock.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ...k8s.kinds import ResourceInfo
from ...k8s.times import parse_rfc3339

Obj = dict[str, Any]
Col = tuple[str, str, int]  # (name, type, priority)
Printer = Callable[[Obj, float], list[Any]]


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m" if s % 60 == 0 else f"{m}m{s % 60}s"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h" if m % 60 == 0 else f"{h}h{m % 60}m"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        return f"{d}d" if h % 24 == 0 else f"{d}d{h % 24}h"
    if h < 24 * 365 * 2:
        return f"{d}d"
    y = d // 365
    if h < 24 * 365 * 8:
        dy = d % 365
        return f"{y}y" if dy == 0 else f"{y}y{dy}d"
    return f"{y}y"


def since(ts: str | None, now: float) -> str:
    if not ts:
        return "<unknown>"
    try:
        return human_duration(now - parse_rfc3339(ts))
    except ValueError:
        return "<unknown>"


def _age(o: Obj, now: float) -> str:
    return since(o.get("metadata", {}).get("creationTimestamp"), now)


def _none(v: Any) -> str:
    return str(v) if v not in (None, "", [], {}) else "<none>"


def _selector_str(sel: Obj | None) -> str:
    if not sel:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op = e.get("operator", "")
        vals = ",".join(e.get("values") or [])
        if op == "In":
            parts.append(f"{e.get('key')} in ({vals})")
        elif op == "NotIn":
            parts.append(f"{e.get('key')} notin ({vals})")
        elif op == "Exists":
            parts.append(str(e.get("key")))
        elif op == "DoesNotExist":
            parts.append(f"!{e.get('key')}")
    return ",".join(parts) or "<none>"


def _map_selector(sel: Obj | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((sel or {}).items())) or "<none>"


def _containers(tmpl_spec: Obj) -> tuple[str, str]:
    cs = tmpl_spec.get("containers") or []
    return ",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs)


# ---------------------------------------------------------------------------- pods


def pod_status_reason(pod: Obj) -> tuple[str, int, int, str]:
    """(STATUS, ready containers, restarts, last restart time) as kubectl's printPod computes them."""
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    reason = status.get("phase") or ""
    if status.get("reason"):
        reason = status["reason"]
    restarts = 0
    ready = 0
    last_restart = ""
    initializing = False
    init_specs = spec.get("initContainers") or []
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += int(cs.get("restartCount") or 0)
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term and term.get("exitCode") == 0:
            continue
        if (
            "running" in state
            and (init_specs[i] if i < len(init_specs) else {}).get("restartPolicy") == "Always"
        ):
            continue
        if term:
            if term.get("reason"):
                reason = "Init:" + term["reason"]
            elif term.get("signal"):
                reason = f"Init:Signal:{term['signal']}"
            else:
                reason = f"Init:ExitCode:{term.get('exitCode', 0)}"
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    if not initializing:
        restarts = 0
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            last = (cs.get("lastState") or {}).get("terminated") or {}
            if last.get("finishedAt") and last["finishedAt"] > last_restart:
                last_restart = last["finishedAt"]
            state = cs.get("state") or {}
            waiting, term = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif term and term.get("reason"):
                reason = term["reason"]
            elif term:
                reason = (
                    f"Signal:{term['signal']}"
                    if term.get("signal")
                    else f"ExitCode:{term.get('exitCode', 0)}"
                )
            elif cs.get("ready") and "running" in state:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            ready_cond = any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
            )
            reason = "Running" if ready_cond else "NotReady"
    if pod.get("metadata", {}).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return reason, ready, restarts, last_restart


def _pod(o: Obj, now: float) -> list[Any]:
    reason, ready, restarts, last = pod_status_reason(o)
    spec, status = o.get("spec") or {}, o.get("status") or {}
    restarts_s = str(restarts)
    if restarts and last:
        restarts_s = f"{restarts} ({since(last, now)} ago)"
    gates = spec.get("readinessGates") or []
    if gates:
        conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        ok = sum(1 for g in gates if conds.get(g.get("conditionType")) == "True")
        gates_s = f"{ok}/{len(gates)}"
    else:
        gates_s = "<none>"
    return [
        o["metadata"]["name"],
        f"{ready}/{len(spec.get('containers') or [])}",
        reason,
        restarts_s,
        _age(o, now),
        _none(status.get("podIP")),
        _none(spec.get("nodeName")),
        _none(status.get("nominatedNodeName")),
        gates_s,
    ]


_POD_COLS: list[Col] = [
    ("Name", "string", 0),
    ("Ready", "string", 0),
    ("Status", "string", 0),
    ("Restarts", "string", 0),
    ("Age", "string", 0),
    ("IP", "string", 1),
    ("Node", "string", 1),
    ("Nominated Node", "string", 1),
    ("Readiness Gates", "string", 1),
]

# ---------------------------------------------------------------------------- workloads


def _deploy(o: Obj, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec") or {})
    return [
        o["metadata"]["name"],
        f"{st.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        st.get("updatedReplicas", 0),
        st.get("availableReplicas", 0),
        _age(o, now),
        names,
        images,
        _selector_str(spec.get("selector")),
    ]


def _rs(o: Obj, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec") or {})
    return [
        o["metadata"]["name"],
        spec.get("replicas", 1),
        st.get("replicas", 0),
        st.get("readyReplicas", 0),
        _age(o, now),
        names,
        images,
        _selector_str(spec.get("selector")),
    ]


def _sts(o: Obj, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec") or {})
    return [
        o["metadata"]["name"],
        f"{st.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        _age(o, now),
        names,
        images,
    ]


def _ds(o: Obj, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    tspec = (spec.get("template") or {}).get("spec") or {}
    names, images = _containers(tspec)
    return [
        o["metadata"]["name"],
        st.get("desiredNumberScheduled", 0),
        st.get("currentNumberScheduled", 0),
        st.get("numberReady", 0),
        st.get("updatedNumberScheduled", 0),
        st.get("numberAvailable", 0),
        _map_selector(tspec.get("nodeSelector")),
        _age(o, now),
        names,
        images,
        _selector_str(spec.get("selector")),
    ]


def _job(o: Obj, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec") or {})
    conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
    if conds.get("Complete") == "True":
        status = "Complete"
    elif conds.get("Failed") == "True":
        status = "Failed"
    elif o.get("metadata", {}).get("deletionTimestamp"):
        status = "Terminating"
    elif conds.get("Suspended") == "True":
        status = "Suspended"
    else:
        status = "Running"
    completions = spec.get("completions")
    comp = (
        f"{st.get('succeeded', 0)}/{completions}"
        if completions is not None
        else f"{st.get('succeeded', 0)}/1 of {spec.get('parallelism', 1)}"
    )
    duration = ""
    if st.get("startTime"):
        end = parse_rfc3339(st["completionTime"]) if st.get("completionTime") else now
        duration = human_duration(end - parse_rfc3339(st["startTime"]))
    return [
        o["metadata"]["name"],
        status,
        comp,
        duration,
        _age(o, now),
        names,
        images,
        _selector_str(spec.get("selector")),
    ]


def _cronjob(o: Obj, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    jspec = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = _containers((jspec.get("template") or {}).get("spec") or {})
    last = st.get("lastScheduleTime")
    return [
        o["metadata"]["name"],
        spec.get("schedule", ""),
        _none(spec.get("timeZone")),
        "True" if spec.get("suspend") else "False",
        len(st.get("active") or []),
        since(last, now) if last else "<none>",
        _age(o, now),
        names,
        images,
        _selector_str(jspec.get("selector")),
    ]


# ---------------------------------------------------------------------------- services & networking


def _svc_ports(spec: Obj) -> str:
    out = []
    for p in spec.get("ports") or []:
        s = f"{p.get('port')}"
        if p.get("nodePort"):
            s += f":{p['nodePort']}"
        out.append(f"{s}/{p.get('protocol', 'TCP')}")
    return ",".join(out) or "<none>"


def _svc(o: Obj, now: float) -> list[Any]:
    spec = o.get("spec") or {}
    typ = spec.get("type", "ClusterIP")
    ext = spec.get("externalIPs") or []
    lb = [
        i.get("ip") or i.get("hostname")
        for i in ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    ]
    if typ == "ExternalName":
        external = spec.get("externalName", "<none>")
    elif typ == "LoadBalancer":
        external = ",".join([str(x) for x in lb + ext]) or "<pending>"
    else:
        external = ",".join(ext) or "<none>"
    return [
        o["metadata"]["name"],
        typ,
        spec.get("clusterIP") or "<none>",
        external,
        _svc_ports(spec),
        _age(o, now),
        _map_selector(spec.get("selector")),
    ]


def _endpoints(o: Obj, now: float) -> list[Any]:
    addrs: list[str] = []
    for s in o.get("subsets") or []:
        ports = s.get("ports") or []
        for a in s.get("addresses") or []:
            if ports:
                addrs.extend(f"{a.get('ip')}:{p.get('port')}" for p in ports)
            else:
                addrs.append(str(a.get("ip")))
    shown = ",".join(addrs[:3])
    if len(addrs) > 3:
        shown += f" + {len(addrs) - 3} more..."
    return [o["metadata"]["name"], shown or "<none>", _age(o, now)]


def _endpointslice(o: Obj, now: float) -> list[Any]:
    ports = ",".join(str(p.get("port")) for p in o.get("ports") or []) or "<unset>"
    addrs = [a for e in o.get("endpoints") or [] for a in e.get("addresses") or []]
    shown = ",".join(addrs[:3]) + (f" + {len(addrs) - 3} more..." if len(addrs) > 3 else "")
    return [o["metadata"]["name"], o.get("addressType", ""), ports, shown or "<unset>", _age(o, now)]


def _ingress(o: Obj, now: float) -> list[Any]:
    spec = o.get("spec") or {}
    hosts = ",".join(r.get("host", "*") or "*" for r in spec.get("rules") or []) or "*"
    lb = ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    addr = ",".join(str(i.get("ip") or i.get("hostname")) for i in lb)
    ports = "80, 443" if spec.get("tls") else "80"
    return [o["metadata"]["name"], _none(spec.get("ingressClassName")), hosts, addr, ports, _age(o, now)]


def _netpol(o: Obj, now: float) -> list[Any]:
    sel = (o.get("spec") or {}).get("podSelector")
    return [o["metadata"]["name"], _selector_str(sel), _age(o, now)]


# ---------------------------------------------------------------------------- config & cluster


def _cm(o: Obj, now: float) -> list[Any]:
    return [o["metadata"]["name"], len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o, now)]


def _secret(o: Obj, now: float) -> list[Any]:
    return [
        o["metadata"]["name"],
        o.get("type", "Opaque"),
        len(o.get("data") or {}) + len(o.get("stringData") or {}),
        _age(o, now),
    ]


def _event_object(o: Obj) -> str:
    io = o.get("involvedObject") or o.get("regarding") or {}
    return f"{str(io.get('kind', '')).lower()}/{io.get('name', '')}"


def _event(o: Obj, now: float) -> list[Any]:
    last = (
        (o.get("series") or {}).get("lastObservedTime")  # a series' last occurrence, as kubectl prints it
        or o.get("lastTimestamp")
        or o.get("eventTime")
        or o.get("metadata", {}).get("creationTimestamp")
    )
    first = o.get("firstTimestamp") or o.get("eventTime") or o.get("metadata", {}).get("creationTimestamp")
    io = o.get("involvedObject") or o.get("regarding") or {}
    src = o.get("source") or {}
    source = src.get("component", "") or o.get("reportingComponent", "")
    if src.get("host"):
        source += f", {src['host']}"
    count = o.get("count") or (o.get("series") or {}).get("count") or 1
    return [
        since(last, now),
        o.get("type", ""),
        o.get("reason", ""),
        _event_object(o),
        io.get("fieldPath", ""),
        source,
        (o.get("message") or o.get("note") or "").strip(),
        since(first, now),
        count,
        o["metadata"]["name"],
    ]


def _node(o: Obj, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    ready = next((c.get("status") for c in st.get("conditions") or [] if c.get("type") == "Ready"), "Unknown")
    status = "Ready" if ready == "True" else "NotReady" if ready == "False" else "Unknown"
    if spec.get("unschedulable"):
        status += ",SchedulingDisabled"
    roles = sorted(
        k.split("/", 1)[1]
        for k in (o["metadata"].get("labels") or {})
        if k.startswith("node-role.kubernetes.io/")
    )
    info = st.get("nodeInfo") or {}
    addrs = {a.get("type"): a.get("address") for a in st.get("addresses") or []}
    return [
        o["metadata"]["name"],
        status,
        ",".join(roles) or "<none>",
        _age(o, now),
        info.get("kubeletVersion", ""),
        addrs.get("InternalIP", "<none>"),
        addrs.get("ExternalIP", "<none>"),
        info.get("osImage", "<unknown>"),
        info.get("kernelVersion", "<unknown>"),
        info.get("containerRuntimeVersion", "<unknown>"),
    ]


def _ns(o: Obj, now: float) -> list[Any]:
    return [o["metadata"]["name"], (o.get("status") or {}).get("phase", "Active"), _age(o, now)]


def _hpa(o: Obj, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    targets = []
    current = {
        (m.get("resource") or {}).get("name"): (m.get("resource") or {}).get("current") or {}
        for m in st.get("currentMetrics") or []
        if m.get("type") == "Resource"
    }
    for m in spec.get("metrics") or []:
        if m.get("type") == "Resource":
            r = m.get("resource") or {}
            tgt = r.get("target") or {}
            cur = current.get(r.get("name")) or {}
            if tgt.get("averageUtilization") is not None:
                c = f"{cur['averageUtilization']}%" if "averageUtilization" in cur else "<unknown>"
                targets.append(f"{r.get('name')}: {c}/{tgt['averageUtilization']}%")
            else:
                c = cur.get("averageValue", "<unknown>")
                targets.append(f"{r.get('name')}: {c}/{tgt.get('averageValue', tgt.get('value', ''))}")
    return [
        o["metadata"]["name"],
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        ", ".join(targets) or "<none>",
        spec.get("minReplicas", 1),
        spec.get("maxReplicas", 0),
        st.get("currentReplicas", 0),
        _age(o, now),
    ]


ACCESS_MODES = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}
"""kubectl's short names for volume access modes."""


def _access_modes(modes: list[str] | None) -> str:
    return ",".join(ACCESS_MODES.get(m, m) for m in modes or [])


def _pvc(o: Obj, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    cap = (st.get("capacity") or {}).get("storage", "")
    modes = _access_modes(st.get("accessModes"))
    return [
        o["metadata"]["name"],
        st.get("phase", "Pending"),
        spec.get("volumeName", ""),
        cap,
        modes,
        _none(spec.get("storageClassName")),
        _none(spec.get("volumeAttributesClassName")),
        _age(o, now),
        spec.get("volumeMode", "Filesystem"),
    ]


def _pv(o: Obj, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    claim = spec.get("claimRef") or {}
    modes = _access_modes(spec.get("accessModes"))
    return [
        o["metadata"]["name"],
        (spec.get("capacity") or {}).get("storage", ""),
        modes,
        spec.get("persistentVolumeReclaimPolicy", "Retain"),
        st.get("phase", "Available"),
        f"{claim['namespace']}/{claim['name']}" if claim.get("name") else "",
        spec.get("storageClassName", ""),
        _none(spec.get("volumeAttributesClassName")),
        st.get("reason", ""),
        _age(o, now),
        spec.get("volumeMode", "Filesystem"),
    ]


def _quota(o: Obj, now: float) -> list[Any]:
    st = o.get("status") or {}
    hard, used = st.get("hard") or (o.get("spec") or {}).get("hard") or {}, st.get("used") or {}
    req = [f"{k}: {used.get(k, '0')}/{v}" for k, v in sorted(hard.items()) if not k.startswith("limits.")]
    lim = [f"{k}: {used.get(k, '0')}/{v}" for k, v in sorted(hard.items()) if k.startswith("limits.")]
    return [o["metadata"]["name"], _age(o, now), ", ".join(req), ", ".join(lim)]


def _created_at(o: Obj, now: float) -> list[Any]:
    return [o["metadata"]["name"], o["metadata"].get("creationTimestamp", "")]


def _sa(o: Obj, now: float) -> list[Any]:
    return [o["metadata"]["name"], len(o.get("secrets") or []), _age(o, now)]


def _binding(o: Obj, now: float) -> list[Any]:
    ref = o.get("roleRef") or {}
    subs = o.get("subjects") or []

    def of(kind: str) -> str:
        return ",".join(
            (f"{s.get('namespace')}/{s.get('name')}" if kind == "ServiceAccount" else s.get("name", ""))
            for s in subs
            if s.get("kind") == kind
        )

    return [
        o["metadata"]["name"],
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _age(o, now),
        of("User"),
        of("Group"),
        of("ServiceAccount"),
    ]


def _pdb(o: Obj, now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    return [
        o["metadata"]["name"],
        _na(spec.get("minAvailable")),
        _na(spec.get("maxUnavailable")),
        st.get("disruptionsAllowed", 0),
        _age(o, now),
    ]


def _na(v: Any) -> str:
    return "N/A" if v is None else str(v)


def _sc(o: Obj, now: float) -> list[Any]:
    name = o["metadata"]["name"]
    if (o["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true":
        name += " (default)"
    return [
        name,
        o.get("provisioner", ""),
        o.get("reclaimPolicy", "Delete"),
        o.get("volumeBindingMode", "Immediate"),
        str(bool(o.get("allowVolumeExpansion"))).lower(),
        _age(o, now),
    ]


def _cr_rev(o: Obj, now: float) -> list[Any]:
    owner = next((r for r in o["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
    ctrl = f"{owner.get('kind', '').lower()}.apps/{owner.get('name')}" if owner else "<none>"
    return [o["metadata"]["name"], ctrl, o.get("revision", 0), _age(o, now)]


def _pc(o: Obj, now: float) -> list[Any]:
    return [
        o["metadata"]["name"],
        o.get("value", 0),
        str(bool(o.get("globalDefault"))).lower(),
        _age(o, now),
        o.get("preemptionPolicy", "PreemptLowerPriority"),
    ]


def _lease(o: Obj, now: float) -> list[Any]:
    return [o["metadata"]["name"], (o.get("spec") or {}).get("holderIdentity", ""), _age(o, now)]


def _componentstatus(o: Obj, now: float) -> list[Any]:
    status, message, error = "Unknown", "", ""
    for c in o.get("conditions") or []:
        if c.get("type") == "Healthy":
            status = "Healthy" if c.get("status") == "True" else "Unhealthy"
            message, error = c.get("message", ""), c.get("error", "")
            break
    return [o["metadata"]["name"], status, message, error]


def _default(o: Obj, now: float) -> list[Any]:
    return [o["metadata"]["name"], _age(o, now)]


def _c(*names: str, wide: tuple[str, ...] = ()) -> list[Col]:
    return [(n, "integer" if n in _INT_COLS else "string", 0) for n in names] + [
        (n, "string", 1) for n in wide
    ]


_INT_COLS = {
    "Up-to-date",
    "Available",
    "Desired",
    "Current",
    "Data",
    "Count",
    "Secrets",
    "MinPods",
    "MaxPods",
    "Replicas",
    "Active",
    "Allowed Disruptions",
    "Revision",
    "Value",
}
_WL = ("Containers", "Images", "Selector")

PRINTERS: dict[tuple[str, str], tuple[list[Col], Printer]] = {
    ("", "pods"): (_POD_COLS, _pod),
    ("apps", "deployments"): (_c("Name", "Ready", "Up-to-date", "Available", "Age", wide=_WL), _deploy),
    ("apps", "replicasets"): (_c("Name", "Desired", "Current", "Ready", "Age", wide=_WL), _rs),
    ("apps", "statefulsets"): (_c("Name", "Ready", "Age", wide=("Containers", "Images")), _sts),
    ("apps", "daemonsets"): (
        _c(
            "Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", wide=_WL
        ),
        _ds,
    ),
    ("apps", "controllerrevisions"): (_c("Name", "Controller", "Revision", "Age"), _cr_rev),
    ("batch", "jobs"): (_c("Name", "Status", "Completions", "Duration", "Age", wide=_WL), _job),
    ("batch", "cronjobs"): (
        _c("Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", wide=_WL),
        _cronjob,
    ),
    ("", "services"): (
        _c("Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", wide=("Selector",)),
        _svc,
    ),
    ("", "endpoints"): (_c("Name", "Endpoints", "Age"), _endpoints),
    ("discovery.k8s.io", "endpointslices"): (
        _c("Name", "AddressType", "Ports", "Endpoints", "Age"),
        _endpointslice,
    ),
    ("", "configmaps"): (_c("Name", "Data", "Age"), _cm),
    ("", "secrets"): (_c("Name", "Type", "Data", "Age"), _secret),
    ("", "events"): (
        _c("Last Seen", "Type", "Reason", "Object", wide=("Subobject", "Source"))
        + _c("Message")
        + _c(wide=("First Seen", "Count", "Name")),
        _event,
    ),
    ("events.k8s.io", "events"): (
        _c("Last Seen", "Type", "Reason", "Object", wide=("Subobject", "Source"))
        + _c("Message")
        + _c(wide=("First Seen", "Count", "Name")),
        _event,
    ),
    ("", "nodes"): (
        _c(
            "Name",
            "Status",
            "Roles",
            "Age",
            "Version",
            wide=("Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"),
        ),
        _node,
    ),
    ("", "namespaces"): (_c("Name", "Status", "Age"), _ns),
    ("autoscaling", "horizontalpodautoscalers"): (
        _c("Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"),
        _hpa,
    ),
    ("networking.k8s.io", "ingresses"): (_c("Name", "Class", "Hosts", "Address", "Ports", "Age"), _ingress),
    ("networking.k8s.io", "networkpolicies"): (_c("Name", "Pod-Selector", "Age"), _netpol),
    ("", "persistentvolumeclaims"): (
        _c(
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age",
            wide=("VolumeMode",),
        ),
        _pvc,
    ),
    ("", "persistentvolumes"): (
        _c(
            "Name",
            "Capacity",
            "Access Modes",
            "Reclaim Policy",
            "Status",
            "Claim",
            "StorageClass",
            "VolumeAttributesClass",
            "Reason",
            "Age",
            wide=("VolumeMode",),
        ),
        _pv,
    ),
    ("", "resourcequotas"): (_c("Name", "Age", "Request", "Limit"), _quota),
    ("", "limitranges"): (_c("Name", "Created At"), _created_at),
    ("", "serviceaccounts"): (_c("Name", "Secrets", "Age"), _sa),
    ("rbac.authorization.k8s.io", "roles"): (_c("Name", "Created At"), _created_at),
    ("rbac.authorization.k8s.io", "clusterroles"): (_c("Name", "Created At"), _created_at),
    ("rbac.authorization.k8s.io", "rolebindings"): (
        _c("Name", "Role", "Age", wide=("Users", "Groups", "ServiceAccounts")),
        _binding,
    ),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): (
        _c("Name", "Role", "Age", wide=("Users", "Groups", "ServiceAccounts")),
        _binding,
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (_c("Name", "Created At"), _created_at),
    ("policy", "poddisruptionbudgets"): (
        _c("Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"),
        _pdb,
    ),
    ("storage.k8s.io", "storageclasses"): (
        _c("Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"),
        _sc,
    ),
    ("scheduling.k8s.io", "priorityclasses"): (
        _c("Name", "Value", "Global-Default", "Age", wide=("PreemptionPolicy",)),
        _pc,
    ),
    ("coordination.k8s.io", "leases"): (_c("Name", "Holder", "Age"), _lease),
    ("", "componentstatuses"): (_c("Name", "Status", "Message", "Error"), _componentstatus),
}


_JSONPATH_STEP = re.compile(
    r"""\.(?P<field>[^.\[]+)|\[(?P<index>-?\d+)\]|\[\*\]"""
    r"""|\[\?\(@\.(?P<key>[\w.-]+)\s*(?P<op>==|!=)\s*(?P<q>["']?)(?P<value>[^"')]*)(?P=q)\)\]"""
)


def _jsonpath(o: Obj, path: str) -> Any:
    """A printer column's JSONPath as the apiserver evaluates it: fields, ``[n]``, ``[*]`` and
    ``[?(@.key == "value")]`` filters; several results are joined with commas, none is None."""
    found: list[Any] = [o]
    text = path.strip()
    if text and not text.startswith((".", "[")):
        text = "." + text
    pos = 0
    while pos < len(text):
        m = _JSONPATH_STEP.match(text, pos)
        if m is None:
            return None
        pos = m.end()
        nxt: list[Any] = []
        for cur in found:
            if m["field"] is not None:
                if isinstance(cur, dict) and m["field"] in cur:
                    nxt.append(cur[m["field"]])
            elif m["index"] is not None:
                i = int(m["index"])
                if isinstance(cur, list) and -len(cur) <= i < len(cur):
                    nxt.append(cur[i])
            elif isinstance(cur, list):
                items = cur
                if m["key"] is not None:
                    items = [
                        x for x in cur if (str(_jsonpath(x, m["key"])) == m["value"]) == (m["op"] == "==")
                    ]
                nxt.extend(items)
        found = nxt
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    return ",".join(str(v).lower() if isinstance(v, bool) else str(v) for v in found)


def _custom_printer(info: ResourceInfo) -> tuple[list[Col], Printer]:
    version = info.crd_version
    extra = version.get("additionalPrinterColumns") or []
    if not extra:
        return _c("Name", "Age"), _default
    cols: list[Col] = [("Name", "string", 0)]
    for c in extra:
        cols.append((str(c.get("name", "")), str(c.get("type", "string")), int(c.get("priority", 0))))
    has_age = any(str(c.get("name", "")).lower() == "age" for c in extra)
    if not has_age:
        cols.append(("Age", "date", 0))

    def printer(o: Obj, now: float) -> list[Any]:
        row: list[Any] = [o["metadata"]["name"]]
        for c in extra:
            v = _jsonpath(o, str(c.get("jsonPath", "")))
            if c.get("type") == "date" and isinstance(v, str):
                v = since(v, now)
            row.append("<none>" if v is None else v)
        if not has_age:
            row.append(_age(o, now))
        return row

    return cols, printer


def printer_for(info: ResourceInfo) -> tuple[list[Col], Printer]:
    if info.crd is not None:
        return _custom_printer(info)
    return PRINTERS.get((info.group, info.resource)) or (_c("Name", "Age"), _default)


def partial_metadata(o: Obj) -> Obj:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": o.get("metadata", {}),
    }


def to_table(
    info: ResourceInfo,
    objs: list[Obj],
    now: float,
    *,
    include_object: str = "Metadata",
    list_meta: Obj | None = None,
    with_columns: bool = True,
) -> Obj:
    cols, printer = printer_for(info)
    rows = []
    for o in objs:
        cells = printer(o, now)
        row: Obj = {"cells": cells}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = partial_metadata(o)
        rows.append(row)
    table: Obj = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": [
            {
                "name": name,
                "type": "string" if typ == "date" else typ,
                "format": "name" if name == "Name" else "",
                "description": name,
                "priority": prio,
            }
            for name, typ, prio in cols
        ]
        if with_columns
        else [],
        "rows": rows,
    }
    return table
