"""App-model loading: the shipped apps load; malformed files fail with file, line, field and what
was expected."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from itbench_agents.paths import scenarios_dir
from itbench_agents.twin.app.loader import AppLoadError, load_app

APPS = ["chain", "otel-demo", "hotel-reservation"]


@pytest.mark.parametrize("app", APPS)
def test_shipped_apps_load(app: str) -> None:
    model = load_app(app)
    assert model.id == app
    kinds = {m["kind"] for m in model.manifests}
    assert {"Deployment", "Service"} <= kinds
    for m in model.manifests:
        if m["kind"] not in ("Namespace", "StorageClass", "PersistentVolume"):
            assert m["metadata"]["namespace"] == model.namespace
    deployments = {m["metadata"]["name"] for m in model.manifests if m["kind"] == "Deployment"}
    for name, svc in model.behaviour.services.items():
        if not svc.external:
            assert (svc.workload or name) in deployments, name


def test_otel_demo_has_every_service_of_the_issue() -> None:
    model = load_app("otel-demo")
    expected = {
        "frontend", "frontend-proxy", "ad", "cart", "checkout", "currency", "email", "payment", "product-catalog",
        "quote", "recommendation", "shipping", "accounting", "fraud-detection", "image-provider", "load-generator",
        "flagd", "kafka", "valkey-cart", "postgresql", "otel-collector",
    }  # fmt: skip
    assert expected <= set(model.behaviour.services)
    assert model.namespace == "otel-demo"
    cm = next(
        m for m in model.manifests if m["kind"] == "ConfigMap" and m["metadata"]["name"] == "flagd-config"
    )
    assert '"paymentFailure"' in cm["data"]["demo.flagd.json"]
    checkout = next(
        m for m in model.manifests if m["kind"] == "Deployment" and m["metadata"]["name"] == "checkout"
    )
    env = {e["name"] for e in checkout["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert {"CART_ADDR", "PAYMENT_ADDR", "KAFKA_ADDR", "SHIPPING_ADDR", "EMAIL_ADDR"} <= env


def test_load_app_returns_independent_copies() -> None:
    a = load_app("chain")
    a.manifests[0]["metadata"]["name"] = "changed"
    assert load_app("chain").manifests[0]["metadata"]["name"] != "changed"


def test_unknown_app_lists_known_ids() -> None:
    with pytest.raises(AppLoadError, match="known app ids: .*otel-demo"):
        load_app("no-such-app")


@pytest.fixture
def chain_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "myapp"
    shutil.copytree(scenarios_dir() / "apps" / "chain", dst)
    return dst


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_users_own_folder_loads(chain_copy: Path) -> None:
    _replace(chain_copy / "app.yaml", "id: chain", "id: myapp")
    assert load_app(chain_copy).id == "myapp"


@pytest.mark.parametrize(
    ("file", "old", "new", "field", "line", "says"),
    [
        (
            "behaviour.yaml",
            "    language: go\n    listens",
            "    langauge: go\n    listens",
            "services.a.langauge",
            9,
            "unknown field",
        ),
        (
            "behaviour.yaml",
            "latency_ms: {p50: 4, p95: 12}",
            "latency_ms: {p50: fast, p95: 12}",
            "services.a.operations.GET /work.latency_ms.p50",
            15,
            "valid number",
        ),
        (
            "behaviour.yaml",
            "latency_ms: {p50: 4, p95: 12}",
            "latency_ms: {p50: 40, p95: 12}",
            "services.a.operations.GET /work.latency_ms",
            15,
            "p95 must be >= p50",
        ),
        ("behaviour.yaml", "rate: 5}", "rate: -5}", "load.calls.0.rate", 57, "greater than or equal to 0"),
        (
            "behaviour.yaml",
            'resources: {cpu: 10m, memory: 40Mi}\n    operations:\n      "GET /work"',
            'resources: {cpu: lots, memory: 40Mi}\n    operations:\n      "GET /work"',
            "services.a.resources.cpu",
            12,
            "Kubernetes quantity",
        ),
        ("app.yaml", "namespace: chain", "namespace: Chain_NS", "namespace", 3, "should match pattern"),
        ("app.yaml", "manifests:\n  - manifests\n", "", "manifests", None, "field required"),
    ],
    ids=[
        "unknown-field",
        "bad-number",
        "p95-below-p50",
        "negative-rate",
        "bad-quantity",
        "bad-namespace",
        "missing-manifests",
    ],
)
def test_malformed_files_name_file_line_and_field(
    chain_copy: Path, file: str, old: str, new: str, field: str, line: int | None, says: str
) -> None:
    _replace(chain_copy / file, old, new)
    with pytest.raises(AppLoadError) as err:
        load_app(chain_copy)
    e = err.value
    assert Path(e.file).name == file
    assert e.field == field
    if line is not None:
        assert e.line == line
    assert says in str(e)
    assert f"{file}:" in str(e)


def test_dangling_call_reference_is_reported(chain_copy: Path) -> None:
    _replace(
        chain_copy / "behaviour.yaml", '{to: c, op: "GET /leaf", n: 2}', '{to: d, op: "GET /leaf", n: 2}'
    )
    with pytest.raises(AppLoadError, match="unknown service 'd'"):
        load_app(chain_copy)


def test_invalid_yaml_names_the_line(chain_copy: Path) -> None:
    _replace(chain_copy / "behaviour.yaml", "load:\n", "load: [\n")
    with pytest.raises(AppLoadError, match="invalid YAML") as err:
        load_app(chain_copy)
    assert err.value.line is not None and err.value.line >= 54


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        (
            "kind: Deployment\nmetadata:\n  name: b",
            "kind: Deployment\nmetadata:\n  labelz: {}",
            "metadata.name",
        ),
        (
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: c",
            "apiVersion: v1\nmetadata:\n  name: c",
            "kind",
        ),
        (
            "metadata:\n  name: c\n  labels",
            "metadata:\n  name: c\n  namespace: other\n  labels",
            "metadata.namespace",
        ),
    ],
    ids=["missing-name", "missing-kind", "foreign-namespace"],
)
def test_malformed_manifests(chain_copy: Path, old: str, new: str, field: str) -> None:
    _replace(chain_copy / "manifests" / "chain.yaml", old, new)
    with pytest.raises(AppLoadError) as err:
        load_app(chain_copy)
    assert err.value.field == field
    assert Path(err.value.file).name == "chain.yaml"
    assert err.value.line is not None
