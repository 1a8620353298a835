"""The episode of a twin scenario file, over a backend (``backend.py``; the twin, ``twin_backend.py``,
by default): an :class:`~itbench_agents.harness.environment.Environment`.

deploy = the backend provisions the app and serves it (kubeconfig and URLs in the harness's folder);
inject = take the baseline (``endstate.py``, over the Kubernetes and Prometheus APIs), then the
scenario's operations through the Kubernetes REST API (exactly what would run against a live
cluster); wait_for_alerts = advance the backend's clock in steps, polling the Prometheus alerts
API; settle = advance it by the settle period; evaluate = the expected alerts resolved AND every
end-state check against the baseline (alerts, journeys, traffic, observability, inventory,
collateral damage; docs/metrics.md "Mitigation").
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any, cast

import requests

from ..core.endpoints import Endpoints
from ..core.score import Score
from ..core.task import Limits, Task
from ..evaluation.topology import Topology, node_key, topology_from_objects
from ..k8s.client import KubeApi, KubeApiError
from ..scenario.inject import apply_operations
from ..scenario.spec import Scenario
from .access import grant_agent_access, revoke_agent_access, write_agent_kubeconfigs
from .backend import Backend, ProvisionRequest
from .endstate import (
    Baseline,
    CollateralPolicy,
    JourneyState,
    assess,
    collateral_policy,
    fault_footprint,
    take_baseline,
)
from .environment import AlertCheck, EnvironmentError_
from .firing import firing_alerts, match_expected
from .personas import persona_of
from .protected import ProtectedBaseline
from .records import CollateralRecord, EndStateCheckRecord, MitigationScore
from .twin_backend import TwinBackend
from .twin_extension import ALERT_POLL_S, TwinExtension

MASKED_FIELDS = {
    "traces": ("jaeger_url",),
    "logs": ("loki_url",),
    "metrics": ("prometheus_url", "alertmanager_url"),
}
"""The endpoints each ``--mask`` source leaves out of the agent's endpoints file."""


def admin_api(backend: Backend, endpoints: Endpoints) -> KubeApi:
    """The harness's own client of the backend's Kubernetes API: the backend's (``admin_api``,
    where its kubeconfig authenticates otherwise than with a token), or its admin token."""
    made = getattr(backend, "admin_api", None)
    if callable(made):
        api: KubeApi = made()
        return api
    return KubeApi(endpoints.kube_url, token=backend.admin_token)


def persona_extension(scenario: Scenario) -> TwinExtension:
    """What the scenario's persona adds to the twin: at the least its goal, which the harness does
    not word itself (``Persona.twin_extension``)."""
    extension = persona_of(scenario).twin_extension(scenario)
    if extension is None:
        raise EnvironmentError_(
            f"persona {scenario.persona!r} gives no twin extension for its twin scenario {scenario.id}: "
            "the persona of a twin scenario file says what its agent is asked (its goal) through "
            "Persona.twin_extension (see personas/sre/twin_extension.py)"
        )
    return cast("TwinExtension", extension)


CONTROL_WAIT_S = 180.0

