"""The endpoints file a scenario hands to an agent (and `itbench twin serve --endpoints` writes)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel


class Endpoints(BaseModel):
    """Where an agent finds the environment. Nothing else about the scenario is revealed.

    Paths are absolute. ``kubeconfig`` holds the episode's credential (on the twin and on a live
    cluster alike: a ServiceAccount token bound to the task's Roles); ``kubeconfig_readonly``, when
    set, a read-only credential for the same cluster that agents with a diagnosis phase use first.
    A task without a cluster (FinOps anomaly detection: the data is in the work folder) has empty
    ``kubeconfig`` and ``kube_url``.
    """

    kubeconfig: str
    kubeconfig_readonly: str | None = None
    kube_url: str
    prometheus_url: str | None = None
    loki_url: str | None = None
    jaeger_url: str | None = None
    opencost_url: str | None = None
    opa_url: str | None = None
    """OPA's REST API, where the scenario runs an OPA (the twin's ``opa`` addon)."""
    ansible_inventory: str | None = None
    """An Ansible inventory naming the scenario's hosts (a RHEL host twin: ``twin/host/``)."""
    alertmanager_url: str | None = None

    def write(self, path: str | Path) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_text(self.model_dump_json(indent=2) + "\n")
        tmp.replace(p)
        return p

    @classmethod
    def read(cls, path: str | Path) -> Endpoints:
        return cls.model_validate_json(Path(path).read_text())


DEFAULT_TOKEN = "itbench-twin"
"""The admin token of a twin that was given no other (tests, ``Twin()`` used as a library)."""


def kubeconfig_yaml(
    server: str,
    context: str = "itbench-twin",
    namespace: str = "default",
    token: str = DEFAULT_TOKEN,
    ca_data: str | None = None,
) -> str:
    """A kubeconfig with a bearer token; ``ca_data`` (base64 PEM) is the CA of an ``https://`` server
    (kubectl sends a token only to an https server)."""
    ca = f"    certificate-authority-data: {ca_data}\n" if ca_data else ""
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        f"- name: {context}\n"
        "  cluster:\n"
        f"    server: {server}\n"
        f"{ca}"
        "contexts:\n"
        f"- name: {context}\n"
        "  context:\n"
        f"    cluster: {context}\n"
        f"    user: {context}\n"
        f"    namespace: {namespace}\n"
        f"current-context: {context}\n"
        "users:\n"
        f"- name: {context}\n"
        "  user:\n"
        f"    token: {token}\n"
        "preferences: {}\n"
    )


def kubeconfig_token(path: str | Path) -> str | None:
    """The bearer token of a kubeconfig's current context (None when it has none)."""
    import yaml

    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(doc, dict):
        return None
    current = doc.get("current-context")
    user_name = next(
        (
            (c.get("context") or {}).get("user")
            for c in doc.get("contexts") or []
            if isinstance(c, dict) and c.get("name") == current
        ),
        None,
    )
    for u in doc.get("users") or []:
        if isinstance(u, dict) and u.get("name") == user_name:
            token = (u.get("user") or {}).get("token")
            return str(token) if token else None
    return None


def kubeconfig_cluster(path: str | Path) -> tuple[str, str | None]:
    """(server, certificate-authority-data) of a kubeconfig's current context."""
    import yaml

    doc = yaml.safe_load(Path(path).read_text()) or {}
    current = doc.get("current-context")
    ctx = next((c.get("context") or {} for c in doc.get("contexts") or [] if c.get("name") == current), {})
    cluster = next(
        (c.get("cluster") or {} for c in doc.get("clusters") or [] if c.get("name") == ctx.get("cluster")), {}
    )
    ca_data = cluster.get("certificate-authority-data")
    ca_file = cluster.get("certificate-authority")
    if not ca_data and ca_file:  # a CA file (kind, minikube): its PEM, as the data form carries it
        import base64

        ca_path = Path(ca_file) if Path(ca_file).is_absolute() else Path(path).parent / ca_file
        ca_data = base64.b64encode(ca_path.read_bytes()).decode()
    return str(cluster.get("server", "")), ca_data
