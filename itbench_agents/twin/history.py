"""A cluster with a past: seeded rollout history during the twin's healthy pre-history.

Issue 12, part 2 ("History"): on a fresh twin every Deployment is at revision 1 and every pod has
the same age, so any later revision or younger pod points at the fault. With a past, the app is
first applied with earlier pod templates (an earlier release tag of the image where the registry
holds one, otherwise a different ``LOG_LEVEL``), and the twin's own controllers then roll each
chosen Deployment forward to its manifest at seeded times inside the pre-history window. The
result is real history made by the real controllers: several ReplicaSets per Deployment with
their revisions (``kubectl rollout history``), pods of different ages, events of the rollouts.

Only changes the behaviour model ignores are used (an image tag of the same release line the
catalogue holds, an env var no model reads), stateful and infrastructure workloads and
``Recreate`` Deployments keep revision 1 (a rollout of those is not free of downtime), and the
last rollout ends well before the pre-history does, so the app is settled and healthy at the
end. Everything is a pure function of (app, seed, history length).

Install order is history too: on a real install the databases and brokers are often not ready
when their clients start, so the clients crash and restart a few times. Here a seeded subset of
the *fatal* dependencies (those whose clients exit when they cannot connect: postgresql and kafka
in otel-demo, the mongodb and memcached instances in hotel-reservation) is applied 20–45 s after
the rest; the twin's kubelet model then crash-loops their clients until they are up. One seeded
client of each keeps its install pod (no past rollout), so ``kubectl get pods`` shows restarts
long ago and the events show the BackOff, as on a real cluster that has been running for a while.
"""

from __future__ import annotations

import copy
import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

INFRA = re.compile(
    r".*(postgres|mysql|mongo|valkey|redis|memcached|kafka|zookeeper|rabbitmq|consul|etcd|flagd|"
    r"otel-?collector|otelcol|collector|jaeger|prometheus|grafana|opensearch|elasticsearch|loki|"
    r"load-?generator|locust).*"
)
MAX_PAST_REVISIONS = 3
WINDOW = (0.05, 0.6)
"""Past rollouts happen in this fraction of the pre-history (the rest lets the app settle)."""
MIN_SETTLE_S = 120.0
LATE_DEPENDENCY_S = (20.0, 45.0)
"""Seeded seconds a late fatal dependency comes up after the rest of the app."""
LATE_MIN_HISTORY_S = 300.0
"""Shorter pre-histories have no late dependencies (their clients need time to settle)."""
OLDER_RELEASES = ("2.1.3", "2.0.2")
LOG_LEVELS = ("debug", "warn", "info")


@dataclass
class PastRollout:
    at_s: float
    """Seconds after the start of the pre-history."""
    deployment: str
    detail: str
    template: Obj


@dataclass
class LateDependency:
    at_s: float
    """Seconds after the start of the pre-history."""
    workload: str
    clients: list[str]
    """Workloads that exit when they cannot reach it."""


@dataclass
class HistoryPlan:
    initial: list[Obj]
    """The manifests as first applied (earliest templates)."""
    rollouts: list[PastRollout] = field(default_factory=list)
    late: list[LateDependency] = field(default_factory=list)

    def describe(self) -> list[dict[str, Any]]:
        return [{"at_s": r.at_s, "deployment": r.deployment, "detail": r.detail} for r in self.rollouts]


def fatal_dependants(services: dict[str, Any]) -> dict[str, list[str]]:
    """Workload of each fatal dependency → the workloads that exit without it (behaviour model)."""
    out: dict[str, set[str]] = {}
    for name, svc in services.items():
        for dep_name, dep in (getattr(svc, "dependencies", None) or {}).items():
            if getattr(dep, "fatal", None) is None or dep_name not in services:
                continue
            target = getattr(services[dep_name], "workload", None) or dep_name
            out.setdefault(target, set()).add(getattr(svc, "workload", None) or name)
    return {k: sorted(v) for k, v in sorted(out.items())}


