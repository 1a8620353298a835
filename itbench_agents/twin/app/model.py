"""The app-model file formats (pydantic): ``app.yaml`` and ``behaviour.yaml``.

An app folder holds ``app.yaml`` (:class:`AppSpec`), ``manifests/*.yaml`` (plain Kubernetes
objects) and ``behaviour.yaml`` (:class:`Behaviour`): what each service does when it runs — its
operations, whom it calls, how fast, how much CPU and memory it needs, which feature flags change
what. :class:`AppModel` is the loaded, validated whole.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...k8s.quantity import parse_quantity

Obj = dict[str, Any]
SpanKind = Literal["server", "consumer", "internal"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _quantity(v: Any) -> float:
    try:
        return parse_quantity(v)
    except ValueError as e:
        raise ValueError(f"expected a Kubernetes quantity such as '64Mi' or '250m', got {v!r}") from e


class AppSpec(_Strict):
    """``app.yaml``: identity of the app and where its parts are."""

    id: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    namespace: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    description: str = ""
    manifests: list[str] = Field(min_length=1, description="files under the app folder, applied in order")
    behaviour: str = "behaviour.yaml"


class Latency(_Strict):
    """Service time of an operation itself (downstream calls are added on top), in ms."""

    p50: float = Field(gt=0)
    p95: float = Field(gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> Latency:
        if self.p95 < self.p50:
            raise ValueError("p95 must be >= p50")
        return self


class Call(_Strict):
    """One downstream call made while serving an operation (calls run in list order)."""

    to: str = Field(description="callee service")
    op: str = Field(description="callee operation")
    n: float = Field(1.0, ge=0, description="calls per request (fan-out); fractions = probability")
    optional: bool = Field(False, description="errors are logged and ignored (the request still succeeds)")
    kind: Literal["client", "producer"] = "client"


class Operation(_Strict):
    kind: SpanKind = "server"
    latency_ms: Latency = Latency(p50=2.0, p95=8.0)
    calls: list[Call] = []
    http_method: str | None = None
    http_path: str | None = None
    cpu_per_request: float = Field(0.0, ge=0, description="CPU seconds per request")


class Listen(_Strict):
    port: int = Field(gt=0, lt=65536)
    env: str | None = Field(None, description="env var that overrides the port")
    protocol: Literal["http", "grpc", "tcp", "redis", "postgres", "kafka", "mongo", "memcached"] = "http"


class Auth(_Strict):
    """How a client authenticates to this dependency; mismatch → ``auth_failed``."""

    client_env: str | None = Field(None, description="caller env var holding the secret (or a DSN)")
    client_pattern: str | None = Field(None, description="regex with one group extracting the password")
    server_password: str | None = Field(None, description="password persisted in the backend's state")
    server_env: str | None = Field(None, description="callee env var holding the expected password")
    server_arg: str | None = Field(None, description="callee arg flag such as --requirepass")
    message: str = "authentication failed"


class Dependency(_Strict):
    """How a caller finds and reaches a callee."""

    addr_env: str | None = Field(None, description="env var with host:port / URL (e.g. CART_ADDR)")
    host_env: str | None = None
    port_env: str | None = None
    default: str = Field(description="address used when the env var is absent, host:port")
    required: bool = Field(False, description="the caller exits at start when the env var is unset")
    discovery: Literal["dns", "registry"] = "dns"
    registry: str | None = Field(
        None, description="service registry (e.g. consul) that must be up for discovery"
    )
    stack: Literal[
        "go-grpc", "node-grpc", "go-http", "http", "redis", "kafka", "sql", "mongo", "python-grpc"
    ] = "http"
    timeout_ms: float = Field(10_000, gt=0)
    auth: Auth | None = None
    fatal: str | None = Field(None, description="the caller exits with this message when it cannot connect")


class Resources(_Strict):
    cpu: float = Field(default=0.01, ge=0, description="baseline cores")
    memory: float = Field(default=64 * 2**20, ge=0, description="baseline working set bytes")

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _q(cls, v: Any) -> float:
        return _quantity(v)


class Service(_Strict):
    language: str
    workload: str | None = Field(None, description="Deployment/StatefulSet name (default: service name)")
    container: str | None = Field(None, description="container name (default: service name)")
    binary: str | None = Field(
        None, description="binary the image runs for this service (multi-binary images)"
    )
    listens: list[Listen] = []
    health_paths: list[str] = Field(["/"], description="HTTP paths that answer 200")
    grpc_health: bool = False
    resources: Resources = Resources()
    operations: dict[str, Operation] = {}
    dependencies: dict[str, Dependency] = {}
    jvm: bool = False
    startup_s: float = Field(2.0, ge=0)
    flagd: bool = Field(False, description="reads feature flags from flagd")
    max_rps: float | None = Field(None, gt=0, description="requests/s one pod serves before it overloads")
    instrumented: bool = Field(True, description="emits spans/metrics (False: brokers, databases)")
    external: bool = Field(False, description="runs outside the cluster (a load client): always up, no pods")


class EntryCall(_Strict):
    to: str
    op: str
    rate: float = Field(ge=0, description="requests per second at baseline load")


class Load(_Strict):
    """The traffic source (a Deployment too: scale it to zero and traffic stops)."""

    service: str
    calls: list[EntryCall] = Field(min_length=1)
    users_env: str | None = Field(
        None, description="env var of the load service giving its user count (Locust's LOCUST_USERS)"
    )
    users: float = Field(1.0, gt=0, description="users the baseline rates are for")


class Consumer(_Strict):
    service: str
    group: str
    op: str
    capacity: float = Field(1000.0, gt=0, description="records per second one consumer handles")


class Topic(_Strict):
    broker: str
    producers: list[tuple[str, str]] = Field(
        description="(service, operation) pairs whose producer call publishes"
    )
    consumers: list[Consumer] = []


class Symptom(_Strict):
    kind: str
    message: str


class Effect(_Strict):
    """What a flag value does. Fields listed in ``scale`` are multiplied by the flag's numeric value."""

    service: str | None = None
    op: str | None = None
    edge: tuple[str, str] | None = Field(None, description="(caller, callee): affects the caller's calls")
    error_ratio: float = Field(0.0, ge=0)
    latency_ms: float = Field(0.0, ge=0)
    cpu: float = Field(0.0, ge=0, description="extra cores demanded")
    memory_per_request: float = Field(0.0, ge=0, description="bytes leaked per request")
    rate_add: float = Field(0.0, ge=0, description="extra requests/s on an entry call (service+op)")
    topic: str | None = None
    topic_multiplier: float = Field(0.0, ge=0, description="extra copies of each message published")
    consumer_capacity: float | None = Field(None, gt=0, description="records/s a consumer of service handles")
    consumer_error_ratio: float = Field(0.0, ge=0)
    readiness: bool | None = Field(None, description="gRPC health answers NOT_SERVING when False")
    scale: list[str] = []
    symptom: Symptom | None = None

    @model_validator(mode="after")
    def _target(self) -> Effect:
        if self.service is None and self.edge is None:
            raise ValueError("an effect needs 'service' or 'edge'")
        return self