TOPOLOGY_KINDS = [
    ("v1", "Pod"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "ResourceQuota"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
]


def topology_over_api(
    api: KubeApi, namespaces: list[str], call_edges: list[tuple[str, str, str]]
) -> Topology:
    """The objects of the kinds the scorer knows in ``namespaces`` (a task's), and the nodes, as
    the API serves them now, joined by the app's call graph."""
    objs: list[dict[str, Any]] = []
    for api_version, kind in TOPOLOGY_KINDS:
        for namespace in namespaces:
            with contextlib.suppress(KubeApiError):
                objs.extend(api.list(api_version, kind, namespace))
    with contextlib.suppress(KubeApiError):
        objs.extend(api.list("v1", "Node"))
    return topology_from_objects(objs, call_edges)


def episode_topology(topo: Topology, fault_objects: set[str], replicasets_before: set[str]) -> Topology:
    """``topo`` with the objects that existed when the alerts fired (``Topology.at_fault``: the
    diagnosis scorer accepts a generated name, a pod or ReplicaSet, only when it existed) and the
    ReplicaSets made since the faults (``Topology.released``: naming the fault's release names its
    Deployment)."""
    topo.at_fault = set(fault_objects)
    if fault_objects:
        topo.released = {k for k in fault_objects if "/replicaset/" in k and k not in replicasets_before}
    return topo


class TwinEnvironment:
    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int,
        workdir: str | Path,
        masked: list[str] | None = None,
        history_s: float = 3600.0,
        settle_s: float | None = None,
        step_s: float = 15.0,
        churn: str = "none",
        extension: TwinExtension | None = None,
        backend: Backend | None = None,
    ) -> None:
        """``extension``: what the scenario's persona adds to the twin (its goal, its checks); by
        default the persona's own (``Persona.twin_extension``). ``backend``: what serves the app
        (``backend.py``); by default the twin."""
        self.scenario = scenario
        self.seed = seed
        self.workdir = Path(workdir).resolve()
        """The agent's work folder (its kubeconfig goes here)."""
        self.private = Path(tempfile.mkdtemp(prefix="itbench-harness-"))
        """The harness's own folder (the admin kubeconfig and endpoints file); never given to agents."""
        self.masked = list(masked or [])
        self.extension: TwinExtension = extension if extension is not None else persona_extension(scenario)
        """What the scenario's persona adds to the twin (``twin_extension.py``; SRE: its goal; FinOps:
        its goal, OpenCost beside the app, a week of past, cost checks and the proximity of the end
        state's cost)."""
        self.history_s = max(history_s, self.extension.history_s)
        self.settle_s = scenario.settle_s if settle_s is None else settle_s
        self.step_s = step_s
        self.backend: Backend = backend if backend is not None else TwinBackend()
        self.api: KubeApi | None = None
        self.injected_at: float | None = None
        self.agent_endpoints: Endpoints | None = None
        self.baseline: Baseline | None = None
        """Taken by :meth:`inject` right before the faults (see ``endstate.py``)."""
        self.collateral_policy: CollateralPolicy = collateral_policy()
        from .churn import ChurnPlan, churn_mode

        self.churn = churn_mode(churn)
        """Benign churn around the fault (``churn.py``): ``default`` or ``none``."""
        self.churn_plan: ChurnPlan | None = None
        self.in_forked_child = False
        """Set by :meth:`reattach`: this process ends with its episode (``shared.py``)."""
        self.fault_objects: set[str] = set()
        """Topology keys of the objects that existed when the expected alerts fired."""
        self.replicasets_before: set[str] = set()
        """Topology keys of the ReplicaSets right before the faults were applied."""
        self.protected: ProtectedBaseline | None = None
        """What the app was deployed with on purpose (``protected.py``): part of the baseline."""
        self.agent_tokens: tuple[str, str] | None = None
        """The agent's (writer, reader) tokens, minted by :meth:`grant_access`."""

    # ------------------------------------------------------------------ lifecycle
    def deploy(self) -> None:
        from . import protected
        from .churn import scheduling_sensitive

        def customize(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
            # a baseline worth protecting, deployed with the app (protected.py)
            self.protected = protected.plan(self.scenario, self.seed, manifests)
            # and what the scenario deploys with the app (its team's other namespaces...)
            return [*self.protected.customize(manifests), *self.scenario.setup_objects()]

        request = ProvisionRequest(
            app=self.scenario.app,
            seed=self.seed,
            history_s=self.history_s,
            folder=self.private,
            masked=self.masked,
            # a cluster with a past goes with the churn, unless pod placement is the fault's
            # (FinOps: a week of past is already there; its rollouts would be a week long)
            past=self.churn != "none"
            and not scheduling_sensitive(self.scenario)
            and self.extension.churn_past,
            customize=customize,
            namespaces=list(self.scenario.namespaces),
            addons=self.extension.addons(),
            clock_grid_s=self.extension.clock_grid_s,
        )
        try:
            endpoints = self.backend.provision(request)
        except Exception as e:
            raise EnvironmentError_(f"deploy {self.scenario.app}: {type(e).__name__}: {e}") from e
        self.api = admin_api(self.backend, endpoints)
        self.extension.deployed(self)

    def persona_scores(self) -> dict[str, Score]:
        """The named scores of the scenario's persona (FinOps: the paper's four proximity metrics of
        the end state to the optimal cost); nothing for SRE."""
        return self.extension.scores(self)

    def detach(self) -> None:
        """Stop serving and keep the prepared cluster, so that the process can fork one child per
        episode that shares this preparation (``shared.py``). The harness's own client lets go of
        its kept-alive connections first, so that the server threads serving them end."""
        if self.api is not None:
            self.api.session.close()
        self.backend.stop_serving()

    def reattach(self, workdir: str | Path) -> None:
        """In a forked child: serve the prepared cluster again, on new ports, with an agent work
        folder and a harness folder of its own."""
        self.workdir = Path(workdir).resolve()
        self.private = Path(tempfile.mkdtemp(prefix="itbench-harness-"))
        self.in_forked_child = True
        endpoints = self.backend.serve(self.private)
        self.api = admin_api(self.backend, endpoints)

    @property
    def twin(self) -> Any:
        """The embedded cluster, where the backend is the twin (None otherwise, or before deploy):
        for what reaches into it (the churn's image check, FinOps' cost model)."""
        return getattr(self.backend, "twin", None)

    @property
    def endpoints(self) -> Any:
        return self.backend.endpoints

    def now(self) -> float:
        return float(self.backend.now())

    def _now_dt(self) -> _dt.datetime:
        return _dt.datetime.fromtimestamp(self.now(), _dt.UTC)

    def inject(self) -> list[str]:
        """Take the baseline (:meth:`take_baseline`), then apply the scenario's fault operations."""
        assert self.api is not None
        from . import churn

        if self.churn != "none" or self.scenario.red_herrings:  # benign changes before the fault (churn.py)
            try:
                self.churn_plan = churn.run_before(self, self.churn)
            except Exception as e:
                raise EnvironmentError_(f"churn: {type(e).__name__}: {e}") from e
        try:
            self.baseline = self.take_baseline()
            self.extension.baseline_taken(self)
        except Exception as e:
            raise EnvironmentError_(f"baseline: {type(e).__name__}: {e}") from e
        self.replicasets_before = self._replicaset_keys()
        try:
            done = apply_operations(self.api, self.scenario.faults, self._now_dt)
        except Exception as e:
            raise EnvironmentError_(f"inject: {e}") from e
        self.injected_at = self.now()
        self.extension.injected(self)
        self.backend.sync()
        if self.churn_plan is not None:  # and after it, before the agent starts
            try:
                churn.run_after(self, self.churn_plan)
            except Exception as e:
                raise EnvironmentError_(f"churn: {type(e).__name__}: {e}") from e
        return done

    def check_alerts(self) -> AlertCheck:
        """The expected alerts firing now, asked of their own rules only (``firing_alerts``)."""
        firing = firing_alerts(self.endpoints.prometheus_url, {a.name for a in self.scenario.alerts})
        hit, miss = match_expected(self.scenario.alerts, firing)
        return AlertCheck(hit, miss)

    def wait_for_alerts(self) -> AlertCheck:
        """Advance until the expected alerts fire (or their window ends), then note which objects
        exist: :attr:`fault_objects`."""
        check = self._wait_for_alerts()
        self.fault_objects = set(self._topology().nodes)
        return check

    def _replicaset_keys(self) -> set[str]:
        """Topology keys of the ReplicaSets of every task namespace, as they are now."""
        assert self.api is not None
        keys: set[str] = set()
        for ns in self.scenario.task_namespaces:
            with contextlib.suppress(KubeApiError):
                keys |= {
                    node_key(ns, "ReplicaSet", rs["metadata"]["name"])
                    for rs in self.api.list("apps/v1", "ReplicaSet", ns)
                }
        return keys

    def _wait_for_alerts(self) -> AlertCheck:
        start = self.now()
        if self.scenario.control or not self.scenario.alerts:
            self.backend.advance(CONTROL_WAIT_S, step=self.step_s)
            return AlertCheck([], [], self.now() - start)
        limit = max(a.window_s for a in self.scenario.alerts)
        poll = self.extension.alert_poll_s
        self.backend.advance(min(ALERT_POLL_S * 2, limit), step=self.step_s)  # `for:` clauses need time
        check = self.check_alerts()
        while not check.ok and self.now() - start < limit:
            self._skip_polls(start, limit, poll)
            self.backend.advance(poll, step=self.step_s)
            check = self.check_alerts()
        check.elapsed_s = self.now() - start
        return check

    def _skip_polls(self, start: float, limit: float, poll: float) -> None:
        """Advance past the polls that cannot see every expected alert firing, from the rules'
        ``for:`` (``alert_wait.py``): the wait ends when it would have, having seen the same."""
        from .alert_wait import alerting_rules, firing_not_before, polls_to_skip

        now = self.now()
        try:
            ready = firing_not_before(
                self.scenario.alerts,
                alerting_rules(self.endpoints.prometheus_url, names={a.name for a in self.scenario.alerts}),
                now,
            )
        except (requests.RequestException, ValueError):
            return  # no rules to reason about: poll as usual
        left = max(0, math.ceil((limit - (now - start)) / poll - 1e-9))
        skip = polls_to_skip(now, ready, poll, left)
        if skip:
            self.backend.advance(skip * poll, step=self.step_s)

    def grant_access(self) -> None:
        """Create the agent's ServiceAccounts and Roles and mint its tokens, with the clock paused
        (the harness's preparation ends with it, so the episodes that share a preparation share
        this too; :meth:`task` writes the kubeconfigs for the cluster as it is served then)."""
        assert self.api is not None
        self.agent_tokens = grant_agent_access(self.api, self.scenario.task_namespaces)

    def revoke_access(self) -> None:
        """The agent's turn is over: its tokens stop working (``access.revoke_agent_access``)."""
        if self.api is not None and self.agent_tokens is not None:
            revoke_agent_access(self.api)

    def task(self, limits: Limits) -> Task:
        """The agent's task: its own ServiceAccount credential in its work folder, and from now on
        the twin seconds it advances count against ``limits.wall_time_s``."""
        namespaces = self.scenario.task_namespaces
        if self.agent_tokens is None:
            self.grant_access()
        assert self.agent_tokens is not None
        creds = write_agent_kubeconfigs(
            self.endpoints.kubeconfig, namespaces, self.workdir, *self.agent_tokens
        )
        self.agent_endpoints = self.endpoints.model_copy(
            update={
                "kubeconfig": str(creds.kubeconfig),
                "kubeconfig_readonly": str(creds.kubeconfig_readonly),
                # a masked source is not handed to the agent at all (a command agent is not held
                # to the built-in tools' refusal); the harness keeps its own endpoints
                **{field: None for source in self.masked for field in MASKED_FIELDS.get(source, ())},
            }
        )
        self.agent_endpoints.write(self.workdir / "endpoints.json")
        self.backend.start_agent_turn(limits.wall_time_s)  # the clock follows wall time from now
        return Task(
            goal=self.extension.goal(namespaces),
            kind="diagnosis+mitigation",
            persona=self.scenario.persona,
            endpoints=self.agent_endpoints,
            workdir=str(self.workdir),
            limits=limits,
            namespaces=namespaces,
            masked=self.masked,
            on_twin=True,
        )

    def advanced_by_agent_s(self) -> float:
        """Twin seconds the agent fast-forwarded through the API since :meth:`task`."""
        return self.backend.advanced_by_agent_s()

    def settle(self) -> None:
        self.backend.end_agent_turn()
        self.backend.advance(self.settle_s, step=self.step_s)

    # ------------------------------------------------------------------ end state
    def _pipeline(self) -> list[str]:
        """Workloads of the app's telemetry pipeline (the backend's app data)."""
        return self.backend.pipeline_workloads()

    def journey_states(self) -> list[JourneyState]:
        """The functional probe of every user journey (the backend's app data)."""
        return self.backend.journeys()

    def take_baseline(self) -> Baseline:
        """The app's state before injection, over the Kubernetes and Prometheus APIs (``endstate.py``)."""
        assert self.api is not None
        self.backend.sync()
        return take_baseline(
            self.api,
            self.endpoints.prometheus_url,
            self.scenario.task_namespaces,
            self.now(),
            self.journey_states(),
            self._pipeline(),
        )

    def write_baseline(self, path: str | Path) -> Path | None:
        """Write ``baseline.json`` (the harness calls it with the episode folder after :meth:`inject`)."""
        if self.baseline is None:
            return None
        p = Path(path)
        p.write_text(self.baseline.model_dump_json(indent=2) + "\n")
        return p

    def evaluate(self) -> MitigationScore:
        """Mitigation on the end state: the expected alerts (legacy field ``alerts_firing``) and
        every end-state check against the baseline (``endstate.py``; docs/metrics.md)."""
        assert self.api is not None
        self.backend.sync()
        check = self.check_alerts()
        journeys = self.journey_states()
        probe_ok = all(j.ok for j in journeys) if journeys else None
        bad = [j for j in journeys if not j.ok]
        probe_detail = (
            "; ".join(f"{j.name}: {j.detail}" for j in bad)
            if bad
            else (f"{len(journeys)} journey(s) pass" if journeys else "the app has no functional probe")
        )
        score = MitigationScore(
            applicable=not self.scenario.control,
            alerts_firing=[] if self.scenario.control else check.firing,
            probe_ok=probe_ok,
            probe_detail=probe_detail,
            journeys={j.name: j.ok for j in journeys},
            collateral_policy=self.collateral_policy,
        )
        reasons: list[str] = []
        if score.alerts_firing:
            reasons.append("expected alerts still firing: " + ", ".join(score.alerts_firing))
        if self.baseline is not None:
            es = assess(
                self.baseline,
                self.api,
                self.endpoints.prometheus_url,
                self.now(),
                journeys,
                fault_footprint(self.scenario.faults),
                self.collateral_policy,
            )
            score.baseline = True
            score.checks = [EndStateCheckRecord(**c.model_dump()) for c in es.checks]
            score.alerts_new = es.alerts_new
            score.traffic_ratio = es.traffic_ratio
            obs = next((c for c in es.checks if c.name == "observability"), None)
            score.observability_ok = obs.ok if obs else None
            score.missing = es.missing
            score.scaled_down = es.scaled_down
            score.collateral = [CollateralRecord(**c.model_dump()) for c in es.collateral]
            score.restarted = es.restarted
            reasons += [f"{c.name}: {c.detail}" for c in es.failed]
        elif probe_ok is not True:
            reasons.append(f"functional probe failed: {probe_detail}")
        if not self.scenario.control:
            for c in self.extension.end_state_checks(self):
                score.checks.append(c)
                if not c.ok:
                    reasons.append(f"{c.name}: {c.detail}")
        score.passed = not reasons
        score.reason = "; ".join(reasons) or None
        return score

    def call_edges(self) -> list[tuple[str, str, str]]:
        return self.backend.call_edges(self.scenario.namespace)

    def topology(self) -> Topology:
        """The end state's objects and how they connect, with the objects that existed when the
        alerts fired and the ReplicaSets made since the injection (:func:`episode_topology`)."""
        return episode_topology(self._topology(), self.fault_objects, self.replicasets_before)

    def _topology(self) -> Topology:
        assert self.api is not None
        return topology_over_api(self.api, self.scenario.task_namespaces, self.call_edges())

    def privileged_context(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "kube_url": self.endpoints.kube_url, "now": self._now_dt}

    def teardown(self) -> None:
        # a forked child's servers are threads of a process that ends with its episode: waiting
        # for each to notice a shutdown request (up to its poll interval) would only cost time
        if not self.in_forked_child:
            self.backend.close()
        shutil.rmtree(self.private, ignore_errors=True)
