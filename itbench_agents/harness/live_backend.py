"""A live cluster as a :class:`~itbench_agents.harness.backend.Backend` (``itbench run --backend
live``): the cluster a user already runs, reached through the endpoints file they give
(``ITBENCH_LIVE_ENDPOINTS``: a kubeconfig with any auth method, Prometheus, and Loki and Jaeger where
they run), over public APIs only.

- ``provision`` applies the app's manifests (``scenarios/apps/<app>/``, with the episode's protected
  baseline) through the Kubernetes API — creating what is missing, replacing what differs — then
  waits, on the cluster's clock, until the workloads of every namespace of the task (the app's and
  the team's others the scenario deploys) are ready, the app has had the history the episode asks
  for (from its namespace's age) and none of the task's alerts fires. A namespace the episode needs
  that an earlier one left terminating is waited out first.
- The clock is the cluster's: ``now`` is Prometheus' ``time()``; ``advance`` waits until that
  clock has moved on (no fast-forward: on a real cluster, wall time).
- The app's data is its folder's (``AppData.load``); the journeys are the wire probe's
  (``wire_probe.py``: the service proxy and Prometheus).
- ``close`` restores the cluster: everything created since ``provision`` began that no controller
  owns is deleted (the faults' objects, the agent's, the protected baseline's, the harness's
  credentials, and the namespaces the scenario or the agent made, whose deletion is waited for),
  the app's manifests are put back as written, and the nodes get back the schedulability, taints
  and labels they had.

What it cannot do, it says before the first episode: scenarios whose persona needs a system
installed beside the app (FinOps' OpenCost) are refused with the reason.
"""

from __future__ import annotations

import copy
import datetime as _dt
import os
import time
from pathlib import Path
from typing import Any

import requests

from ..core.endpoints import Endpoints
from ..k8s.client import KubeApi, KubeApiError
from .app_data import AppData
from .backend import SHARED_CLUSTER, ProvisionRequest
from .endstate import JourneyState

ENDPOINTS_ENV = "ITBENCH_LIVE_ENDPOINTS"
"""The environment variable naming the live cluster's endpoints file (``itbench run --endpoints``
sets it, so that worker processes see it too)."""
FIELD_MANAGER = "itbench-live"
SYNC_S = 2.0
"""Cluster seconds ``sync`` waits: controllers on a live cluster act within about a second."""
UNSWEPT_KINDS = frozenset(
    {"Event", "Endpoints", "EndpointSlice", "Lease", "TokenReview", "SubjectAccessReview"}
)
"""Kinds ``close`` leaves to their controllers (records and mirrors, not state anyone set)."""
ALWAYS_FIRING = frozenset({"Watchdog", "InfoInhibitor"})
"""kube-prometheus' alerts that fire by design (the alerting pipeline's heartbeat)."""
KEEP_ON_REPLACE = ("clusterIP", "clusterIPs", "healthCheckNodePort", "ipFamilies", "ipFamilyPolicy")
"""Service fields the API server allocated: a replace carries them over from the object in place."""
IMMUTABLE_KINDS = frozenset({"PersistentVolumeClaim", "Job", "Pod"})
"""Kinds whose spec cannot be replaced in place: created when missing, otherwise left as they are."""


class LiveBackendError(RuntimeError):
    """The live cluster cannot serve the episode (unreachable, unready, unsupported), with why."""


