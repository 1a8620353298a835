"""App-specific faults on the Astronomy Shop and Hotel Reservation: credentials, Kafka wiring,
Valkey memory, PostgreSQL resources, Consul discovery, wrong binary."""

from __future__ import annotations

import pytest
from faultkit import CONFIGMAPS, DEPLOYMENTS, SECRETS, SERVICES, Cluster, healed, make_twin


def test_valkey_changed_password(otel: Cluster) -> None:
    """ITBench 34: valkey-cart starts requiring a password cart does not have."""
    previous = otel.get(DEPLOYMENTS, "valkey-cart")["spec"]["template"]
    otel.create(
        SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "valkey-credentials"},
            "data": {"valkey-password": "aW52YWxpZF9wYXNzd29yZA=="},
        },
    )

    def require_pass(ct: dict) -> None:
        ct["command"] = ["valkey-server"]
        ct["args"] = ["--requirepass", "$(VALKEY_PASSWORD)"]
        ct["env"] = [
            {
                "name": "VALKEY_PASSWORD",
                "valueFrom": {"secretKeyRef": {"name": "valkey-credentials", "key": "valkey-password"}},
            }
        ]

    otel.container("valkey-cart", require_pass)
    otel.advance(90)
    assert otel.statuses("valkey-cart") == ["Running/Ready"] and otel.statuses("cart") == ["Running/Ready"]
    assert {"cart", "checkout", "frontend", "frontend-proxy"} <= otel.degraded()
    assert "NOAUTH Authentication required" in otel.messages("cart")
    assert "payment" not in otel.degraded() and otel.rate("payment") == 0, "no orders get as far as payment"
    otel.edit(DEPLOYMENTS, "valkey-cart", lambda d: d["spec"].__setitem__("template", previous))
    healed(otel, 400.0)


def test_valkey_out_of_memory(otel: Cluster) -> None:
    """ITBench 40: a script keeps storing 1 MiB values until the 20Mi limit OOM-kills valkey."""
    previous = otel.get(DEPLOYMENTS, "valkey-cart")["spec"]["template"]
    script = (
        "#!/bin/sh\n(sleep 20; for i in $(seq 1 10000); do head -c 1048576 /dev/urandom | "
        'valkey-cli -x SET largekey$i > /dev/null; sleep 1; done) &\nexec valkey-server "$@"\n'
    )
    otel.create(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "valkey-storage-script"},
            "data": {"fill_storage.sh": script},
        },
    )

    def fill(spec: dict) -> None:
        spec["volumes"] = [
            {"name": "scripts", "configMap": {"name": "valkey-storage-script", "defaultMode": 0o755}}
        ]
        spec["securityContext"] = {"fsGroup": 1000}
        ct = spec["containers"][0]
        ct["command"] = ["/bin/sh", "/data/scripts/fill_storage.sh"]
        ct["volumeMounts"] = [{"name": "scripts", "mountPath": "/data/scripts"}]

    otel.template("valkey-cart", fill)
    otel.advance(240)
    st = otel.pods("valkey-cart")[0]["status"]["containerStatuses"][0]
    assert st["restartCount"] >= 2
    assert (st.get("lastState", {}).get("terminated") or {}).get("reason") == "OOMKilled"
    assert {"cart", "checkout", "frontend"} <= otel.degraded_within(120), "errors while valkey is down"
    otel.edit(DEPLOYMENTS, "valkey-cart", lambda d: d["spec"].__setitem__("template", previous))
    otel.delete(CONFIGMAPS, "valkey-storage-script")
    healed(otel, 600)


def test_corrupted_postgres_secret_crash_loops_product_catalog(otel: Cluster) -> None:
    otel.set_secret("postgresql-credentials", "password", "q8v0r2m4z7x1c3n5b6k9j0h2")
    otel.advance(30)
    assert not otel.degraded()
    otel.restart_pods("product-catalog")
    otel.advance(120)
    st = otel.pods("product-catalog")[0]["status"]["containerStatuses"][0]
    assert st["restartCount"] >= 1
    assert "password authentication failed" in (st.get("lastState", {}).get("terminated") or {}).get(
        "message", ""
    )
    assert {"frontend", "frontend-proxy", "checkout", "recommendation"} <= otel.degraded()
    otel.set_secret("postgresql-credentials", "password", "otelp")
    otel.restart_pods("product-catalog")
    healed(otel, 400.0)


