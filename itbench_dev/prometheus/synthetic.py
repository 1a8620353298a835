"""A deterministic, SRE-like series generator (OTel span metrics, kube-state-metrics, cAdvisor, Kafka
lag) for tests, the differential test against real Prometheus and the PromQL benchmark, plus an
OpenMetrics writer for ``promtool tsdb create-blocks-from openmetrics``.

The scenario: several services serving steady traffic; ``payment`` has an error burst and a latency
spike in the last part of the window; one ``checkout`` pod is Pending for a while; a ``cart`` container
restarts a few times; Kafka lag grows for the ``accounting`` consumer group.

Samples are scraped every 15 s with a fixed per-series offset of a few hundred ms (as real scrapes
are), so no sample sits exactly on a query's window boundary: Prometheus 2.x (closed windows) and
3.x (left-open windows) then agree, which the differential test relies on.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from itbench_agents.twin.prometheus.memstore import MemorySeriesSource
from itbench_agents.twin.telemetry.sources import MetricMetadata, is_stale

BUCKETS = [2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10000, 15000]
SERVICES = {
    # service: (requests/s, mean latency ms, operations)
    "frontend": (40.0, 120.0, ["GET /api/products", "POST /api/cart", "GET /api/recommendations"]),
    "checkout": (4.0, 300.0, ["oteldemo.CheckoutService/PlaceOrder"]),
    "cart": (20.0, 15.0, ["oteldemo.CartService/GetCart", "oteldemo.CartService/AddItem"]),
    "payment": (4.0, 40.0, ["oteldemo.PaymentService/Charge"]),
    "currency": (30.0, 3.0, ["Currency/Convert"]),
    "product-catalog": (50.0, 5.0, ["oteldemo.ProductCatalogService/GetProduct"]),
    "recommendation": (10.0, 25.0, ["/oteldemo.RecommendationService/ListRecommendations"]),
    "ad": (8.0, 12.0, ["oteldemo.AdService/GetAds"]),
    "shipping": (4.0, 30.0, ["POST /get-quote"]),
    "quote": (4.0, 8.0, ["POST /getquote"]),
    "email": (4.0, 50.0, ["POST /send_order_confirmation"]),
    "accounting": (4.0, 5.0, ["orders receive"]),
    "fraud-detection": (4.0, 6.0, ["orders receive"]),
    "flagd": (60.0, 1.0, ["flagd.evaluation.v1.Service/ResolveBoolean"]),
    "load-generator": (40.0, 130.0, ["GET"]),
}
CONSUMERS = {"accounting", "fraud-detection"}
NAMESPACE = "otel-demo"


@dataclass(frozen=True)
class Scenario:
    start_s: float = 1_700_000_000.0
    duration_s: float = 3600.0
    scrape_s: float = 15.0
    error_service: str = "payment"
    error_from_s: float = 2400.0  # relative to start
    error_to_s: float = 3000.0
    error_ratio: float = 0.4
    slow_factor: float = 30.0
    pending_pod: str = "checkout-5d8f7c9b6-x2x7q"
    pending_from_s: float = 1800.0
    pending_to_s: float = 2700.0
    seed: int = 7


def _rng(seed: int, *parts: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32("|".join(parts).encode())])


def _offset_ms(labels: dict[str, str]) -> int:
    return 100 + zlib.crc32(repr(sorted(labels.items())).encode()) % 700


def _frac_below(le: float, mean: float) -> float:
    """Share of log-normal latencies (median ≈ mean) at or below ``le`` ms."""
    from math import erf, log, sqrt

    if le <= 0:
        return 0.0
    sigma = 0.6
    return 0.5 * (1 + erf((log(le) - log(mean)) / (sigma * sqrt(2))))


def generate(
    sc: Scenario = Scenario(), *, services: dict[str, tuple[float, float, list[str]]] | None = None
) -> MemorySeriesSource:
    """The whole scenario as an in-memory series source."""
    src = MemorySeriesSource()
    services = services or SERVICES
    n = int(sc.duration_s // sc.scrape_s) + 1
    rel = np.arange(n) * sc.scrape_s
    base_ms = int(sc.start_s * 1000)
    in_burst = (rel >= sc.error_from_s) & (rel < sc.error_to_s)

    def add(labels: dict[str, str], values: np.ndarray, mask: np.ndarray | None = None) -> None:
        ts = base_ms + (rel * 1000).astype(np.int64) + _offset_ms(labels)
        if mask is not None:
            ts, values = ts[mask], values[mask]
        src.add(labels, ts.tolist(), values.tolist())

    for svc, (rps, lat, ops) in services.items():
        kind = "SPAN_KIND_CONSUMER" if svc in CONSUMERS else "SPAN_KIND_SERVER"
        for op in ops:
            rng = _rng(sc.seed, svc, op)
            per_scrape = rps / len(ops) * sc.scrape_s * rng.uniform(0.85, 1.15, n)
            err_share = np.where(in_burst & (svc == sc.error_service), sc.error_ratio, 0.0)
            errors = np.floor(per_scrape * err_share + rng.uniform(0, 1, n))
            ok = np.floor(per_scrape - errors)
            mean = np.where(in_burst & (svc == sc.error_service), lat * sc.slow_factor, lat)
            common = {
                "service_name": svc,
                "span_name": op,
                "span_kind": kind,
                "namespace": NAMESPACE,
                "job": f"{NAMESPACE}/{svc}",
            }
            start_total = rng.integers(1000, 100000)
            for status, cnt in (("STATUS_CODE_UNSET", ok), ("STATUS_CODE_ERROR", errors)):
                lb = {"__name__": "traces_span_metrics_calls_total", **common, "status_code": status}
                add(lb, float(start_total if status == "STATUS_CODE_UNSET" else 3) + np.cumsum(cnt))
            total = ok + errors
            cum_b = np.zeros(n)
            for le in [*BUCKETS, float("inf")]:
                share = np.array([_frac_below(le, m) for m in mean]) if le != float("inf") else np.ones(n)
                cum_b = np.cumsum(np.floor(total * share))
                lb = {
                    "__name__": "traces_span_metrics_duration_milliseconds_bucket",
                    **common,
                    "status_code": "STATUS_CODE_UNSET",
                    "le": _le(le),
                }
                add(lb, 50.0 + cum_b)
            lb = {
                "__name__": "traces_span_metrics_duration_milliseconds_count",
                **common,
                "status_code": "STATUS_CODE_UNSET",
            }
            add(lb, 50.0 + cum_b)
            lb = {
                "__name__": "traces_span_metrics_duration_milliseconds_sum",
                **common,
                "status_code": "STATUS_CODE_UNSET",
            }
            add(lb, 50.0 * lat + np.cumsum(total * mean))

        add({"__name__": "up", "job": f"{NAMESPACE}/{svc}", "instance": f"{svc}:9464"}, np.ones(n))
        # pods, containers
        pod = (
            sc.pending_pod if svc == "checkout" else f"{svc}-{zlib.crc32(svc.encode()) % 0xFFFFFF:06x}-abcde"
        )
        uid = f"uid-{zlib.crc32(pod.encode()):08x}"
        pending = (rel >= sc.pending_from_s) & (rel < sc.pending_to_s) & (pod == sc.pending_pod)
        for phase in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
            if phase == "Pending":
                v = pending.astype(float)
            elif phase == "Running":
                v = (~pending).astype(float)
            else:
                v = np.zeros(n)
            add(
                {
                    "__name__": "kube_pod_status_phase",
                    "namespace": NAMESPACE,
                    "pod": pod,
                    "uid": uid,
                    "phase": phase,
                },
                v,
            )
        restarts = np.zeros(n)
        if svc == "cart":
            restarts = np.floor(np.clip(rel - 2000.0, 0, None) / 600.0)
        add(
            {
                "__name__": "kube_pod_container_status_restarts_total",
                "namespace": NAMESPACE,
                "pod": pod,
                "container": svc,
                "uid": uid,
            },
            restarts,
        )
        rng = _rng(sc.seed, svc, "cadvisor")
        cpu = np.cumsum(rng.uniform(0.01, 0.2, n) * sc.scrape_s) + 100.0
        cl = {
            "namespace": NAMESPACE,
            "pod": pod,
            "container": svc,
            "node": f"node-{zlib.crc32(svc.encode()) % 3}",
        }
        add({"__name__": "container_cpu_usage_seconds_total", **cl}, cpu)
        mem = 100e6 + np.cumsum(rng.normal(0, 2e5, n)) + (rel * 5e3 if svc == "recommendation" else 0)
        add({"__name__": "container_memory_working_set_bytes", **cl}, mem)
        add({"__name__": "container_spec_memory_limit_bytes", **cl}, np.full(n, 256e6))

    rng = _rng(sc.seed, "kafka")
    for group in ("accounting", "fraud-detection"):
        for part in ("0", "1"):
            lag = rng.integers(0, 20, n).astype(float)
            if group == "accounting":
                lag += np.clip(rel - 2500.0, 0, None) / 5.0
            add(
                {
                    "__name__": "kafka_consumergroup_lag",
                    "namespace": NAMESPACE,
                    "consumergroup": group,
                    "topic": "orders",
                    "partition": part,
                },
                lag,
            )
    for name, kind in (
        ("traces_span_metrics_calls_total", "counter"),
        ("traces_span_metrics_duration_milliseconds", "histogram"),
        ("kube_pod_status_phase", "gauge"),
        ("kube_pod_container_status_restarts_total", "counter"),
        ("container_cpu_usage_seconds_total", "counter"),
        ("container_memory_working_set_bytes", "gauge"),
        ("container_spec_memory_limit_bytes", "gauge"),
        ("kafka_consumergroup_lag", "gauge"),
        ("up", "gauge"),
    ):
        src.set_metadata(name, MetricMetadata(kind, f"{name} (synthetic)"))
    return src


def _le(le: float) -> str:
    if le == float("inf"):
        return "+Inf"
    return str(int(le)) if float(le).is_integer() else str(le)


def write_openmetrics(src: MemorySeriesSource, path: Path) -> int:
    """Write every sample as OpenMetrics text (all families typed ``unknown``); returns the sample count."""

    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    by_name: dict[str, list[tuple[dict[str, str], np.ndarray, np.ndarray]]] = {}
    for s in src.all_series():
        by_name.setdefault(s.labels["__name__"], []).append((s.labels, s.timestamps_ms, s.values))
    count = 0
    with path.open("w", encoding="utf-8") as f:
        for name in sorted(by_name):
            f.write(f"# TYPE {name} unknown\n")
            for labels, ts, vs in by_name[name]:
                lbl = ",".join(f'{k}="{esc(v)}"' for k, v in sorted(labels.items()) if k != "__name__")
                head = f"{name}{{{lbl}}}"
                lines = []
                for t, v in zip(ts.tolist(), vs.tolist(), strict=True):
                    if is_stale(v):
                        continue
                    lines.append(f"{head} {_om_value(v)} {t // 1000}.{t % 1000:03d}\n")
                count += len(lines)
                f.writelines(lines)
        f.write("# EOF\n")
    return count


def _om_value(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))