class LiveBackend:
    name = "live"
    capabilities = frozenset({SHARED_CLUSTER})

    def __init__(
        self,
        endpoints: Endpoints | str | Path | None = None,
        *,
        ready_timeout_s: float = 600.0,
        quiet_timeout_s: float = 900.0,
    ) -> None:
        """``endpoints``: the cluster's endpoints (or the file holding them; by default the file
        named by ``$ITBENCH_LIVE_ENDPOINTS``). The timeouts are cluster seconds."""
        self.cluster = _read_endpoints(endpoints)
        self.ready_timeout_s = ready_timeout_s
        self.quiet_timeout_s = quiet_timeout_s
        self.admin_token = _kubeconfig_token(self.cluster.kubeconfig)
        """The kubeconfig's bearer token where it has one (other auth methods go through
        :meth:`admin_api`)."""
        self._endpoints: Endpoints | None = None
        self.app: AppData | None = None
        self.namespace = ""
        self.namespaces: list[str] = []
        """The task's namespaces: the app's first, then the others the scenario deploys."""
        self.started_at: float | None = None
        self._base: list[dict[str, Any]] = []
        self._nodes: dict[str, dict[str, Any]] = {}
        self._api: KubeApi | None = None
        self.left_out: list[str] = []
        """What the episode would have added to the app that the cluster does not serve (a
        game-day chaos Schedule without Chaos Mesh)."""
        self._rate: float | None = None
        self._served_cache: set[tuple[str, str]] | None = None
        """Cluster seconds per wall second, as last seen (1 on a real cluster)."""

    # ------------------------------------------------------------------ connection
    def admin_api(self) -> KubeApi:
        """The harness's client, with the kubeconfig's own credentials (token, exec plugin, client
        certificate, CA)."""
        if self._api is None:
            self._api = KubeApi.from_kubeconfig(None, self.cluster.kubeconfig)
        return self._api

    @property
    def endpoints(self) -> Endpoints:
        return self._endpoints or self.cluster

    def check_reachable(self) -> None:
        """Raise :class:`LiveBackendError` with the reason unless the Kubernetes API and Prometheus
        answer."""
        try:
            self.admin_api().version()
        except KubeApiError as e:
            raise LiveBackendError(f"the Kubernetes API of {self.cluster.kubeconfig}: {e}") from e
        if not self.cluster.prometheus_url:
            raise LiveBackendError(
                "the endpoints file names no prometheus_url (alerts and the clock need it)"
            )
        self.now()

    def served_kinds(self) -> set[tuple[str, str]]:
        """``(apiVersion, kind)`` of every resource type the cluster serves."""
        try:
            return {(r.api_version, r.kind) for r in self.admin_api().api_resources(())}
        except KubeApiError as e:
            raise LiveBackendError(f"discovery on {self.cluster.kubeconfig}: {e}") from e

    def unsupported(self, scenario: Any) -> str | None:
        """Why the cluster cannot run ``scenario``'s faults and reference mitigation (a kind it does
        not serve: no Chaos Mesh), or None."""
        missing = sorted(
            f"{kind} ({api_version})"
            for api_version, kind in scenario_kinds(scenario)
            if (api_version, kind) not in self._served()
        )
        if missing:
            return f"the cluster does not serve {', '.join(missing)}"
        denied = [why for verb, target in scenario_actions(scenario) if (why := self._denied(verb, *target))]
        return "; ".join(dict.fromkeys(denied)) or None

    def _denied(self, verb: str, api_version: str, kind: str, namespace: str | None) -> str | None:
        """Why the kubeconfig's user may not ``verb`` ``kind`` in ``namespace`` (a
        SelfSubjectAccessReview: ``kubectl auth can-i``), or None."""
        api = self.admin_api()
        try:
            info = api.resource(api_version, kind)
            group = api_version.rpartition("/")[0]
            attrs = {"verb": verb, "group": group, "resource": info.plural}
            if info.namespaced and namespace:
                attrs["namespace"] = namespace
            review = {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attrs},
            }
            status = (
                api.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review).get("status") or {}
            )
        except KubeApiError as e:
            raise LiveBackendError(f"asking the API server what the kubeconfig may do: {e}") from e
        if status.get("allowed"):
            return None
        where = f" in {namespace}" if info.namespaced and namespace else ""
        reason = status.get("reason") or status.get("evaluationError") or ""
        return f"the kubeconfig's user may not {verb} {info.plural}{'.' + group if group else ''}{where}" + (
            f" ({reason})" if reason else ""
        )

    def _served(self) -> set[tuple[str, str]]:
        if self._served_cache is None:
            self._served_cache = self.served_kinds()
        return self._served_cache

    # ------------------------------------------------------------------ provision
    def provision(self, request: ProvisionRequest) -> Endpoints:
        if request.addons:
            names = ", ".join(str(getattr(a, "name", a)) for a in request.addons)
            raise LiveBackendError(
                f"the live backend does not install systems beside the app ({names}); "
                "run this scenario on the twin"
            )
        self.check_reachable()
        self.started_at = self.now()
        self.app = AppData.load(request.app)
        model = self.app.model
        self.namespace = str(model.namespace)
        self.namespaces = list(dict.fromkeys([self.namespace, *request.namespaces]))
        self._base = copy.deepcopy(list(model.manifests))
        manifests = copy.deepcopy(list(model.manifests))
        if request.customize is not None:
            manifests = request.customize(manifests)
        api = self.admin_api()
        self._nodes = {n["metadata"]["name"]: _node_state(n) for n in api.list("v1", "Node")}
        # what the episode adds to the app (the protected baseline) only where the cluster serves it:
        # without Chaos Mesh there is no game-day Schedule to protect
        base = {_key(o) for o in self._base}
        served = self.served_kinds()
        self.left_out = [
            f"{o['kind']} {_key(o)[2]}"
            for o in manifests
            if _key(o) not in base and (o["apiVersion"], o["kind"]) not in served
        ]
        manifests = [o for o in manifests if _key(o) in base or (o["apiVersion"], o["kind"]) in served]
        if self.left_out:
            _say(
                "left out of the protected baseline (the cluster does not serve them): "
                + ", ".join(self.left_out)
            )
        held = self._wait_gone(
            [_key(o)[2] for o in manifests if o.get("kind") == "Namespace"], self.ready_timeout_s
        )
        if held:
            raise LiveBackendError(
                "; ".join(
                    f"namespace {n}: still terminating after {self.ready_timeout_s:g} s, deleted before this "
                    f"episode ({_holding(api, n)})"
                    for n in held
                )
            )
        apply_manifests(api, manifests)
        self._wait_ready()
        self._wait_history(request.history_s)
        self._wait_quiet()
        server = _kubeconfig_server(self.cluster.kubeconfig)
        self._endpoints = self.cluster.model_copy(
            update={
                "kube_url": self.cluster.kube_url or server,
            }
        )
        request.folder.mkdir(parents=True, exist_ok=True)
        self._endpoints.write(request.folder / "endpoints.json")
        return self._endpoints

    def _wait_ready(self) -> None:
        deadline = self.now() + self.ready_timeout_s
        while True:
            unready = {ns: u for ns in self.namespaces if (u := unready_workloads(self.admin_api(), ns))}
            if not unready:
                return
            if self.now() >= deadline:
                raise LiveBackendError(
                    "; ".join(
                        f"{ns}: not ready after {self.ready_timeout_s:g} s: {', '.join(u[:5])}"
                        for ns, u in unready.items()
                    )
                )
            self.advance(5.0, step=5.0)

    def _wait_gone(self, names: list[str], timeout_s: float) -> list[str]:
        """Until none of the namespaces ``names`` is terminating (an earlier episode's, being
        deleted); returns those still there, being deleted, after ``timeout_s`` cluster seconds."""
        deadline = self.now() + timeout_s
        while True:
            left = [n for n in names if _terminating(self.admin_api(), n)]
            if not left or self.now() >= deadline:
                return left
            self.advance(2.0, step=2.0)

    def _wait_history(self, history_s: float) -> None:
        ns = self.admin_api().get("v1", "Namespace", None, self.namespace)
        age = self.now() - _timestamp(ns["metadata"].get("creationTimestamp"))
        if age < history_s:
            self.advance(history_s - age, step=15.0)

    def _wait_quiet(self) -> None:
        """Until no alert about the task's namespaces fires (what an earlier episode left settles)."""
        deadline = self.now() + self.quiet_timeout_s
        while True:
            firing = self._firing()
            if not firing:
                return
            if self.now() >= deadline:
                raise LiveBackendError(
                    f"{', '.join(self.namespaces)}: alerts still firing after {self.quiet_timeout_s:g} s: "
                    + ", ".join(sorted(firing)[:5])
                )
            self.advance(15.0, step=15.0)

    def _firing(self) -> set[str]:
        from .firing import incident_alerts

        assert self.cluster.prometheus_url
        names = {
            str((a.get("labels") or {}).get("alertname", ""))
            for a in incident_alerts(self.cluster.prometheus_url, *self.namespaces)
        }
        return names - ALWAYS_FIRING

    # ------------------------------------------------------------------ clock
    def now(self) -> float:
        """The cluster's time: Prometheus' ``time()`` (its evaluation time, the server's now)."""
        try:
            resp = requests.get(
                f"{self.cluster.prometheus_url}/api/v1/query", params={"query": "time()"}, timeout=30
            )
            resp.raise_for_status()
            return float(resp.json()["data"]["result"][0])
        except (requests.RequestException, KeyError, IndexError, TypeError, ValueError) as e:
            raise LiveBackendError(f"Prometheus at {self.cluster.prometheus_url}: no time(): {e}") from e

    def advance(self, seconds: float, *, step: float) -> None:
        """Wait until the cluster's clock has moved ``seconds`` on (``step`` is the twin's; a live
        cluster runs its controllers on its own)."""
        start_wall, start = time.monotonic(), self.now()
        target = start + seconds
        now = start
        while now < target:
            # sleep about as long as the rest takes at the rate the cluster's clock was seen to run
            wait = 0.1 if self._rate is None else (target - now) / self._rate
            time.sleep(min(1.0, max(0.02, wait)))
            now = self.now()
            elapsed = time.monotonic() - start_wall
            if elapsed > 0.05 and now > start:
                self._rate = (now - start) / elapsed

    def sync(self) -> None:
        self.advance(SYNC_S, step=SYNC_S)

    def start_agent_turn(self, wall_time_s: float) -> None:
        """Nothing to do: the cluster's clock always runs."""

    def end_agent_turn(self) -> None:
        """Nothing to do: the cluster's clock always runs."""

    def advanced_by_agent_s(self) -> float:
        return 0.0

    # ------------------------------------------------------------------ app data
    def _app(self) -> AppData:
        if self.app is None:
            raise LiveBackendError("not provisioned")
        return self.app

    def call_edges(self, namespace: str) -> list[tuple[str, str, str]]:
        return self._app().call_edges(namespace)

    def external_workloads(self) -> set[str]:
        return self._app().external_workloads()

    def pipeline_workloads(self) -> list[str]:
        return self._app().pipeline_workloads()

    def journeys(self) -> list[JourneyState]:
        """The wire probe's verdict on each journey (the service proxy, Prometheus)."""
        from kubernetes import config

        from .wire_probe import WireProbe

        client = config.new_client_from_config(config_file=self.cluster.kubeconfig)
        try:
            return WireProbe(client, self._app(), self.namespace, self.cluster.prometheus_url).journeys()
        finally:
            client.close()

    # ------------------------------------------------------------------ fork (not offered)
    def stop_serving(self) -> None:
        raise LiveBackendError("a live cluster cannot be forked")

    def serve(self, folder: Path) -> Endpoints:
        raise LiveBackendError("a live cluster cannot be forked")

    # ------------------------------------------------------------------ teardown
    def close(self) -> None:
        """Restore the cluster (module docstring); what cannot be restored is printed, not raised."""
        if self.started_at is None:
            return
        api = self.admin_api()
        problems = sweep_created_since(api, self.started_at, self._base)
        made = namespaces_created_since(api, self.started_at, self._base)
        problems += [
            f"namespace {n}: still terminating ({_holding(api, n)})"
            for n in self._wait_gone(made, self.ready_timeout_s)
        ]
        problems += apply_manifests(api, self._base, keep_going=True)
        problems += restore_nodes(api, self._nodes)
        self.started_at = None
        if problems:
            _say("could not restore: " + "; ".join(problems))