def plan_late_dependencies(
    dependants: dict[str, list[str]], *, app: str, seed: int, history_s: float
) -> list[LateDependency]:
    """A seeded subset of the fatal dependencies and the seconds each comes up late."""
    if history_s < LATE_MIN_HISTORY_S:
        return []
    rng = random.Random(int.from_bytes(hashlib.sha256(f"late:{seed}:{app}".encode()).digest()[:8], "big"))
    return [
        LateDependency(float(round(rng.uniform(*LATE_DEPENDENCY_S))), dep, clients)
        for dep, clients in dependants.items()
        if rng.random() < 0.5
    ]


def keep_restarts_visible(late: list[LateDependency], *, app: str, seed: int) -> set[str]:
    """One seeded client of each late dependency: it keeps its install pod (no past rollout)."""
    rng = random.Random(int.from_bytes(hashlib.sha256(f"keep:{seed}:{app}".encode()).digest()[:8], "big"))
    return {rng.choice(d.clients) for d in late if d.clients}


def _rng(seed: int, app: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(f"history:{seed}:{app}".encode()).digest()[:8], "big"))


def _older_image(image: str, image_ok: Callable[[str], bool] | None, skip: int) -> str | None:
    if image_ok is None:
        return None
    repo, sep, tag = image.rpartition(":")
    m = re.fullmatch(r"(\d+\.\d+\.\d+)(-.+)?", tag) if sep else None
    if not m:
        return None
    found = [f"{repo}:{r}{m.group(2) or ''}" for r in OLDER_RELEASES if r != m.group(1)]
    found = [i for i in found if image_ok(i)]
    return found[min(skip, len(found) - 1)] if found else None


def _name(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("name", ""))


def _set_env(container: Obj, name: str, value: str | None) -> None:
    env = [e for e in container.get("env") or [] if e.get("name") != name]
    if value is not None:
        env.append({"name": name, "value": value})
    container["env"] = env


def plan_history(
    manifests: list[Obj],
    *,
    app: str,
    seed: int,
    history_s: float,
    image_ok: Callable[[str], bool] | None = None,
    keep: set[str] | frozenset[str] = frozenset(),
) -> HistoryPlan:
    """Earlier templates for some Deployments and the seeded times they roll forward to
    ``manifests``; the Deployments in ``keep`` have no past rollout."""
    rng = _rng(seed, app)
    initial = [copy.deepcopy(o) for o in manifests]
    lo, hi = WINDOW[0] * history_s, min(WINDOW[1] * history_s, history_s - MIN_SETTLE_S)
    plan = HistoryPlan(initial=initial)
    if hi <= lo:
        return plan
    for i, obj in enumerate(manifests):
        if obj.get("kind") != "Deployment":
            continue
        name = str((obj.get("metadata") or {}).get("name", ""))
        spec = obj.get("spec") or {}
        if INFRA.fullmatch(name) or (spec.get("strategy") or {}).get("type") == "Recreate":
            continue
        n_past = rng.choice((0, 1, 1, 2, 2, 3))
        if not n_past or name in keep:
            continue
        # templates[0] is the oldest; the manifest's own template is the newest
        templates: list[Obj] = []
        details: list[str] = []
        cur = copy.deepcopy(spec.get("template") or {})
        for k in range(n_past):
            older = copy.deepcopy(cur)
            c0 = ((older.get("spec") or {}).get("containers") or [{}])[0]
            img = _older_image(str(c0.get("image", "")), image_ok, k) if rng.random() < 0.6 else None
            if img and img != c0.get("image"):
                details.insert(0, f"image {img} → {c0.get('image')}")
                c0["image"] = img
            else:
                old_level = next(
                    (e.get("value") for e in c0.get("env") or [] if e.get("name") == "LOG_LEVEL"), None
                )
                level = rng.choice([v for v in LOG_LEVELS if v != old_level])
                details.insert(0, f"LOG_LEVEL {level} → {old_level or 'unset'}")
                _set_env(c0, "LOG_LEVEL", level)
            templates.insert(0, older)
            cur = older
        initial[i]["spec"]["template"] = templates[0]
        times = sorted(round(rng.uniform(lo, hi)) for _ in range(n_past))
        newer = [*templates[1:], copy.deepcopy(spec.get("template") or {})]
        for at, tpl, detail in zip(times, newer, details, strict=True):
            plan.rollouts.append(PastRollout(at_s=float(at), deployment=name, detail=detail, template=tpl))
    plan.rollouts.sort(key=lambda r: (r.at_s, r.deployment))
    return plan


