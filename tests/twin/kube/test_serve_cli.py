"""`itbench twin serve` and the ``running_twin`` context manager."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kube_helpers import DEPLOYMENT, KUBECTL, needs_kubectl

from itbench_agents.twin.instance import Twin
from itbench_agents.twin.kube.errors import ApiError
from itbench_agents.twin.serve import load_manifest_dir, running_twin, twin_kubeconfig


@needs_kubectl
def test_running_twin_serves_a_manifest_folder(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "app.yaml").write_text(DEPLOYMENT)
    with running_twin(manifests=tmp_path / "m", workdir=tmp_path / "w") as twin:
        assert twin.endpoints is not None
        kc = twin.endpoints.kubeconfig
        assert Path(kc).exists() and json.loads((tmp_path / "w" / "endpoints.json").read_text())["kube_url"]
        out = subprocess.run(
            [KUBECTL, "--kubeconfig", kc, "get", "deploy", "web", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
        assert out.strip() == "deployment.apps/web"
        url = twin.endpoints.kube_url
    import requests

    with pytest.raises(requests.ConnectionError):  # closed on exit
        requests.get(url + "/version", timeout=2)


def test_twin_kubeconfig_yields_a_working_kubeconfig_for_the_official_client(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "app.yaml").write_text(DEPLOYMENT)
    from kubernetes import client, config

    with twin_kubeconfig(manifests=tmp_path / "m") as kubeconfig:
        api = client.AppsV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
        names = [d.metadata.name for d in api.list_namespaced_deployment("default").items]
        assert names == ["web"]
    assert not kubeconfig.exists()  # its temporary work folder is gone with the twin


def test_manifest_loader_names_the_bad_file(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(DEPLOYMENT)
    (tmp_path / "z.yaml").write_text("just: a map\n")
    with pytest.raises(ValueError, match=r"z\.yaml: document 1 is not a Kubernetes object"):
        load_manifest_dir(tmp_path)
    (tmp_path / "z.yaml").write_text("a: [b\n")
    with pytest.raises(ValueError, match=r"z\.yaml: not valid YAML"):
        load_manifest_dir(tmp_path)
    (tmp_path / "z.yaml").write_text(
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n"
    )
    assert [o["kind"] for o in load_manifest_dir(tmp_path)] == ["Deployment", "Service", "ConfigMap"]


@needs_kubectl
def test_cli_serve_prints_kubeconfig_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "app.yaml").write_text(DEPLOYMENT)
    env = {**os.environ, "ITBENCH_SEED": "3"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "itbench_agents.cli",
            "twin",
            "serve",
            "--manifests",
            str(tmp_path / "m"),
            "--kubeconfig",
            str(tmp_path / "kc"),
            "--endpoints",
            str(tmp_path / "ep.json"),
            "--workdir",
            str(tmp_path / "w"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "ep.json").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert (tmp_path / "ep.json").exists(), proc.stdout.read() if proc.stdout else ""
        ep = json.loads((tmp_path / "ep.json").read_text())
        assert ep["kubeconfig"] == str(tmp_path / "kc") and ep["kube_url"].startswith("http://127.0.0.1:")
        pods = subprocess.run(
            [KUBECTL, "--kubeconfig", str(tmp_path / "kc"), "get", "svc", "web", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert pods.stdout.strip() == "service/web"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert str(tmp_path / "kc") in out and "get pods -A" in out and "stopping" in out


def serve_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``itbench twin serve ARGS`` for a command that ends by itself (an error at start-up)."""
    return subprocess.run(
        [sys.executable, "-m", "itbench_agents.cli", "twin", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_rejects_both_app_and_manifests(tmp_path: Path) -> None:
    proc = serve_cli("--app", "otel-demo", "--manifests", str(tmp_path))
    assert proc.returncode != 0 and "not both" in (proc.stdout + proc.stderr)


def test_a_manifest_the_api_server_rejects_gets_its_422_and_the_cli_prints_it(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
        "spec:\n  selector: {matchLabels: {app: web}}\n  template:\n"
        "    metadata: {labels: {app: other}}\n"
        "    spec: {containers: [{name: web, image: nginx}]}\n"
    )
    with pytest.raises(ApiError) as err:
        Twin.for_manifests(load_manifest_dir(tmp_path))
    assert err.value.code == 422
    assert "`selector` does not match template `labels`" in err.value.message
    proc = serve_cli("--manifests", str(tmp_path), "--port", "0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out
    assert (
        '(Deployment web): Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: '
        in out
    )
    assert 'map[string]string{"app":"other"}: `selector` does not match template `labels`' in out