# ---------------------------------------------------------------------- helpers
def _say(message: str) -> None:
    import sys

    print(f"itbench live: {message}", file=sys.stderr)


def _read_endpoints(endpoints: Endpoints | str | Path | None) -> Endpoints:
    if isinstance(endpoints, Endpoints):
        return endpoints
    path = endpoints or os.environ.get(ENDPOINTS_ENV)
    if not path:
        raise LiveBackendError(
            f"--backend live needs the cluster's endpoints file (--endpoints FILE or ${ENDPOINTS_ENV}): "
            "a JSON object with kubeconfig, prometheus_url and, where they run, loki_url and jaeger_url"
        )
    try:
        cluster = Endpoints.read(path)
    except OSError as e:
        raise LiveBackendError(f"{path}: {e.strerror or e}") from e
    except ValueError as e:
        raise LiveBackendError(f"{path}: not an endpoints file: {e}") from e
    if not Path(cluster.kubeconfig).is_file():
        raise LiveBackendError(f"{path}: kubeconfig {cluster.kubeconfig!r} is not a file")
    return cluster


def scenario_kinds(scenario: Any) -> set[tuple[str, str]]:
    """``(apiVersion, kind)`` of the objects a twin scenario's faults and mitigation create, patch
    or delete (a flag is a ConfigMap's key; a restart, a workload's)."""
    return {(api_version, kind) for _, (api_version, kind, _) in scenario_actions(scenario)}


