"""The agent's credential: a ServiceAccount token bound to Roles over the task's namespaces.

Everything goes through the public Kubernetes API (ServiceAccounts, RBAC objects, the TokenRequest
subresource), so the same code scopes an agent on the twin and on a live cluster:

- ``itbench/agent-reader``: read everything in the app namespaces (Secrets and pod logs included),
  read nodes, namespaces and other cluster-scoped objects, create self-reviews
  (``kubectl auth can-i``). Used while diagnosing.
- ``itbench/agent-writer``: the reader's rights plus create/update/patch/delete of namespaced
  objects in the app namespaces and patch/update of nodes (cordon, taints, labels). No RBAC objects
  (no escalation), no Namespace objects (a namespaced rule on ``namespaces`` would allow deleting
  the namespace itself), no cluster-scoped delete.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.endpoints import kubeconfig_cluster, kubeconfig_yaml
from ..k8s.client import KubeApi, KubeApiError

AGENT_NAMESPACE = "itbench"
READER = "agent-reader"
WRITER = "agent-writer"
TOKEN_SECONDS = 7 * 86400

READ = ["get", "list", "watch"]
WRITE = ["create", "update", "patch", "delete", "deletecollection"]
NAMESPACED_CORE = [
    "pods", "pods/log", "pods/status", "pods/eviction", "services", "services/status", "endpoints",
    "configmaps", "secrets", "persistentvolumeclaims", "replicationcontrollers",
    "replicationcontrollers/scale", "resourcequotas", "limitranges", "serviceaccounts", "events",
    "podtemplates",
]  # fmt: skip
NAMESPACED_GROUPS = [
    "apps", "batch", "autoscaling", "policy", "networking.k8s.io", "discovery.k8s.io",
    "events.k8s.io", "coordination.k8s.io", "chaos-mesh.org", "monitoring.coreos.com",
]  # fmt: skip
CLUSTER_READ: list[dict[str, Any]] = [
    {
        "apiGroups": [""],
        "resources": ["nodes", "nodes/status", "namespaces", "persistentvolumes"],
        "verbs": READ,
    },
    {
        "apiGroups": ["storage.k8s.io", "scheduling.k8s.io", "node.k8s.io", "apiextensions.k8s.io"],
        "resources": ["*"],
        "verbs": READ,
    },
    {"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"], "verbs": READ},
    {"apiGroups": ["events.k8s.io", ""], "resources": ["events"], "verbs": READ},
]
NODE_WRITE: list[dict[str, Any]] = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch", "update"]}]


def namespaced_rules(write: bool) -> list[dict[str, Any]]:
    verbs = READ + (WRITE if write else [])
    return [
        {"apiGroups": [""], "resources": NAMESPACED_CORE, "verbs": verbs},
        {"apiGroups": NAMESPACED_GROUPS, "resources": ["*"], "verbs": verbs},
        {"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": READ},
    ]


@dataclass(frozen=True)
class AgentCredentials:
    kubeconfig: Path
    """The writer's kubeconfig (or the reader's, for diagnosis-only tasks)."""
    kubeconfig_readonly: Path
    token: str
    readonly_token: str


def _ensure(api: KubeApi, obj: dict[str, Any]) -> None:
    try:
        api.create(obj)
    except KubeApiError as e:
        if e.code != 409:
            raise
        api.replace({**obj, "metadata": {**obj["metadata"]}})


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/managed-by": "itbench"}}
    if namespace:
        m["namespace"] = namespace
    return m


def _cluster_role(sa: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A ClusterRole ``itbench-<sa>`` of ``rules`` and its binding to ``itbench/<sa>``."""
    role_name = f"itbench-{sa}"
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": _meta(role_name), "rules": rules},
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": _meta(role_name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": AGENT_NAMESPACE}],
        },
    ]


def _role_objects(namespaces: list[str], sa: str, write: bool) -> list[dict[str, Any]]:
    subject = [{"kind": "ServiceAccount", "name": sa, "namespace": AGENT_NAMESPACE}]
    role_name = f"itbench-{sa}"
    rbac = "rbac.authorization.k8s.io/v1"
    objs = _cluster_role(sa, CLUSTER_READ + (NODE_WRITE if write else []))
    for ns in namespaces:
        objs += [
            {
                "apiVersion": rbac,
                "kind": "Role",
                "metadata": _meta(role_name, ns),
                "rules": namespaced_rules(write),
            },
            {
                "apiVersion": rbac,
                "kind": "RoleBinding",
                "metadata": _meta(role_name, ns),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name},
                "subjects": subject,
            },
        ]
    return objs


