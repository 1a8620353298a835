"""The kubelets of all nodes: pod sandboxes, image pulls, container starts, exits, restarts with
CrashLoopBackOff, probes and the pod status they produce.

The *mechanics* live here; what happens to each container is the runtime's verdict
(``twin.runtime.verdict``), asked when a container is about to start and again whenever the
cluster changes (a changed verdict for a running container applies from that moment). With a
:class:`~itbench_agents.twin.runtime.TracedRuntime` it is asked again only for containers whose
recorded inputs changed; ``ITBENCH_TWIN_VERIFY_VERDICTS=1`` asks for the others too and raises
:class:`StaleCacheError` if any answer differs (the test suite runs with it on).

Timings follow the real kubelet: the first restart after a crash is immediate (after the 1 s
PLEG relist), later ones wait for the back-off that started at the previous restart
(10 s doubling to 300 s, forgotten after 600 s); image pulls back off the same way. Every
container instance is kept in :meth:`Kubelet.container_history` for logs and telemetry.
"""

from __future__ import annotations

import contextlib
import heapq
import os
from dataclasses import dataclass, field
from typing import Any

from ...k8s.kinds import GroupResource
from ...k8s.readiness import is_ready
from ...k8s.times import rfc3339
from ..kube.errors import ApiError
from ..kube.store import ChangeEvent
from ..runtime import VERIFY_ENV, ContainerVerdict, StaleCacheError, TracedRuntime, VerdictReads
from .admission import qos_class
from .base import Controller, update_status
from .events import record_event
from .kinds import CONTROLLERREVISIONS, EVENTS, LEASES, NODES, PODS, RESOURCEQUOTAS
from .verdict_watch import Slot, Token, VerdictWatch
from .workload import fnv32a

Obj = dict[str, Any]

BACKOFF_INITIAL_S = 10.0
BACKOFF_MAX_S = 300.0
BACKOFF_RESET_S = 600.0
PLEG_RELIST_S = 1.0
CONFIG_RETRY_S = 10.0
PROBE_PERIOD_S = 10.0


def next_backoff(backoff: float, last_at: float | None, now: float) -> float:
    """The kubelet's back-off after a failure at ``now`` (crash restarts and image pulls alike):
    doubling from 10 s up to 5 min, and back to 10 s once the last failure is over 10 min old."""
    if last_at is None or now - last_at > BACKOFF_RESET_S:
        return BACKOFF_INITIAL_S
    return min(backoff * 2, BACKOFF_MAX_S)


@dataclass
class ContainerRun:
    """One instance of a container (``kubectl logs --previous`` is the one before the last)."""

    container_id: str
    started_at: float
    finished_at: float | None = None
    exit_code: int | None = None
    reason: str | None = None
    message: str | None = None


@dataclass
class ContainerState:
    name: str
    init: bool
    spec: Obj
    state: str = "waiting"  # waiting | running | terminated
    reason: str = "ContainerCreating"
    message: str | None = None
    ready: bool = False
    started: bool = False
    runs: list[ContainerRun] = field(default_factory=list)
    last_terminated: Obj | None = None
    terminated: Obj | None = None
    verdict: ContainerVerdict | None = None
    reads: VerdictReads | None = None
    """What ``verdict`` was computed from, when a refresh computed it (None: ask at the next refresh)."""
    reads_state: tuple[str, str, int] | None = None
    backoff: float = 0.0
    backoff_at: float | None = None
    pull_backoff: float = 0.0
    pull_backoff_at: float | None = None
    ever_started: bool = False
    done: bool = False  # terminated and will not restart
    index: int = -1
    """Position among the pod's init + main containers."""
    on_lifecycle: Any = field(default=None, repr=False, compare=False)
    """Called with this state when ``state`` or ``reason`` changes (the kubelet's verdict watch)."""

    def __setattr__(self, name: str, value: Any) -> None:
        hook = self.__dict__.get("on_lifecycle")
        if hook is not None and name in ("state", "reason") and self.__dict__.get(name) != value:
            object.__setattr__(self, name, value)
            hook(self)
            return
        object.__setattr__(self, name, value)

    @property
    def image(self) -> str:
        return str(self.spec.get("image", ""))

    @property
    def lifecycle(self) -> tuple[str, str, int]:
        """Where the container is in its life (a verdict is only reused within the same one)."""
        return (self.state, self.reason, len(self.runs))

    @property
    def restart_count(self) -> int:
        return max(0, len(self.runs) - 1)

    @property
    def sidecar(self) -> bool:
        """An init container with ``restartPolicy: Always`` (runs alongside the main containers)."""
        return self.init and str(self.spec.get("restartPolicy", "")) == "Always"


