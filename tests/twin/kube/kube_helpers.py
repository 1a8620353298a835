"""Helpers for the kube tests: a bare twin served over HTTP, and the real kubectl against it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from support.kubectl_cluster import KUBECTL, run_kubectl

from itbench_agents.core.endpoints import kubeconfig_yaml
from itbench_agents.twin.httpserver import HttpEndpoint
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.server import make_kube_handler

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared"

needs_kubectl = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl binary not installed")


@dataclass
class Cluster:
    """A served twin plus helpers to talk to it."""

    twin: Twin
    url: str
    kubeconfig: Path

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        return run_kubectl(self.kubeconfig, *args, input=input, check=check, timeout=timeout)

    def kjson(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def http(self, method: str, path: str, **kw: Any) -> requests.Response:
        return requests.request(method, self.url + path, timeout=10, **kw)

    def advance(self, seconds: float) -> None:
        self.twin.advance(seconds)


def serve_cluster(twin: Twin, tmp: Path) -> Iterator[Cluster]:
    ep = HttpEndpoint(make_kube_handler(twin)).start()
    kc = tmp / "kubeconfig"
    kc.write_text(kubeconfig_yaml(ep.url))
    try:
        yield Cluster(twin, ep.url, kc)
    finally:
        ep.stop()


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 80}]
        env: [{name: A, value: "1"}]
        resources: {requests: {cpu: 100m, memory: 64Mi}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
"""
