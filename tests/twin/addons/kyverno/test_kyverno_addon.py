"""Kyverno as the twin's first addon (issue 28, slice 2): its CRDs and columns, the policy webhook's
refusals, Enforce admission, and the PolicyReports its reports controller keeps, driven through the
real kubectl and the API — what a CISO agent and the CISO scorer will see."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.kubectl_cluster import KUBECTL, KubectlCluster

from itbench_agents.core.endpoints import kubeconfig_yaml
from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.httpserver import HttpEndpoint
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.server import make_kube_handler

pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl binary not installed")
REPORTS = GroupResource("wgpolicyk8s.io", "policyreports")

NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: paa}\n"
WORKLOAD = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: paa}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      hostNetwork: %s
      containers: [{name: nginx, image: "nginx:1.25"}]
"""
POLICY = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: disallow-host-namespaces
  annotations: {policies.kyverno.io/category: Pod Security Standards (Baseline), policies.kyverno.io/severity: medium}
spec:
  validationFailureAction: %s
  rules:
  - name: host-namespaces
    match:
      any:
      - resources: {kinds: [Pod]}
    validate:
      message: Sharing the host namespaces is disallowed.
      pattern:
        spec:
          =(hostNetwork): "false"
"""


class Cluster(KubectlCluster):
    twin: Twin

    def reports(self) -> list[dict[str, Any]]:
        self.twin.sync()
        return list(json.loads(self.kubectl("get", "polr", "-A", "-o", "json").stdout)["items"])

    def report_for(self, kind: str, name: str) -> dict[str, Any] | None:
        found = [r for r in self.reports() if r["scope"]["kind"] == kind and r["scope"]["name"] == name]
        assert len(found) <= 1, found
        return found[0] if found else None


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    twin = Twin(seed=1)
    twin.install_addon("kyverno")
    twin.advance(30)  # Kyverno's pods start, as after its Helm install
    ep = HttpEndpoint(make_kube_handler(twin)).start()
    kc = tmp_path / "kubeconfig"
    kc.write_text(kubeconfig_yaml(ep.url))
    c = Cluster(twin, kc)
    c.apply(NAMESPACE)
    try:
        yield c
    finally:
        ep.stop()


def test_crds_columns_and_ready_policy(cluster: Cluster) -> None:
    out = cluster.kubectl("api-resources", "--api-group=kyverno.io").stdout
    assert "cpol" in out and "polex" in out and "ClusterPolicy" in out
    cluster.apply(POLICY % "Audit")
    cluster.twin.sync()
    got = cluster.kubectl("get", "cpol").stdout.splitlines()
    assert got[0].split() == ["NAME", "ADMISSION", "BACKGROUND", "READY", "AGE", "MESSAGE"]
    assert got[1].split()[:4] == ["disallow-host-namespaces", "true", "true", "True"] and got[1].endswith(
        "Ready"
    )
    stored = json.loads(cluster.kubectl("get", "cpol", "disallow-host-namespaces", "-o", "json").stdout)
    assert stored["spec"]["background"] is True and stored["spec"]["admission"] is True  # CRD defaults
    assert stored["status"]["rulecount"]["validate"] == 1
    assert [r["name"] for r in stored["status"]["autogen"]["rules"]] == [
        "autogen-host-namespaces",
        "autogen-cronjob-host-namespaces",
    ]


def test_audit_policy_reports_the_violating_workload_and_its_pod(cluster: Cluster) -> None:
    cluster.apply(WORKLOAD % "true")
    cluster.apply(POLICY % "Audit")
    header = cluster.kubectl("get", "polr", "-A").stdout.splitlines()[0].split()
    assert header == ["NAMESPACE", "NAME", "KIND", "NAME", "PASS", "FAIL", "WARN", "ERROR", "SKIP", "AGE"]
    deploy = cluster.report_for("Deployment", "web")
    assert deploy is not None and deploy["summary"]["fail"] == 1
    uid = json.loads(cluster.kubectl("-n", "paa", "get", "deploy", "web", "-o", "json").stdout)["metadata"][
        "uid"
    ]
    assert deploy["metadata"]["name"] == uid and deploy["scope"]["uid"] == uid
    assert deploy["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kyverno"}
    (result,) = deploy["results"]
    assert result["policy"] == "disallow-host-namespaces" and result["rule"] == "autogen-host-namespaces"
    assert result["message"] == (
        "validation error: Sharing the host namespaces is disallowed. rule autogen-host-namespaces failed at "
        "path /spec/template/spec/hostNetwork/"
    )
    assert result["category"] == "Pod Security Standards (Baseline)" and result["severity"] == "medium"
    pod = next(r for r in cluster.reports() if r["scope"]["kind"] == "Pod")
    assert pod["results"][0]["message"].endswith("rule host-namespaces failed at path /spec/hostNetwork/")


def test_reports_follow_changes_to_workload_and_policy(cluster: Cluster) -> None:
    cluster.apply(POLICY % "Audit")
    cluster.apply(WORKLOAD % "true")
    assert cluster.report_for("Deployment", "web")["summary"]["fail"] == 1  # type: ignore[index]
    cluster.apply(WORKLOAD % "false")  # the fix flips the report to pass
    report = cluster.report_for("Deployment", "web")
    assert report is not None and report["summary"] == {
        "pass": 1,
        "fail": 0,
        "warn": 0,
        "error": 0,
        "skip": 0,
    }
    cluster.kubectl("-n", "paa", "delete", "deploy", "web")
    assert cluster.report_for("Deployment", "web") is None  # gone with its resource
    cluster.apply(WORKLOAD % "true")
    assert cluster.report_for("Deployment", "web") is not None
    cluster.kubectl("delete", "cpol", "disallow-host-namespaces")
    assert cluster.reports() == []  # no policy, no results


def test_enforce_blocks_with_kyvernos_message_and_audit_does_not(cluster: Cluster) -> None:
    cluster.apply(POLICY % "Enforce")
    res = cluster.apply(WORKLOAD % "true", check=False)
    assert res.returncode == 1
    assert 'admission webhook "validate.kyverno.svc-fail" denied the request:' in res.stderr
    assert "resource Deployment/paa/web was blocked due to the following policies" in res.stderr
    text = res.stderr.split("following policies", 1)[1]
    blocked = yaml.safe_load(text)
    assert blocked == {
        "disallow-host-namespaces": {
            "autogen-host-namespaces": "validation error: Sharing the host namespaces is disallowed. rule "
            "autogen-host-namespaces failed at path /spec/template/spec/hostNetwork/"
        }
    }
    run = cluster.kubectl(
        "-n", "paa", "run", "x", "--image=nginx", "--overrides", '{"spec":{"hostNetwork":true}}', check=False
    )
    assert run.returncode == 1 and "resource Pod/paa/x was blocked" in run.stderr
    assert cluster.apply(WORKLOAD % "false").returncode == 0  # compliant: admitted
    cluster.apply(POLICY % "Audit")
    assert cluster.apply(WORKLOAD % "true").returncode == 0  # Audit only reports
    assert cluster.report_for("Deployment", "web")["summary"]["fail"] == 1  # type: ignore[index]


def test_enforce_on_pods_stops_the_replicaset_creating_them(cluster: Cluster) -> None:
    """A webhook sees the controllers' requests too: the ReplicaSet's pods are refused and it says so."""
    cluster.apply(WORKLOAD % "true")
    cluster.twin.advance(5)
    policy = yaml.safe_load(POLICY % "Enforce")
    policy["metadata"]["annotations"]["pod-policies.kyverno.io/autogen-controllers"] = "none"
    cluster.apply(yaml.safe_dump(policy))
    cluster.kubectl("-n", "paa", "delete", "pods", "--all", "--grace-period=0", "--force")
    cluster.twin.advance(30)
    pods = json.loads(cluster.kubectl("-n", "paa", "get", "pods", "-o", "json").stdout)["items"]
    assert pods == []
    events = cluster.kubectl("-n", "paa", "get", "events").stdout
    assert "FailedCreate" in events and "validate.kyverno.svc-fail" in events


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda p: p["spec"]["rules"][0].pop("validate"),
            'spec.rules[0]: Invalid value: v1.Rule{Name:"host-namespaces", …}: No operation defined in the rule '
            "'host-namespaces'.(supported operations: mutate,validate,generate,verifyImages)",
        ),
        (
            lambda p: p["spec"]["rules"].append(dict(p["spec"]["rules"][0])),
            "Duplicate rule name: 'host-namespaces'",
        ),
        (
            lambda p: p["spec"]["rules"][0]["match"]["any"][0]["resources"].pop("kinds"),
            "at least one element must be specified in a kind block, the kind attribute is mandatory",
        ),
        (
            lambda p: p["spec"]["rules"][0]["validate"].update(
                deny={"conditions": {"any": [{"key": 1, "operator": "Eq", "value": 1}]}}
            ),
            "path: spec.rules[0].validate..: only one of pattern, anyPattern, deny, foreach, cel can be specified",
        ),
        (
            lambda p: p["spec"]["rules"][0]["validate"].update(
                pattern=None, deny={"conditions": {"any": [{"key": 1, "operator": "Eq", "value": 1}]}}
            ),
            "path: spec.rules[0].validate.deny.conditions.any[0].: entered value of `operator` is invalid.",
        ),
        (
            lambda p: p["spec"]["rules"][0]["validate"].update(
                message="{{ request.userInfo.username }} may not"
            ),
            "only select variables are allowed in background mode. Set spec.background=false to disable "
            "background mode for this policy rule: variable {{ request.userInfo.username }} is not allowed",
        ),
    ],
)
def test_the_policy_webhook_refuses_what_kyverno_refuses(cluster: Cluster, edit: Any, expected: str) -> None:
    policy = yaml.safe_load(POLICY % "Audit")
    edit(policy)
    if policy["spec"]["rules"][0].get("validate", {}).get("pattern", 0) is None:
        del policy["spec"]["rules"][0]["validate"]["pattern"]
    res = cluster.apply(yaml.safe_dump(policy), check=False)
    assert res.returncode == 1, res.stdout
    assert 'admission webhook "validate-policy.kyverno.svc" denied the request: ' in res.stderr
    assert expected in res.stderr, res.stderr
    assert cluster.kubectl("get", "cpol", "-o", "name").stdout == ""  # nothing was created


def test_schema_errors_and_deprecation_warnings_come_from_the_api_server(cluster: Cluster) -> None:
    res = cluster.apply(POLICY % "Block", check=False)
    assert res.returncode == 1
    assert (
        'spec.validationFailureAction: Unsupported value: "Block": supported values: "audit", "enforce"'
        in res.stderr
    )
    ok = cluster.apply(POLICY % "enforce")
    assert (
        "Warning: Validation failure actions enforce/audit are deprecated, use Enforce/Audit instead."
        in ok.stderr
    )


def test_exceptions_namespaced_policies_and_filtered_namespaces(cluster: Cluster) -> None:
    cluster.apply(WORKLOAD % "true")
    cluster.apply((WORKLOAD % "true").replace("namespace: paa", "namespace: kube-system"))
    namespaced = yaml.safe_load(POLICY % "Audit")
    namespaced.update(kind="Policy")
    namespaced["metadata"].update(name="local", namespace="paa")
    cluster.apply(yaml.safe_dump(namespaced))
    report = cluster.report_for("Deployment", "web")
    assert {r["metadata"]["namespace"] for r in cluster.reports()} == {"paa"}  # kube-system is filtered
    assert report is not None and report["results"][0]["policy"] == "paa/local"
    cluster.apply(
        yaml.safe_dump(
            {
                "apiVersion": "kyverno.io/v2",
                "kind": "PolicyException",
                "metadata": {"name": "web-may", "namespace": "paa"},
                "spec": {
                    "exceptions": [
                        {
                            "policyName": "paa/local",
                            "ruleNames": ["host-namespaces", "autogen-host-namespaces"],
                        }
                    ],
                    "match": {
                        "any": [{"resources": {"kinds": ["Deployment", "Pod"], "namespaces": ["paa"]}}]
                    },
                },
            }
        )
    )
    report = cluster.report_for("Deployment", "web")
    assert report is not None and report["summary"]["skip"] == 1 and report["summary"]["fail"] == 0
    assert "policy exception" in report["results"][0]["message"]


def test_reports_are_read_only_state_of_the_twin_not_of_a_scenario(cluster: Cluster) -> None:
    """The same policy and workload give the same report whatever the order they came in."""
    cluster.apply(WORKLOAD % "true")
    cluster.apply(POLICY % "Audit")
    first = cluster.report_for("Deployment", "web")
    other = Twin(seed=1)
    other.install_addon("kyverno")
    other.advance(30)
    other.apply(
        [yaml.safe_load(NAMESPACE), yaml.safe_load(POLICY % "Audit"), yaml.safe_load(WORKLOAD % "true")]
    )
    other.sync()
    (second,) = [r for r in other.store.list(REPORTS) if r["scope"]["kind"] == "Deployment"]
    assert first is not None
    assert [(r["rule"], r["result"], r["message"]) for r in first["results"]] == [
        (r["rule"], r["result"], r["message"]) for r in second["results"]
    ]


def test_kyverno_runs_as_pods_and_stops_working_when_they_are_gone(cluster: Cluster) -> None:
    """Scaling Kyverno down is no way around a policy: with failurePolicy Fail the API server refuses
    what the webhook would have checked, and the reports freeze until the controllers are back."""
    pods = cluster.kubectl("-n", "kyverno", "get", "pods").stdout
    for component in ("admission", "background", "cleanup", "reports"):
        assert f"kyverno-{component}-controller-" in pods
    assert pods.count("Running") == 4
    cluster.apply(POLICY % "Enforce")
    cluster.kubectl("-n", "kyverno", "scale", "deploy", "--all", "--replicas=0")
    cluster.twin.advance(30)
    res = cluster.apply(WORKLOAD % "false", check=False)
    assert res.returncode == 1
    assert (
        'Internal error occurred: failed calling webhook "validate.kyverno.svc-fail": failed to call webhook: '
        'Post "https://kyverno-svc.kyverno.svc:443/validate/fail?timeout=10s": no endpoints available for '
        'service "kyverno-svc"'
    ) in res.stderr
    assert (
        cluster.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: paa}\n").returncode
        == 0
    )
    bad = cluster.apply(
        (POLICY % "Audit").replace("name: disallow-host-namespaces", "name: other"), check=False
    )
    assert 'failed calling webhook "validate-policy.kyverno.svc"' in bad.stderr
    cluster.kubectl("-n", "kyverno", "scale", "deploy", "--all", "--replicas=1")
    cluster.twin.advance(60)
    cluster.apply(POLICY % "Audit")
    cluster.apply(WORKLOAD % "true")
    assert cluster.report_for("Deployment", "web")["summary"]["fail"] == 1  # type: ignore[index]
    cluster.kubectl("-n", "kyverno", "scale", "deploy", "kyverno-reports-controller", "--replicas=0")
    cluster.twin.advance(30)
    cluster.apply(WORKLOAD % "false")
    cluster.twin.advance(30)
    assert cluster.report_for("Deployment", "web")["summary"]["fail"] == 1  # type: ignore[index]  # frozen
    cluster.kubectl("-n", "kyverno", "scale", "deploy", "kyverno-reports-controller", "--replicas=1")
    cluster.twin.advance(30)
    assert cluster.report_for("Deployment", "web")["summary"]["pass"] == 1  # type: ignore[index]


NETPOL_POLICY = """
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-netpol}
spec:
  validationFailureAction: Audit
  rules:
  - name: require-network-policy
    match:
      any:
      - resources: {kinds: [Deployment]}
    context:
    - name: policies_count
      apiCall:
        urlPath: "/apis/networking.k8s.io/v1/namespaces/{{request.namespace}}/networkpolicies"
        jmesPath: "items | length(@)"
    - name: teams
      configMap: {name: allowed-teams, namespace: paa}
    validate:
      message: "Every Deployment needs a NetworkPolicy in its namespace and an allowed team label."
      deny:
        conditions:
          any:
          - {key: "{{ policies_count }}", operator: LessThan, value: 1}
          - {key: "{{ request.object.metadata.labels.team || '' }}", operator: AnyNotIn, value: "{{ split(teams.data.names, ',') }}"}