def mint_token(api: KubeApi, sa: str, seconds: int = TOKEN_SECONDS) -> str:
    """A token for ``itbench/<sa>`` from the TokenRequest API."""
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    res = api.post(f"/api/v1/namespaces/{AGENT_NAMESPACE}/serviceaccounts/{sa}/token", body)
    token = (res.get("status") or {}).get("token")
    if not token:
        raise KubeApiError(f"TokenRequest for {AGENT_NAMESPACE}/{sa} returned no token")
    return str(token)


def grant_agent_access(api: KubeApi, namespaces: list[str], *, write: bool = True) -> tuple[str, str]:
    """Create the agent's ServiceAccounts and Roles (idempotent) and mint their tokens: (the
    writer's token, or the reader's when ``write`` is False; the reader's token). ``api`` must carry
    an admin credential."""
    _ensure(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(AGENT_NAMESPACE)})
    for sa, can_write in ((READER, False), (WRITER, True)):
        _ensure(api, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(sa, AGENT_NAMESPACE)})
        for obj in _role_objects(namespaces, sa, can_write):
            _ensure(api, obj)
    reader = mint_token(api, READER)
    return (mint_token(api, WRITER) if write else reader), reader


def revoke_agent_access(api: KubeApi, accounts: tuple[str, ...] = (READER, WRITER)) -> list[str]:
    """End the agent's credentials: delete its ServiceAccounts, which invalidates every token minted
    for them (the apiserver's rule for bound tokens; the twin's too). What the agent left running —
    a thread past its limit, a forgotten background process — can then read and change nothing
    while the harness settles and scores. Returns the accounts deleted."""
    gone = []
    for sa in accounts:
        try:
            api.delete("v1", "ServiceAccount", AGENT_NAMESPACE, sa)
            gone.append(sa)
        except KubeApiError as e:
            if e.code != 404:
                raise
    return gone


def grant_access(api: KubeApi, sa: str, cluster_rules: list[dict[str, Any]]) -> str:
    """A ServiceAccount ``itbench/<sa>`` bound to a ClusterRole of ``cluster_rules`` (idempotent),
    and its token: a persona's own agent credential (e.g. ``personas/ciso/access.py``)."""
    _ensure(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(AGENT_NAMESPACE)})
    _ensure(api, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(sa, AGENT_NAMESPACE)})
    for obj in _cluster_role(sa, cluster_rules):
        _ensure(api, obj)
    return mint_token(api, sa)


def write_agent_kubeconfigs(
    admin_kubeconfig: str | Path, namespaces: list[str], workdir: Path, token: str, readonly_token: str
) -> AgentCredentials:
    """Write ``kubeconfig`` (``token``) and ``kubeconfig-readonly`` into ``workdir``, for the
    cluster (server and CA) of ``admin_kubeconfig``."""
    server, ca_data = kubeconfig_cluster(admin_kubeconfig)
    default_ns = namespaces[0] if namespaces else "default"
    workdir.mkdir(parents=True, exist_ok=True)
    main = workdir / "kubeconfig"
    ro = workdir / "kubeconfig-readonly"
    for path, tok in ((main, token), (ro, readonly_token)):
        path.write_text(
            kubeconfig_yaml(server, context="itbench", namespace=default_ns, token=tok, ca_data=ca_data)
        )
        path.chmod(0o600)
    return AgentCredentials(main.resolve(), ro.resolve(), token, readonly_token)


def provision_agent_access(
    api: KubeApi, admin_kubeconfig: str | Path, namespaces: list[str], workdir: Path, *, write: bool = True
) -> AgentCredentials:
    """:func:`grant_agent_access`, then :func:`write_agent_kubeconfigs`: ``kubeconfig`` (writer, or
    reader when ``write`` is False) and ``kubeconfig-readonly`` in ``workdir``."""
    token, readonly = grant_agent_access(api, namespaces, write=write)
    return write_agent_kubeconfigs(admin_kubeconfig, namespaces, workdir, token, readonly)
