"""The endpoints file a scenario hands to an agent (and `itbench twin serve --endpoints` writes)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel


class Endpoints(BaseModel):
    """Where an agent finds the environment. Nothing else about the scenario is revealed."""

    kubeconfig: str
    kube_url: str
    prometheus_url: str | None = None
    loki_url: str | None = None
    jaeger_url: str | None = None
    opencost_url: str | None = None
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


def kubeconfig_yaml(server: str, context: str = "itbench-twin", namespace: str = "default") -> str:
    """A kubeconfig for a plain-HTTP, no-auth API server."""
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        f"- name: {context}\n"
        "  cluster:\n"
        f"    server: {server}\n"
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
        "    token: itbench-twin\n"
        "preferences: {}\n"
    )