"""
NETPOL = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: paa}
spec: {podSelector: {}, policyTypes: [Ingress]}
"""


def test_context_entries_read_the_cluster(cluster: Cluster) -> None:
    """configMap and apiCall context entries are answered from the cluster, as Kyverno's loaders do;
    a missing ConfigMap is the rule's error, not a crash."""
    workload = yaml.safe_load(WORKLOAD % "false")
    workload["metadata"]["labels"] = {"team": "payments"}
    cluster.apply(yaml.safe_dump(workload))
    cluster.apply(NETPOL_POLICY)
    report = cluster.report_for("Deployment", "web")
    assert report is not None and report["summary"]["error"] == 1
    assert (
        'failed to get configmap paa/allowed-teams : configmaps "allowed-teams" not found'
        in report["results"][0]["message"]
    )
    cluster.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: allowed-teams, namespace: paa}\ndata: {names: 'payments,search'}\n"
    )
    cluster.kubectl("annotate", "cpol", "require-netpol", "touched=1")  # a policy change rescans
    report = cluster.report_for("Deployment", "web")
    assert report is not None and report["summary"]["fail"] == 1, report  # no NetworkPolicy yet
    cluster.apply(NETPOL)
    cluster.kubectl("annotate", "cpol", "require-netpol", "touched=2", "--overwrite")
    report = cluster.report_for("Deployment", "web")
    assert report is not None and report["summary"]["pass"] == 1, report
