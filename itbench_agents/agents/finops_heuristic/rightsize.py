"""The rightsizing recommender a FinOps engineer would run first, applied: the ``finops-heuristic``
agent's strategy for a cost incident on a cluster.

It asks OpenCost which Deployments cost more over the last hour than over the week before (where
the alert's money went: ``/allocation/compute`` by controller, ``1h`` against ``7d offset 1h``),
what each of their containers used over the last hour (by controller and container), and reads the
namespace's HPAs and Deployments (the kubectl tool, read-only); then, for those Deployments only:

- an HPA whose CPU target is below 50 % (it scales up at the slightest load) or whose minimum keeps
  more than two replicas: target 80 %, minimum 1, maximum at most 3;
- a Deployment without an HPA running more than three replicas whose CPU, all together, would fit
  in far fewer: scaled to what its usage needs at 70 % of its requests;
- a container that requests at least 200m CPU (512Mi memory) and uses under a fifth (a quarter) of
  it: its request set to twice its usage (at least 50m, 64Mi), its limit kept above.

Every change goes through the kubectl tool in the mitigation phase; the diagnosis names what it
changed. It never deletes anything, so a workload nobody needs is only shrunk.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import requests

from ...core.agent import EventSink
from ...k8s.quantity import parse_quantity
from ...tools.context import ToolContext
from ...tools.kubectl import kubectl_json
from ...tools.registry import ToolError, get_tool

CPU_FLOOR = 0.05
MEM_FLOOR = 64 * 2**20


@dataclass
class Change:
    entity: str
    """``namespace/Kind/name``."""
    reason: str
    commands: list[str] = field(default_factory=list)


def _cpu_q(cores: float) -> str:
    return f"{max(10, int(math.ceil(cores * 100)) * 10)}m"


def _mem_q(b: float) -> str:
    return f"{int(math.ceil(b / 2**20 / 16)) * 16}Mi"


def accumulated(
    ctx: ToolContext, ns: str, window: str, aggregate: str, events: EventSink
) -> dict[str, Any] | None:
    """OpenCost's allocations of the namespace over ``window``, accumulated into one set and
    aggregated by ``aggregate`` (None when there is no OpenCost or it does not answer)."""
    url = ctx.endpoints.opencost_url
    if not url:
        return None
    params = {"window": window, "aggregate": aggregate, "accumulate": "true", "filter": f'namespace:"{ns}"'}
    events({"type": "tool_call", "tool": "opencost", "args": {"path": "/allocation/compute", **params}})
    try:
        body = requests.get(f"{url}/allocation/compute", params=params, timeout=30).json()
    except (requests.RequestException, ValueError) as e:
        events({"type": "observation", "tool": "opencost", "content": None, "error": str(e)})
        return None
    return dict((body.get("data") or [{}])[0] or {})


def usage_by_container(
    ctx: ToolContext, ns: str, events: EventSink
) -> dict[tuple[str, str], dict[str, float]]:
    """(Deployment, container) → average cores and bytes used and requested, over the last hour
    (OpenCost sums a controller's replicas: per-replica values are divided by the running pods)."""
    allocations = accumulated(ctx, ns, "1h", "controller,container", events) or {}
    out: dict[tuple[str, str], dict[str, float]] = {}
    for name, a in allocations.items():
        ctrl, _, container = name.partition("/")
        kind, _, dep = ctrl.partition(":")
        if kind != "deployment" or not container:
            continue
        out[(dep, container)] = {
            "cpu_use": float(a.get("cpuCoreUsageAverage") or 0.0),
            "cpu_req": float(a.get("cpuCoreRequestAverage") or 0.0),
            "mem_use": float(a.get("ramByteUsageAverage") or 0.0),
            "mem_req": float(a.get("ramByteRequestAverage") or 0.0),
        }
    events({"type": "observation", "tool": "opencost", "content": f"{len(out)} container(s) of Deployments"})
    return out


def grown_deployments(ctx: ToolContext, ns: str, events: EventSink) -> set[str] | None:
    """Deployments whose hourly cost over the last hour is more than 20 % above their average over
    the week before (or that did not run then): where the alert's money went. None when OpenCost
    cannot say."""

    def hourly(window: str) -> dict[str, float] | None:
        allocations = accumulated(ctx, ns, window, "controller", events)
        if allocations is None:
            return None
        out = {}
        for name, a in allocations.items():
            hours = float(a.get("minutes") or 0.0) / 60.0
            if name.startswith("deployment:") and hours > 0:
                out[name.split(":", 1)[1]] = (
                    float(a.get("cpuCost") or 0) + float(a.get("ramCost") or 0)
                ) / hours
        return out

    now, before = hourly("1h"), hourly("7d offset 1h")
    if now is None or before is None:
        return None
    grown = {d for d, c in now.items() if c > 1.2 * before.get(d, 0.0)}
    events(
        {"type": "observation", "tool": "opencost", "content": f"cost grew over last week's: {sorted(grown)}"}
    )
    return grown


def plan(
    ns: str,
    hpas: list[dict[str, Any]],
    deployments: list[dict[str, Any]],
    usage: dict[tuple[str, str], dict[str, float]],
    grown: set[str] | None = None,
) -> list[Change]:
    """The changes to make; with ``grown``, only to Deployments whose cost grew (and their HPAs)."""
    changes: list[Change] = []
    scaled: set[str] = set()
    for h in hpas:
        spec = h.get("spec") or {}
        name = h["metadata"]["name"]
        target = (spec.get("scaleTargetRef") or {}).get("name", "")
        if grown is not None and target not in grown:
            continue
        util = None
        for m in spec.get("metrics") or []:
            t = ((m.get("resource") or {}).get("target") or {}) if m.get("type") == "Resource" else {}
            if (m.get("resource") or {}).get("name") == "cpu" and t.get("averageUtilization") is not None:
                util = int(t["averageUtilization"])
        lo, hi = int(spec.get("minReplicas") or 1), int(spec.get("maxReplicas") or 1)
        if (util is not None and util < 50) or lo > 2:
            patch: dict[str, Any] = {"spec": {"minReplicas": 1, "maxReplicas": min(hi, 3)}}
            if util is not None:
                patch["spec"]["metrics"] = [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 80},
                        },
                    }
                ]
            hpa_why = f"CPU target {util}%, replicas {lo}..{hi}: scales up at the slightest load and keeps the replicas"
            changes.append(
                Change(
                    f"{ns}/HorizontalPodAutoscaler/{name}",
                    hpa_why,
                    [f"patch horizontalpodautoscaler {name} -n {ns} --type merge -p '{json.dumps(patch)}'"],
                )
            )
            scaled.add(target)
    for d in deployments:
        name = d["metadata"]["name"]
        if grown is not None and name not in grown:
            continue
        replicas = int((d.get("spec") or {}).get("replicas") or 1)
        containers = ((d.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []
        cmds: list[str] = []
        why: list[str] = []
        pods = max(1, int((d.get("status") or {}).get("readyReplicas") or replicas))
        total_use = sum(usage.get((name, c["name"]), {}).get("cpu_use", 0.0) for c in containers)
        total_req = sum(usage.get((name, c["name"]), {}).get("cpu_req", 0.0) for c in containers)
        if name not in scaled and replicas > 3 and total_req > 0:
            need = max(1, math.ceil(total_use / (0.7 * total_req / pods)))
            if need < replicas / 2:
                cmds.append(f"scale deployment {name} -n {ns} --replicas={need}")
                why.append(f"{replicas} replicas use what {need} would at 70% of their requests")
        for c in containers:
            u = usage.get((name, c["name"]))
            if u is None:
                continue
            res = c.get("resources") or {}
            req, lim = res.get("requests") or {}, res.get("limits") or {}
            sets_req: list[str] = []
            sets_lim: list[str] = []
            cpu_req, cpu_use = parse_quantity(req.get("cpu") or 0), u["cpu_use"] / pods
            if cpu_req >= 0.2 and cpu_use < cpu_req / 5:
                new = max(CPU_FLOOR, 2 * cpu_use)
                sets_req.append(f"cpu={_cpu_q(new)}")
                if lim.get("cpu") is not None:
                    sets_lim.append(f"cpu={_cpu_q(max(4 * new, 0.1))}")
                why.append(f"container {c['name']} requests {req.get('cpu')} CPU and uses {cpu_use:.3f}")
            mem_req, mem_use = parse_quantity(req.get("memory") or 0), u["mem_use"] / pods
            if mem_req >= 512 * 2**20 and mem_use < mem_req / 4:
                new_m = math.ceil(max(MEM_FLOOR, 2 * mem_use) / (16 * 2**20)) * 16 * 2**20
                sets_req.append(f"memory={_mem_q(new_m)}")
                if lim.get("memory") is not None:
                    sets_lim.append(f"memory={_mem_q(max(2 * new_m, 128 * 2**20))}")
                why.append(
                    f"container {c['name']} requests {req.get('memory')} memory and uses {mem_use / 2**20:.0f}Mi"
                )
            if sets_req:
                cmd = (
                    f"set resources deployment {name} -n {ns} -c {c['name']} --requests={','.join(sets_req)}"
                )
                if sets_lim:
                    cmd += f" --limits={','.join(sets_lim)}"
                cmds.append(cmd)
        if cmds:
            changes.append(Change(f"{ns}/Deployment/{name}", "; ".join(why), cmds))
    return changes


def rightsize(ctx: ToolContext, ns: str, events: EventSink) -> list[Change]:
    """Read, plan and apply; returns the changes made."""
    try:
        hpas = kubectl_json(ctx, f"get horizontalpodautoscalers -n {ns}").get("items", [])
        deployments = kubectl_json(ctx, f"get deployments -n {ns}").get("items", [])
    except ToolError as e:
        events({"type": "error", "where": "kubectl", "message": str(e)})
        return []
    events(
        {
            "type": "observation",
            "tool": "kubectl",
            "content": f"{len(hpas)} HPA(s), {len(deployments)} Deployment(s)",
        }
    )
    changes = plan(
        ns, hpas, deployments, usage_by_container(ctx, ns, events), grown_deployments(ctx, ns, events)
    )
    ctx.phase = "mitigation"
    kubectl = get_tool("kubectl")
    for ch in changes:
        for cmd in ch.commands:
            events({"type": "tool_call", "tool": "kubectl", "args": {"command": cmd}})
            res = kubectl.invoke(ctx, {"command": cmd})
            events(
                {
                    "type": "observation",
                    "tool": "kubectl",
                    "content": res.output,
                    "error": res.output if res.error else None,
                }
            )
    return changes