def test_corrupted_email_secret_fails_confirmations_only(otel: Cluster) -> None:
    """ITBench 63: checkout's confirmation call fails authentication; orders still succeed."""
    otel.set_secret("email-service-secret", "api-key", "3kd93hd7s1m0a8q2z6x4c9v5")
    otel.restart_pods("checkout")
    otel.advance(120)
    snap = otel.twin.health.at(otel.twin.now())
    e = next(e for e in snap.edges if (e.caller, e.callee) == ("checkout", "email"))
    assert e.error_ratio == 1.0 and any(s.kind == "auth_failed" for s in e.symptoms)
    assert otel.err("checkout") == 0.0 and otel.probe_ok()
    otel.set_secret("email-service-secret", "api-key", "em-4f1c9a7e2b")
    otel.restart_pods("checkout")
    otel.advance(120)
    snap = otel.twin.health.at(otel.twin.now())
    assert next(e for e in snap.edges if (e.caller, e.callee) == ("checkout", "email")).error_ratio == 0.0


@pytest.mark.parametrize(
    ("deploy", "var", "bad", "good", "broken"),
    [
        (
            "shipping",
            "QUOTE_ADDR",
            "quote:0000",
            "http://quote:8080",
            {"shipping", "checkout", "frontend", "frontend-proxy"},
        ),
        ("checkout", "KAFKA_ADDR", "kafka:9999", "kafka:9092", {"frontend", "frontend-proxy"}),
    ],
    ids=["ITB16-quote-addr", "ITB24-kafka-addr"],
)
def test_modified_env_var(
    otel: Cluster, deploy: str, var: str, bad: str, good: str, broken: set[str]
) -> None:
    def setenv(value: str):  # noqa: ANN202
        def fn(ct: dict) -> None:
            for e in ct["env"]:
                if e["name"] == var:
                    e["value"] = value

        return fn

    otel.container(deploy, setenv(bad))
    otel.advance(180)
    assert broken <= otel.degraded()
    if var == "QUOTE_ADDR":
        assert otel.rate("quote") == 0 and otel.rate("payment") == 0
    else:
        st = otel.pods("checkout")[0]["status"]["containerStatuses"][0]
        assert st["restartCount"] >= 1, "checkout crashes on its nil Kafka producer"
        assert otel.rate("accounting") == 0 and otel.rate("fraud-detection") == 0
    otel.container(deploy, setenv(good))
    healed(otel, 400.0)


def test_insufficient_postgres_resources(otel: Cluster) -> None:
    """ITBench 46: limits = requests = 5m CPU / 5Mi memory on postgresql (a Recreate rollout here)."""
    previous = otel.get(DEPLOYMENTS, "postgresql")["spec"]["template"]
    otel.recreate_strategy("postgresql")
    otel.container(
        "postgresql",
        lambda ct: ct.__setitem__(
            "resources",
            {"limits": {"cpu": "5m", "memory": "5Mi"}, "requests": {"cpu": "5m", "memory": "5Mi"}},
        ),
    )
    otel.advance(180)
    st = otel.pods("postgresql")[0]["status"]["containerStatuses"][0]
    assert (st.get("lastState", {}).get("terminated") or st["state"].get("terminated") or {}).get(
        "reason"
    ) == "OOMKilled"
    assert {
        "product-catalog",
        "product-reviews",
        "frontend",
        "frontend-proxy",
        "checkout",
    } <= otel.degraded_within(120)
    otel.edit(DEPLOYMENTS, "postgresql", lambda d: d["spec"].__setitem__("template", previous))
    healed(otel, 600)


def test_accounting_scaled_to_zero_leaves_its_consumer_group_empty(otel: Cluster) -> None:
    otel.scale("accounting", 0)
    otel.advance(120)
    gauges = {g[0]: g[2] for g in otel.health()["accounting"].extra_gauges}
    assert gauges["kafka_consumer_group_members"] == 0
    assert gauges["kafka_consumer_group_lag"] > 30
    assert otel.rate("accounting") == 0 and otel.rate("fraud-detection") > 0
    assert not otel.degraded(), "nothing upstream notices a missing consumer"
    otel.scale("accounting", 1)
    otel.advance(300)
    gauges = {g[0]: g[2] for g in otel.health()["accounting"].extra_gauges}
    assert gauges["kafka_consumer_group_lag"] == 0, "the group catches up"


@pytest.fixture(scope="module")
def hotel_twin():  # noqa: ANN201
    tw = make_twin("hotel-reservation", settle=240.0)
    yield tw
    tw.close()


@pytest.fixture
def hotel(hotel_twin) -> Cluster:  # noqa: ANN001
    c = Cluster(hotel_twin)
    assert c.probe_ok() and not c.degraded()
    return c


def _restore_service(hotel: Cluster, original: dict) -> None:
    """Create the deleted Service again from its saved copy (the API server gives it a new clusterIP)."""
    hotel.create(
        SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": original["metadata"]["name"]},
            "spec": {k: v for k, v in original["spec"].items() if k != "clusterIP"},
        },
    )


