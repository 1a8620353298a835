"""One twin instance: store + scheduler + controllers + behaviour + telemetry + HTTP endpoints.

Construction wires the parts; nothing starts listening until :meth:`Twin.serve`.

    twin = Twin.for_app("otel-demo", seed=1)       # deploy + 1 h of healthy pre-history
    endpoints = twin.serve(workdir)                 # kube, Prometheus, Loki, Jaeger on 127.0.0.1
    ...
    twin.close()

The parts plug in through small factory functions that each sub-package provides:

- ``twin.controllers.install_controllers(twin)`` and ``twin.controllers.bootstrap_cluster(twin)``
- ``twin.app.loader.load_app(name_or_path)`` and ``twin.app.behaviour.BehaviourModel(twin, app)``
- ``twin.telemetry.hub.install_telemetry(twin)`` (sets ``metrics``, ``logs``, ``traces``)
- ``twin.prometheus.alerts.install_alerts(twin)`` (sets ``alerts``)
- ``twin.kube.server.make_kube_handler(twin)``, ``twin.prometheus.server.make_prometheus_handler(twin)``,
  ``twin.loki.server.make_loki_handler(twin)``, ``twin.jaeger.server.make_jaeger_handler(twin)``
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.endpoints import DEFAULT_TOKEN, Endpoints, kubeconfig_yaml
from ..k8s.kinds import GroupResource
from .clock import DEFAULT_LEAD_S, Clock, VirtualClock
from .gc_pause import collection_paused
from .health import HealthTimeline
from .httpserver import HttpEndpoint
from .kube.store import ObjectStore, clone
from .runtime import ContainerRuntime, DefaultRuntime
from .scheduler import Scheduler

if TYPE_CHECKING:
    from .telemetry.sources import LogSource, SeriesSource, TraceSource

Obj = dict[str, Any]


QUIET_PAST_S = 86400.0
"""A pre-history longer than this (a day) is quiet but for its last hour: kubelets renew node Leases
and post node status sparsely (``controllers/cluster.py::heartbeat_every``), and its alert rules are evaluated over that last
hour only (``AlertEngine.begin_at``; metrics cover the whole past): a week builds and answers its
first alert query in seconds, not minutes."""
LOUD_PAST_S = 3600.0
QUIET_STEP_S = 300.0
"""The hop of :meth:`Twin.advance` through a quiet past. Every callback runs at its own time
whatever the hop (``scheduler.py``); a hop is only where nothing is due, and a week of 5 s hops
is 120,000 of them."""


class Twin:
    """An embedded, deterministic Kubernetes cluster running (optionally) a known app."""

    def __init__(
        self,
        *,
        seed: int = 0,
        clock: Clock | None = None,
        runtime: ContainerRuntime | None = None,
        nodes: int = 3,
        masked: Iterable[str] = (),
        controllers: bool = True,
    ) -> None:
        """``controllers=False``: a cluster nothing acts in (no controller, kubelet or scheduler, no
        bootstrap objects): what a recorded snapshot is served from (``replay.py``)."""
        self.seed = seed
        self.clock: Clock = clock or VirtualClock()
        self.lock = threading.RLock()
        self.scheduler = Scheduler(self.clock)
        self.store = ObjectStore(self.scheduler.now, seed=seed, lock=self.lock)
        self.runtime: ContainerRuntime = runtime or DefaultRuntime()
        self.health = HealthTimeline()
        self.masked: set[str] = set(masked)
        """Observability masked for this instance (the paper's traces-off condition: ``{"traces"}``)."""
        self.app: Any = None
        self.behaviour: Any = None
        self.metrics: SeriesSource | None = None
        self.logs: LogSource | None = None
        self.traces: TraceSource | None = None
        self.alerts: Any = None
        self.validators: dict[GroupResource, list[Callable[[Obj], list[tuple[str, str, str]]]]] = {}
        self.admission_hooks: list[Callable[[Any], list[str]]] = []
        """Validating webhooks of the installed addons (``addons/base.py``), called by the API server
        after its own admission for every create, update and delete."""
        self.addons: dict[str, Any] = {}
        self.memo: dict[str, dict[Any, Any]] = {}
        """Derived values the controllers memoise, per table (keyed so that they never go stale,
        e.g. by uid and resourceVersion): dropping them changes nothing but speed."""
        """Extra admission checks per resource type (e.g. Chaos Mesh specs): each returns 422 causes
        as (field, reason, message); the REST layer calls them on create/update."""
        self.endpoints: Endpoints | None = None
        self.admin_token: str = DEFAULT_TOKEN
        """The bearer token of the cluster admin (``system:masters``); the harness sets a random one
        per episode before :meth:`serve`, and the kubeconfig ``serve`` writes carries it."""
        self.quiet_until: float | None = None
        """While :meth:`for_app` builds a long pre-history, the time its quiet part ends: kubelets
        send heartbeats sparsely until then (``controllers/cluster.py::heartbeat_every``)."""
        self.advance_budget: Any = None
        """Set by the harness while an agent runs (``harness.budget.AdvanceBudget``): how many
        seconds a non-admin caller of ``POST /itbench/v1/advance`` may still fast-forward."""
        self._servers: list[HttpEndpoint] = []
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()
        self.created_at = self.clock.now()

        if controllers:
            from .controllers import bootstrap_cluster, install_controllers

            install_controllers(self)
            bootstrap_cluster(self, nodes=nodes)
        self.sync()

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    @collection_paused()  # the build allocates in a burst (gc_pause.py)
    def for_app(
        cls,
        app: str | Path,
        *,
        seed: int = 0,
        clock: Clock | None = None,
        history_s: float = 3600.0,
        masked: Iterable[str] = (),
        nodes: int = 3,
        lead_s: float = DEFAULT_LEAD_S,
        past: bool = False,
        customize: Callable[[list[Obj]], list[Obj]] | None = None,
        addons: Iterable[Any] = (),
    ) -> Twin:
        """A twin running ``app`` (an app id under ``scenarios/apps/`` or a folder) with
        ``history_s`` seconds of healthy pre-history behind the current time. Without a ``clock``
        it runs on a :class:`VirtualClock` that ends the history ``lead_s`` behind the wall clock
        (fast-forwards eat into that lead: clients that compute ages from their own clock, such as
        ``kubectl describe``, then never see timestamps in the future; see ``clock.py``)."""
        from .app.behaviour import BehaviourModel
        from .app.loader import load_app

        model = load_app(app)
        if customize is not None:  # the caller's additions to the app, deployed with it
            model = model.model_copy(update={"manifests": customize(model.manifests)})
        if clock is None:
            clock = VirtualClock(offset=-(history_s + max(0.0, lead_s)))
        twin = cls(seed=seed, clock=clock, nodes=nodes, masked=masked)
        for name in addons:  # before the app: its objects are admitted and reported like any other
            twin.install_addon(name)
        twin.app = model
        twin.behaviour = BehaviourModel(twin, model)
        twin.runtime = twin.behaviour
        twin.install_observability()
        if past and history_s:  # seeded past rollouts inside the pre-history (history.py)
            from .history import bring_up_with_history

            bring_up_with_history(twin, model, history_s)
            return twin
        with twin.lock:
            twin.apply(model.manifests)
            twin.sync()
        if history_s > QUIET_PAST_S:  # a long past (FinOps' week): sparse kubelet heartbeats
            twin.quiet_until = twin.now() + history_s - LOUD_PAST_S
            twin.advance(history_s - LOUD_PAST_S, step=QUIET_STEP_S)
            twin.quiet_until = None  # the last hour as a kubelet runs: a Lease renewal every 10 s
            if twin.alerts is not None:  # and rules evaluated over that hour, not the whole week
                twin.alerts.begin_at(twin.now())
            twin.advance(LOUD_PAST_S)
        elif history_s:
            twin.advance(history_s)
        return twin

    @classmethod
    def for_manifests(
        cls, objs: list[Obj], *, seed: int = 0, clock: Clock | None = None, addons: Iterable[Any] = ()
    ) -> Twin:
        twin = cls(seed=seed, clock=clock)
        for name in addons:
            twin.install_addon(name)
        twin.install_observability()
        with twin.lock:
            twin.apply(objs)
            twin.sync()
        return twin

    def install_addon(self, addon: Any) -> Any:
        """Install an addon (``addons/base.py``: an ``Addon`` or a built-in's name, e.g. ``"kyverno"``)
        once; returns the installed addon."""
        if isinstance(addon, str):
            from .addons.catalog import make_addon

            addon = make_addon(addon)
        if addon.name not in self.addons:
            with self.lock:
                addon.install(self)
                self.addons[addon.name] = addon
        return self.addons[addon.name]

    def install_observability(self) -> None:
        from .prometheus.alerts import install_alerts
        from .telemetry.hub import install_telemetry

        install_telemetry(self)
        install_alerts(self)

    # ------------------------------------------------------------------ time
    def now(self) -> float:
        return self.scheduler.now()

    def sync(self) -> None:
        """Bring the simulated cluster up to the clock's current time."""
        with self.lock:
            self.scheduler.run_until(self.clock.now())

    def advance(self, seconds: float, step: float = 5.0) -> None:
        """Fast-forward the virtual clock, running controllers on the way (in ``step``-second hops
        so that periodic work such as alert evaluation sees intermediate times)."""
        remaining = float(seconds)
        while remaining > 1e-9:
            hop = min(step, remaining)
            with self.lock:
                self.clock.advance(hop)
                self.scheduler.run_until(self.clock.now())
            remaining -= hop

    # ------------------------------------------------------------------ state
    def apply(self, objs: Iterable[Obj]) -> list[Obj]:
        """Create (or replace) objects directly in the store, as a bootstrap ``kubectl apply`` would.

        Each object is decoded and validated as the API server does a request body (nulls dropped,
        unknown fields ignored): a 404 ``ApiError`` for an unknown kind, 400 for a wrong field type,
        422 for an invalid object, each naming the object."""
        from .kube.defaults import prepare_for_storage
        from .kube.errors import ApiError
        from .kube.resources import registry_for
        from .kube.validation import decode_and_validate

        registry = registry_for(self)
        out = []
        with self.lock:
            for obj in objs:
                info = registry.for_object(obj)  # ApiError 404 for an unknown kind
                gr = info.gr
                obj = clone(obj)
                if not isinstance(obj.get("metadata"), dict):
                    obj["metadata"] = {}
                try:
                    decode_and_validate(info, obj, "Ignore", self.validators.get(gr, []))
                except ApiError as e:
                    m = obj["metadata"]
                    e.add_note(
                        f"{info.kind} {m['namespace'] + '/' if m.get('namespace') else ''}{m.get('name') or ''}"
                    )
                    raise
                meta = obj.get("metadata", {})
                ns = meta.get("namespace", "") or ""
                if info.namespaced and not ns:
                    obj = {**obj, "metadata": {**meta, "namespace": "default"}}
                    ns = "default"
                existing = self.store.get(gr, ns, meta.get("name", ""))
                # API defaults (cluster IPs...)
                obj = prepare_for_storage(self.store, info, obj, old=existing)
                if existing is None:
                    out.append(self.store.create(gr, obj))
                else:
                    new = {**obj, "metadata": {**obj.get("metadata", {})}}
                    new["metadata"].pop("resourceVersion", None)
                    out.append(self.store.update(gr, new))
        return out

    def get(self, gr: GroupResource, namespace: str, name: str) -> Obj | None:
        with self.lock:
            return self.store.get(gr, namespace, name)

    # ------------------------------------------------------------------ serving
    def serve(self, workdir: str | Path, host: str = "127.0.0.1", kube_port: int = 0) -> Endpoints:
        """Start the HTTP endpoints, write ``kubeconfig`` and ``endpoints.json`` into ``workdir``."""
        from .jaeger.server import make_jaeger_handler
        from .kube.server import make_kube_handler
        from .loki.server import make_loki_handler
        from .prometheus.server import make_prometheus_handler

        workdir = Path(workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        from .kube.auth.tls import serve_tls, shared_tls

        kube_handler = make_kube_handler(self)
        kube = HttpEndpoint(kube_handler, host, kube_port).start()
        # kubectl sends a kubeconfig's credentials only to an https server: the kubeconfig points
        # at a TLS endpoint of the same API (the plain one stays for in-process HTTP clients)
        tls = shared_tls()
        kube_tls, https_url = serve_tls(kube_handler, tls, host)
        prom = HttpEndpoint(make_prometheus_handler(self), host, 0).start()
        loki = HttpEndpoint(make_loki_handler(self), host, 0).start()
        jaeger = HttpEndpoint(make_jaeger_handler(self), host, 0).start()
        self._servers = [kube, kube_tls, prom, loki, jaeger]
        addon_urls: dict[str, str] = {}
        for addon in self.addons.values():  # addons with an API of their own (``addons/base.ServesApi``)
            if hasattr(addon, "make_handler"):
                server = HttpEndpoint(addon.make_handler(self), host, 0).start()
                self._servers.append(server)
                addon_urls[addon.endpoint_field] = server.url
        kubeconfig = workdir / "kubeconfig"
        kubeconfig.write_text(
            kubeconfig_yaml(
                https_url, namespace=self.default_namespace(), token=self.admin_token, ca_data=tls.ca_data
            )
        )
        kubeconfig.chmod(0o600)
        self.endpoints = Endpoints(
            kubeconfig=str(kubeconfig),
            kube_url=kube.url,
            prometheus_url=prom.url,
            loki_url=loki.url,
            jaeger_url=jaeger.url,
            alertmanager_url=prom.url,
            **addon_urls,
        )
        self.endpoints.write(workdir / "endpoints.json")
        self._ticker = threading.Thread(target=self._tick, name="twin-ticker", daemon=True)
        self._ticker.start()
        return self.endpoints

    def default_namespace(self) -> str:
        ns = getattr(self.app, "namespace", None)
        return str(ns) if ns else "default"

    def _tick(self) -> None:
        while not self._stop.wait(0.25):
            try:
                self.sync()
            except Exception:  # pragma: no cover - keep serving; the error shows in the next request
                import logging

                logging.getLogger(__name__).exception("twin tick failed")

    def stop_serving(self) -> None:
        """Stop the endpoints and the ticker and wait for both, keeping the cluster as it is: the
        process is then down to its own threads (the harness forks a prepared twin, and
        :meth:`serve` starts it again on new ports). Every alert rule is evaluated up to now, once
        here rather than again in each fork (the rules an alert wait did not ask for catch up only
        when next asked; evaluated in two ranges or one, they end the same)."""
        self.close()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        self._stop = threading.Event()
        if self.alerts is not None:
            self.alerts.evaluate_until(self.now())

    def close(self) -> None:
        self._stop.set()
        servers, self._servers = self._servers, []
        # each server notices the shutdown request only at its next poll: stop them all at once
        stoppers = [threading.Thread(target=s.stop, name="twin-close", daemon=True) for s in servers[1:]]
        for t in stoppers:
            t.start()
        if servers:
            servers[0].stop()
        for t in stoppers:
            t.join()

    def __enter__(self) -> Twin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
