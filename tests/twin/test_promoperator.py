"""The Prometheus Operator's PrometheusRules in the twin (twin/addons/promoperator): rules kept as
Kubernetes objects are loaded into the twin's Prometheus, reloaded when edited, unloaded when
deleted, and an invalid one is refused by the operator's validating webhook — through the real
kubectl."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.kubectl_cluster import KUBECTL, KubectlCluster

from itbench_agents.core.endpoints import kubeconfig_yaml
from itbench_agents.twin.httpserver import HttpEndpoint
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.server import make_kube_handler

pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl binary not installed")

RULE = """
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: team-alerts
  namespace: shop
spec:
  groups:
  - name: team
    interval: 30s
    rules:
    - alert: AlwaysOn
      expr: vector(1) > {threshold}
      for: 1m
      labels:
        severity: warning
    - record: job:always:sum
      expr: vector(1)
"""


class Cluster(KubectlCluster):
    twin: Twin

    def firing(self) -> set[str]:
        return {a.name for a in self.twin.alerts.firing(self.twin.now())}

    def rule_files(self) -> dict[str, list[str]]:
        return {g["file"]: [r["name"] for r in g["rules"]] for g in self.twin.alerts.rules(self.twin.now())}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    twin = Twin(seed=1)
    twin.install_addon("prometheus-operator")
    twin.install_observability()
    ep = HttpEndpoint(make_kube_handler(twin)).start()
    kc = tmp_path / "kubeconfig"
    kc.write_text(kubeconfig_yaml(ep.url))
    c = Cluster(twin, kc)
    c.kubectl("create", "namespace", "shop")
    try:
        yield c
    finally:
        ep.stop()


def test_a_rule_object_is_loaded_as_the_operator_names_its_file(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=RULE.format(threshold=0))
    listed = json.loads(cluster.kubectl("get", "promrule", "-n", "shop", "-o", "json").stdout)["items"]
    assert [o["metadata"]["name"] for o in listed] == ["team-alerts"]
    uid = listed[0]["metadata"]["uid"]
    files = cluster.rule_files()
    path = f"/etc/prometheus/rules/prometheus-k8s-rulefiles-0/shop-team-alerts-{uid}.yaml"
    assert files[path] == ["AlwaysOn"]  # the recording rule is kept in the object, not evaluated
    cluster.twin.advance(45)
    assert "AlwaysOn" not in cluster.firing()  # pending: for 1m
    cluster.twin.advance(60)
    assert "AlwaysOn" in cluster.firing()


def test_an_edit_reloads_the_rule_and_a_deletion_unloads_it(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=RULE.format(threshold=0))
    cluster.twin.advance(120)
    assert "AlwaysOn" in cluster.firing()
    cluster.kubectl("apply", "-f", "-", stdin=RULE.format(threshold=5))  # the threshold raised
    cluster.twin.advance(60)
    assert "AlwaysOn" not in cluster.firing()
    cluster.kubectl("apply", "-f", "-", stdin=RULE.format(threshold=0))
    cluster.kubectl("delete", "promrule", "team-alerts", "-n", "shop")
    cluster.twin.advance(120)
    assert "AlwaysOn" not in cluster.firing()
    assert not any("team-alerts" in f for f in cluster.rule_files())


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("vector(1) >", "parse error"),
        ("rate(x[5m]", "unclosed"),
    ],
)
def test_the_operators_webhook_refuses_a_rule_prometheus_cannot_load(
    cluster: Cluster, bad: str, says: str
) -> None:
    text = RULE.format(threshold=0).replace("vector(1) > 0", bad)
    res = cluster.kubectl("apply", "-f", "-", stdin=text, check=False)
    assert res.returncode != 0
    assert (
        'admission webhook "prometheusrulevalidate.monitoring.coreos.com" denied the request: Rules are not valid'
        in res.stderr
    ), res.stderr
    assert says in res.stderr.lower(), res.stderr
    assert cluster.kubectl("get", "promrule", "-n", "shop", "-o", "name").stdout.strip() == ""


def test_a_rule_with_neither_alert_nor_record_is_refused(cluster: Cluster) -> None:
    text = RULE.format(threshold=0).replace("    - record: job:always:sum\n", "    - expr2: x\n")
    res = cluster.kubectl("apply", "-f", "-", stdin=text, check=False)
    assert res.returncode != 0 and "one of 'record' or 'alert' must be set" in res.stderr, res.stderr
