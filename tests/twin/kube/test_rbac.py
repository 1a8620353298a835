"""Authentication and RBAC on the twin's API, driven by the real kubectl and the official client.

The twin is served over HTTPS here (``auth/tls.py``): kubectl sends a kubeconfig's token only to an
``https://`` server. Each flow is the one a harness runs against a live cluster: create a
ServiceAccount, a Role and a RoleBinding, mint a token with the TokenRequest API, hand the agent a
kubeconfig with that token.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from kube_helpers import DEPLOYMENT, KUBECTL, needs_kubectl
from support.kubectl_cluster import run_kubectl

from itbench_agents.twin.clock import ManualClock
from itbench_agents.twin.httpserver import HttpEndpoint
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.auth import (
    ADMIN_TOKEN,
    Attributes,
    UserInfo,
    authenticate,
    authorize,
    is_admin,
    request_attributes,
    set_anonymous_mode,
)
from itbench_agents.twin.kube.auth.tls import TwinTLS, enable_tls, kubeconfig_yaml
from itbench_agents.twin.kube.server import make_kube_handler

NS = "otel-demo"
AGENT = f"system:serviceaccount:{NS}:agent"
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}
READ_ONLY_RULES = [
    {"apiGroups": ["", "apps", "batch", "autoscaling", "networking.k8s.io", "policy"], "resources": [
        "pods", "pods/log", "services", "endpoints", "configmaps", "events", "deployments", "replicasets",
        "statefulsets", "daemonsets", "jobs", "horizontalpodautoscalers", "networkpolicies",
    ], "verbs": ["get", "list", "watch"]},
]  # fmt: skip


@pytest.fixture(scope="module")
def tls() -> TwinTLS:
    return TwinTLS()


@dataclass
class Served:
    twin: Twin
    url: str
    ca: str
    tls: TwinTLS
    tmp: Path
    admin_kc: Path

    def kubeconfig(self, token: str, name: str) -> Path:
        p = self.tmp / name
        p.write_text(kubeconfig_yaml(self.url, token, self.tls, namespace=NS))
        return p

    def kubectl(self, kc: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return run_kubectl(kc, *args, input=input, timeout=30)

    def http(self, method: str, path: str, token: str | None = ADMIN_TOKEN, **kw: Any) -> requests.Response:
        headers = dict(kw.pop("headers", {}))
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return requests.request(method, self.url + path, headers=headers, verify=self.ca, timeout=10, **kw)

    def client(self, kc: Path) -> Any:
        client, config = _k8s(), _k8s_config()

        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kc), client_configuration=cfg)
        return client.ApiClient(cfg)


@pytest.fixture
def served(tls: TwinTLS, tmp_path: Path) -> Iterator[Served]:
    twin = Twin(seed=7, clock=ManualClock())
    ep = HttpEndpoint(make_kube_handler(twin))
    url = enable_tls(ep, tls)
    ep.start()
    s = Served(twin, url, tls.write_ca(tmp_path / "ca.crt"), tls, tmp_path, tmp_path / "admin.kubeconfig")
    s.admin_kc.write_text(kubeconfig_yaml(url, ADMIN_TOKEN, tls, namespace=NS))
    try:
        yield s
    finally:
        ep.stop()


def _app(s: Served) -> list[str]:
    """The namespace with a 2-replica deployment; returns its pod names."""
    assert s.kubectl(s.admin_kc, "create", "namespace", NS).returncode == 0
    p = s.kubectl(s.admin_kc, "apply", "-n", NS, "-f", "-", input=DEPLOYMENT)
    assert p.returncode == 0, p.stderr
    s.twin.advance(30)
    items = json.loads(s.kubectl(s.admin_kc, "get", "pods", "-o", "json").stdout)["items"]
    return sorted(i["metadata"]["name"] for i in items)


def _agent_token(s: Served, rules: list[dict[str, Any]], expiration: int = 3600) -> str:
    """What the harness does, with the official client: ServiceAccount, Role, RoleBinding, TokenRequest."""
    client = _k8s()

    api = s.client(s.admin_kc)
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    core.create_namespaced_service_account(NS, {"metadata": {"name": "agent"}})
    rbac.create_namespaced_role(NS, {"metadata": {"name": "agent"}, "rules": rules})
    rbac.create_namespaced_role_binding(
        NS,
        {
            "metadata": {"name": "agent"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "agent"},
            "subjects": [{"kind": "ServiceAccount", "name": "agent", "namespace": NS}],
        },
    )
    tr = core.create_namespaced_service_account_token(
        "agent", NS, {"spec": {"expirationSeconds": expiration}}
    )
    assert tr.status.expiration_timestamp is not None
    token: str = tr.status.token
    assert token.count(".") == 2 and len(token) > 200  # a JWT, not a guessable name
    return token


# ---------------------------------------------------------------------------------------------- the harness flow
@needs_kubectl
def test_read_only_agent_token_with_kubectl(served: Served) -> None:
    s = served
    pods = _app(s)
    kc = s.kubeconfig(_agent_token(s, READ_ONLY_RULES), "agent.kubeconfig")

    p = s.kubectl(kc, "get", "pods", "-n", NS)
    assert p.returncode == 0 and pods[0] in p.stdout, p.stderr
    assert s.kubectl(kc, "logs", "-n", NS, pods[0]).returncode == 0
    assert s.kubectl(kc, "describe", "deploy/web", "-n", NS).returncode == 0

    p = s.kubectl(kc, "delete", "pod", pods[0], "-n", NS)
    assert p.returncode == 1
    assert p.stderr.strip() == (
        f'Error from server (Forbidden): pods "{pods[0]}" is forbidden: User "{AGENT}" cannot delete resource '
        f'"pods" in API group "" in the namespace "{NS}"'
    )
    p = s.kubectl(kc, "get", "nodes")
    assert p.returncode == 1
    assert p.stderr.strip() == (
        f'Error from server (Forbidden): nodes is forbidden: User "{AGENT}" cannot list resource "nodes" in API '
        'group "" at the cluster scope'
    )
    p = s.kubectl(kc, "delete", "namespace", NS)
    assert p.returncode == 1
    assert p.stderr.strip() == (
        f'Error from server (Forbidden): namespaces "{NS}" is forbidden: User "{AGENT}" cannot delete resource '
        f'"namespaces" in API group "" in the namespace "{NS}"'
    )
    p = s.kubectl(kc, "scale", "deploy/web", "--replicas=0", "-n", NS)
    assert p.returncode == 1 and 'cannot patch resource "deployments/scale" in API group "apps"' in p.stderr
    p = s.kubectl(kc, "get", "secrets", "-n", NS)
    assert p.returncode == 1 and 'cannot list resource "secrets"' in p.stderr
    p = s.kubectl(kc, "get", "pods", "-n", "kube-system")
    assert p.returncode == 1 and 'in the namespace "kube-system"' in p.stderr

    # nothing changed
    assert _stored(s, _gr("", "namespaces"), "", NS)["metadata"].get("deletionTimestamp") is None
    assert len(s.twin.store.list(_gr("", "pods"), NS)) == 2

    # kubectl auth can-i (SelfSubjectAccessReview): yes → 0, no → 1
    p = s.kubectl(kc, "auth", "can-i", "get", "pods", "-n", NS)
    assert (p.returncode, p.stdout.strip()) == (0, "yes")
    p = s.kubectl(kc, "auth", "can-i", "get", "pods/log", "-n", NS)
    assert (p.returncode, p.stdout.strip()) == (0, "yes")
    p = s.kubectl(kc, "auth", "can-i", "delete", "pods", "-n", NS)
    assert (p.returncode, p.stdout.strip()) == (1, "no")
    p = s.kubectl(kc, "auth", "can-i", "list", "nodes")
    assert (p.returncode, p.stdout.strip()) == (1, "no")
    p = s.kubectl(kc, "auth", "can-i", "delete", f"namespace/{NS}")
    assert (p.returncode, p.stdout.strip()) == (1, "no")

    # kubectl auth can-i --list (SelfSubjectRulesReview)
    p = s.kubectl(kc, "auth", "can-i", "--list", "-n", NS)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    rows = {ln.split()[0]: ln for ln in lines[1:] if not ln.startswith(" ")}
    assert rows["pods"].endswith("[get list watch]") and rows["pods/log"].endswith("[get list watch]")
    assert "deployments.apps" in rows and "selfsubjectaccessreviews.authorization.k8s.io" in rows
    assert not any(ln.startswith("*.*") for ln in lines)
    assert any("[/api/*]" in ln for ln in lines)  # system:discovery

    # kubectl auth whoami (SelfSubjectReview)
    p = s.kubectl(kc, "auth", "whoami")
    assert p.returncode == 0, p.stderr
    assert ["Username", AGENT] in [ln.split() for ln in p.stdout.splitlines()]
    assert "[system:serviceaccounts system:serviceaccounts:otel-demo system:authenticated]" in p.stdout
    # a change of the Role applies at once (the RBAC index follows the store)
    patch = (
        '[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["pods"],"verbs":["delete"]}}]'
    )
    assert s.kubectl(s.admin_kc, "patch", "role", "agent", "--type=json", "-p", patch).returncode == 0
    p = s.kubectl(kc, "auth", "can-i", "delete", "pods", "-n", NS)
    assert (p.returncode, p.stdout.strip()) == (0, "yes")
    assert s.kubectl(s.admin_kc, "delete", "rolebinding", "agent").returncode == 0
    p = s.kubectl(kc, "get", "pods")
    assert p.returncode == 1 and 'cannot list resource "pods"' in p.stderr

    who = json.loads(s.kubectl(kc, "auth", "whoami", "-o", "json").stdout)
    assert who["status"]["userInfo"]["username"] == AGENT
    assert (
        who["status"]["userInfo"]["uid"]
        == _stored(s, _gr("", "serviceaccounts"), NS, "agent")["metadata"]["uid"]
    )


@needs_kubectl
def test_write_role_for_mitigation_but_no_cluster_scoped_deletes(served: Served) -> None:
    s = served
    pods = _app(s)
    write = [
        *READ_ONLY_RULES,
        {
            "apiGroups": ["", "apps"],
            "resources": [
                "pods",
                "deployments",
                "deployments/scale",
                "replicasets",
                "configmaps",
                "services",
            ],
            "verbs": ["create", "update", "patch", "delete"],
        },
    ]
    kc = s.kubeconfig(_agent_token(s, write), "agent.kubeconfig")
    p = s.kubectl(kc, "delete", "pod", pods[0], "-n", NS, "--wait=false")
    assert p.returncode == 0, p.stderr
    p = s.kubectl(kc, "scale", "deploy/web", "--replicas=3", "-n", NS)
    assert p.returncode == 0, p.stderr
    p = s.kubectl(kc, "set", "image", "deploy/web", "web=nginx:1.26", "-n", NS)
    assert p.returncode == 0, p.stderr
    p = s.kubectl(kc, "rollout", "undo", "deploy/web", "-n", NS)
    assert p.returncode == 0, p.stderr
    for args in (
        ("delete", "namespace", NS),
        ("delete", "node", "twin-worker-1"),
        ("delete", "clusterrole", "view"),
    ):
        p = s.kubectl(kc, *args)
        assert p.returncode == 1 and "Error from server (Forbidden)" in p.stderr, (args, p.stderr)
    p = s.kubectl(
        kc,
        "create",
        "clusterrolebinding",
        "me",
        "--clusterrole=cluster-admin",
        f"--serviceaccount={NS}:agent",
    )
    assert p.returncode == 1 and 'cannot create resource "clusterrolebindings"' in p.stderr
    # the agent cannot grant itself more: Roles are not in its rules
    p = s.kubectl(kc, "patch", "role", "agent", "-n", NS, "--type=json", "-p", '[{"op":"add","path":"/rules/0","value":{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}}]')  # fmt: skip
    assert p.returncode == 1 and 'resource "roles" in API group "rbac.authorization.k8s.io"' in p.stderr


# ---------------------------------------------------------------------------------------------- admin
@needs_kubectl
def test_admin_kubeconfig_can_i_whoami_and_default_roles(served: Served) -> None:
    s = served
    p = s.kubectl(s.admin_kc, "auth", "whoami")
    assert (
        p.returncode == 0
        and "kubernetes-admin" in p.stdout
        and "[system:masters system:authenticated]" in p.stdout
    )
    for args in (("delete", "nodes"), ("get", "secrets", "-A"), ("*", "*")):
        p = s.kubectl(s.admin_kc, "auth", "can-i", *args)
        assert (p.returncode, p.stdout.strip()) == (0, "yes"), args
    p = s.kubectl(s.admin_kc, "auth", "can-i", "--list", "-n", NS)
    assert p.returncode == 0 and any(ln.split()[:1] == ["*.*"] for ln in p.stdout.splitlines())
    names = s.kubectl(s.admin_kc, "get", "clusterroles", "-o", "name").stdout.split()
    for n in ("cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user",
              "system:public-info-viewer"):  # fmt: skip
        assert f"clusterrole.rbac.authorization.k8s.io/{n}" in names
    crb = json.loads(s.kubectl(s.admin_kc, "get", "clusterrolebinding", "cluster-admin", "-o", "json").stdout)
    assert crb["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}
    ]
    view = json.loads(s.kubectl(s.admin_kc, "get", "clusterrole", "view", "-o", "json").stdout)
    assert view["aggregationRule"]["clusterRoleSelectors"] == [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}
    ]
    assert any("pods/log" in r.get("resources", []) for r in view["rules"])
    # the review APIs are in discovery
    out = s.kubectl(
        s.admin_kc, "api-resources", "--api-group=authorization.k8s.io", "-o", "name"
    ).stdout.split()
    assert set(out) == {
        "localsubjectaccessreviews.authorization.k8s.io",
        "selfsubjectaccessreviews.authorization.k8s.io",
        "selfsubjectrulesreviews.authorization.k8s.io",
        "subjectaccessreviews.authorization.k8s.io",
    }


# ---------------------------------------------------------------------------------------------- tokens
def test_bad_expired_and_orphaned_tokens_get_401(served: Served) -> None:
    s = served
    _app(s)
    token = _agent_token(s, READ_ONLY_RULES, expiration=600)
    assert s.http("GET", f"/api/v1/namespaces/{NS}/pods", token).status_code == 200
    for bad in ("nope", token[:-2] + "xx", "itbench-twin2", token.split(".")[0] + ".e30.sig"):
        r = s.http("GET", f"/api/v1/namespaces/{NS}/pods", bad)
        assert (r.status_code, r.json()) == (401, UNAUTHORIZED), bad
    # expiry follows the twin's clock
    s.twin.advance(599)
    assert s.http("GET", f"/api/v1/namespaces/{NS}/pods", token).status_code == 200
    s.twin.advance(2)
    assert s.http("GET", f"/api/v1/namespaces/{NS}/pods", token).status_code == 401
    # a deleted (or deleted and re-created) ServiceAccount invalidates its tokens
    fresh = s.http("POST", f"/api/v1/namespaces/{NS}/serviceaccounts/agent/token", json={}).json()["status"][
        "token"
    ]
    assert s.http("GET", f"/api/v1/namespaces/{NS}/pods", fresh).status_code == 200
    assert s.http("DELETE", f"/api/v1/namespaces/{NS}/serviceaccounts/agent").status_code == 200
    assert s.http("GET", f"/api/v1/namespaces/{NS}/pods", fresh).status_code == 401
    s.http("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", json={"metadata": {"name": "agent"}})
    assert s.http("GET", f"/api/v1/namespaces/{NS}/pods", fresh).status_code == 401
    # kubectl shows the apiserver's wording
    if Path(KUBECTL).exists():
        p = s.kubectl(s.kubeconfig("not-a-token", "bad.kubeconfig"), "get", "pods")
        assert p.returncode == 1 and "error: You must be logged in to the server (Unauthorized)" in p.stderr


def test_token_request_validation(served: Served) -> None:
    s = served
    _app(s)
    r = s.http("POST", f"/api/v1/namespaces/{NS}/serviceaccounts/nobody/token", json={})
    assert r.status_code == 404 and r.json()["message"] == 'serviceaccounts "nobody" not found'
    s.http("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", json={"metadata": {"name": "sa"}})
    r = s.http(
        "POST", f"/api/v1/namespaces/{NS}/serviceaccounts/sa/token", json={"spec": {"expirationSeconds": 60}}
    )
    assert r.status_code == 422
    assert "may not specify a duration less than 10 minutes" in r.json()["message"]
    r = s.http("POST", f"/api/v1/namespaces/{NS}/serviceaccounts/sa/token", json={"spec": {}})
    body = r.json()
    assert r.status_code == 201 and body["kind"] == "TokenRequest"
    assert body["spec"]["expirationSeconds"] == 3600 and body["spec"]["audiences"]
    t1, t2 = body["status"]["token"], s.http("POST", f"/api/v1/namespaces/{NS}/serviceaccounts/sa/token", json={}).json()["status"]["token"]  # fmt: skip
    assert t1 != t2
    # a token for another audience does not authenticate to the API server
    other = s.http(
        "POST", f"/api/v1/namespaces/{NS}/serviceaccounts/sa/token", json={"spec": {"audiences": ["vault"]}}
    ).json()["status"]["token"]
    assert s.http("GET", "/api", other).status_code == 401
    # a token bound to a pod dies with the pod
    pod = s.twin.store.list(_gr("", "pods"), NS)[0]["metadata"]["name"]
    bound = s.http(
        "POST",
        f"/api/v1/namespaces/{NS}/serviceaccounts/sa/token",
        json={"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": pod}}},
    ).json()["status"]["token"]
    who = s.http("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", bound, json={}).json()
    assert who["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-name"] == [pod]
    s.http("DELETE", f"/api/v1/namespaces/{NS}/pods/{pod}?gracePeriodSeconds=0")
    assert s.http("GET", "/api", bound).status_code == 401
    # only who may create serviceaccounts/token gets one
    r = s.http("POST", f"/api/v1/namespaces/{NS}/serviceaccounts/sa/token", t1, json={})
    assert r.status_code == 403 and 'cannot create resource "serviceaccounts/token"' in r.json()["message"]


@needs_kubectl
def test_kubectl_create_token(served: Served) -> None:
    s = served
    _app(s)
    assert s.kubectl(s.admin_kc, "create", "serviceaccount", "agent", "-n", NS).returncode == 0
    p = s.kubectl(s.admin_kc, "create", "token", "agent", "-n", NS, "--duration=20m")
    assert p.returncode == 0, p.stderr
    kc = s.kubeconfig(p.stdout.strip(), "agent.kubeconfig")
    assert AGENT in s.kubectl(kc, "auth", "whoami").stdout
    p = s.kubectl(s.admin_kc, "create", "rolebinding", "agent-view", "-n", NS, "--clusterrole=view", f"--serviceaccount={NS}:agent")  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert s.kubectl(kc, "get", "pods,deploy,svc,events", "-n", NS).returncode == 0
    assert s.kubectl(kc, "top", "pods", "-n", NS).returncode in (
        0,
        1,
    )  # metrics.k8s.io via the aggregated view
    p = s.kubectl(kc, "get", "secrets", "-n", NS)  # view does not read secrets
    assert p.returncode == 1 and "Forbidden" in p.stderr


# ---------------------------------------------------------------------------------------------- anonymous
def test_anonymous_in_rbac_mode_gets_only_public_info(served: Served) -> None:
    s = served
    set_anonymous_mode(s.twin, "rbac")
    for path in ("/healthz", "/livez", "/readyz", "/version"):
        assert s.http("GET", path, None).status_code == 200, path
    r = s.http("GET", "/api", None)
    assert r.status_code == 403
    assert r.json()["message"] == 'forbidden: User "system:anonymous" cannot get path "/api"'
    r = s.http("GET", "/api/v1/namespaces/default/pods", None)
    assert r.status_code == 403 and r.json()["details"] == {"kind": "pods"}
    assert r.json()["message"] == (
        'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace '
        '"default"'
    )
    assert s.http("GET", "/api", ADMIN_TOKEN).status_code == 200


def test_no_token_is_admin_in_admin_mode(served: Served) -> None:
    s = served
    set_anonymous_mode(s.twin, "admin")
    assert s.http("GET", "/api/v1/nodes", None).status_code == 200
    assert authenticate(s.twin, {}).username == "kubernetes-admin"
    set_anonymous_mode(s.twin, "rbac")
    assert authenticate(s.twin, {}).username == "system:anonymous"


# ---------------------------------------------------------------------------------------------- review APIs
def test_subject_access_reviews_with_the_python_client(served: Served) -> None:
    client = _k8s()

    s = served
    _app(s)
    _agent_token(s, READ_ONLY_RULES)
    authz = client.AuthorizationV1Api(s.client(s.admin_kc))

    def sar(
        verb: str, resource: str, ns: str = NS, user: str = AGENT, groups: list[str] | None = None
    ) -> Any:
        return authz.create_subject_access_review(
            {
                "spec": {
                    "user": user,
                    "groups": groups or ["system:serviceaccounts", f"system:serviceaccounts:{NS}"],
                    "resourceAttributes": {"verb": verb, "resource": resource, "namespace": ns},
                }
            }
        ).status

    st = sar("list", "pods")
    assert st.allowed is True
    assert (
        st.reason
        == f'RBAC: allowed by RoleBinding "agent/{NS}" of Role "agent" to ServiceAccount "agent/{NS}"'
    )
    assert sar("delete", "pods").allowed is False
    assert sar("list", "pods", ns="default").allowed is False
    st = sar("get", "nodes", ns="", user="alice", groups=["system:masters"])
    assert st.allowed is True
    local = authz.create_namespaced_local_subject_access_review(
        NS,
        {
            "spec": {
                "user": AGENT,
                "resourceAttributes": {"verb": "watch", "resource": "pods", "namespace": NS},
            }
        },
    )
    assert local.status.allowed is True
    with pytest.raises(client.ApiException) as e:
        authz.create_namespaced_local_subject_access_review(
            NS,
            {
                "spec": {
                    "user": AGENT,
                    "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "x"},
                }
            },
        )
    assert e.value.status == 422
    nr = authz.create_subject_access_review(
        {"spec": {"user": "bob", "groups": ["system:authenticated"], "nonResourceAttributes": {"path": "/apis/apps", "verb": "get"}}}
    )  # fmt: skip
    assert nr.status.allowed is True and "system:discovery" in nr.status.reason
    rules = authz.create_self_subject_rules_review({"spec": {"namespace": NS}}).status
    assert rules.incomplete is False and any(r.resources == ["*"] for r in rules.resource_rules)


def test_rule_semantics_resource_names_subresources_wildcards_aggregation(served: Served) -> None:
    s = served
    _app(s)
    sa = UserInfo(
        AGENT, groups=("system:serviceaccounts", f"system:serviceaccounts:{NS}", "system:authenticated")
    )
    rules = [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["flagd-config"],
            "verbs": ["get", "update"],
        },
        {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["patch"]},
        {"apiGroups": ["*"], "resources": ["events"], "verbs": ["*"]},
    ]
    _agent_token(s, rules)

    def can(verb: str, resource: str, group: str = "", name: str = "", sub: str = "", ns: str = NS) -> bool:
        attrs = Attributes.resource_attrs(
            verb, resource, namespace=ns, api_group=group, name=name, subresource=sub
        )
        return authorize(s.twin, sa, attrs)[0]

    assert can("get", "configmaps", name="flagd-config") and not can("get", "configmaps", name="other")
    assert not can("list", "configmaps")  # a list has no name
    assert can("patch", "deployments", "apps", "web", "scale") and can(
        "patch", "statefulsets", "apps", "x", "scale"
    )
    assert not can("patch", "deployments", "apps", "web")
    assert can("deletecollection", "events") and can("create", "events", "events.k8s.io")
    assert not can("get", "events", ns="default")
    assert can("create", "selfsubjectaccessreviews", "authorization.k8s.io", ns="")  # system:basic-user
    assert authorize(s.twin, sa, Attributes.non_resource("get", "/apis/apps/v1"))[0]  # system:discovery
    assert not authorize(s.twin, sa, Attributes.non_resource("get", "/metrics"))[0]
    assert is_admin(authenticate(s.twin, {"authorization": f"Bearer {ADMIN_TOKEN}"}))

    # an aggregated ClusterRole picks up labelled ClusterRoles, also ones created later
    s.http("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", json={
        "metadata": {"name": "agg"}, "rules": [],
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"example.com/agg": "true"}}]},
    })  # fmt: skip
    s.http("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings", json={
        "metadata": {"name": "agg"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "agg"},
        "subjects": [{"kind": "ServiceAccount", "name": "agent"}],
    })  # fmt: skip
    assert not can("get", "secrets", name="s1")
    s.http("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", json={
        "metadata": {"name": "secret-reader", "labels": {"example.com/agg": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
    })  # fmt: skip
    assert can("get", "secrets", name="s1") and not can("get", "secrets", name="s1", ns="default")
    # a binding to a missing role says so in the 403
    s.http("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings", json={
        "metadata": {"name": "ghost"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "ghost"},
        "subjects": [{"kind": "ServiceAccount", "name": "agent"}],
    })  # fmt: skip
    allowed, reason = authorize(s.twin, sa, Attributes.resource_attrs("delete", "nodes", name="n1"))
    assert not allowed and reason == ""
    allowed, reason = authorize(
        s.twin, sa, Attributes.resource_attrs("delete", "pods", namespace=NS, name="p")
    )
    assert not allowed and reason == 'RBAC: role.rbac.authorization.k8s.io "ghost" not found'


@pytest.mark.parametrize(
    ("method", "path", "query", "expect"),
    [
        ("GET", "/api/v1/namespaces/ns/pods", {}, ("list", "", "pods", "", "ns", "")),
        ("GET", "/api/v1/namespaces/ns/pods", {"watch": ["true"]}, ("watch", "", "pods", "", "ns", "")),
        ("GET", "/api/v1/watch/namespaces/ns/pods/p", {}, ("watch", "", "pods", "", "ns", "p")),
        ("GET", "/api/v1/pods", {"fieldSelector": ["metadata.name=p"]}, ("list", "", "pods", "", "", "p")),
        ("GET", "/api/v1/namespaces/ns/pods/p/log", {}, ("get", "", "pods", "log", "ns", "p")),
        ("POST", "/api/v1/namespaces/ns/pods/p/eviction", {}, ("create", "", "pods", "eviction", "ns", "p")),
        ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", {}, ("patch", "apps", "deployments", "scale", "ns", "d")),
        ("DELETE", "/api/v1/namespaces/ns/pods", {}, ("deletecollection", "", "pods", "", "ns", "")),
        ("DELETE", "/api/v1/namespaces/ns", {}, ("delete", "", "namespaces", "", "ns", "ns")),
        ("PUT", "/api/v1/namespaces/ns/finalize", {}, ("update", "", "namespaces", "finalize", "ns", "ns")),
        ("GET", "/api/v1/nodes", {}, ("list", "", "nodes", "", "", "")),
        ("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods", {}, ("list", "metrics.k8s.io", "pods", "", "ns", "")),
    ],
)  # fmt: skip
def test_request_attributes(
    method: str, path: str, query: dict[str, list[str]], expect: tuple[str, ...]
) -> None:
    a = request_attributes(method, path, query)
    assert a.resource_request
    assert (a.verb, a.api_group, a.resource, a.subresource, a.namespace, a.name) == expect


@pytest.mark.parametrize(
    "path", ["/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/healthz", "/openapi/v2"]
)
def test_non_resource_paths(path: str) -> None:
    a = request_attributes("GET", path)
    assert not a.resource_request and a.path == path and a.verb == "get"


def _k8s() -> Any:
    """The ``kubernetes.client`` module, untyped (its stubs want model objects; we pass dicts, as users do)."""
    import kubernetes.client

    return kubernetes.client


def _k8s_config() -> Any:
    import kubernetes.config

    return kubernetes.config


def _stored(s: Served, gr: Any, ns: str, name: str) -> Any:
    obj = s.twin.store.get(gr, ns, name)
    assert obj is not None, (gr, ns, name)
    return obj


def _gr(group: str, resource: str) -> Any:
    from itbench_agents.k8s.kinds import GroupResource

    return GroupResource(group, resource)


@needs_kubectl
def test_impersonation_with_kubectl_as(served: Served) -> None:
    s = served
    _app(s)
    token = _agent_token(s, READ_ONLY_RULES)
    as_agent = ("--as", AGENT)
    p = s.kubectl(s.admin_kc, "auth", "can-i", "list", "pods", "-n", NS, *as_agent)
    assert (p.returncode, p.stdout.strip()) == (0, "yes")
    p = s.kubectl(s.admin_kc, "auth", "can-i", "delete", "pods", "-n", NS, *as_agent)
    assert (p.returncode, p.stdout.strip()) == (1, "no")
    who = json.loads(s.kubectl(s.admin_kc, "auth", "whoami", "-o", "json", *as_agent).stdout)["status"][
        "userInfo"
    ]
    assert who["username"] == AGENT
    assert who["groups"] == ["system:serviceaccounts", f"system:serviceaccounts:{NS}", "system:authenticated"]
    p = s.kubectl(s.admin_kc, "get", "nodes", *as_agent)
    assert p.returncode == 1 and f'User "{AGENT}" cannot list resource "nodes"' in p.stderr
    # the agent itself may not impersonate anyone
    p = s.kubectl(s.kubeconfig(token, "agent.kubeconfig"), "get", "pods", "--as", "kubernetes-admin")
    assert p.returncode == 1
    assert (
        f'users "kubernetes-admin" is forbidden: User "{AGENT}" cannot impersonate resource "users" in API group "" '
        "at the cluster scope"
    ) in p.stderr


@needs_kubectl
def test_no_privilege_escalation_through_rbac_writes(served: Served) -> None:
    s = served
    _app(s)
    # an agent that may manage Roles and RoleBindings in its namespace (like the `admin` ClusterRole)...
    rules = [
        *READ_ONLY_RULES,
        {
            "apiGroups": ["rbac.authorization.k8s.io"],
            "resources": ["roles", "rolebindings"],
            "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
        },
    ]
    kc = s.kubeconfig(_agent_token(s, rules), "agent.kubeconfig")
    # ...may grant what it holds
    p = s.kubectl(kc, "create", "role", "pod-reader", "--verb=get,list", "--resource=pods", "-n", NS)
    assert p.returncode == 0, p.stderr
    p = s.kubectl(kc, "create", "rolebinding", "rb1", "--role=pod-reader", "--user=bob", "-n", NS)
    assert p.returncode == 0, p.stderr
    # ...but not more: a Role with secrets, a binding to cluster-admin, an edit of its own Role
    p = s.kubectl(kc, "create", "role", "thief", "--verb=get", "--resource=secrets", "-n", NS)
    assert p.returncode == 1
    assert (
        p.stderr.strip()
        == (
            'error: failed to create role: roles.rbac.authorization.k8s.io "thief" is forbidden: user '
            f'"{AGENT}" (groups=["system:serviceaccounts" "system:serviceaccounts:{NS}" "system:authenticated"]) is '
            "attempting to grant RBAC permissions not currently held:\n"
            '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}'
        )
        or 'Resources:["secrets"], Verbs:["get"]' in p.stderr
    )
    p = s.kubectl(kc, "create", "rolebinding", "root", "--clusterrole=cluster-admin", f"--serviceaccount={NS}:agent", "-n", NS)  # fmt: skip
    assert p.returncode == 1 and "is attempting to grant RBAC permissions not currently held" in p.stderr
    patch = '[{"op":"add","path":"/rules/-","value":{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}}]'
    p = s.kubectl(kc, "patch", "role", "agent", "-n", NS, "--type=json", "-p", patch)
    assert p.returncode == 1 and 'Resources:["*"], Verbs:["*"]' in p.stderr
    rules_now = _stored(s, _gr("rbac.authorization.k8s.io", "roles"), NS, "agent")["rules"]
    assert len(rules_now) == 2
    # with `escalate` / `bind` (as `*` verbs include) it may
    s.kubectl(s.admin_kc, "create", "role", "binder", "--verb=bind,escalate", "--resource=roles", "-n", NS)
    s.kubectl(s.admin_kc, "create", "clusterrole", "binder", "--verb=bind", "--resource=clusterroles")
    s.kubectl(
        s.admin_kc,
        "create",
        "rolebinding",
        "binder",
        "--role=binder",
        f"--serviceaccount={NS}:agent",
        "-n",
        NS,
    )
    s.kubectl(s.admin_kc, "create", "rolebinding", "cbinder", "--clusterrole=binder", f"--serviceaccount={NS}:agent", "-n", NS)  # fmt: skip
    p = s.kubectl(kc, "create", "role", "thief", "--verb=get", "--resource=secrets", "-n", NS)
    assert p.returncode == 0, p.stderr
    p = s.kubectl(kc, "create", "rolebinding", "root", "--clusterrole=cluster-admin", "--user=eve", "-n", NS)
    assert p.returncode == 0, p.stderr
    # the admin may do all of it
    p = s.kubectl(
        s.admin_kc, "create", "rolebinding", "root2", "--clusterrole=cluster-admin", "--user=bob", "-n", NS
    )
    assert p.returncode == 0, p.stderr


@needs_kubectl
def test_kubectl_sends_no_token_over_plain_http(tmp_path: Path) -> None:
    """Why the tests above serve HTTPS: client-go drops a kubeconfig's credentials for an http:// server,
    so over plain HTTP every kubectl request is anonymous (the Python client does send the token)."""
    from kube_helpers import serve_cluster

    twin = Twin(seed=7, clock=ManualClock())
    set_anonymous_mode(twin, "rbac")
    for c in serve_cluster(twin, tmp_path):
        p = subprocess.run(
            [KUBECTL, "--kubeconfig", str(c.kubeconfig), "get", "pods"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert p.returncode == 1 and "Error from server (Forbidden)" in p.stderr, p.stderr
        r = requests.get(c.url + "/api/v1/namespaces/default/pods", timeout=10)
        assert 'User "system:anonymous" cannot list resource "pods"' in r.json()["message"]
        client, config = _k8s(), _k8s_config()

        cfg = client.Configuration()
        config.load_kube_config(config_file=str(c.kubeconfig), client_configuration=cfg)
        who = client.AuthenticationV1Api(client.ApiClient(cfg)).create_self_subject_review({})
        assert who.status.user_info.username == "kubernetes-admin"


@needs_kubectl
def test_a_wildcard_role_may_delete_its_own_namespace_as_on_a_real_cluster(served: Served) -> None:
    """``DELETE /api/v1/namespaces/X`` is a request *in* namespace X, so RoleBindings in X apply to it: a Role
    with ``resources: ["*"]`` lets its holder delete X (and nothing outside X). List resources explicitly."""
    s = served
    _app(s)
    s.kubectl(s.admin_kc, "create", "namespace", "other")
    kc = s.kubeconfig(
        _agent_token(s, [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]), "agent.kubeconfig"
    )
    p = s.kubectl(kc, "delete", "namespace", "other")
    assert p.returncode == 1 and f'namespaces "other" is forbidden: User "{AGENT}"' in p.stderr
    p = s.kubectl(kc, "get", "namespaces")
    assert p.returncode == 1 and "at the cluster scope" in p.stderr
    p = s.kubectl(kc, "delete", "namespace", NS, "--wait=false")
    assert p.returncode == 0, p.stderr


@needs_kubectl
def test_watch_needs_the_watch_verb(served: Served) -> None:
    s = served
    _app(s)
    kc = s.kubeconfig(
        _agent_token(s, [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]),
        "agent.kubeconfig",
    )
    p = s.kubectl(kc, "get", "pods", "-w", "--request-timeout=5")
    assert p.returncode == 1 and 'cannot watch resource "pods" in API group ""' in p.stderr, p.stderr


def test_a_twin_with_its_own_admin_token_trusts_no_other(served: Served) -> None:
    s = served
    s.twin.admin_token = "s3cret-" + "x" * 30
    assert s.http("GET", "/api/v1/nodes", s.twin.admin_token).status_code == 200
    r = s.http("GET", "/api/v1/nodes", ADMIN_TOKEN)
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)
    r = s.http("GET", "/api/v1/nodes", None)
    assert r.status_code == 403 and 'User "system:anonymous"' in r.json()["message"]
    assert s.http("GET", "/healthz", None).status_code == 200


@needs_kubectl
def test_one_handler_served_over_http_and_https(tmp_path: Path) -> None:
    """The set-up for a harness: kube_url over HTTP for Python callers, the kubeconfig over HTTPS for kubectl;
    both enforce the same tokens and RBAC."""
    from itbench_agents.twin.kube.auth.tls import serve_tls, shared_tls

    twin = Twin(seed=7, clock=ManualClock())
    twin.admin_token = "episode-admin-" + "y" * 20
    handler = make_kube_handler(twin)
    plain = HttpEndpoint(handler).start()
    secure, https_url = serve_tls(handler)
    try:
        h = {"Authorization": f"Bearer {twin.admin_token}"}
        requests.post(f"{plain.url}/api/v1/namespaces/default/serviceaccounts", json={"metadata": {"name": "a"}}, headers=h, timeout=10)  # fmt: skip
        tok = requests.post(
            f"{plain.url}/api/v1/namespaces/default/serviceaccounts/a/token", json={}, headers=h, timeout=10
        ).json()["status"]["token"]
        kc = tmp_path / "kc"
        kc.write_text(kubeconfig_yaml(https_url, tok, shared_tls()))
        p = subprocess.run([KUBECTL, "--kubeconfig", str(kc), "auth", "whoami"], capture_output=True, text=True, timeout=30)  # fmt: skip
        assert "system:serviceaccount:default:a" in p.stdout, p.stderr
        p = subprocess.run([KUBECTL, "--kubeconfig", str(kc), "get", "pods"], capture_output=True, text=True, timeout=30)  # fmt: skip
        assert p.returncode == 1 and 'User "system:serviceaccount:default:a" cannot list' in p.stderr
        r = requests.get(f"{plain.url}/api/v1/namespaces/default/pods", headers={"Authorization": f"Bearer {tok}"}, timeout=10)  # fmt: skip
        assert r.status_code == 403
        assert requests.get(f"{plain.url}/api/v1/namespaces/default/pods", timeout=10).status_code == 403
        assert (
            requests.get(f"{plain.url}/api/v1/namespaces/default/pods", headers=h, timeout=10).status_code
            == 200
        )
    finally:
        secure.stop()
        plain.stop()


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_a_client_that_refuses_the_certificate_leaves_no_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    """Issue 27: `itbench twin serve` printed SSL tracebacks whenever a client went away — e.g. curl
    without the twin's CA, or a plain-HTTP request to the HTTPS port. The server still serves."""
    import socket
    import time

    from itbench_agents.twin.kube.auth.tls import serve_tls

    twin = Twin(seed=7, clock=ManualClock())
    secure, https_url = serve_tls(make_kube_handler(twin))
    try:
        port = int(https_url.rsplit(":", 1)[1])
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(f"{https_url}/version", timeout=10)  # the twin's CA is not trusted here
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")  # plain HTTP to the TLS port
            s.recv(100)
        time.sleep(0.5)  # the handler threads finish
        assert requests.get(f"{https_url}/version", timeout=10, verify=False).status_code == 200
    finally:
        secure.stop()
    err = capfd.readouterr().err
    assert "Traceback" not in err, err