def scenario_actions(scenario: Any) -> list[tuple[str, tuple[str, str, str | None]]]:
    """``(verb, (apiVersion, kind, namespace))`` of each operation of a twin scenario's faults and
    mitigation: what the harness's credential must be allowed to do."""
    out: list[tuple[str, tuple[str, str, str | None]]] = []
    for op in [*scenario.faults, *scenario.mitigation]:
        obj = getattr(op, "object", None)
        target = getattr(op, "target", None)
        if isinstance(obj, dict):
            ns = (obj.get("metadata") or {}).get("namespace") or scenario.namespace
            out.append(("create", (str(obj["apiVersion"]), str(obj["kind"]), ns)))
        elif target is not None:
            out.append((op.op, (target.apiVersion, target.kind, target.namespace or scenario.namespace)))
        elif op.op == "flag":
            out.append(("patch", ("v1", "ConfigMap", op.namespace)))
        elif op.op == "restart":
            out.append(("patch", ("apps/v1", op.kind, op.namespace)))
    return out


def _kubeconfig_user(path: str) -> dict[str, Any]:
    import yaml

    doc = yaml.safe_load(Path(path).read_text()) or {}
    ctx = next(
        (
            c.get("context") or {}
            for c in doc.get("contexts") or []
            if c.get("name") == doc.get("current-context")
        ),
        {},
    )
    return next((u.get("user") or {} for u in doc.get("users") or [] if u.get("name") == ctx.get("user")), {})