class FlagSource(_Strict):
    configmap: str = "flagd-config"
    key: str = "demo.flagd.json"
    service: str = "flagd"
    reload: Literal["on_restart", "live"] = Field(
        default="on_restart", description="flagd reads a copy made at pod start: edits apply after a restart"
    )


class Flags(_Strict):
    source: FlagSource = FlagSource()
    effects: dict[str, list[Effect]] = {}


class Probe(_Strict):
    """The functional probe: these operations must succeed end to end."""

    operations: list[tuple[str, str]] = Field(min_length=1, description="(service, operation) pairs")
    max_error_ratio: float = Field(0.01, ge=0, le=1)
    timeout_ms: float = Field(10_000, gt=0)


class ImagePort(_Strict):
    """A port the image's process serves without declaring it (e.g. CoreDNS's health endpoints)."""

    port: int = Field(ge=1, le=65535)
    protocol: Literal["http", "grpc", "tcp", "udp"] = "http"
    paths: list[str] = ["/"]
    """HTTP paths that answer 200 (http only)."""


class Image(_Strict):
    """An image the (simulated) registry serves. ``repo`` and ``tags`` match exactly (no patterns:
    a tag the registry does not hold fails to pull, as on a real registry)."""

    repo: str
    tags: list[str] = Field(min_length=1)
    arch: list[str] = ["amd64", "arm64"]
    platform_index: bool = Field(
        False,
        description="published as a multi-platform index: a missing platform fails the pull "
        "('no match for platform in manifest') instead of crashing with 'exec format error'",
    )
    binaries: list[str] = Field([], description="executables in the image ('*': any shell command)")
    crash_after_s: float | None = Field(
        None, ge=0, description="a buggy build: the process exits this long after start"
    )
    crash_message: str = "panic: runtime error: invalid memory address or nil pointer dereference"
    listens: list[ImagePort] = Field(
        [],
        description="what the process serves (probes of containers that are not an app service check these)",
    )
    shell: Literal["busybox", "alpine", "debian", "curl", "netshoot"] | None = Field(
        None,
        description="a utility image whose commands the twin runs (faults/shell.py): which family's "
        "shells, tools and error wording it has",
    )
    entrypoint: list[str] = Field([], description="the image's ENTRYPOINT (utility images)")
    cmd: list[str] = Field([], description="the image's CMD (utility images)")