@dataclass
class PodState:
    namespace: str
    name: str
    uid: str
    node: str
    host_ip: str
    ip: str = ""
    start_time: float | None = None
    sandbox: bool = False
    init: list[ContainerState] = field(default_factory=list)
    main: list[ContainerState] = field(default_factory=list)
    init_done: bool = False
    init_failed: bool = False
    conds: dict[str, tuple[str, str, str | None, str | None]] = field(default_factory=dict)
    gone: bool = False
    seq: int = 0
    """Admission order (the order in which verdicts are refreshed)."""

    def all(self) -> list[ContainerState]:
        return self.init + self.main


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()`` of a duration truncated to milliseconds ('728ms', '1.585s', '1m2.5s')."""
    ms = int(seconds * 1000 + 1e-6)
    if ms < 1000:
        return f"{ms}ms"
    mins, rest = divmod(ms, 60_000)
    secs = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    return f"{mins}m{secs}s" if mins else f"{secs}s"


def _field_path(cs: ContainerState) -> str:
    """The Event ``fieldPath`` of a container."""
    return f"spec.initContainers{{{cs.name}}}" if cs.init else f"spec.containers{{{cs.name}}}"


def _hex(*parts: object, n: int = 64) -> str:
    out = ""
    i = 0
    while len(out) < n:
        out += f"{fnv32a(('/'.join(map(str, parts)) + f'#{i}').encode()):08x}"
        i += 1
    return out[:n]


class Kubelet(Controller):
    name = "kubelet"

    def __init__(self, twin: Any, index: Any) -> None:
        super().__init__(twin, index)
        self.pods: dict[tuple[str, str], PodState] = {}
        self.history: dict[tuple[str, str], list[ContainerRun]] = {}
        """Container instances by (pod uid, container name)."""
        self._uids: dict[tuple[str, str], str] = {}
        """The uid of the latest pod with a given (namespace, name)."""
        self._images: dict[str, set[str]] = {}
        self._ip_next: dict[str, int] = {}
        self._seen: dict[tuple[GroupResource, str, str], tuple[Any, ...]] = {}
        self._touched: set[tuple[GroupResource, str, str]] = set()
        """Objects changed since the last verdict refresh began."""
        self._verify = os.environ.get(VERIFY_ENV, "") == "1"
        self._traced_runtime: tuple[Any, TracedRuntime | None] | None = None
        self._watch = VerdictWatch()
        self._slots: dict[Slot, tuple[PodState, ContainerState]] = {}
        self._seq = 0
        self._derived_seen: int | None = None
        self._pass: _Pass | None = None

    # ------------------------------------------------------------------ public queries
    def container_history(
        self, namespace: str, pod: str, container: str, uid: str | None = None
    ) -> list[ContainerRun]:
        """Every instance of ``container`` in ``pod`` so far, oldest first (the latest pod of that
        name, or the one with ``uid``)."""
        uid = uid or self._uids.get((namespace, pod), "")
        return list(self.history.get((uid, container), []))

    def pod_state(self, namespace: str, pod: str) -> PodState | None:
        return self.pods.get((namespace, pod))

    # ------------------------------------------------------------------ store events
    def on_change(self, ev: ChangeEvent) -> None:
        if ev.gr in (EVENTS, LEASES):
            return
        meta = ev.obj.get("metadata", {})
        token = (ev.gr, str(meta.get("namespace", "")), str(meta.get("name", "")))
        self._touched.add(token)
        if self._pass is not None:
            for slot in self._watch.readers(token):
                self._pass.push(self._order(slot), slot)
        if ev.gr == PODS:
            meta = ev.obj["metadata"]
            key = (meta.get("namespace", ""), meta["name"])
            ps = self.pods.get(key)
            if ev.type == "DELETED":
                if ps is not None and ps.uid == meta.get("uid"):
                    self._teardown(ps, ev.obj)
            elif meta.get("deletionTimestamp"):
                if (ps is None and ev.obj.get("spec", {}).get("nodeName")) or (
                    ps is not None and not ps.gone
                ):
                    self.enqueue(("delete", *key))
            elif ps is None and ev.obj.get("spec", {}).get("nodeName"):
                self.enqueue(("start", *key))
            elif ps is not None:
                self.enqueue(("spec", *key))
        if ev.gr == NODES:
            self.enqueue("nodes")
        if self._relevant(ev):
            self.enqueue("refresh")

    def _relevant(self, ev: ChangeEvent) -> bool:
        """Whether a change may alter a runtime verdict. Status churn of pods (restart counts,
        timestamps) and of workload objects does not; readiness, phase and any spec change do."""
        meta = ev.obj.get("metadata", {})
        ref = (ev.gr, meta.get("namespace", ""), meta.get("name", ""))
        if ev.type == "DELETED":
            self._seen.pop(ref, None)
            return True
        if ev.gr == PODS:
            st = ev.obj.get("status", {})
            ready = next(
                (c.get("status") for c in st.get("conditions") or [] if c.get("type") == "Ready"), None
            )
            sig: tuple[Any, ...] = (meta.get("generation"), st.get("phase"), ready, st.get("podIP"))
        elif ev.gr.group in ("apps", "batch", "autoscaling") or ev.gr in (
            CONTROLLERREVISIONS,
            RESOURCEQUOTAS,
        ):
            sig = (meta.get("generation"),)
        else:
            return True
        if self._seen.get(ref) == sig:
            return False
        self._seen[ref] = sig
        return True

    def sync(self, key: Any) -> None:
        if key == "refresh":
            self._refresh_verdicts()
            return
        if key == "nodes":
            for ps in list(self.pods.values()):
                self._publish(ps)
                pod = self._pod(ps)
                if pod is not None and pod["metadata"].get("deletionTimestamp") and not ps.gone:
                    self.enqueue(("delete", ps.namespace, ps.name))  # its node may be back
            return
        op, ns, name = key
        pod = self.store.get(PODS, ns, name)
        if pod is None:
            return
        if op == "start" and (ns, name) not in self.pods and pod.get("spec", {}).get("nodeName"):
            if not pod["metadata"].get("deletionTimestamp"):
                self._admit_pod(pod)
        elif op == "delete":
            state = self.pods.get((ns, name))
            if state is None:
                # deleted before this kubelet started anything: nothing to stop
                self._finalize_delete(ns, name, pod["metadata"].get("uid", ""))
            elif not state.gone and not self._node_ready(state.node):
                pass  # an unreachable kubelet cannot stop it: Terminating until its node is back
            elif not state.gone:
                self._kill_all(state, pod)
                grace = pod["metadata"].get("deletionGracePeriodSeconds")
                if grace is None:
                    grace = pod.get("spec", {}).get("terminationGracePeriodSeconds", 30)
                # the containers of these apps exit on SIGTERM within a second
                delay = min(1.0, float(grace or 0))
                uid = state.uid
                self.twin.scheduler.after(
                    delay, lambda: self._finalize_delete(ns, name, uid), key=("kubelet-rm", uid)
                )
        elif op == "spec":
            self._check_spec(pod)

    # ------------------------------------------------------------------ pod start
    def _node(self, name: str) -> Obj | None:
        return self.store.get(NODES, "", name)

    def _node_ready(self, name: str) -> bool:
        node = self._node(name)
        return node is not None and is_ready(node)

    def _admit_pod(self, pod: Obj) -> None:
        meta = pod["metadata"]
        node_name = pod["spec"]["nodeName"]
        node = self._node(node_name)
        host_ip = ""
        if node is not None:
            for a in node.get("status", {}).get("addresses") or []:
                if a.get("type") == "InternalIP":
                    host_ip = a.get("address", "")
        ps = PodState(meta.get("namespace", ""), meta["name"], meta["uid"], node_name, host_ip)
        for c in pod["spec"].get("initContainers") or []:
            ps.init.append(ContainerState(c["name"], True, c, reason="PodInitializing"))
        for c in pod["spec"].get("containers") or []:
            ps.main.append(
                ContainerState(
                    c["name"], False, c, reason="PodInitializing" if ps.init else "ContainerCreating"
                )
            )
        ps.seq, self._seq = self._seq, self._seq + 1
        for i, cs in enumerate(ps.all()):
            cs.index = i
            self._slots[(ps.uid, i)] = (ps, cs)
            cs.on_lifecycle = lambda c, ps=ps: self._lifecycle_changed(ps, c)
        self.pods[(ps.namespace, ps.name)] = ps
        self._uids[(ps.namespace, ps.name)] = ps.uid
        self._publish(ps)
        self.twin.scheduler.after(0.0, lambda: self._sandbox(ps), key=("kubelet", ps.uid, "sandbox"))

    def _alloc_ip(self, node: str) -> str:
        n = self._node(node)
        cidr = (n or {}).get("spec", {}).get("podCIDR", "10.244.0.0/24")
        prefix = ".".join(cidr.split("/")[0].split(".")[:3])
        nxt = self._ip_next.get(node, 2)
        self._ip_next[node] = 2 if nxt >= 254 else nxt + 1
        return f"{prefix}.{nxt}"

    def _sandbox(self, ps: PodState) -> None:
        if ps.gone:
            return
        now = self.now()
        ps.sandbox = True
        ps.ip = self._alloc_ip(ps.node)
        ps.start_time = now
        self._publish(ps)
        if ps.init:
            self._begin(ps, ps.init[0])
        else:
            ps.init_done = True
            for cs in ps.main:
                self._begin(ps, cs)

    # ------------------------------------------------------------------ helpers
    def _pod(self, ps: PodState) -> Obj | None:
        pod = self.store.get(PODS, ps.namespace, ps.name)
        if pod is None or pod["metadata"].get("uid") != ps.uid:
            return None
        return pod

    def _timer(self, ps: PodState, cs: ContainerState, tag: str, delay: float, fn: Any) -> None:
        def run() -> None:
            if not ps.gone:
                fn()

        self.twin.scheduler.after(delay, run, key=("kubelet", ps.uid, cs.name, tag))

    def _cancel(self, ps: PodState, cs: ContainerState, *tags: str) -> None:
        for t in tags:
            self.twin.scheduler.cancel(("kubelet", ps.uid, cs.name, t))

    def _event(
        self,
        ps: PodState,
        cs: ContainerState | None,
        reason: str,
        message: str,
        type: str = "Normal",
        pod: Obj | None = None,
    ) -> None:
        """Record an Event about the pod (``pod``: the object to name, default: the stored pod)."""
        if pod is None:
            pod = self._pod(ps)
            if pod is None:
                return
        fp = _field_path(cs) if cs is not None else None
        record_event(
            self.twin, pod, reason, message, type=type, component="kubelet", host=ps.node, field_path=fp
        )

    def _verdict(self, ps: PodState, cs: ContainerState) -> ContainerVerdict:
        self._untraced(ps, cs)
        return self._traced_verdict(ps, cs)[0]

    def _traced_verdict(
        self, ps: PodState, cs: ContainerState
    ) -> tuple[ContainerVerdict, VerdictReads | None]:
        pod = self._pod(ps) or {
            "metadata": {"name": ps.name, "namespace": ps.namespace, "uid": ps.uid},
            "spec": {},
        }
        node = self._node(ps.node)
        traced = self._tracing()
        if traced is not None:
            return traced.traced_verdict(pod, cs.spec, init=cs.init, node=node, now=self.now())
        return self.twin.runtime.verdict(pod, cs.spec, init=cs.init, node=node, now=self.now()), None

    def _tracing(self) -> TracedRuntime | None:
        """The runtime, if it reports what its verdicts read (checked once per runtime object)."""
        runtime = self.twin.runtime
        if self._traced_runtime is None or self._traced_runtime[0] is not runtime:
            self._traced_runtime = (runtime, runtime if isinstance(runtime, TracedRuntime) else None)
        return self._traced_runtime[1]

    # ------------------------------------------------------------------ container lifecycle
    def _begin(self, ps: PodState, cs: ContainerState) -> None:
        """Pull (if needed) and create/start ``cs``."""
        if ps.gone:
            return
        v = self._verdict(ps, cs)
        cs.verdict = v
        policy = cs.spec.get("imagePullPolicy") or "IfNotPresent"
        present = cs.image in self._images.get(ps.node, set())
        if policy == "Never" and not present:
            cs.state, cs.reason = "waiting", "ErrImageNeverPull"
            cs.message = f'Container image "{cs.image}" is not present with pull policy of Never'
            self._event(ps, cs, "ErrImageNeverPull", cs.message, "Warning")
            self._publish(ps)
            return
        if policy == "Always" or not present or v.pull_error:
            self._event(ps, cs, "Pulling", f'Pulling image "{cs.image}"')
            pull_s = 0.5 + (fnv32a(cs.image.encode()) % 2000) / 1000.0
            if v.pull_error:
                self._timer(ps, cs, "step", pull_s, lambda: self._pull_failed(ps, cs))
            else:
                self._timer(ps, cs, "step", pull_s, lambda: self._pulled(ps, cs, pull_s))
            return
        self._event(ps, cs, "Pulled", f'Container image "{cs.image}" already present on machine')
        self._create(ps, cs)

    def _pulled(self, ps: PodState, cs: ContainerState, pull_s: float) -> None:
        self._images.setdefault(ps.node, set()).add(cs.image)
        size = 10_000_000 + fnv32a(("size" + cs.image).encode()) % 190_000_000
        self._event(
            ps,
            cs,
            "Pulled",
            f'Successfully pulled image "{cs.image}" in {go_duration(pull_s)} '
            f"({go_duration(pull_s)} including waiting). Image size: {size} bytes.",
        )
        cs.pull_backoff_at = None
        self._create(ps, cs)

    def _pull_failed(self, ps: PodState, cs: ContainerState) -> None:
        v = cs.verdict or ContainerVerdict()
        msg = v.pull_error or f'Failed to pull image "{cs.image}"'
        self._event(ps, cs, "Failed", msg, "Warning")
        self._event(ps, cs, "Failed", "Error: ErrImagePull", "Warning")
        cs.state, cs.reason, cs.message = (
            "waiting",
            "ErrImagePull",
            msg.removeprefix(f'Failed to pull image "{cs.image}": '),
        )
        self._publish(ps)
        now = self.now()
        cs.pull_backoff = next_backoff(cs.pull_backoff, cs.pull_backoff_at, now)
        cs.pull_backoff_at = now
        self._timer(ps, cs, "step", PLEG_RELIST_S, lambda: self._pull_backoff(ps, cs))

    def _pull_backoff(self, ps: PodState, cs: ContainerState) -> None:
        self._event(ps, cs, "BackOff", f'Back-off pulling image "{cs.image}"')
        self._event(ps, cs, "Failed", "Error: ImagePullBackOff", "Warning")
        cs.state, cs.reason, cs.message = (
            "waiting",
            "ImagePullBackOff",
            f'Back-off pulling image "{cs.image}"',
        )
        self._publish(ps)
        at = (cs.pull_backoff_at or self.now()) + cs.pull_backoff
        self._timer(ps, cs, "step", max(0.0, at - self.now()), lambda: self._begin(ps, cs))

    def _create(self, ps: PodState, cs: ContainerState) -> None:
        v = cs.verdict or ContainerVerdict()
        now = self.now()
        if v.config_error:
            cs.state, cs.reason, cs.message = "waiting", "CreateContainerConfigError", v.config_error
            self._event(ps, cs, "Failed", f"Error: {v.config_error}", "Warning")
            self._publish(ps)
            self._timer(ps, cs, "step", CONFIG_RETRY_S, lambda: self._retry_create(ps, cs))
            return
        cid = _hex(ps.uid, cs.name, len(cs.runs))
        run = ContainerRun(f"containerd://{cid}", now)
        cs.runs.append(run)
        self.history.setdefault((ps.uid, cs.name), []).append(run)
        self._event(ps, cs, "Created", f"Created container: {cs.name}")
        if v.start_error:
            msg = (
                "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
                f"runc create failed: unable to start container process: {v.start_error}: unknown"
            )
            self._event(ps, cs, "Failed", f"Error: {msg}", "Warning")
            self._exit(ps, cs, 128, "StartError", msg)
            return
        self._event(ps, cs, "Started", f"Started container {cs.name}")
        cs.state, cs.reason, cs.message = "running", "", None
        cs.started = True
        cs.ever_started = True
        cs.terminated = None
        cs.ready = False
        self._schedule_running(ps, cs, fresh=True)
        self._publish(ps)
        if cs.sidecar:
            self._init_next(ps, cs)  # sidecar: the next init container starts once this one runs

    def _retry_create(self, ps: PodState, cs: ContainerState) -> None:
        cs.verdict = self._verdict(ps, cs)
        self._create(ps, cs)

    def _schedule_running(self, ps: PodState, cs: ContainerState, fresh: bool) -> None:
        """(Re)schedule readiness and exit timers of a running container from its verdict."""
        v = cs.verdict or ContainerVerdict()
        run = cs.runs[-1]
        now = self.now()
        self._cancel(ps, cs, "ready", "exit", "unhealthy")
        if v.hang:
            if cs.ready:
                cs.ready = False
            return
        if cs.init and not cs.sidecar:
            pass  # init containers have no readiness
        elif v.ready:
            if not cs.ready:
                at = max(now, run.started_at + v.ready_delay_s)
                self._timer(ps, cs, "ready", at - now, lambda: self._set_ready(ps, cs, True))
        else:
            if cs.ready:
                cs.ready = False
            self._timer(
                ps, cs, "unhealthy", 0.0 if not fresh else PROBE_PERIOD_S, lambda: self._unhealthy(ps, cs)
            )
        ends = []
        if v.exit_after_s is not None:
            ends.append((run.started_at + v.exit_after_s, "exit"))
        if v.liveness_kill_after_s is not None:
            ends.append((run.started_at + v.liveness_kill_after_s, "liveness"))
        if ends:
            at, why = min(ends)
            at = max(at, now)
            if why == "exit":
                self._timer(
                    ps,
                    cs,
                    "exit",
                    at - now,
                    lambda: self._exit(ps, cs, v.exit_code, v.exit_reason, v.exit_message),
                )
            else:
                self._timer(ps, cs, "exit", at - now, lambda: self._liveness_kill(ps, cs))

    def _set_ready(self, ps: PodState, cs: ContainerState, ready: bool) -> None:
        if cs.state != "running" or cs.ready == ready:
            return
        cs.ready = ready
        self._publish(ps)

    def _unhealthy(self, ps: PodState, cs: ContainerState) -> None:
        if cs.state != "running":
            return
        v = cs.verdict or ContainerVerdict()
        if v.ready:
            return
        if cs.ready:
            cs.ready = False
            self._publish(ps)
        msg = v.unready_message
        if msg is None and cs.spec.get("readinessProbe"):
            msg = "Readiness probe failed: "
        if msg is not None:
            self._event(ps, cs, "Unhealthy", msg, "Warning")
        period = float(
            (cs.spec.get("readinessProbe") or {}).get("periodSeconds", PROBE_PERIOD_S) or PROBE_PERIOD_S
        )
        self._timer(ps, cs, "unhealthy", period, lambda: self._unhealthy(ps, cs))

    def _liveness_kill(self, ps: PodState, cs: ContainerState) -> None:
        v = cs.verdict or ContainerVerdict()
        self._event(ps, cs, "Unhealthy", v.liveness_message or "Liveness probe failed: ", "Warning")
        self._event(ps, cs, "Killing", f"Container {cs.name} failed liveness probe, will be restarted")
        self._exit(ps, cs, 137, "Error", None)

    def _exit(self, ps: PodState, cs: ContainerState, code: int, reason: str, message: str | None) -> None:
        now = self.now()
        self._cancel(ps, cs, "ready", "exit", "unhealthy", "step")
        run = cs.runs[-1]
        run.finished_at, run.exit_code, run.reason, run.message = now, code, reason, message
        term: Obj = {
            "exitCode": code,
            "reason": reason,
            "startedAt": rfc3339(run.started_at) if reason != "StartError" else "1970-01-01T00:00:00Z",
            "finishedAt": rfc3339(now),
            "containerID": run.container_id,
        }
        if message:
            term["message"] = message
        cs.state, cs.terminated, cs.ready, cs.started = "terminated", term, False, False
        if reason == "StartError" and self._will_restart(ps, cs, code):
            # the kubelet reports a container that failed to start and will be retried as waiting
            cs.state, cs.reason, cs.message = "waiting", "RunContainerError", message
            cs.last_terminated = term
        self._publish(ps)
        self._timer(ps, cs, "step", PLEG_RELIST_S, lambda: self._after_exit(ps, cs))

    def _will_restart(self, ps: PodState, cs: ContainerState, code: int) -> bool:
        policy = self._restart_policy(ps)
        if cs.sidecar:
            return True
        if cs.init:
            return code != 0 and policy != "Never"
        return policy == "Always" or (policy == "OnFailure" and code != 0)

    def _restart_policy(self, ps: PodState) -> str:
        pod = self._pod(ps)
        return str((pod or {}).get("spec", {}).get("restartPolicy", "Always"))

    def _after_exit(self, ps: PodState, cs: ContainerState) -> None:
        term = cs.terminated or {}
        code = int(term.get("exitCode", 1))
        if cs.init and not cs.sidecar and code == 0:
            cs.done = True
            self._init_next(ps, cs)
            return
        if not self._will_restart(ps, cs, code):
            cs.done = True
            if cs.init:
                ps.init_failed = True
            self._publish(ps)
            return
        now = self.now()
        if cs.backoff_at is not None and now - cs.backoff_at < cs.backoff:
            pod_ref = f"{ps.name}_{ps.namespace}({ps.uid})"
            cs.last_terminated = cs.terminated
            cs.state, cs.reason = "waiting", "CrashLoopBackOff"
            cs.message = f"back-off {int(cs.backoff)}s restarting failed container={cs.name} pod={pod_ref}"
            self._event(
                ps,
                cs,
                "BackOff",
                f"Back-off restarting failed container {cs.name} in pod {pod_ref}",
                "Warning",
            )
            self._publish(ps)
            at = cs.backoff_at + cs.backoff
            self._timer(ps, cs, "step", at - now, lambda: self._restart(ps, cs))
            return
        self._restart(ps, cs)

    def _restart(self, ps: PodState, cs: ContainerState) -> None:
        now = self.now()
        cs.backoff = next_backoff(cs.backoff, cs.backoff_at, now)
        cs.backoff_at = now
        if cs.terminated is not None:
            cs.last_terminated = cs.terminated
        cs.terminated = None
        self._begin(ps, cs)

    def _init_next(self, ps: PodState, cs: ContainerState) -> None:
        i = ps.init.index(cs)
        if i + 1 < len(ps.init):
            nxt = ps.init[i + 1]
            if not nxt.runs and nxt.state == "waiting":
                self._begin(ps, nxt)
            return
        if not ps.init_done:
            ps.init_done = True
            for m in ps.main:
                m.reason = "ContainerCreating"
            self._publish(ps)
            for m in ps.main:
                self._begin(ps, m)

    # ------------------------------------------------------------------ reacting to the cluster
    def _refresh_verdicts(self) -> None:
        """Ask the runtime again for running containers (and those waiting on their config) whose
        inputs may have changed, in admission order; apply every changed verdict from now."""
        touched, self._touched = self._touched, set()  # changes made during this pass count for the next
        traced = self._tracing()
        if traced is None:
            for ps in list(self.pods.values()):
                for cs in ps.all():
                    if not ps.gone and self._in_scope(cs):
                        self._ask_again(ps, cs, None)
            return
        now = self.now()
        gen = traced.derived_generation(now)
        derived_changed, self._derived_seen = gen != self._derived_seen, gen
        due = self._watch.due(touched, derived_changed)
        run = self._pass = _Pass(limit=self._seq)
        for slot in self._slots if self._verify else due:
            run.push(self._order(slot), slot)
        try:
            while (item := run.pop()) is not None:
                slot, asked = item, item in due or item in run.pushed
                entry = self._slots.get(slot)
                if entry is None or entry[0].gone or entry[0].seq >= run.limit:
                    continue
                ps, cs = entry
                if not self._in_scope(cs):
                    # not running: dropped until its state changes again (see _lifecycle_changed)
                    if asked and cs.reads is None:
                        self._watch.forget(slot)
                    continue
                if not asked or self._unchanged(traced, cs, touched):
                    if self._verify:
                        self._check_unchanged(ps, cs)
                    continue
                self._ask_again(ps, cs, slot)
                g = traced.derived_generation(now)
                if g != self._derived_seen:
                    self._derived_seen = g
                    for other in list(self._watch.derived):
                        run.push(self._order(other), other)
        finally:
            self._pass = None

    def _in_scope(self, cs: ContainerState) -> bool:
        return cs.state == "running" or (cs.state == "waiting" and cs.reason == "CreateContainerConfigError")

    def _ask_again(self, ps: PodState, cs: ContainerState, slot: Slot | None) -> None:
        v, reads = self._traced_verdict(ps, cs)
        if cs.state == "running":
            if v != cs.verdict:
                cs.verdict = v
                self._schedule_running(ps, cs, fresh=False)
                if v.hang or not v.ready:
                    self._publish(ps)
        elif not v.config_error:
            cs.verdict = v
            self._cancel(ps, cs, "step")
            self._create(ps, cs)
            reads = None
        cs.reads, cs.reads_state = reads, cs.lifecycle
        if slot is not None and self._slots.get(slot) is not None:
            self._watch.record(slot, reads)

    def _order(self, slot: Slot) -> tuple[int, int]:
        entry = self._slots.get(slot)
        return (entry[0].seq if entry is not None else -1, slot[1])

    def _untraced(self, ps: PodState, cs: ContainerState) -> None:
        """``cs`` got a verdict outside a refresh (or changed state): ask at the next refresh."""
        cs.reads = None
        if ps.gone or (ps.uid, cs.index) not in self._slots:
            return
        slot = (ps.uid, cs.index)
        self._watch.record(slot, None)
        if self._pass is not None:
            self._pass.push(self._order(slot), slot)

    def _lifecycle_changed(self, ps: PodState, cs: ContainerState) -> None:
        if cs.reads is not None or self._in_scope(cs):
            self._untraced(ps, cs)

    def _unchanged(self, runtime: TracedRuntime, cs: ContainerState, touched: set[Token]) -> bool:
        """Whether nothing ``cs``'s last verdict read has changed since it was asked."""
        r = cs.reads
        if r is None or r.always or cs.reads_state != cs.lifecycle:
            return False
        if not r.objects.isdisjoint(touched) or not r.objects.isdisjoint(self._touched):
            return False
        return runtime.still_current(r, self.now())

    def _check_unchanged(self, ps: PodState, cs: ContainerState) -> None:
        v, _ = self._traced_verdict(ps, cs)
        if cs.state == "running" and v != cs.verdict:
            raise StaleCacheError(
                f"{ps.namespace}/{ps.name} container {cs.name}: kept {cs.verdict}, runtime now says {v}"
            )
        if cs.state == "waiting" and not v.config_error:
            raise StaleCacheError(f"{ps.namespace}/{ps.name} container {cs.name}: config error cleared")

    def _check_spec(self, pod: Obj) -> None:
        ps = self.pods.get((pod["metadata"].get("namespace", ""), pod["metadata"]["name"]))
        if ps is None or ps.gone:
            return
        specs = {c["name"]: c for c in pod.get("spec", {}).get("containers") or []}
        specs.update({c["name"]: c for c in pod.get("spec", {}).get("initContainers") or []})
        for cs in ps.all():
            new = specs.get(cs.name)
            if new is None or new == cs.spec:
                continue
            changed_image = new.get("image") != cs.spec.get("image")
            cs.spec = new
            if changed_image and cs.state == "running":
                self._event(ps, cs, "Killing", f"Container {cs.name} definition changed, will be restarted")
                self._exit(ps, cs, 137, "Error", None)
            elif (
                changed_image and cs.state == "waiting" and cs.reason in ("ErrImagePull", "ImagePullBackOff")
            ):
                self._cancel(ps, cs, "step")
                cs.pull_backoff_at = None
                self._begin(ps, cs)

    def _kill_all(self, ps: PodState, pod: Obj) -> None:
        for cs in ps.all():
            if cs.state == "running":
                self._event(ps, cs, "Killing", f"Stopping container {cs.name}")
                now = self.now()
                run = cs.runs[-1]
                run.finished_at, run.exit_code, run.reason = now, 0 if cs.init else 143, "Error"
                cs.state = "terminated"
                cs.terminated = {
                    "exitCode": run.exit_code,
                    "reason": "Error" if run.exit_code else "Completed",
                    "startedAt": rfc3339(run.started_at),
                    "finishedAt": rfc3339(now),
                    "containerID": run.container_id,
                }
                cs.ready = cs.started = False
            self._cancel(ps, cs, "ready", "exit", "unhealthy", "step")
        for c in ps.all():
            c.done = True
        self._publish(ps)
        ps.gone = True

    def _finalize_delete(self, ns: str, name: str, uid: str) -> None:
        pod = self.store.get(PODS, ns, name)
        if pod is not None and pod["metadata"].get("uid") == uid and not pod["metadata"].get("finalizers"):
            with contextlib.suppress(ApiError):
                self.store.delete(PODS, ns, name)

    def _teardown(self, ps: PodState, obj: Obj) -> None:
        if not ps.gone:
            for cs in ps.all():
                if cs.state == "running":
                    run = cs.runs[-1]
                    run.finished_at, run.exit_code, run.reason = self.now(), 143, "Error"
                    self._event(ps, cs, "Killing", f"Stopping container {cs.name}", pod=obj)
        for cs in ps.all():
            self._cancel(ps, cs, "ready", "exit", "unhealthy", "step")
        ps.gone = True
        self.twin.scheduler.cancel(("kubelet", ps.uid, "sandbox"))
        self.pods.pop((ps.namespace, ps.name), None)
        for cs in ps.all():
            self._slots.pop((ps.uid, cs.index), None)
            self._watch.forget((ps.uid, cs.index))

    # ------------------------------------------------------------------ status
    def _container_status(self, ps: PodState, cs: ContainerState) -> Obj:
        st: Obj = {
            "name": cs.name,
            "image": cs.image,
            "imageID": "",
            "ready": cs.ready,
            "restartCount": cs.restart_count,
        }
        if cs.ever_started or cs.runs:
            st["imageID"] = f"{cs.image.split('@')[0].split(':')[0]}@sha256:{_hex('img', cs.image)}"
        if cs.runs:
            st["containerID"] = cs.runs[-1].container_id
        st["started"] = cs.state == "running" and cs.started
        if cs.state == "running":
            st["state"] = {"running": {"startedAt": rfc3339(cs.runs[-1].started_at)}}
        elif cs.state == "terminated" and cs.terminated is not None:
            st["state"] = {"terminated": cs.terminated}
        else:
            w: Obj = {"reason": cs.reason}
            if cs.message:
                w["message"] = cs.message
            st["state"] = {"waiting": w}
        st["lastState"] = {"terminated": cs.last_terminated} if cs.last_terminated else {}
        if cs.state == "running" and len(cs.runs) >= 2 and cs.last_terminated is None:
            st["lastState"] = {}
        return st

    def _phase(self, ps: PodState, policy: str) -> str:
        if ps.init_failed:
            return "Failed"
        if not ps.init_done:
            return "Pending"
        waiting = stopped = running = succeeded = 0
        for cs in ps.main:
            if cs.state == "running":
                running += 1
            elif cs.state == "terminated":
                stopped += 1
                if (cs.terminated or {}).get("exitCode") == 0:
                    succeeded += 1
            elif cs.last_terminated is not None:
                stopped += 1
            else:
                waiting += 1
        if waiting:
            return "Pending"
        if running:
            return "Running"
        if stopped:
            if policy == "Always":
                return "Running"
            if any(not cs.done for cs in ps.main):
                return "Running"
            return "Succeeded" if succeeded == len(ps.main) else "Failed"
        return "Pending"

    def _cond(
        self, ps: PodState, ctype: str, status: str, reason: str | None = None, msg: str | None = None
    ) -> Obj:
        prev = ps.conds.get(ctype)
        ts = rfc3339(self.now())
        if prev is not None and prev[0] == status:
            ts = prev[1]
        ps.conds[ctype] = (status, ts, reason, msg)
        c: Obj = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": ts}
        if reason:
            c["reason"] = reason
        if msg:
            c["message"] = msg
        return c

    def _publish(self, ps: PodState) -> None:
        pod = self._pod(ps)
        if pod is None:
            return
        policy = str(pod.get("spec", {}).get("restartPolicy", "Always"))
        node_ok = self._node_ready(ps.node)
        phase = self._phase(ps, policy)
        conds = []
        conds.append(
            self._cond(ps, "PodReadyToStartContainers", "True" if ps.sandbox and not ps.gone else "False")
        )
        incomplete = [c.name for c in ps.init if not (c.done or (c.state == "running" and c.sidecar))]
        if ps.init_done or not ps.init:
            conds.append(self._cond(ps, "Initialized", "True"))
        else:
            conds.append(
                self._cond(
                    ps,
                    "Initialized",
                    "False",
                    "ContainersNotInitialized",
                    f"containers with incomplete status: [{' '.join(incomplete)}]",
                )
            )
        unready = [c.name for c in ps.main if not c.ready]
        if phase in ("Succeeded", "Failed") and not ps.init_failed:
            ready = self._cond(ps, "Ready", "False", "PodCompleted")
            cready = self._cond(ps, "ContainersReady", "False", "PodCompleted")
        elif unready or not ps.init_done:
            names = unready if ps.init_done else [c.name for c in ps.main]
            m = f"containers with unready status: [{' '.join(names)}]"
            ready = self._cond(ps, "Ready", "False", "ContainersNotReady", m)
            cready = self._cond(ps, "ContainersReady", "False", "ContainersNotReady", m)
        elif not node_ok:
            ready = self._cond(ps, "Ready", "False", "NodeNotReady")
            cready = self._cond(ps, "ContainersReady", "True")
        else:
            ready = self._cond(ps, "Ready", "True")
            cready = self._cond(ps, "ContainersReady", "True")
        conds.append(ready)
        conds.append(cready)
        sched = next(
            (c for c in pod.get("status", {}).get("conditions") or [] if c.get("type") == "PodScheduled"),
            None,
        )
        conds.append(sched or self._cond(ps, "PodScheduled", "True"))
        status: Obj = {
            "phase": phase,
            "conditions": conds,
            "hostIP": ps.host_ip,
            "hostIPs": [{"ip": ps.host_ip}],
        }
        if ps.ip:
            status["podIP"] = ps.ip
            status["podIPs"] = [{"ip": ps.ip}]
        if ps.start_time is not None:
            status["startTime"] = rfc3339(ps.start_time)
        if ps.init:
            status["initContainerStatuses"] = [self._container_status(ps, c) for c in ps.init]
        status["containerStatuses"] = [self._container_status(ps, c) for c in ps.main]
        status["qosClass"] = pod.get("status", {}).get("qosClass") or qos_class(pod)
        update_status(self.twin, PODS, pod, status)


class _Pass:
    """One refresh pass: containers to look at, in admission order; a container may be added
    while the pass runs (a change it reads happened) and is then looked at if it comes later."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        """Pods admitted from here on wait for the next pass (they are not in this one's snapshot)."""
        self._heap: list[tuple[tuple[int, int], Slot]] = []
        self._queued: set[Slot] = set()
        self.pushed: set[Slot] = set()
        """Added after the pass began."""
        self._at: tuple[int, int] = (-1, -1)
        self._started = False

    def push(self, order: tuple[int, int], slot: Slot) -> None:
        if self._started:
            if order <= self._at:
                return  # already passed: the next pass looks at it
            self.pushed.add(slot)
        if slot not in self._queued:
            self._queued.add(slot)
            heapq.heappush(self._heap, (order, slot))

    def pop(self) -> Slot | None:
        self._started = True
        if not self._heap:
            return None
        self._at, slot = heapq.heappop(self._heap)
        self._queued.discard(slot)
        return slot
