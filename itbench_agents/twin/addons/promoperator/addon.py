"""The Prometheus Operator's rule handling in the twin (``twin.install_addon("prometheus-operator")``):
PrometheusRule objects become rule files of the twin's Prometheus.

- the CRD ``prometheusrules.monitoring.coreos.com`` is served (``crd.py``);
- the operator's validating webhook refuses a rule the Prometheus could not load (``rules.py``:
  ``admission webhook "prometheusrulevalidate.monitoring.coreos.com" denied the request: Rules are
  not valid``, code 422);
- every PrometheusRule is selected (a ``ruleSelector`` of ``{}``) and loaded as the file
  ``/etc/prometheus/rules/prometheus-k8s-rulefiles-0/<namespace>-<name>-<uid>.yaml``; a change
  reloads that file at once on the twin's clock (the operator and the config reloader take seconds
  on a cluster), a deletion unloads it.

A team that owns its alerts edits them here (FinOps: the cost alerts of the app's namespace).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....k8s.kinds import GroupResource
from ...kube.store import ChangeEvent
from ..base import AdmissionRequest, WebhookDenied
from .crd import GROUP, PLURAL, prometheusrule_crd
from .rules import rule_groups

if TYPE_CHECKING:
    from ...core import TwinCore as Twin

RULES = GroupResource(GROUP, PLURAL)
CRDS = GroupResource("apiextensions.k8s.io", "customresourcedefinitions")
WEBHOOK = "prometheusrulevalidate.monitoring.coreos.com"
RULE_DIR = "/etc/prometheus/rules/prometheus-k8s-rulefiles-0"


def rule_file(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{RULE_DIR}/{meta.get('namespace', '')}-{meta.get('name', '')}-{meta.get('uid', '')}.yaml"


class PrometheusOperatorAddon:
    name = "prometheus-operator"

    def __init__(self) -> None:
        self.twin: Any = None

    def install(self, twin: Twin) -> None:
        self.twin = twin
        crd = prometheusrule_crd()
        if twin.store.get(CRDS, "", crd["metadata"]["name"]) is None:
            twin.store.create(CRDS, crd)
        twin.admission_hooks.append(self.validate)
        twin.store.subscribe(self._on_change)

    def validate(self, req: AdmissionRequest) -> list[str]:
        if req.group != GROUP or req.resource != PLURAL or req.obj is None:
            return []
        if req.operation not in ("CREATE", "UPDATE"):
            return []
        _, problems = rule_groups(req.obj.get("spec"))
        if problems:
            raise WebhookDenied(WEBHOOK, "Rules are not valid: " + "; ".join(problems), code=422)
        return []

    def _on_change(self, ev: ChangeEvent) -> None:
        if ev.gr != RULES:
            return
        engine = getattr(self.twin, "alerts", None)
        if engine is None:
            return
        now = self.twin.now()
        if ev.type == "DELETED":
            engine.replace_file(rule_file(ev.obj), [], now)
            return
        groups, _ = rule_groups(ev.obj.get("spec"))  # the webhook let only valid ones through
        engine.replace_file(rule_file(ev.obj), groups, now)

    def load_existing(self) -> None:
        """Load the PrometheusRules already stored (the twin's alert engine was made after them)."""
        engine = getattr(self.twin, "alerts", None)
        if engine is None:
            return
        for obj in self.twin.store.list(RULES):
            groups, _ = rule_groups(obj.get("spec"))
            engine.replace_file(rule_file(obj), groups, self.twin.now())