def _exec_kubeconfig(s: Served, token: str, name: str) -> Path:
    """A kubeconfig whose user is an exec credential plugin (as EKS and GKE write them): a script
    that prints an ExecCredential with ``token`` and counts its runs."""
    import base64
    import sys

    script = s.tmp / f"{name}.py"
    count = s.tmp / f"{name}.count"
    script.write_text(
        "import json, pathlib\n"
        f"p = pathlib.Path({str(count)!r}); p.write_text(str(int(p.read_text() or 0) + 1) if p.exists() else '1')\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',\n"
        f"                  'status': {{'token': {token!r}}}}}))\n"
    )
    ca = base64.b64encode(Path(s.ca).read_bytes()).decode()
    path = s.tmp / f"{name}.kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: eks\n"
        f"clusters:\n- name: eks\n  cluster:\n    server: {s.url}\n    certificate-authority-data: {ca}\n"
        "contexts:\n- name: eks\n  context: {cluster: eks, user: eks}\n"
        "users:\n- name: eks\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
        f"      command: {sys.executable}\n      args: [{str(script)!r}]\n      interactiveMode: Never\n"
    )
    return path


def test_the_scenario_client_authenticates_as_the_kubeconfig_says(served: Served) -> None:
    """KubeApi.from_kubeconfig (fault injection, oracle, audit) on the official client's loader:
    the server and its CA from the kubeconfig, a token, an exec plugin; a wrong credential is
    refused, so the credential is really sent (it used to read a bearer token only)."""
    from itbench_agents.k8s.client import KubeApi, KubeApiError

    api = KubeApi.from_kubeconfig(None, str(served.admin_kc))  # https, the kubeconfig's own CA
    assert api.base == served.url and any(
        n["metadata"]["name"] == "default" for n in api.list("v1", "Namespace")
    )
    api = KubeApi.from_kubeconfig(None, str(_exec_kubeconfig(served, ADMIN_TOKEN, "good")))
    api.list("v1", "Namespace")
    api.list("v1", "ConfigMap", "default")
    assert (served.tmp / "good.count").read_text() == "1"  # cached until it expires
    bad = KubeApi.from_kubeconfig(None, str(_exec_kubeconfig(served, "not-a-token", "bad")))
    with pytest.raises(KubeApiError) as refused:
        bad.list("v1", "Namespace")
    assert refused.value.code == 401
    with pytest.raises(KubeApiError, match="kubeconfig"):
        KubeApi.from_kubeconfig(None, str(served.tmp / "missing.kubeconfig"))


def test_the_scenario_client_presents_a_kubeconfigs_client_certificate(served: Served) -> None:
    """kind's kubeconfig authenticates with a client certificate: the session presents it (the
    twin authenticates tokens only, so this checks the wiring, not the handshake)."""
    import base64

    from itbench_agents.k8s.client import KubeApi

    pem = Path(served.ca).read_bytes()  # any PEM will do for the wiring
    key = b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n"
    kc = served.tmp / "kind.kubeconfig"
    kc.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: kind\n"
        f"clusters:\n- name: kind\n  cluster:\n    server: {served.url}\n    insecure-skip-tls-verify: true\n"
        "contexts:\n- name: kind\n  context: {cluster: kind, user: kind}\n"
        "users:\n- name: kind\n  user:\n"
        f"    client-certificate-data: {base64.b64encode(pem).decode()}\n"
        f"    client-key-data: {base64.b64encode(key).decode()}\n"
    )
    api = KubeApi.from_kubeconfig(None, str(kc))
    assert api.session.verify is False
    cert, key_file = api.session.cert  # type: ignore[misc]
    assert Path(cert).read_bytes() == pem and Path(key_file).read_bytes() == key