def bring_up_with_history(twin: Any, model: Any, history_s: float) -> HistoryPlan:
    """Deploy ``model`` on ``twin`` and run ``history_s`` seconds of pre-history with past rollouts
    (longer than a day: quiet but for its last hour, as ``Twin.for_app`` runs one without)."""
    from .instance import LOUD_PAST_S, QUIET_PAST_S, QUIET_STEP_S

    catalogue = getattr(getattr(twin, "behaviour", None), "catalogue", None)
    find = getattr(catalogue, "find", None)
    image_ok = (lambda image: find(image) is not None) if callable(find) else None
    app = str(getattr(model, "id", ""))
    services = getattr(getattr(model, "behaviour", None), "services", None) or {}
    served = {_name(o) for o in model.manifests if o.get("kind") in ("Deployment", "StatefulSet")}
    dependants = {k: v for k, v in fatal_dependants(services).items() if k in served}
    late = plan_late_dependencies(dependants, app=app, seed=twin.seed, history_s=history_s)
    plan = plan_history(
        list(model.manifests), app=app, seed=twin.seed, history_s=history_s, image_ok=image_ok,
        keep=keep_restarts_visible(late, app=app, seed=twin.seed),
    )  # fmt: skip
    plan.late = late
    by_name = {
        str((o.get("metadata") or {}).get("name", "")): o
        for o in model.manifests
        if o.get("kind") == "Deployment"
    }
    late_names = {d.workload for d in late}

    def is_late(o: Obj) -> bool:
        return o.get("kind") in ("Deployment", "StatefulSet") and _name(o) in late_names

    with twin.lock:
        twin.apply([o for o in plan.initial if not is_late(o)])
        twin.sync()
    elapsed = 0.0
    # a long past (more than a day) is quiet but for its last hour, as without rollouts (instance.py)
    quiet_s = history_s - LOUD_PAST_S if history_s > QUIET_PAST_S else 0.0
    if quiet_s:
        twin.quiet_until = twin.now() + quiet_s

    def run_to(at_s: float) -> None:
        nonlocal elapsed
        if elapsed < quiet_s:
            to = min(at_s, quiet_s)
            twin.advance(to - elapsed, step=QUIET_STEP_S)
            elapsed = to
            if elapsed >= quiet_s:  # the last hour as a kubelet runs, its rules evaluated from here
                twin.quiet_until = None
                if twin.alerts is not None:
                    twin.alerts.begin_at(twin.now())
        if at_s > elapsed:
            twin.advance(at_s - elapsed)
            elapsed = at_s

    events: list[tuple[float, str, Any]] = [(d.at_s, "late", d) for d in late]
    events += [(r.at_s, "rollout", r) for r in plan.rollouts]
    events.sort(key=lambda e: (e[0], e[1]))
    for at_s, what, item in events:
        run_to(at_s)
        if what == "late":
            with twin.lock:
                twin.apply([o for o in plan.initial if is_late(o) and _name(o) == item.workload])
            continue
        r = item
        obj = copy.deepcopy(by_name[r.deployment])
        obj["spec"]["template"] = copy.deepcopy(r.template)
        with twin.lock:
            twin.apply([obj])
    run_to(history_s)
    twin.history_plan = plan
    twin.benign_noise = True  # and benign log lines (telemetry/benign.py)
    return plan
