"""The ``prometheusrules.monitoring.coreos.com`` CustomResourceDefinition as the Prometheus
Operator's CRD bundle installs it (kube-prometheus-stack): namespaced, short name ``promrule``,
the ``spec.groups`` schema kept open as the twin validates rules itself (``rules.py``)."""

from __future__ import annotations

from typing import Any

GROUP = "monitoring.coreos.com"
VERSION = "v1"
PLURAL = "prometheusrules"
KIND = "PrometheusRule"


def prometheusrule_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{PLURAL}.{GROUP}",
            "labels": {"app.kubernetes.io/part-of": "kube-prometheus-stack"},
            "annotations": {"operator.prometheus.io/version": "0.75.0"},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": "prometheusrule",
                "shortNames": ["promrule"],
                "categories": ["prometheus-operator"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "groups": {
                                            "type": "array",
                                            "items": {
                                                "type": "object",
                                                "x-kubernetes-preserve-unknown-fields": True,
                                            },
                                        }
                                    },
                                },
                            },
                        }
                    },
                }
            ],
        },
    }
