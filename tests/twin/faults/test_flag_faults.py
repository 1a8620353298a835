"""Every flagd feature flag of the Astronomy Shop, injected as ITBench does it: set the flag's
``defaultVariant`` in ConfigMap ``flagd-config`` and restart flagd. The fix is the reverse."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from faultkit import CONFIGMAPS, Cluster

PC = "oteldemo.ProductCatalogService/GetProduct"


def set_flag(c: Cluster, flag: str, variant: str, restart: bool = True) -> None:
    def fn(cm: dict) -> None:
        doc = json.loads(cm["data"]["demo.flagd.json"])
        doc["flags"][flag]["defaultVariant"] = variant
        cm["data"]["demo.flagd.json"] = json.dumps(doc, indent=2)

    c.edit(CONFIGMAPS, "flagd-config", fn)
    if restart:
        c.restart_pods("flagd")


def edge(c: Cluster, caller: str, callee: str, op: str):  # noqa: ANN201
    snap = c.twin.health.at(c.twin.now())
    return next(e for e in snap.edges if (e.caller, e.callee, e.operation) == (caller, callee, op))


def check_ad_failure(c: Cluster) -> None:
    assert c.err("ad") == pytest.approx(0.1)
    assert {"ad", "frontend", "frontend-proxy"} <= c.degraded()
    assert "GetAds Failed" in c.messages("ad")


def check_ad_high_cpu(c: Cluster) -> None:
    assert c.p50("ad", "oteldemo.AdService/GetAds") > 1000
    assert c.health()["ad"].cpu_cores_per_pod == pytest.approx(0.15), "pegged at the 150m CPU limit"
    assert "high_cpu" in c.symptoms("ad")


def check_ad_manual_gc(c: Cluster) -> None:
    assert c.p50("ad", "oteldemo.AdService/GetAds") > 2000
    assert c.p50("frontend-proxy", "GET /api/data") > 2000, "latency adds up the path"
    assert "gc_pause" in c.symptoms("ad")


def check_cart_failure(c: Cluster) -> None:
    assert c.err("cart", "oteldemo.CartService/EmptyCart") == 1.0
    assert edge(c, "checkout", "cart", "oteldemo.CartService/EmptyCart").error_ratio == 1.0
    assert c.err("checkout") == 0.0, "EmptyCart errors are ignored by PlaceOrder"


def check_payment_failure(c: Cluster) -> None:
    assert c.err("payment") == pytest.approx(0.5)
    assert c.err("checkout") == pytest.approx(0.5)
    assert {"payment", "checkout", "frontend", "frontend-proxy"} <= c.degraded()
    assert c.rate("email") == pytest.approx(0.55 * 0.5, rel=0.01), "no confirmation for failed charges"
    assert "Invalid token" in c.messages("payment")


def check_payment_unreachable(c: Cluster) -> None:
    assert c.rate("payment") == 0.0
    assert c.err("checkout") == 1.0
    assert c.rate("email") == 0.0 and c.rate("shipping", "POST /ship-order") == 0.0
    assert "dns_no_such_host" in c.symptoms("checkout")


def check_product_catalog_failure(c: Cluster) -> None:
    assert c.err("product-catalog", PC) == pytest.approx(0.1)
    assert {"product-catalog", "frontend", "frontend-proxy", "checkout"} <= c.degraded()
    assert "Product Catalog Fail Feature Flag Enabled" in c.messages("product-catalog")


def check_recommendation_cache_failure(c: Cluster) -> None:
    mem = c.health()["recommendation"].memory_bytes_per_pod
    c.advance(60)
    assert c.health()["recommendation"].memory_bytes_per_pod > mem + 5e6, "the cache leaks ~170 kB/s"
    assert c.err("recommendation") == pytest.approx(0.5)
    assert {"recommendation", "frontend", "frontend-proxy"} <= c.degraded()
    assert "checkout" not in c.degraded()


def check_kafka_queue_problems(c: Cluster) -> None:
    gauges = dict((g[0] + dict(g[1])["group"], g[2]) for g in c.health()["fraud-detection"].extra_gauges)
    lag1 = gauges["kafka_consumer_group_lagfraud-detection"]
    c.advance(60)
    gauges = dict((g[0] + dict(g[1])["group"], g[2]) for g in c.health()["fraud-detection"].extra_gauges)
    assert gauges["kafka_consumer_group_lagfraud-detection"] > lag1 + 1000, "lag grows ~55 records/s"
    assert c.err("accounting") > 0.9
    assert "kafka_consumer_lag" in c.symptoms("fraud-detection")


def check_image_slow_load(c: Cluster) -> None:
    assert c.p50("frontend-proxy", "GET /images/{file}") >= 10000
    assert not c.degraded()


def check_flood(c: Cluster) -> None:
    assert c.rate("frontend-proxy", "GET /") > 100
    assert {"frontend", "frontend-proxy"} <= c.degraded()
    assert "overloaded" in c.symptoms("frontend")


def check_email_leak(c: Cluster) -> None:
    c.advance(300)
    st = c.pods("email")[0]["status"]["containerStatuses"][0]
    assert st["restartCount"] >= 1
    assert (st.get("lastState", {}).get("terminated") or {}).get("reason") == "OOMKilled"


def check_llm_rate_limit(c: Cluster) -> None:
    e = edge(c, "product-reviews", "llm", "POST /v1/chat/completions")
    assert e.error_ratio == pytest.approx(0.5)
    assert c.err("product-reviews") == 0.0 and c.err("frontend") == 0.0


def check_llm_inaccurate(c: Cluster) -> None:
    assert not c.degraded()
    assert "inaccurate_response" in c.symptoms("product-reviews")


FLAGS: list[tuple[str, str, Callable[[Cluster], None]]] = [
    ("adFailure", "on", check_ad_failure),
    ("adHighCpu", "on", check_ad_high_cpu),
    ("adManualGc", "on", check_ad_manual_gc),
    ("cartFailure", "on", check_cart_failure),
    ("paymentFailure", "50%", check_payment_failure),
    ("paymentUnreachable", "on", check_payment_unreachable),
    ("productCatalogFailure", "on", check_product_catalog_failure),
    ("recommendationCacheFailure", "on", check_recommendation_cache_failure),
    ("kafkaQueueProblems", "on", check_kafka_queue_problems),
    ("imageSlowLoad", "10sec", check_image_slow_load),
    ("loadGeneratorFloodHomepage", "on", check_flood),
    ("emailMemoryLeak", "1000x", check_email_leak),
    ("llmRateLimitError", "on", check_llm_rate_limit),
    ("llmInaccurateResponse", "on", check_llm_inaccurate),
]


@pytest.mark.parametrize(("flag", "variant", "check"), FLAGS, ids=[f[0] for f in FLAGS])
@pytest.mark.slow
def test_flag(otel: Cluster, flag: str, variant: str, check: Callable[[Cluster], None]) -> None:
    set_flag(otel, flag, variant)
    otel.advance(60)
    check(otel)
    set_flag(otel, flag, "off")
    otel.advance(400)
    assert not otel.degraded(), {s: otel.messages(s) for s in otel.degraded()}
    assert otel.probe_ok(), otel.twin.behaviour.probe()


def test_flag_edit_without_flagd_restart_has_no_effect(otel: Cluster) -> None:
    """flagd serves the copy its init container made at pod start (ITBench restarts flagd)."""
    set_flag(otel, "paymentFailure", "100%", restart=False)
    otel.advance(60)
    assert not otel.degraded()
    otel.restart_pods("flagd")
    otel.advance(60)
    assert otel.err("payment") == 1.0
    assert not otel.probe_ok()
    otel.restart_pods("payment")  # restarting the target alone is no fix
    otel.advance(60)
    assert otel.err("payment") == 1.0
    set_flag(otel, "paymentFailure", "off")
    otel.advance(60)
    assert otel.probe_ok() and not otel.degraded()


def test_failed_readiness_probe_flag_needs_a_grpc_probe(otel: Cluster) -> None:
    set_flag(otel, "failedReadinessProbe", "on")
    otel.advance(60)
    assert not otel.degraded(), "no probe, no effect"
    otel.recreate_strategy("cart")
    otel.container(
        "cart", lambda ct: ct.__setitem__("readinessProbe", {"grpc": {"port": 8080}, "periodSeconds": 5})
    )
    otel.advance(120)
    assert otel.statuses("cart") == ["Running/NotReady"]
    assert any('service unhealthy (responded with "NOT_SERVING")' in m for m in otel.events("Unhealthy"))
    assert {"frontend", "checkout"} <= otel.degraded()
    set_flag(otel, "failedReadinessProbe", "off")
    otel.advance(120)
    assert otel.statuses("cart") == ["Running/Ready"]
    otel.container("cart", lambda ct: ct.pop("readinessProbe"))
    otel.advance(400)
    assert otel.probe_ok() and not otel.degraded()


def test_flag_file_with_unknown_variant_is_rejected(otel: Cluster) -> None:
    cm = otel.get(CONFIGMAPS, "flagd-config")
    doc = json.loads(cm["data"]["demo.flagd.json"])
    doc["flags"]["adFailure"]["defaultVariant"] = "sometimes"
    bad = {**cm, "data": {"demo.flagd.json": json.dumps(doc)}}
    causes = [c for check in otel.twin.validators[CONFIGMAPS] for c in check(bad)]
    assert causes and causes[0][0] == "data[demo.flagd.json]"
    assert "'sometimes' is not one of its variants" in causes[0][2]
    broken = {**cm, "data": {"demo.flagd.json": "{not json"}}
    causes = [c for check in otel.twin.validators[CONFIGMAPS] for c in check(broken)]
    assert causes and "invalid JSON" in causes[0][2]
    assert [c for check in otel.twin.validators[CONFIGMAPS] for c in check(cm)] == []


def test_leaked_memory_stays_until_the_container_restarts(otel: Cluster) -> None:
    base = otel.health()["recommendation"].memory_bytes_per_pod
    set_flag(otel, "recommendationCacheFailure", "on")
    otel.advance(120)
    leaked = otel.health()["recommendation"].memory_bytes_per_pod
    assert leaked > base + 10e6
    set_flag(otel, "recommendationCacheFailure", "off")
    otel.advance(60)
    after_off = otel.health()["recommendation"].memory_bytes_per_pod
    assert after_off >= leaked, "turning the flag off stops the growth but frees nothing"
    otel.advance(60)
    assert otel.health()["recommendation"].memory_bytes_per_pod == pytest.approx(after_off, rel=1e-3)
    pod = otel.pods("recommendation")[0]
    usage = otel.twin.runtime.usage(pod, pod["spec"]["containers"][0], otel.twin.now())
    assert usage.memory_bytes == pytest.approx(after_off, rel=0.01)
    otel.restart_pods("recommendation")
    otel.advance(60)
    baseline = otel.twin.app.behaviour.services["recommendation"].resources.memory
    assert otel.health()["recommendation"].memory_bytes_per_pod == pytest.approx(baseline), (
        "a restart frees it"
    )


def test_traffic_follows_the_load_generators_users(otel: Cluster) -> None:
    """LOCUST_USERS sets the load: twenty times the users overload the single frontend pod
    (120 req/s), a second frontend pod absorbs it, and the usual users bring the usual rate back."""

    def users(n: str) -> Callable[[dict], None]:
        def fn(container: dict) -> None:
            for e in container["env"]:
                if e["name"] == "LOCUST_USERS":
                    e["value"] = n

        return fn

    base = otel.rate("frontend-proxy")
    otel.container("load-generator", users("1000"))
    otel.advance(120)
    assert otel.rate("frontend-proxy") == pytest.approx(20 * base, rel=0.05)
    assert "frontend" in otel.degraded() and "overloaded" in otel.symptoms("frontend")
    otel.scale("frontend", 2)
    otel.advance(120)
    assert "frontend" not in otel.degraded()
    otel.scale("frontend", 1)
    otel.container("load-generator", users("50"))
    otel.advance(400)
    assert otel.rate("frontend-proxy") == pytest.approx(base, rel=0.05)
    assert not otel.degraded() and otel.probe_ok()


def test_usage_stamp_is_withheld_while_a_container_leaks(otel: Cluster) -> None:
    """A steady HPA is skipped only while the behaviour model promises usage that does not move
    with time alone (``usage_stamp``, read by twin/controllers/hpa.py): a number on the healthy
    shop, None while email leaks memory, a number again once the leak is off."""
    behaviour = otel.twin.behaviour
    before = behaviour.usage_stamp()
    assert isinstance(before, int)
    set_flag(otel, "emailMemoryLeak", "1000x")
    otel.advance(60)
    assert behaviour.usage_stamp() is None
    set_flag(otel, "emailMemoryLeak", "off")
    otel.advance(400)
    after = behaviour.usage_stamp()
    assert isinstance(after, int) and after != before
    assert not otel.degraded()
