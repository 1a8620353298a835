"""The objects Kyverno's Helm chart (v3.3, Kyverno v1.13) creates in the ``kyverno`` namespace that
a user sees with kubectl: the four controllers' ServiceAccounts, Deployments and the admission
webhook's Service. The twin runs their pods like any other (images in ``scenarios/apps/images.yaml``).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

NAMESPACE = "kyverno"
VERSION = "v1.13.4"
ADMISSION_CONTROLLER = "kyverno-admission-controller"
CONTROLLERS = (
    # (component, image, binary, replicas)
    ("admission-controller", "kyverno", "/kyverno", 1),
    ("background-controller", "background-controller", "/background-controller", 1),
    ("cleanup-controller", "cleanup-controller", "/cleanup-controller", 1),
    ("reports-controller", "reports-controller", "/reports-controller", 1),
)


def _labels(component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/instance": "kyverno",
        "app.kubernetes.io/part-of": "kyverno",
        "app.kubernetes.io/version": "3.3.4",
    }


def _probe(path: str) -> Obj:
    return {"httpGet": {"path": path, "port": 9443, "scheme": "HTTPS"}, "periodSeconds": 10}


def kyverno_objects() -> list[Obj]:
    out: list[Obj] = []
    for component, image, binary, replicas in CONTROLLERS:
        name = f"kyverno-{component}"
        labels = _labels(component)
        selector = {
            k: labels[k]
            for k in (
                "app.kubernetes.io/component",
                "app.kubernetes.io/instance",
                "app.kubernetes.io/part-of",
            )
        }
        container: Obj = {
            "name": "kyverno" if component == "admission-controller" else "controller",
            "image": f"reg.kyverno.io/kyverno/{image}:{VERSION}",
            "imagePullPolicy": "IfNotPresent",
            "command": [binary],
            "args": ["--loggingFormat=text", "--v=2"],
            "ports": [
                {"name": "https", "containerPort": 9443, "protocol": "TCP"},
                {"name": "metrics", "containerPort": 8000, "protocol": "TCP"},
            ],
            "livenessProbe": _probe("/health/liveness"),
            "readinessProbe": _probe("/health/readiness"),
        }
        spec: Obj = {"serviceAccountName": name, "containers": [container]}
        if component == "admission-controller":
            spec["initContainers"] = [
                {
                    "name": "kyverno-pre",
                    "image": f"reg.kyverno.io/kyverno/kyvernopre:{VERSION}",
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["/kyvernopre"],
                }
            ]
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
            }
        )
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": selector},
                    "template": {"metadata": {"labels": labels}, "spec": spec},
                },
            }
        )
    admission = _labels("admission-controller")
    out.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kyverno-svc", "namespace": NAMESPACE, "labels": admission},
            "spec": {
                "selector": {
                    k: admission[k]
                    for k in (
                        "app.kubernetes.io/component",
                        "app.kubernetes.io/instance",
                        "app.kubernetes.io/part-of",
                    )
                },
                "ports": [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}],
            },
        }
    )
    return out
