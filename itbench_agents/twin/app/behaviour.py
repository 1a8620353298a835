"""The behaviour model: cluster state → container verdicts, resource usage and app health.

:class:`BehaviourModel` is the twin's :class:`~itbench_agents.twin.runtime.ContainerRuntime` and the
writer of ``twin.health``. It subscribes to the store; on any change that matters it schedules one
recompute (``key="health"``) that evaluates the call graph (``propagation.py``) and appends an
:class:`~itbench_agents.twin.health.AppHealth` snapshot at the scheduler's current time. Time-driven
changes (chaos ``duration`` running out, Kafka lag, memory leaks) schedule their own recomputes.
Nothing here reads scenario ground truth: only objects in the store.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ...k8s.kinds import GroupResource
from ...k8s.quantity import quantity
from ...k8s.selectors import matches_map
from ..controllers import coredns
from ..controllers.kinds import CRDS, NAMESPACES
from ..faults import chaosmesh
from ..faults.chaos import (
    CHAOS_GRS,
    GROUP,
    ActiveChaos,
    chaos_crds,
    is_paused,
    picked_pods,
    selector_of,
    validate_chaos,
)
from ..faults.containers import (
    ImageCatalogue,
    VerdictInputs,
    common_images,
    decide,
    is_running,
    started_at,
)
from ..faults.effects import Effects, chaos_effects, flag_effects
from ..faults.flags import flag_values, make_flag_validator, parse_flag_file
from ..faults.schedule import SCHEDULES, ScheduleRunner
from ..health import same_health
from ..kube.pod_deletion import delete_pod
from ..kube.store import ChangeEvent, clone
from ..runtime import VERIFY_ENV, ContainerVerdict, ResourceUsage, StaleCacheError, VerdictReads
from .cluster import (
    CONFIGMAPS,
    DEPLOYMENTS,
    ENDPOINTS,
    NETPOLS,
    NODES,
    PODS,
    SECRETS,
    SERVICES,
    STATEFULSETS,
    ClusterView,
    resolve_env,
)
from .model import AppModel
from .propagation import LagState, Leak, Propagation, Result, ServiceLoad
from .selected_pods import SelectedPods

if TYPE_CHECKING:
    from ..core import TwinCore as Twin
    from .front_door import FrontDoor
    from .journeys import JourneyResult

Obj = dict[str, Any]
log = logging.getLogger(__name__)

_RELEVANT = {
    PODS,
    SERVICES,
    CONFIGMAPS,
    SECRETS,
    NODES,
    DEPLOYMENTS,
    STATEFULSETS,
    NETPOLS,
    NAMESPACES,  # their labels feed NetworkPolicy namespaceSelectors (only looked at when policies exist)
    *CHAOS_GRS.values(),
}
PERIODIC_S = 15.0
MIN_INTERVAL_S = 1.0
"""Health is recomputed at most once per virtual second (a burst of changes is one snapshot)."""


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    detail: str


class BehaviourModel:
    """The app's behaviour inside one twin."""

    def __init__(self, twin: Twin, app: AppModel) -> None:
        self.twin = twin
        self.app = app
        self.env_snaps: dict[tuple[str, str], dict[str, str]] = {}
        self.flag_snaps: dict[str, str] = {}
        self.chaos_seen: dict[str, float] = {}
        self.lags: dict[str, LagState] = {}
        self.leaks: dict[tuple[str, str], Leak] = {}
        """Memory leaked per running container (kept until that container restarts)."""
        self.loads: dict[str, ServiceLoad] = {}
        self.last: Result | None = None
        self.ignored: list[str] = []
        self.catalogue = ImageCatalogue([*app.behaviour.images, *common_images()])
        self._by_workload = {
            (svc.workload or name): name for name, svc in app.behaviour.services.items() if not svc.external
        }
        self._lookups: dict[Any, tuple[str | None, tuple[str, ...] | None]] = {}
        """:meth:`_service_lookup` answers by (labels, owners), while no Deployment or StatefulSet changes."""
        self._cache_key: tuple[int, float] | None = None
        self._cache: tuple[ClusterView, Effects] | None = None
        self._fx: Effects | None = None
        self._fx_had_chaos = False
        self._fx_seen = 0
        """How much of the store's change log the kept effects have been checked against."""
        self._flag_pods: set[str] = set()
        self._derived_gen = 0
        self._usage_gen = 0
        """Bumped whenever :meth:`recompute` replaces the loads and leaks :meth:`usage` reads."""
        self._usage_moves = False
        """Whether some container's usage grows with time alone (a leak) under the current loads."""
        self._chaos_gen_key: tuple[int, float] | None = None
        """(resourceVersion, now) of the last bump of ``_derived_gen`` for active chaos."""
        self._verify = os.environ.get(VERIFY_ENV, "") == "1"
        self._flag_cache: dict[str, dict[str, float]] = {}
        self._last_recompute = float("-inf")
        self._pending_at: float | None = None
        self._dirty = True
        """Whether anything the last propagation read may have changed since (:meth:`_kept`)."""
        self._kept_fx: Effects | None = None
        """The effects the last propagation ran with."""
        self.selected = SelectedPods(twin.store, app.namespace, self.service_for_pod)
        self._outside_rvs: set[int] = set()
        """Changes (resourceVersions) of pods no app workload or Service selects, until the effects'
        check has seen them: such a pod runs no service's binary, the flag service's included."""
        self.schedules = ScheduleRunner(twin)
        self._install_api()
        twin.store.subscribe(self._on_change)
        self._schedule()

    # ------------------------------------------------------------------ API objects
    def _install_api(self) -> None:
        """Install Chaos Mesh as a cluster would have it: its CRDs and its ``chaos-mesh`` namespace
        (where ITBench creates its experiments), plus the admission checks."""
        store = self.twin.store
        if store.get(NAMESPACES, "", "chaos-mesh") is None:
            store.create(
                NAMESPACES,
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {
                        "name": "chaos-mesh",
                        "labels": {"kubernetes.io/metadata.name": "chaos-mesh"},
                    },
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                },
            )
        if store.get(DEPLOYMENTS, chaosmesh.NAMESPACE, chaosmesh.CONTROLLER) is None:
            self.twin.apply(chaosmesh.chaos_mesh_objects())  # its controller-manager and daemons
        for crd in chaos_crds():
            if store.get(CRDS, "", crd["metadata"]["name"]) is None:
                store.create(CRDS, crd)
        for gr in CHAOS_GRS.values():
            self.twin.validators.setdefault(gr, []).append(validate_chaos)
        src = self.app.behaviour.flags.source
        self.twin.validators.setdefault(CONFIGMAPS, []).append(make_flag_validator(src.configmap, src.key))

    # ------------------------------------------------------------------ change tracking
    def _on_change(self, ev: ChangeEvent) -> None:
        if ev.gr in (DEPLOYMENTS, STATEFULSETS) and self._lookups:
            self._lookups.clear()  # which workload selects which pod may have changed
        if ev.gr == SERVICES:
            self.selected.services_changed()
        if ev.gr in (SERVICES, ENDPOINTS) and ev.namespace == coredns.NAMESPACE:
            if ev.name == coredns.SERVICE:
                self._schedule()  # the cluster DNS every name lookup depends on
            return
        if ev.gr not in _RELEVANT:
            return
        controllers = getattr(self.twin, "controllers", None)
        if ev.gr == NODES and controllers is not None and controllers.index.routine(ev):
            return  # a kubelet heartbeat (controllers/cluster.py NodeHeartbeat)
        if ev.gr == NAMESPACES and not self.twin.store.list(NETPOLS, self.app.namespace):
            return
        ns = ev.namespace
        chaos = ev.gr.group == GROUP
        if not chaos and ns not in ("", self.app.namespace):
            return
        if ev.gr == PODS and ev.type == "ADDED":
            self._snapshot_pod(ev.obj)
        if ev.gr == PODS and self.selected.outside(ev) and not self.chaos_seen:
            if len(self._outside_rvs) > 100_000:  # unchecked for long: forget (they count as relevant)
                self._outside_rvs.clear()
            self._outside_rvs.add(ev.rv)
            self._schedule(dirty=False)  # when it would have run: the throttle's times stay the same
            return
        if ev.gr == SCHEDULES:
            obj, deleted = ev.obj, ev.type == "DELETED"
            key = ("chaos-schedule-change", obj["metadata"].get("uid"))
            self.twin.scheduler.soon(lambda: self.schedules.changed(obj, deleted), key=key)
            return
        if chaos and ev.type == "MODIFIED" and chaosmesh.pause_changed(ev.obj):
            obj = ev.obj
            key = ("chaos-pause", obj["metadata"].get("uid", ""))
            self.twin.scheduler.soon(lambda: self._chaos_paused(obj), key=key)
        if chaos and ev.type == "ADDED":
            uid = ev.obj["metadata"].get("uid", "")
            self.chaos_seen[uid] = ev.time
            obj = ev.obj
            self.twin.scheduler.soon(lambda: self._chaos_started(obj), key=("chaos-start", uid))
        self._schedule()

    def _schedule(self, dirty: bool = True) -> None:
        """Recompute soon (at most once per :data:`MIN_INTERVAL_S`); ``dirty``: something the
        propagation reads changed."""
        self._dirty = self._dirty or dirty
        now = self.twin.scheduler.now()
        at = max(now, self._last_recompute + MIN_INTERVAL_S)
        pending = self._pending_at
        if pending is not None and pending <= at and pending >= now:
            return
        self._pending_at = at
        self.twin.scheduler.at(at, self.recompute, key="health")

    def _snapshot_pod(self, pod: Obj) -> None:
        """What a process reads once at start: its env, and flagd's copy of the flag file."""
        uid = pod["metadata"].get("uid", "")
        for c in pod.get("spec", {}).get("containers") or []:
            res = resolve_env(c, self.app.namespace, self.twin.store, pod)
            if not res.errors:
                self.env_snaps[(uid, c.get("name", ""))] = res.env
        src = self.app.behaviour.flags.source
        cm = self.twin.store.get(CONFIGMAPS, self.app.namespace, src.configmap)
        if cm is not None and src.key in (cm.get("data") or {}):
            self.flag_snaps[uid] = str(cm["data"][src.key])

    def _chaos_started(self, obj: Obj) -> None:
        kind = obj.get("kind", "")
        gr = CHAOS_GRS.get(kind)
        if gr is None:
            return
        meta = obj["metadata"]
        current = self.twin.store.get(gr, meta.get("namespace", ""), meta["name"])
        if current is None or current["metadata"].get("uid") != meta.get("uid"):
            return
        spec = current.get("spec") or {}
        ids = chaosmesh.record_ids(self.twin, current)
        if kind == "PodChaos" and spec.get("action") == "pod-kill":
            self._kill_pods(current, spec)
        self._set_status(gr, current, injected=not is_paused(current), ids=ids)
        view, _ = self._view_and_effects(self.twin.scheduler.now())
        ch = next((c for c in view.chaos if c.uid == meta.get("uid")), None)
        if ch is not None and ch.end is not None:
            self.twin.scheduler.at(
                ch.end, lambda: self._chaos_ended(gr, meta), key=("chaos-end", meta.get("uid"))
            )

    def _chaos_ended(self, gr: GroupResource, meta: Obj) -> None:
        current = self.twin.store.get(gr, meta.get("namespace", ""), meta["name"])
        if current is not None and current["metadata"].get("uid") == meta.get("uid"):
            self._set_status(gr, current, injected=False, reason="TimeUp")
        self._dirty = True
        self.recompute()

    def _chaos_paused(self, obj: Obj) -> None:
        """A pause annotation added or removed: the controller-manager recovers or re-applies."""
        gr = CHAOS_GRS.get(obj.get("kind", ""))
        meta = obj["metadata"]
        current = self.twin.store.get(gr, meta.get("namespace", ""), meta["name"]) if gr else None
        if gr is None or current is None or current["metadata"].get("uid") != meta.get("uid"):
            return
        if not chaosmesh.pause_changed(current):
            return
        paused = is_paused(current)
        view, _ = self._view_and_effects(self.twin.scheduler.now())
        active = any(c.uid == meta.get("uid") for c in view.chaos)
        injected = not paused and (active or current.get("kind") == "PodChaos")
        self._set_status(gr, current, injected=injected, reason="Paused" if paused else "")

    def _set_status(
        self, gr: GroupResource, obj: Obj, *, injected: bool, ids: list[str] | None = None, reason: str = ""
    ) -> None:
        """The experiment's status and Events as Chaos Mesh's controller-manager writes them."""
        new = clone(obj)
        if ids is None:
            ids = chaosmesh.record_ids(self.twin, obj) if injected else []
        new["status"] = chaosmesh.experiment_status(
            obj, ids, injected=injected, paused=is_paused(obj), now=self.twin.scheduler.now()
        )
        try:
            stored = self.twin.store.update(gr, new, status_only=True)
        except Exception as e:  # the object changed meanwhile: the next event recomputes anyway
            log.debug("chaos status update skipped: %s", e)
            return
        chaosmesh.record_experiment_events(self.twin, stored, obj.get("status"), new["status"], reason)

    def _kill_pods(self, obj: Obj, spec: Obj) -> None:
        namespaces, labels, names = selector_of(spec, obj["metadata"].get("namespace", "default"))
        ch = ActiveChaos(
            "PodChaos", obj["metadata"]["name"], obj["metadata"].get("namespace", ""), "", spec, 0.0, None,
            "pod-kill", namespaces, labels, names,
        )  # fmt: skip
        # Chaos Mesh's gracePeriod (default 0: killed at once)
        for p in picked_pods(ch, self.twin.store.list(PODS)):
            delete_pod(self.twin.store, p, int(spec.get("gracePeriod") or 0))

    # ------------------------------------------------------------------ health
    def _view_and_effects(self, now: float) -> tuple[ClusterView, Effects]:
        key = (self.twin.store.resource_version, now)
        if self._cache_key != key or self._cache is None:
            view = ClusterView(self.twin.store, self.app, now, self.env_snaps, self.chaos_seen)
            fx = self._fx
            if fx is None or self._fx_inputs_changed() or view.chaos or self._fx_had_chaos:
                fx = self._effects(view)
                self._fx, self._fx_had_chaos = fx, bool(view.chaos)
                self._derived_gen += 1
            elif self._verify and fx != self._effects(view):
                raise StaleCacheError(f"flag/chaos effects kept at resourceVersion {key[0]} are stale")
            self._cache_key, self._cache = key, (view, fx)
        return self._cache

    def _effects(self, view: ClusterView) -> Effects:
        fx = Effects()
        flag_effects(fx, self.app.behaviour.flags.effects, self.flag_values(view))
        chaos_effects(fx, view)
        return fx

    def _fx_inputs_changed(self) -> bool:
        """Whether any store change since the effects were last computed can alter them: a chaos
        experiment, the flag file, or the flag service's workload or pods (the effects are
        otherwise kept, so that a change elsewhere does not cost a walk over every pod)."""
        log = self.twin.store.log
        changed = False
        for i in range(self._fx_seen, len(log)):
            changed = self._affects_fx(log[i]) or changed
        self._fx_seen = len(log)
        return changed

    def _affects_fx(self, ev: ChangeEvent) -> bool:
        if ev.gr == PODS and ev.rv in self._outside_rvs:
            self._outside_rvs.discard(ev.rv)
            return False
        if ev.gr.group == GROUP:
            return True
        if ev.namespace != self.app.namespace:
            return False
        src = self.app.behaviour.flags.source
        flag_svc = self.app.behaviour.services.get(src.service)
        if flag_svc is None:
            return False
        workload = flag_svc.workload or src.service
        if ev.gr == CONFIGMAPS:
            return ev.name == src.configmap
        if ev.gr in (DEPLOYMENTS, STATEFULSETS):
            return ev.name == workload
        if ev.gr != PODS:
            return False
        if any(svc.binary for svc in self.app.behaviour.services.values()):
            return True  # any pod may run the flag service's binary
        uid = ev.obj["metadata"].get("uid", "")
        if uid in self._flag_pods:
            if ev.type == "DELETED":
                self._flag_pods.discard(uid)
            return True
        if self._workload_selects(workload, ev.obj["metadata"].get("labels") or {}):
            if ev.type != "DELETED":
                self._flag_pods.add(uid)
            return True
        return False

    def flag_values(self, view: ClusterView) -> dict[str, float]:
        """Flag values as the running flagd serves them (none when flagd is down: code defaults)."""
        src = self.app.behaviour.flags.source
        if src.service not in self.app.behaviour.services:
            return {}
        insts = view.serving(src.service)
        if not insts:
            return {}
        text = None
        if src.reload == "on_restart":
            text = self.flag_snaps.get(insts[0].pod["metadata"].get("uid", ""))
        if text is None:
            cm = view.store.get(CONFIGMAPS, view.ns, src.configmap)
            text = str(((cm or {}).get("data") or {}).get(src.key, ""))
        if not text:
            return {}
        if text not in self._flag_cache:
            try:
                self._flag_cache[text] = flag_values(parse_flag_file(text))
            except ValueError as e:
                self.ignored.append(
                    f"flagd: cannot parse {src.configmap}/{src.key}: {e}; serving code defaults"
                )
                self._flag_cache[text] = {}
            if len(self._flag_cache) > 64:
                self._flag_cache.pop(next(iter(self._flag_cache)))
        return self._flag_cache[text]

    def recompute(self) -> None:
        now = self.twin.scheduler.now()
        self._last_recompute, self._pending_at = now, None
        view, fx = self._view_and_effects(now)
        if self._kept(fx):
            self._keep(view, fx, now)
            return
        self._dirty, self._kept_fx = False, fx
        result = Propagation(view, fx, self.lags, self.leaks).run(now)
        self.lags, self.loads, self.last = result.lags, result.load, result
        self.leaks = self._carried_leaks(view, now)
        self._usage_gen += 1
        self._usage_moves = any(ld.leak_bytes_per_s_per_pod for ld in self.loads.values()) or any(
            lk.rate for lk in self.leaks.values()
        )
        self._derived_gen += 1
        self.ignored.extend(x for x in fx.ignored if x not in self.ignored)
        self.twin.health.append(result.health)
        if self._moving():
            self.twin.scheduler.at(now + PERIODIC_S, self.recompute, key="health-periodic")

    def _moving(self) -> bool:
        """Whether the health moves with time alone: a Kafka lag, a leak."""
        return any(st.growth or st.lag > 0 for st in self.lags.values()) or any(
            lk.rate for lk in self.leaks.values()
        )

    def _kept(self, fx: Effects) -> bool:
        """Whether the last propagation still holds: only pods outside it changed since
        (``selected_pods``), its effects are the same, and nothing in it moves with time."""
        return (
            not self._dirty
            and self.last is not None
            and fx is self._kept_fx
            and not self._usage_moves
            and not self._moving()
        )

    def _keep(self, view: ClusterView, fx: Effects, now: float) -> None:
        """The last propagation, noted again at ``now`` (the health timeline keeps one snapshot of
        equal health); with the tests' check on, computed anyway and compared."""
        assert self.last is not None
        if self._verify:
            fresh = Propagation(view, fx, self.lags, self.leaks).run(now)
            leaks = self._carried_leaks(view, now)
            same = (
                same_health(fresh.health, self.last.health)
                and fresh.load == self.loads
                and {g: (st.lag, st.growth) for g, st in fresh.lags.items()}
                == {g: (st.lag, st.growth) for g, st in self.lags.items()}
                and {k: (lk.started, lk.at(now), lk.rate) for k, lk in leaks.items()}
                == {k: (lk.started, lk.at(now), lk.rate) for k, lk in self.leaks.items()}
            )
            if not same:
                raise StaleCacheError(f"app health kept at t={now} after changes of unselected pods is stale")
        self.twin.health.append(replace(self.last.health, since=now))

    def _carried_leaks(self, view: ClusterView, now: float) -> dict[tuple[str, str], Leak]:
        """Each running container's leaked bytes carried forward at the new leak rate; a restart resets."""
        leaks: dict[tuple[str, str], Leak] = {}
        for s, ld in self.loads.items():
            for inst in view.serving(s):
                name = inst.container.get("name", "")
                key = (inst.pod["metadata"].get("uid", ""), name)
                start = started_at(inst.pod, name, False, now)
                rec = self.leaks.get(key)
                before = rec.at(now) if rec and rec.started == start else 0.0
                if before or ld.leak_bytes_per_s_per_pod:
                    leaks[key] = Leak(start, before, ld.leak_bytes_per_s_per_pod, now)
        return leaks

    def _leaked(self, pod: Obj, container: Obj, now: float) -> float | None:
        key = (pod.get("metadata", {}).get("uid", ""), container.get("name", ""))
        rec = self.leaks.get(key)
        if rec is None or rec.started != started_at(pod, container.get("name", ""), False, now):
            return None
        return rec.at(now)

    # ------------------------------------------------------------------ ContainerRuntime
    def service_for_pod(self, pod: Obj) -> str | None:
        """The app service a pod belongs to: its owner's Deployment (ReplicaSet ``<deploy>-<hash>``,
        StatefulSet) when that workload's selector matches, else a selector scan."""
        return self._service_lookup(pod)[0]

    def _service_lookup(self, pod: Obj) -> tuple[str | None, tuple[str, ...] | None]:
        """The pod's service and the workload names read to find it (None: every workload was scanned)."""
        meta = pod.get("metadata", {})
        if meta.get("namespace") != self.app.namespace:
            return None, ()
        labels = meta.get("labels") or {}
        candidates = []
        for ref in meta.get("ownerReferences") or []:
            name = str(ref.get("name", ""))
            candidates.append(name.rsplit("-", 1)[0] if ref.get("kind") == "ReplicaSet" else name)
        key = (tuple(sorted(labels.items())), tuple(candidates))
        found = self._lookups.get(key)
        if found is None:
            if len(self._lookups) > 4096:
                self._lookups.clear()
            found = self._lookups[key] = self._scan_workloads(labels, candidates)
        return found

    def _scan_workloads(
        self, labels: dict[str, str], candidates: list[str]
    ) -> tuple[str | None, tuple[str, ...] | None]:
        by_workload = self._by_workload
        read: list[str] = []
        for w in candidates:
            if w in by_workload:
                read.append(w)
                if self._workload_selects(w, labels):
                    return by_workload[w], tuple(read)
        for w, name in by_workload.items():
            if self._workload_selects(w, labels):
                return name, None
        return None, None

    def _workload_selects(self, workload: str, labels: dict[str, str]) -> bool:
        """Whether the app's Deployment or StatefulSet ``workload`` selects pods with ``labels``."""
        for gr in (DEPLOYMENTS, STATEFULSETS):
            obj = self.twin.store.get(gr, self.app.namespace, workload)
            if obj is not None:
                sel = (obj.get("spec", {}).get("selector") or {}).get("matchLabels") or {}
                if matches_map(sel, labels):
                    return True
        return False

    def verdict(
        self, pod: Obj, container: Obj, *, init: bool, node: Obj | None, now: float
    ) -> ContainerVerdict:
        return self.traced_verdict(pod, container, init=init, node=node, now=now)[0]

    def traced_verdict(
        self, pod: Obj, container: Obj, *, init: bool, node: Obj | None, now: float
    ) -> tuple[ContainerVerdict, VerdictReads]:
        """The verdict, and what it read (see :class:`~itbench_agents.twin.runtime.VerdictReads`)."""
        view, fx = self._view_and_effects(now)
        service, workloads_read = self._service_lookup(pod)
        spec = self.app.behaviour.services.get(service) if service else None
        # init containers may wait on other pods (``until nc ...``), a process that exits when a
        # dependency is down reads its dependencies' endpoints: both depend on more than names
        always = init or workloads_read is None
        inp = VerdictInputs(
            view=view,
            service=service,
            spec=spec,
            load=self.loads.get(service) if service else None,
            catalogue=self.catalogue,
            flag_not_serving=fx.not_serving.get(service) if service else None,
        )
        if spec is not None and service is not None:
            extra = fx.memory.get(service, 0.0)
            base = self.loads.get(service) or ServiceLoad()
            inp.load = ServiceLoad(
                base.cpu_demand_per_pod, base.cpu_limit, base.throttle, base.leak_bytes_per_s_per_pod, extra
            )
            if fx.leak_per_request.get(service) and not base.leak_bytes_per_s_per_pod:
                rate = sum(self._op_rate(service, o) for o in spec.operations)
                inp.load.leak_bytes_per_s_per_pod = fx.leak_per_request[service] * max(rate, 0.1)
                always = True  # the leak follows the request rate of the moment
            if container.get("name") == (spec.container or service) and any(
                dep.fatal is not None for dep in spec.dependencies.values()
            ):
                always = True
        key = (pod.get("metadata", {}).get("uid", ""), container.get("name", ""))
        # where its ConfigMaps and Secrets are read
        pod_ns = str(pod.get("metadata", {}).get("namespace") or self.app.namespace)
        started_env = None
        if is_running(pod, container.get("name", ""), init):
            started_env = self.env_snaps.get(key)
            inp.leaked_now = self._leaked(pod, container, now)
            always = always or inp.leaked_now is not None  # leaked bytes grow with time
        else:
            always = True  # not started yet: its start time is "now"
            if not init:
                res = resolve_env(container, pod_ns, self.twin.store, pod)
                if not res.errors:
                    self.env_snaps[key] = res.env  # a (re)started process reads its env now
        v = decide(inp, pod, container, init=init, node=node, now=now, started_env=started_env)
        reads = VerdictReads(
            objects=self._objects_read(pod, pod_ns, container, workloads_read or ()),
            derived=self._derived_state(service, key, view, fx),
            always=always,
        )
        return v, reads

    def _objects_read(
        self, pod: Obj, pod_ns: str, container: Obj, workloads: tuple[str, ...]
    ) -> frozenset[tuple[Any, str, str]]:
        """API objects a verdict reads by name: the pod, its node, the owning workload, and every
        ConfigMap / Secret its env or volumes name (read in ``pod_ns``, the pod's namespace)."""
        meta = pod.get("metadata", {})
        ns = self.app.namespace
        out: set[tuple[Any, str, str]] = {
            (PODS, str(meta.get("namespace", "")), str(meta.get("name", ""))),
            (NODES, "", str(pod.get("spec", {}).get("nodeName") or "")),
        }
        for w in workloads:
            out.add((DEPLOYMENTS, ns, w))
            out.add((STATEFULSETS, ns, w))
        for src in container.get("envFrom") or []:
            for kind, gr in (("configMapRef", CONFIGMAPS), ("secretRef", SECRETS)):
                if src.get(kind):
                    out.add((gr, pod_ns, str(src[kind].get("name", ""))))
        for e in container.get("env") or []:
            vf = e.get("valueFrom") or {}
            for kind, gr in (("configMapKeyRef", CONFIGMAPS), ("secretKeyRef", SECRETS)):
                if vf.get(kind):
                    out.add((gr, pod_ns, str(vf[kind].get("name", ""))))
        for vol in pod.get("spec", {}).get("volumes") or []:
            if vol.get("configMap"):
                out.add((CONFIGMAPS, pod_ns, str(vol["configMap"].get("name", ""))))
            if vol.get("secret"):
                out.add((SECRETS, pod_ns, str(vol["secret"].get("secretName", ""))))
            for part in (vol.get("projected") or {}).get("sources") or []:  # what `cat` may read
                if part.get("configMap"):
                    out.add((CONFIGMAPS, pod_ns, str(part["configMap"].get("name", ""))))
                if part.get("secret"):
                    out.add((SECRETS, pod_ns, str(part["secret"].get("name", ""))))
        return frozenset(out)

    def _derived_state(
        self, service: str | None, key: tuple[str, str], view: ClusterView, fx: Effects
    ) -> tuple[Any, ...]:
        """The model's own state a verdict reads: the service's load and flag / chaos effects,
        whether a leak is tracked for the container, and which chaos experiments are active."""
        chaos = tuple(ch.uid for ch in view.chaos)
        if service is None:
            return (None, key, key in self.leaks, chaos)
        return (
            service,
            key,
            self.loads.get(service),
            fx.memory.get(service),
            fx.leak_per_request.get(service),
            fx.not_serving.get(service),
            key in self.leaks,
            chaos,
        )

    def derived_generation(self, now: float) -> int:
        view, _ = self._view_and_effects(now)
        if view.chaos:
            # active chaos picks pods by live selection and time window: every verdict is asked
            # again once per store state and instant (not on every call at the same one)
            key = (self.twin.store.resource_version, now)
            if key != self._chaos_gen_key:
                self._chaos_gen_key = key
                self._derived_gen += 1
        return self._derived_gen

    def still_current(self, reads: VerdictReads, now: float) -> bool:
        derived = reads.derived
        if not isinstance(derived, tuple) or len(derived) < 4:
            return False
        view, fx = self._view_and_effects(now)
        if view.chaos:
            return False  # chaos picks pods by live selection and time window: always ask again
        return derived == self._derived_state(derived[0], derived[1], view, fx)

    def _op_rate(self, service: str, op: str) -> float:
        last = self.twin.health.at(self.twin.scheduler.now())
        if last is None or service not in last.services:
            return 0.0
        return sum(o.rate for o in last.services[service].operations if o.operation == op)

    def usage_stamp(self) -> int | None:
        """Changes whenever :meth:`usage` may answer differently for pod and container objects that
        did not change (a recompute's new loads and leaks); None while usage moves with time alone
        (a container leaking memory)."""
        return None if self._usage_moves else self._usage_gen

    def usage(self, pod: Obj, container: Obj, now: float) -> ResourceUsage:
        service = self.service_for_pod(pod)
        spec = self.app.behaviour.services.get(service) if service else None
        res = container.get("resources") or {}
        lim = res.get("limits") or {}
        mem_limit = quantity(lim.get("memory"))
        if spec is None or container.get("name") != (spec.container or service):
            req = res.get("requests") or {}
            return ResourceUsage(
                (quantity(req.get("cpu"), 0.005) or 0.005) / 2,
                (quantity(req.get("memory"), 16 * 2**20) or 0.0) / 2,
            )
        ld = self.loads.get(service or "") or ServiceLoad(spec.resources.cpu)
        cpu = min(ld.cpu_demand_per_pod, ld.cpu_limit) if ld.cpu_limit else ld.cpu_demand_per_pod
        start = started_at(pod, container.get("name", ""), False, now)
        leaked = self._leaked(pod, container, now)
        if leaked is None:
            leaked = ld.leak_bytes_per_s_per_pod * max(0.0, now - start)
        mem = spec.resources.memory + ld.extra_memory + leaked
        if mem_limit is not None:
            mem = min(mem, mem_limit)
        return ResourceUsage(round(cpu, 6), round(mem, 1))

    # ------------------------------------------------------------------ functional probe
    def probe(self, now: float | None = None) -> ProbeResult:
        """An end-to-end user request through the entry service: does it succeed in time?"""
        from .journeys import first_symptom, front_door_error

        with self.twin.lock:
            t = self.twin.scheduler.now() if now is None else now
            view, fx = self._view_and_effects(t)
            prop = Propagation(view, fx, self.lags, self.leaks)
            result = prop.run(t)
            b = self.app.behaviour
            load_deps = b.services[b.load.service].dependencies
            for s, o in b.probe.operations:
                out = result.outcomes[(s, o)]
                err, why = front_door_error(view, load_deps, s, out.err)
                if err > b.probe.max_error_ratio:
                    first = why or first_symptom(out)
                    return ProbeResult(False, f"{s} {o}: {err:.0%} of requests fail: {first}".rstrip(": "))
                if out.p95 > b.probe.timeout_ms:
                    return ProbeResult(
                        False, f"{s} {o}: p95 latency {out.p95:.0f} ms > {b.probe.timeout_ms:.0f} ms"
                    )
            return ProbeResult(True, f"{len(b.probe.operations)} probe request(s) succeeded")

    def front_door(self) -> FrontDoor:
        """Requests through the API server's service proxy, answered by this model (``front_door.py``)."""
        from .front_door import FrontDoor

        door: FrontDoor | None = getattr(self, "_front_door", None)
        if door is None:
            door = self._front_door = FrontDoor(self)
        return door

    def journeys(self, now: float | None = None) -> list[JourneyResult]:
        """Every user journey of the app probed through the front door (``journeys.py``)."""
        from .journeys import probe_journeys

        return probe_journeys(self, now)