def test_hotel_service_faults_do_not_break_consul_discovery(hotel: Cluster) -> None:
    """gRPC between hotel services goes to Consul-registered pod IPs, not Kubernetes Services."""
    original = hotel.get(SERVICES, "geo")
    hotel.delete(SERVICES, "geo")
    hotel.advance(30)
    assert not hotel.degraded()
    _restore_service(hotel, original)


def test_hotel_mongodb_service_deleted_crash_loops_its_user(hotel: Cluster) -> None:
    original = hotel.get(SERVICES, "mongodb-rate")
    hotel.delete(SERVICES, "mongodb-rate")
    hotel.restart_pods("rate")
    hotel.advance(120)
    assert {"search", "frontend"} <= hotel.degraded()
    assert hotel.statuses("rate")[0] in ("CrashLoopBackOff", "Error")
    _restore_service(hotel, original)
    healed(hotel, 400.0)


def test_hotel_wrong_binary_usage(hotel: Cluster) -> None:
    """AIOpsLab wrong_bin_usage: profile runs the geo binary; Running/Ready but srv-profile is empty."""
    hotel.container("profile", lambda ct: ct.__setitem__("command", ["geo"]))
    hotel.advance(120)
    assert hotel.statuses("profile") == ["Running/Ready"]
    assert {"frontend"} <= hotel.degraded()
    assert hotel.rate("profile") == 0
    hotel.container("profile", lambda ct: ct.__setitem__("command", ["profile"]))
    healed(hotel, 400.0)


def test_hotel_consul_down_breaks_all_grpc(hotel: Cluster) -> None:
    hotel.scale("consul", 0)
    hotel.advance(60)
    assert hotel.degraded() == {"frontend"}
    assert hotel.rate("search") == 0
    hotel.scale("consul", 1)
    healed(hotel, 120)


def test_hotel_buggy_image_crash_loops_geo(hotel: Cluster) -> None:
    """AIOpsLab misconfig_app_hotel_res: geo's image set to a buggy build."""
    hotel.container("geo", lambda ct: ct.__setitem__("image", "yinfangchen/geo:app3"))
    hotel.advance(120)
    bad = [p for p in hotel.pods("geo") if p["spec"]["containers"][0]["image"].endswith(":app3")]
    st = bad[0]["status"]["containerStatuses"][0]
    assert st["restartCount"] >= 1
    assert "index out of range" in (st.get("lastState", {}).get("terminated") or {}).get("message", "")
    assert {"search", "frontend"} <= hotel.degraded_within(120)
    assert "recommendation" not in hotel.degraded_within(120)
    hotel.container("geo", lambda ct: ct.__setitem__("image", "yinfangchen/hotelreservation:latest"))
    healed(hotel, 400.0)


def test_hotel_network_policy_applies_to_consul_routed_grpc(hotel: Cluster) -> None:
    from faultkit import NETPOLS

    hotel.create(
        NETPOLS,
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "user-deny"},
            "spec": {
                "podSelector": {"matchLabels": {"io.kompose.service": "user"}},
                "policyTypes": ["Ingress"],
            },
        },
    )
    hotel.advance(30)
    assert hotel.err("frontend", "HTTP POST /user") == 1.0
    assert "deadline_exceeded" in hotel.symptoms("frontend")
    assert hotel.err("frontend", "HTTP GET /hotels") == 0.0
    hotel.delete(NETPOLS, "user-deny")
    healed(hotel, 60)


def test_oomkilled_jvm_logs_show_startup_then_the_oom(otel: Cluster) -> None:
    """Issue 11: an OOMKilled JVM (ad with a 20Mi limit) has logs, as the kubelet keeps them: the
    current container (or, while it waits in CrashLoopBackOff, the last one) and ``--previous`` show
    its start-up line and then the OutOfMemoryError."""
    previous = otel.get(DEPLOYMENTS, "ad")["spec"]["template"]
    otel.container(
        "ad", lambda ct: ct.setdefault("resources", {}).setdefault("limits", {}).update(memory="20Mi")
    )
    otel.advance(120)
    pod = otel.pods("ad")[0]
    cs = pod["status"]["containerStatuses"][0]
    assert cs["lastState"]["terminated"]["reason"] == "OOMKilled" and cs["restartCount"] >= 2
    name = pod["metadata"]["name"]
    for prev in (False, True):
        lines = otel.twin.logs.pod_log("otel-demo", name, "ad", previous=prev).splitlines()
        assert len(lines) >= 2, (prev, lines)
        assert "started" in lines[0] and "java.lang.OutOfMemoryError" in lines[-1], (prev, lines)
    otel.edit(DEPLOYMENTS, "ad", lambda d: d["spec"].__setitem__("template", previous))
    healed(otel, 600)