def _kubeconfig_token(path: str) -> str:
    return str(_kubeconfig_user(path).get("token") or "")


def _kubeconfig_server(path: str) -> str:
    from ..core.endpoints import kubeconfig_cluster

    return kubeconfig_cluster(path)[0]


def _timestamp(value: Any) -> float:
    if not value:
        return 0.0
    return _dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    m = obj.get("metadata") or {}
    return (str(obj.get("kind")), str(m.get("namespace") or ""), str(m.get("name")))


def apply_manifests(api: KubeApi, manifests: list[dict[str, Any]], *, keep_going: bool = False) -> list[str]:
    """Create each object that is missing and replace each that is there (namespaces first), as
    ``kubectl replace --save-config || kubectl create`` would; returns the failures when
    ``keep_going``, raises :class:`LiveBackendError` on the first otherwise."""
    problems: list[str] = []
    ordered = sorted(manifests, key=lambda o: o.get("kind") != "Namespace")
    for obj in ordered:
        kind, ns, name = _key(obj)
        try:
            try:
                current = api.get(obj["apiVersion"], kind, ns or None, name)
            except KubeApiError as e:
                if e.code != 404:
                    raise
                api.create(copy.deepcopy(obj))
                continue
            if kind in IMMUTABLE_KINDS:
                continue
            api.replace(_for_replace(obj, current))
        except KubeApiError as e:
            why = f"{kind} {ns + '/' if ns else ''}{name}: {e}"
            if not keep_going:
                raise LiveBackendError(why) from e
            problems.append(why)
    return problems


