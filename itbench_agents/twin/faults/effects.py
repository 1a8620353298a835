"""Turn feature-flag values and Chaos Mesh experiments into per-service effects.

Network-level chaos (NetworkChaos, HTTPChaos) acts on individual calls and lives in
``twin/app/network.py``; PodChaos acts on pods (``twin/app/cluster.py`` and the runtime). This module
covers what changes a service's own work: its operations' errors and latency, CPU and memory
demand, extra traffic, Kafka behaviour, gRPC health.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .chaos import parse_duration, parse_size, picked

if TYPE_CHECKING:
    from ..app.cluster import ClusterView
    from ..app.model import Effect

GIB = 2**30


@dataclass(frozen=True)
class Row:
    """An error/latency contribution, optionally restricted to one operation."""

    op: str | None
    error_ratio: float
    latency_ms: float
    kind: str
    message: str
    source: str


@dataclass
class Effects:
    op: dict[str, list[Row]] = field(default_factory=lambda: defaultdict(list))  # service → rows
    edge: dict[tuple[str, str], list[Row]] = field(default_factory=lambda: defaultdict(list))
    cpu: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # extra cores per pod
    memory: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # extra bytes per pod
    leak_per_request: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    rate_add: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    topic_mult: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    consumer_capacity: dict[str, float] = field(default_factory=dict)
    consumer_errors: dict[str, list[Row]] = field(default_factory=lambda: defaultdict(list))
    not_serving: dict[str, str] = field(default_factory=dict)  # service → gRPC health message
    notes: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))  # info logs
    ignored: list[str] = field(default_factory=list)


def flag_effects(effects: Effects, specs: dict[str, list[Effect]], values: dict[str, float]) -> None:
    for flag, rows in specs.items():
        value = values.get(flag, 0.0)
        if not value:
            continue
        for e in rows:

            def sc(name: str, v: float, e: Effect = e, value: float = value) -> float:
                return v * value if name in e.scale else v

            kind = e.symptom.kind if e.symptom else "feature_flag"
            msg = (e.symptom.message if e.symptom else f"feature flag {flag} enabled").replace(
                "{value}", f"{value:g}"
            )
            err = min(1.0, sc("error_ratio", e.error_ratio))
            lat = sc("latency_ms", e.latency_ms)
            src = f"flag:{flag}"
            if e.edge is not None:
                effects.edge[(e.edge[0], e.edge[1])].append(Row(e.op, err, lat, kind, msg, src))
                continue
            assert e.service is not None
            s = e.service
            if err or lat:
                effects.op[s].append(Row(e.op, err, lat, kind, msg, src))
            elif e.topic is None and e.consumer_capacity is None and e.readiness is None:
                effects.notes[s].append((kind, msg))
            if e.cpu:
                effects.cpu[s] += sc("cpu", e.cpu)
            if e.memory_per_request:
                effects.leak_per_request[s] += sc("memory_per_request", e.memory_per_request)
            if e.rate_add and e.op:
                effects.rate_add[(s, e.op)] += sc("rate_add", e.rate_add)
            if e.topic is not None:
                effects.topic_mult[e.topic] += sc("topic_multiplier", e.topic_multiplier)
                effects.notes[s].append((kind, msg))
            if e.consumer_capacity is not None:
                effects.consumer_capacity[s] = sc("consumer_capacity", e.consumer_capacity)
                effects.notes[s].append((kind, msg))
            if e.consumer_error_ratio:
                effects.consumer_errors[s].append(
                    Row(
                        None,
                        min(1.0, sc("consumer_error_ratio", e.consumer_error_ratio)),
                        0.0,
                        kind,
                        msg,
                        src,
                    )
                )
            if e.readiness is False:
                effects.not_serving[s] = msg


def chaos_effects(effects: Effects, view: ClusterView) -> None:
    """StressChaos and JVMChaos on the pods they pick (the share of picked serving pods scales it)."""
    if not any(ch.kind in ("StressChaos", "JVMChaos") for ch in view.chaos):
        return
    for s, svc in view.services.items():
        insts = view.serving(s) or view.instances_of(s)
        if not insts:
            continue
        for ch in view.chaos:
            if ch.kind not in ("StressChaos", "JVMChaos"):
                continue
            hit = [i for i in insts if picked(view, ch, i.pod)]
            if not hit:
                continue
            share = len(hit) / len(insts)
            if ch.kind == "StressChaos":
                st = ch.spec.get("stressors") or {}
                cpu = st.get("cpu") or {}
                if cpu:
                    cores = int(cpu.get("workers", 1)) * int(cpu.get("load", 100)) / 100.0
                    effects.cpu[s] += cores * share
                mem = st.get("memory") or {}
                if mem:
                    limit = _mem_limit(hit[0].container)
                    node_mem = 16 * GIB
                    try:
                        size = parse_size(mem.get("size", "256MB"), limit or node_mem)
                    except ValueError:
                        continue
                    effects.memory[s] += size * share
                continue
            if not svc.jvm:
                effects.ignored.append(f"{ch.ref}: target {s} is not a JVM process; JVM agent attach failed")
                continue
            action = ch.action
            if action in ("return", "exception", "ruleData"):
                msg = (
                    f"java.lang.NullPointerException (JVMChaos {ch.name}: {ch.spec.get('class', '')}."
                    f"{ch.spec.get('method', '')} returned {ch.spec.get('value', 'null')})"
                    if action != "exception"
                    else f"{ch.spec.get('exception', 'java.io.IOException')} injected by JVMChaos {ch.name}"
                )
                effects.op[s].append(Row(None, share, 0.0, "jvm_exception", msg, ch.ref))
            elif action == "latency":
                lat = float(ch.spec.get("latency", 0) or 0)
                effects.op[s].append(
                    Row(None, 0.0, lat * share, "jvm_latency", f"method latency +{lat:g}ms", ch.ref)
                )
            elif action == "gc":
                effects.op[s].append(
                    Row(
                        None,
                        0.0,
                        400.0 * share,
                        "gc_pause",
                        "Pause Full (System.gc()) GC pauses injected",
                        ch.ref,
                    )
                )
                effects.cpu[s] += 0.5 * share
            elif action == "stress":
                effects.cpu[s] += float(ch.spec.get("cpuCount", 0) or 0) * share
                if ch.spec.get("memType"):
                    effects.memory[s] += 0.9 * (_mem_limit(hit[0].container) or 512 * 2**20) * share
                    effects.op[s].append(
                        Row(
                            None,
                            0.0,
                            300.0 * share,
                            "gc_pause",
                            "java.lang.OutOfMemoryError: Java heap space",
                            ch.ref,
                        )
                    )


def _mem_limit(container: dict) -> float | None:
    lim = (container.get("resources") or {}).get("limits") or {}
    from ...k8s.quantity import quantity

    return quantity(lim.get("memory"))


def chaos_expiries(view: ClusterView) -> list[float]:
    return [ch.end for ch in view.chaos if ch.end is not None]


__all__ = ["Effects", "Row", "chaos_effects", "chaos_expiries", "flag_effects", "parse_duration"]
