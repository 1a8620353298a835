"""Kyverno installed in the twin: its CRDs and namespace, its two validating webhooks (policies, and
resources under Enforce policies), the policies' Ready status, and the reports controller that keeps
one PolicyReport per resource (Kyverno 1.13+: named by the resource's uid, ``scope`` = the resource).

    twin = Twin.for_app("otel-demo", addons=["kyverno"])     # or twin.install_addon("kyverno")

Everything runs on the twin's scheduler: a change to a policy, an exception or a resource queues a
scan of what it affects, done at once (the real reports controller takes a few seconds).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import yaml

from ....k8s.kinds import GroupResource
from ....k8s.times import rfc3339
from ...kube.errors import ApiError
from ...kube.store import ChangeEvent, clone
from ..base import AdmissionRequest, WebhookDenied
from .crds import KYVERNO, REPORTS, REPORTS_VERSION, kyverno_crds
from .engine import Admission, RuleResult, apply_policy, policy_rules
from .install import ADMISSION_CONTROLLER, kyverno_objects
from .policy_checks import check_policy

if TYPE_CHECKING:
    from ...core import TwinCore as Twin

Obj = dict[str, Any]

NAMESPACE = "kyverno"
POLICY_WEBHOOK = "validate-policy.kyverno.svc"
CLUSTER_POLICIES = GroupResource(KYVERNO, "clusterpolicies")
POLICIES = GroupResource(KYVERNO, "policies")
EXCEPTIONS = GroupResource(KYVERNO, "policyexceptions")
REPORTS_GR = GroupResource(REPORTS, "policyreports")
CLUSTER_REPORTS_GR = GroupResource(REPORTS, "clusterpolicyreports")
NAMESPACES = GroupResource("", "namespaces")
DEPLOYMENTS = GroupResource("apps", "deployments")
ENDPOINTS = GroupResource("", "endpoints")
REPORTS_CONTROLLER = "kyverno-reports-controller"
CRDS = GroupResource("apiextensions.k8s.io", "customresourcedefinitions")
_POLICY_GRS = (CLUSTER_POLICIES, POLICIES)
_RULE_COUNTS = (
    ("validate", "validate"),
    ("mutate", "mutate"),
    ("generate", "generate"),
    ("verifyimages", "verifyImages"),
)
_OWN_GROUPS = (KYVERNO, REPORTS, "reports.kyverno.io", "policies.kyverno.io")
# Kyverno's default resourceFilters (its ConfigMap ``kyverno``): [Event,*,*] [*/*,kube-system,*]
# [*/*,kube-public,*] [*/*,kube-node-lease,*] [Node,*,*] [APIService,*,*] [TokenReview,*,*]
# [SubjectAccessReview,*,*] [SelfSubjectAccessReview,*,*] [Binding,*,*] [ReplicaSet,*,*]
# [*/*,kyverno,*] ...
FILTERED_KINDS = frozenset(
    {"Event", "Node", "APIService", "TokenReview", "SubjectAccessReview", "SelfSubjectAccessReview",
     "Binding", "ReplicaSet", "Lease", "EndpointSlice", "Endpoints", "CustomResourceDefinition"}
)  # fmt: skip
_UNREPORTED = frozenset(
    {"events", "nodes", "replicasets", "leases", "endpointslices", "endpoints", "bindings"}
)
FILTERED_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", NAMESPACE})


class KyvernoAddon:
    name = "kyverno"

    def __init__(self) -> None:
        self.twin: Any = None
        self._dirty: set[tuple[GroupResource, str, str]] = set()
        self._rescan_all = False

    # ------------------------------------------------------------------ install
    def install(self, twin: Twin) -> None:
        self.twin = twin
        store = twin.store
        if store.get(NAMESPACES, "", NAMESPACE) is None:
            twin.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
        if store.get(DEPLOYMENTS, NAMESPACE, ADMISSION_CONTROLLER) is None:
            twin.apply(kyverno_objects())
        for crd in kyverno_crds():
            if store.get(CRDS, "", crd["metadata"]["name"]) is None:
                store.create(CRDS, crd)
        twin.admission_hooks.append(self.policy_webhook)
        twin.admission_hooks.append(self.resource_webhook)
        store.subscribe(self._on_change)

    # ------------------------------------------------------------------ webhooks
    def policy_webhook(self, req: AdmissionRequest) -> list[str]:
        """``validate-policy.kyverno.svc``: a policy Kyverno cannot run is refused."""
        if req.group != KYVERNO or req.resource not in ("clusterpolicies", "policies") or req.obj is None:
            return []
        if req.operation not in ("CREATE", "UPDATE"):
            return []
        if not self.admission_up():
            raise unreachable(POLICY_WEBHOOK, "policyvalidate")
        error, warnings = check_policy(req.obj)
        if error:
            raise WebhookDenied(POLICY_WEBHOOK, error)
        return warnings

    def resource_webhook(self, req: AdmissionRequest) -> list[str]:
        """``validate.kyverno.svc-fail`` / ``-ignore``: Enforce policies whose rules fail block
        the request with Kyverno's message; Audit policies only report."""
        if req.sub_resource or filtered(req.kind, req.group, req.namespace):
            return []
        resource = req.obj if req.obj is not None else req.old
        if not isinstance(resource, dict):
            return []
        resource = {**resource, "apiVersion": _api_version(req.group, req.version), "kind": req.kind}
        adm = self._admission(
            resource if req.obj is not None else None,
            req.operation,
            old={**req.old, "kind": req.kind} if req.old is not None else None,
            user={"username": req.username, "groups": list(req.groups)},
        )
        policies = [
            p for p in self._policies(req.namespace) if (p.get("spec") or {}).get("admission") is not False
        ]
        kinds = _kinds_of(policies)
        if kinds is None or not (req.kind in kinds or "*" in kinds):
            return []  # no webhook is registered for this kind (Kyverno configures them from its policies)
        if not self.admission_up():
            if any(str((p.get("spec") or {}).get("failurePolicy", "Fail")) != "Ignore" for p in policies):
                raise unreachable("validate.kyverno.svc-fail", "validate/fail")
            return []  # failurePolicy Ignore: the request goes through unchecked
        blocked: dict[str, dict[str, str]] = {}
        ignore_only = True
        for policy in policies:
            for r in apply_policy(policy, adm):
                if r.status in ("fail", "error") and _enforced(policy, r.rule, req.namespace):
                    blocked.setdefault(_policy_key(policy), {})[r.rule] = r.message
                    if str((policy.get("spec") or {}).get("failurePolicy", "Fail")) != "Ignore":
                        ignore_only = False
        if not blocked:
            return []
        ns = f"{req.namespace}/" if req.namespace else ""
        body = yaml.safe_dump(blocked, sort_keys=True, allow_unicode=True, width=80)
        message = (
            f"\n\nresource {req.kind}/{ns}{req.name} was blocked due to the following policies \n\n{body}"
        )
        webhook = "validate.kyverno.svc-ignore" if ignore_only else "validate.kyverno.svc-fail"
        raise WebhookDenied(webhook, message)

    # ------------------------------------------------------------------ change tracking
    def _on_change(self, ev: ChangeEvent) -> None:
        if ev.gr in _POLICY_GRS:
            if ev.type != "DELETED":
                self.twin.scheduler.soon(
                    lambda gr=ev.gr, o=ev.obj: self._set_ready(gr, o),
                    key=("kyverno-ready", ev.gr, ev.namespace, ev.name),
                )
            self._rescan_all = True
        elif ev.gr == EXCEPTIONS or ev.gr == NAMESPACES:
            self._rescan_all = True
        elif ev.gr.group in _OWN_GROUPS or ev.gr.group == "apiextensions.k8s.io":
            return
        elif ev.namespace in FILTERED_NAMESPACES or ev.gr.resource in _UNREPORTED:
            if not (ev.namespace == NAMESPACE and ev.gr == DEPLOYMENTS):
                return  # (Kyverno's own controllers coming back run the scan that waited for them)
        else:
            self._dirty.add((ev.gr, ev.namespace, ev.name))
        self.twin.scheduler.soon(self.scan, key="kyverno-reports")

    def _set_ready(self, gr: GroupResource, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        current = self.twin.store.get(gr, meta.get("namespace", "") or "", meta.get("name", ""))
        if current is None:
            return
        rules = policy_rules(current)
        own = [
            r for r in rules if not str(r.get("name", "")).startswith("autogen-")
        ]  # Kyverno's setRuleCount
        count = {k: sum(1 for r in own if r.get(t)) for k, t in _RULE_COUNTS}
        status = {
            "conditions": [
                {
                    "lastTransitionTime": rfc3339(self.twin.now()),
                    "message": "Ready",
                    "reason": "Succeeded",
                    "status": "True",
                    "type": "Ready",
                }
            ],
            "rulecount": count,
            "autogen": {"rules": [r for r in rules if str(r.get("name", "")).startswith("autogen-")]},
        }
        old = current.get("status") or {}
        if (
            old.get("rulecount") == count
            and old.get("autogen") == status["autogen"]
            and old.get("conditions")
        ):
            return
        new = clone(current)
        new["status"] = status
        self.twin.store.update(gr, new, status_only=True)

    # ------------------------------------------------------------------ reports
    def scan(self) -> None:
        """Bring the PolicyReports up to date with what changed since the last scan."""
        store = self.twin.store
        if not self.reports_up():
            return  # the changes wait for the reports controller (its availability change queues a scan)
        policies = [p for p in self._policies(None) if (p.get("spec") or {}).get("background") is not False]
        kinds = _kinds_of(policies)
        everything = self._rescan_all
        if everything:
            targets = list(self._all_resources(kinds))
        else:
            targets = []
            for gr, ns, name in sorted(self._dirty, key=lambda t: (t[0].group, t[0].resource, t[1], t[2])):
                obj = store.get(gr, ns, name)
                if obj is None:
                    self._drop_report(gr, ns, name)
                else:
                    targets.append((gr, obj))
        self._dirty.clear()
        self._rescan_all = False
        for gr, obj in targets:
            self._report(gr, obj, policies, kinds)
        if everything:  # reports of resources no policy reaches any more
            self._drop_stale({obj["metadata"].get("uid") for gr, obj in targets})

    def _report(self, gr: GroupResource, obj: Obj, policies: list[Obj], kinds: set[str] | None) -> None:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace", "") or ""
        info = self._info(gr)
        if info is None or filtered(info.kind, gr.group, ns) or meta.get("deletionTimestamp"):
            self._delete_report(ns, meta.get("uid", ""))
            return
        resource = {**obj, "apiVersion": info.api_version, "kind": info.kind}
        results: list[tuple[Obj, RuleResult]] = []
        if kinds is None or info.kind in kinds or "*" in kinds:
            adm = self._admission(resource, "CREATE", old=None, user={})
            for policy in policies:
                if policy.get("kind") == "Policy" and (policy.get("metadata") or {}).get("namespace") != ns:
                    continue
                results.extend((policy, r) for r in apply_policy(policy, adm))
        if not results:
            self._delete_report(ns, meta.get("uid", ""))
            return
        now = int(self.twin.now())
        entries = [_result(policy, r, now) for policy, r in results]
        entries.sort(key=lambda e: (e["policy"], e["rule"]))
        summary = {
            k: sum(1 for e in entries if e["result"] == k) for k in ("pass", "fail", "warn", "error", "skip")
        }
        scope = {"apiVersion": info.api_version, "kind": info.kind, "name": meta.get("name", "")}
        if ns:
            scope["namespace"] = ns
        scope["uid"] = meta.get("uid", "")
        report = {
            "apiVersion": f"{REPORTS}/{REPORTS_VERSION}",
            "kind": "PolicyReport" if ns else "ClusterPolicyReport",
            "metadata": {
                "name": meta.get("uid", ""),
                **({"namespace": ns} if ns else {}),
                "labels": {"app.kubernetes.io/managed-by": "kyverno"},
                "ownerReferences": [
                    {
                        "apiVersion": info.api_version,
                        "kind": info.kind,
                        "name": meta.get("name", ""),
                        "uid": meta.get("uid", ""),
                    }
                ],
            },
            "scope": scope,
            "results": entries,
            "summary": summary,
        }
        self._put_report(report)

    def _put_report(self, report: Obj) -> None:
        store = self.twin.store
        gr = REPORTS_GR if report["kind"] == "PolicyReport" else CLUSTER_REPORTS_GR
        meta = report["metadata"]
        current = store.get(gr, meta.get("namespace", ""), meta["name"])
        if current is None:
            store.create(gr, report)
            return
        same_results = [{**e, "timestamp": None} for e in current.get("results") or []] == [
            {**e, "timestamp": None} for e in report["results"]
        ]
        if same_results and current.get("scope") == report["scope"]:
            return  # unchanged: no write, no new resourceVersion (as Kyverno's reports controller)
        new = clone(current)
        new.update({k: report[k] for k in ("scope", "results", "summary")})
        store.update(gr, new)

    def _delete_report(self, ns: str, uid: str) -> None:
        gr = REPORTS_GR if ns else CLUSTER_REPORTS_GR
        if uid and self.twin.store.get(gr, ns, uid) is not None:
            self.twin.store.delete(gr, ns, uid)

    def _drop_report(self, gr: GroupResource, ns: str, name: str) -> None:
        """A deleted resource's report goes with it (Kyverno's reports are owned by the resource)."""
        report_gr = REPORTS_GR if ns else CLUSTER_REPORTS_GR
        for report in self.twin.store.list(report_gr, ns if ns else None):
            scope = report.get("scope") or {}
            info = self._info(gr)
            if info is not None and scope.get("kind") == info.kind and scope.get("name") == name:
                self.twin.store.delete(report_gr, ns, report["metadata"]["name"])

    def _drop_stale(self, live: set[Any]) -> None:
        for gr in (REPORTS_GR, CLUSTER_REPORTS_GR):
            for report in self.twin.store.list(gr):
                if report["metadata"]["name"] not in live:
                    self.twin.store.delete(
                        gr, report["metadata"].get("namespace", "") or "", report["metadata"]["name"]
                    )

    # ------------------------------------------------------------------ Kyverno's own health
    def admission_up(self) -> bool:
        """Whether the webhooks' Service has a ready endpoint (the admission controller runs)."""
        ep = self.twin.store.get(ENDPOINTS, NAMESPACE, "kyverno-svc")
        return any((subset.get("addresses") or []) for subset in (ep or {}).get("subsets") or [])

    def reports_up(self) -> bool:
        """Whether the reports controller has an available replica (it writes the PolicyReports)."""
        dep = self.twin.store.get(DEPLOYMENTS, NAMESPACE, REPORTS_CONTROLLER)
        return bool(((dep or {}).get("status") or {}).get("availableReplicas"))

    # ------------------------------------------------------------------ cluster lookups
    def _policies(self, namespace: str | None) -> list[Obj]:
        store = self.twin.store
        out = list(store.list(CLUSTER_POLICIES))
        out += store.list(POLICIES) if namespace is None else store.list(POLICIES, namespace)
        return out

    def _admission(self, obj: Obj | None, operation: str, *, old: Obj | None, user: Obj) -> Admission:
        resource = obj if obj is not None else old or {}
        meta = resource.get("metadata") or {}
        ns_name = meta.get("namespace") or (meta.get("name") if resource.get("kind") == "Namespace" else "")
        ns_obj = self.twin.store.get(NAMESPACES, "", ns_name) if ns_name else None
        return Admission(
            obj=obj,
            operation=operation,
            old=old,
            namespace_labels=dict(((ns_obj or {}).get("metadata") or {}).get("labels") or {}),
            user_info=user,
            namespace_object=ns_obj,
            exceptions=list(self.twin.store.list(EXCEPTIONS)),
            cluster=StoreReader(self.twin),
        )

    def _info(self, gr: GroupResource) -> Any:
        from ...kube.resources import registry_for

        return registry_for(self.twin).preferred(gr)

    def _all_resources(self, kinds: set[str] | None) -> Iterable[tuple[GroupResource, Obj]]:
        from ...kube.resources import registry_for

        registry = registry_for(self.twin)
        for gr in self.twin.store.kinds():
            if gr.group in _OWN_GROUPS or gr.group == "apiextensions.k8s.io":
                continue
            info = registry.preferred(gr)
            if info is None or info.kind in FILTERED_KINDS:
                continue
            if kinds is not None and "*" not in kinds and info.kind not in kinds:
                continue
            for obj in self.twin.store.list(gr):
                if not filtered(info.kind, gr.group, (obj.get("metadata") or {}).get("namespace", "") or ""):
                    yield gr, obj


class StoreReader:
    """What rule context entries read — ConfigMaps and ``apiCall`` GETs of Kubernetes API paths —
    answered from the twin's store as the API server would (a list as a ``<Kind>List``; the
    ``labelSelector`` query parameter honoured)."""

    def __init__(self, twin: Any) -> None:
        self.twin = twin

    def config_map(self, namespace: str, name: str) -> Obj | None:
        found = self.twin.store.get(GroupResource("", "configmaps"), namespace, name)
        return {**found, "apiVersion": "v1", "kind": "ConfigMap"} if found is not None else None

    def api_get(self, url_path: str) -> Any:
        from urllib.parse import parse_qs, urlsplit

        from ...kube.resources import registry_for
        from ...kube.selectors import labels_match, parse_label_selector

        url = urlsplit(url_path)
        parts = [p for p in url.path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise LookupError("the server could not find the requested resource")
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        info = registry_for(self.twin).get(group, version, rest[0]) if rest and len(rest) <= 2 else None
        if info is None or (namespace and not info.namespaced):
            raise LookupError("the server could not find the requested resource")
        stamp = {"apiVersion": info.api_version, "kind": info.kind}
        if len(rest) == 2:
            obj = self.twin.store.get(info.gr, namespace, rest[1])
            if obj is None:
                raise LookupError(f'{info.resource} "{rest[1]}" not found')
            return {**obj, **stamp}
        try:
            selector = parse_qs(url.query).get("labelSelector")
            reqs = parse_label_selector(selector[0] if selector else None)
        except Exception as exc:  # the server's 400 for a selector it cannot parse
            raise LookupError(str(exc)) from exc
        items = [
            {**o, **stamp} for o in self.twin.store.list(info.gr, namespace or None) if labels_match(reqs, o)
        ]
        return {
            "apiVersion": info.api_version.split("/")[-1] if not info.group else info.api_version,
            "kind": f"{info.kind}List",
            "metadata": {"resourceVersion": str(self.twin.store.resource_version)},
            "items": items,
        }


def filtered(kind: str, group: str, namespace: str) -> bool:
    """Kyverno's resource filters: what it neither admits nor reports."""
    return kind in FILTERED_KINDS or namespace in FILTERED_NAMESPACES or group in _OWN_GROUPS


def _api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _policy_key(policy: Obj) -> str:
    meta = policy.get("metadata") or {}
    if policy.get("kind") == "Policy":
        return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"
    return str(meta.get("name", ""))


def _enforced(policy: Obj, rule_name: str, namespace: str) -> bool:
    """Whether a failing rule blocks: the rule's ``validate.failureAction``, else the policy's
    ``validationFailureAction``, overridden per namespace by ``validationFailureActionOverrides``."""
    spec = policy.get("spec") or {}
    action = str(spec.get("validationFailureAction", "Audit"))
    for rule in policy_rules(policy):
        if rule.get("name") == rule_name:
            action = str((rule.get("validate") or {}).get("failureAction") or action)
            break
    for override in spec.get("validationFailureActionOverrides") or []:
        if isinstance(override, dict) and any(
            fnmatch.fnmatchcase(namespace, p) for p in override.get("namespaces") or []
        ):
            action = str(override.get("action", action))
    return action.lower() == "enforce"


def _kinds_of(policies: list[Obj]) -> set[str] | None:
    """The kinds the policies' rules can match (``*`` for any); None when there is no policy."""
    if not policies:
        return None
    kinds: set[str] = set()
    for policy in policies:
        for rule in policy_rules(policy):
            match = rule.get("match") or {}
            blocks = [
                f.get("resources") or {}
                for k in ("any", "all")
                for f in match.get(k) or []
                if isinstance(f, dict)
            ]
            blocks.append(match.get("resources") or {})
            for block in blocks:
                for k in block.get("kinds") or []:
                    kind = str(k).split("/")[-1] if "/" in str(k) and not str(k).endswith("*") else str(k)
                    kinds.add("*" if "*" in kind else kind)
    return kinds


def _result(policy: Obj, r: RuleResult, now: int) -> Obj:
    annotations = (policy.get("metadata") or {}).get("annotations") or {}
    entry: Obj = {
        "message": r.message,
        "policy": _policy_key(policy),
        "result": r.status,
        "rule": r.rule,
        "scored": str(annotations.get("policies.kyverno.io/scored", "true")).lower() != "false",
        "source": "kyverno",
        "timestamp": {"nanos": 0, "seconds": now},
    }
    if annotations.get("policies.kyverno.io/category"):
        entry["category"] = annotations["policies.kyverno.io/category"]
    severity = str(annotations.get("policies.kyverno.io/severity", "")).lower()
    if severity in ("critical", "high", "medium", "low", "info"):
        entry["severity"] = severity
    return entry


def unreachable(webhook: str, path: str) -> ApiError:
    """The apiserver's answer when a failurePolicy Fail webhook's Service has no endpoint."""
    return ApiError(
        500,
        "InternalError",
        f'Internal error occurred: failed calling webhook "{webhook}": failed to call webhook: Post '
        f'"https://kyverno-svc.kyverno.svc:443/{path}?timeout=10s": no endpoints available for service "kyverno-svc"',
    )