def _for_replace(obj: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    new.setdefault("metadata", {})["resourceVersion"] = current["metadata"].get("resourceVersion")
    if obj.get("kind") == "Service":
        spec, now = new.setdefault("spec", {}), current.get("spec") or {}
        for f in KEEP_ON_REPLACE:
            if f in now and f not in spec:
                spec[f] = now[f]
        ports = {p.get("port"): p.get("nodePort") for p in now.get("ports") or [] if p.get("nodePort")}
        for p in spec.get("ports") or []:
            if p.get("port") in ports and "nodePort" not in p:
                p["nodePort"] = ports[p["port"]]
    return new


def unready_workloads(api: KubeApi, namespace: str) -> list[str]:
    """The Deployments and StatefulSets of ``namespace`` with fewer ready replicas than wanted (or
    whose controller has not seen their latest spec)."""
    out = []
    for kind in ("Deployment", "StatefulSet"):
        for w in api.list("apps/v1", kind, namespace):
            want = (w.get("spec") or {}).get("replicas", 1)
            status = w.get("status") or {}
            seen = status.get("observedGeneration", 0) >= (w["metadata"].get("generation") or 0)
            if (
                not seen
                or (status.get("readyReplicas") or 0) < want
                or (status.get("updatedReplicas") or 0) < want
            ):
                out.append(f"{kind}/{w['metadata']['name']}")
    return out


def sweep_created_since(api: KubeApi, since: float, keep: list[dict[str, Any]]) -> list[str]:
    """Delete every object created at or after ``since`` that no controller owns (no owner
    references), is not one of ``keep`` and is not of :data:`UNSWEPT_KINDS` — the namespaces
    last, after their contents (their deletion is not waited for:
    :func:`namespaces_created_since` says which remain); returns the failures."""
    kept = {_key(o) for o in keep}
    problems: list[str] = []
    later: list[tuple[Any, dict[str, Any]]] = []
    for info in api.api_resources(("list", "delete")):
        if info.kind in UNSWEPT_KINDS:
            continue
        try:
            items = api.list(info.api_version, info.kind)
        except KubeApiError:
            continue
        for obj in items:
            m = obj.get("metadata") or {}
            if m.get("ownerReferences") or _key(obj) in kept or m.get("deletionTimestamp"):
                continue
            if not _made_since(m, since):
                continue
            if info.kind == "Namespace":
                later.append((info, m))
                continue
            problems += _delete(api, info, m)
    for info, m in later:
        problems += _delete(api, info, m)
    return problems


def namespaces_created_since(api: KubeApi, since: float, keep: list[dict[str, Any]]) -> list[str]:
    """The namespaces created at or after ``since`` that are not among ``keep`` (those
    :func:`sweep_created_since` deletes), as they are still there."""
    kept = {_key(o) for o in keep}
    return [
        ns["metadata"]["name"]
        for ns in api.list("v1", "Namespace")
        if _key(ns) not in kept and _made_since(ns["metadata"], since)
    ]


def _made_since(meta: dict[str, Any], since: float) -> bool:
    """Whether an object (its metadata) was created at or after ``since`` (creationTimestamp has
    whole seconds)."""
    return _timestamp(meta.get("creationTimestamp")) >= float(int(since))


def _delete(api: KubeApi, info: Any, m: dict[str, Any]) -> list[str]:
    try:
        api.delete(info.api_version, info.kind, m.get("namespace"), m["name"])
    except KubeApiError as e:
        if e.code != 404:
            return [f"delete {info.kind} {m.get('namespace') or ''}/{m['name']}: {e}"]
    return []


def _holding(api: KubeApi, namespace: str) -> str:
    """What keeps a terminating namespace there, as its status conditions and finalizers say."""
    try:
        ns = api.get("v1", "Namespace", None, namespace)
    except KubeApiError as e:
        return str(e)
    said = [
        str(c.get("message"))
        for c in (ns.get("status") or {}).get("conditions") or []
        if c.get("status") == "True" and c.get("message")
    ]
    own = ns["metadata"].get("finalizers") or []
    if own:
        said.append(f"finalizers of its own: {', '.join(own)}")
    return "; ".join(said) or "see kubectl get namespace -o yaml"


def _terminating(api: KubeApi, namespace: str) -> bool:
    """Whether ``namespace`` is there and being deleted."""
    try:
        ns = api.get("v1", "Namespace", None, namespace)
    except KubeApiError as e:
        if e.code == 404:
            return False
        raise LiveBackendError(f"namespace {namespace}: {e}") from e
    return (
        bool(ns["metadata"].get("deletionTimestamp"))
        or (ns.get("status") or {}).get("phase") == "Terminating"
    )


def _node_state(node: dict[str, Any]) -> dict[str, Any]:
    spec = node.get("spec") or {}
    return {
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": copy.deepcopy(spec.get("taints") or []),
        "labels": dict((node.get("metadata") or {}).get("labels") or {}),
    }


def restore_nodes(api: KubeApi, before: dict[str, dict[str, Any]]) -> list[str]:
    """Give each node back the schedulability, taints and labels it had; returns the failures."""
    problems = []
    for node in api.list("v1", "Node"):
        name = node["metadata"]["name"]
        was = before.get(name)
        if was is None or _node_state(node) == was:
            continue
        labels: dict[str, Any] = dict(was["labels"])
        labels.update({k: None for k in (node["metadata"].get("labels") or {}) if k not in was["labels"]})
        patch = {
            "metadata": {"labels": labels},
            "spec": {"unschedulable": was["unschedulable"] or None, "taints": was["taints"] or None},
        }
        try:
            api.patch("v1", "Node", None, name, patch, patch_type="merge")
        except KubeApiError as e:
            problems.append(f"node {name}: {e}")
    return problems