class Behaviour(_Strict):
    """``behaviour.yaml``."""

    services: dict[str, Service] = Field(min_length=1)
    load: Load
    topics: dict[str, Topic] = {}
    flags: Flags = Field(default_factory=Flags)
    probe: Probe
    images: list[Image] = []

    @model_validator(mode="before")
    @classmethod
    def _drop_anchors(cls, data: Any) -> Any:
        """Top-level keys starting with ``x-`` hold YAML anchors for reuse; they are not fields."""
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if not str(k).startswith("x-")}
        return data

    @model_validator(mode="after")
    def _references(self) -> Behaviour:
        names = set(self.services)
        problems: list[str] = []
        for sname, svc in self.services.items():
            for oname, op in svc.operations.items():
                for c in op.calls:
                    if c.to not in names:
                        problems.append(
                            f"services.{sname}.operations.{oname}.calls: unknown service {c.to!r}"
                        )
                    elif c.op not in self.services[c.to].operations:
                        problems.append(
                            f"services.{sname}.operations.{oname}.calls: {c.to!r} has no operation {c.op!r}"
                        )
                    elif c.to not in svc.dependencies:
                        problems.append(
                            f"services.{sname}.dependencies: missing entry for {c.to!r} (called by {oname!r})"
                        )
        if self.load.service not in names:
            problems.append(f"load.service: unknown service {self.load.service!r}")
        for i, ec in enumerate(self.load.calls):
            if ec.to not in names or ec.op not in self.services[ec.to].operations:
                problems.append(f"load.calls[{i}]: unknown operation {ec.to}/{ec.op}")
        for s, o in self.probe.operations:
            if s not in names or o not in self.services[s].operations:
                problems.append(f"probe.operations: unknown operation {s}/{o}")
        for tname, t in self.topics.items():
            if t.broker not in names:
                problems.append(f"topics.{tname}.broker: unknown service {t.broker!r}")
            for cons in t.consumers:
                if cons.service not in names or cons.op not in self.services[cons.service].operations:
                    problems.append(f"topics.{tname}.consumers: unknown operation {cons.service}/{cons.op}")
        for flag, effects in self.flags.effects.items():
            for i, e in enumerate(effects):
                for s in [e.service, *(e.edge or ())]:
                    if s is not None and s not in names:
                        problems.append(f"flags.effects.{flag}[{i}]: unknown service {s!r}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class AppModel(BaseModel):
    """A loaded app: spec + manifests (namespaced) + behaviour."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    namespace: str
    description: str = ""
    manifests: list[Obj]
    behaviour: Behaviour
    folder: str = ""

    def service_of_workload(self) -> dict[str, str]:
        """Deployment name → service name."""
        return {(s.workload or n): n for n, s in self.behaviour.services.items()}
