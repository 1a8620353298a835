"""Admission for creates: pod defaulting, the ServiceAccount token volume, Priority, LimitRanger and ResourceQuota, with the
apiserver's wording for rejections (403 Forbidden).

    admit(twin, GroupResource("", "pods"), pod, "CREATE") -> pod with defaults (or ApiError 403)

The ReplicaSet/Job/StatefulSet/DaemonSet controllers call it for every pod they create; the REST
layer calls it for API creates.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from ...k8s.kinds import GroupResource
from ...k8s.quantity import format_quantity, parse_quantity
from ..kube.errors import ApiError, forbidden
from ..kube.store import clone
from .index import is_terminal
from .kinds import LIMITRANGES, PODS, PRIORITYCLASSES, PVCS, RESOURCEQUOTAS, SERVICEACCOUNTS, SERVICES

if TYPE_CHECKING:
    from ..core import TwinCore as Twin

Obj = dict[str, Any]

COMPUTE = ("cpu", "memory")
_VALIDATION_SET = {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
SYSTEM_PRIORITIES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}

# count/<resource> short names a ResourceQuota may use for core objects
_CORE_COUNT_NAMES = {
    "services": "services",
    "configmaps": "configmaps",
    "secrets": "secrets",
    "persistentvolumeclaims": "persistentvolumeclaims",
    "replicationcontrollers": "replicationcontrollers",
    "resourcequotas": "resourcequotas",
}


def admit(
    twin: Twin,
    gr: GroupResource,
    obj: Obj,
    operation: str,
    *,
    old: Obj | None = None,
    user: Any = None,
    dry_run: bool = False,
    warnings: list[str] | None = None,
) -> Obj:
    """Run the admission chain — the mutating plug-ins on create, then the addons' validating
    webhooks (``addons/base.py``) — and return the (possibly defaulted) object, or raise
    ``ApiError``. ``user`` is who asks (``auth.UserInfo``); the controllers' own requests go as
    kube-controller-manager's ServiceAccounts; the webhooks' warnings go to ``warnings``."""
    if operation == "CREATE":
        obj = _mutating_chain(twin, gr, obj)
    if twin.admission_hooks:
        found = _validating_webhooks(twin, gr, obj, operation, old, user, dry_run)
        if warnings is not None:
            warnings.extend(found)
    return obj


def _validating_webhooks(
    twin: Twin, gr: GroupResource, obj: Obj, operation: str, old: Obj | None, user: Any, dry_run: bool
) -> list[str]:
    from ..addons.base import request_for, run_admission_hooks
    from ..kube.resources import registry_for

    info = registry_for(twin).preferred(gr)
    if info is None:
        return []
    if user is None:
        from ..kube.auth.users import UserInfo

        owner = ((obj.get("metadata") or {}).get("ownerReferences") or [{}])[0].get("kind", "")
        sa = {
            "ReplicaSet": "replicaset-controller",
            "StatefulSet": "statefulset-controller",
            "DaemonSet": "daemon-set-controller",
            "Job": "job-controller",
        }.get(owner, "generic-garbage-collector")
        user = UserInfo(
            f"system:serviceaccount:kube-system:{sa}",
            groups=("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"),
        )
    request = request_for(
        info, operation, obj if operation != "DELETE" else None, old, user=user, dry_run=dry_run
    )
    return run_admission_hooks(twin, request)


def _mutating_chain(twin: Twin, gr: GroupResource, obj: Obj) -> Obj:
    if gr == PODS:
        obj = default_pod(clone(obj))
        _admit_service_account(twin, obj)
        _admit_priority(twin, obj)
        _admit_limit_ranges(twin, obj)
    elif gr == PVCS and "storageClassName" not in (obj.get("spec") or {}):
        # DefaultStorageClass admission
        from .volumes import default_class

        sc = default_class(twin.store)
        if sc is not None:
            obj = clone(obj)
            obj.setdefault("spec", {})["storageClassName"] = sc["metadata"]["name"]
    if gr == PVCS:
        _admit_claim_limit_ranges(twin, obj)
    _admit_quota(twin, gr, obj)
    return obj


# ---------------------------------------------------------------------------------------- defaults
def image_pull_policy(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    if ":" not in last or last.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def qos_class(pod: Obj) -> str:
    containers = list(pod.get("spec", {}).get("containers") or []) + list(
        pod.get("spec", {}).get("initContainers") or []
    )
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        for r in COMPUTE:
            if r not in lim or parse_quantity(req.get(r, lim.get(r))) != parse_quantity(lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def default_pod(pod: Obj) -> Obj:
    """The apiserver's defaulting for a new pod (as ``kubectl get pod -o yaml`` shows it)."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if spec.get("serviceAccountName") or spec.get("serviceAccount"):
        sa = spec.get("serviceAccountName") or spec.get("serviceAccount")
    else:
        sa = "default"
    spec["serviceAccountName"] = sa
    spec["serviceAccount"] = sa
    for kind in ("initContainers", "containers"):
        for c in spec.get(kind) or []:
            c.setdefault("imagePullPolicy", image_pull_policy(str(c.get("image", ""))))
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            res = c.setdefault("resources", {})
            lim = res.get("limits") or {}
            if lim:
                req = res.setdefault("requests", {})
                for r, q in lim.items():
                    req.setdefault(r, q)
            for p in c.get("ports") or []:
                p.setdefault("protocol", "TCP")
    tolerations = spec.setdefault("tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == key and t.get("effect") in (None, "", "NoExecute") for t in tolerations):
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    status = pod.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status["qosClass"] = qos_class(pod)
    return pod


def _pod_name(pod: Obj) -> str:
    meta = pod.get("metadata", {})
    return str(meta.get("name") or meta.get("generateName") or "")


def _forbidden(gr: GroupResource, name: str, message: str) -> ApiError:
    label = f"{gr.resource}.{gr.group}" if gr.group else gr.resource
    return forbidden(f'{label} "{name}" is forbidden: {message}')


# ---------------------------------------------------------------------------------------- service account
SA_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def _admit_service_account(twin: Twin, pod: Obj) -> None:
    """The ServiceAccount admission plugin: a pod whose ServiceAccount does not exist is forbidden
    (``error looking up service account <ns>/<name>: serviceaccount "<name>" not found``: a
    ReplicaSet then shows ``FailedCreate`` and retries); unless ``automountServiceAccountToken`` is false (on the
    pod, else on its ServiceAccount), a projected ``kube-api-access-<5 chars>`` volume (bound token,
    ``kube-root-ca.crt``, the namespace) mounted read-only at the service-account path in every
    container that has nothing mounted there. The suffix is a hash of the seed and the pod (the
    apiserver draws it at random; drawing from the store's generator would rename later pods)."""
    spec = pod["spec"]
    meta = pod.get("metadata", {})
    ns = meta.get("namespace") or "default"
    sa_name = str(spec.get("serviceAccountName") or "default")
    sa = twin.store.get(SERVICEACCOUNTS, ns, sa_name)
    if sa is None:  # the plugin refuses a pod whose ServiceAccount does not exist
        raise _forbidden(
            PODS,
            _pod_name(pod),
            f'error looking up service account {ns}/{sa_name}: serviceaccount "{sa_name}" not found',
        )
    auto = spec.get("automountServiceAccountToken")
    if auto is None:
        auto = sa.get("automountServiceAccountToken")
    if auto is False:
        return
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    if all(any(m.get("mountPath") == SA_MOUNT_PATH for m in c.get("volumeMounts") or []) for c in containers):
        return
    digest = hashlib.blake2b(
        f"{twin.seed}/{ns}/{meta.get('name') or meta.get('generateName') or ''}/{twin.store.resource_version}".encode(),
        digest_size=8,
    ).digest()
    name = "kube-api-access-" + "".join(_SUFFIX_CHARS[b % len(_SUFFIX_CHARS)] for b in digest[:5])
    spec.setdefault("volumes", []).append(
        {
            "name": name,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                    "path": "namespace",
                                }
                            ]
                        }
                    },
                ],
            },
        }
    )
    for c in containers:
        mounts = c.setdefault("volumeMounts", [])
        if not any(m.get("mountPath") == SA_MOUNT_PATH for m in mounts):
            mounts.append({"name": name, "mountPath": SA_MOUNT_PATH, "readOnly": True})


# ---------------------------------------------------------------------------------------- priority
def _admit_priority(twin: Twin, pod: Obj) -> None:
    spec = pod["spec"]
    name = spec.get("priorityClassName")
    if not name:
        default: Obj | None = None
        for cand in twin.store.list(PRIORITYCLASSES):
            if cand.get("globalDefault"):
                default = cand
                break
        if default is not None:
            spec["priorityClassName"] = default["metadata"]["name"]
            spec["priority"] = int(default.get("value", 0))
            if default.get("preemptionPolicy"):
                spec["preemptionPolicy"] = default["preemptionPolicy"]
        else:
            spec.setdefault("priority", 0)
        return
    if name in SYSTEM_PRIORITIES:
        spec["priority"] = SYSTEM_PRIORITIES[name]
        return
    pc = twin.store.get(PRIORITYCLASSES, "", name)
    if pc is None:
        raise _forbidden(PODS, _pod_name(pod), f"no PriorityClass with name {name} was found")
    spec["priority"] = int(pc.get("value", 0))
    if pc.get("preemptionPolicy"):
        spec["preemptionPolicy"] = pc["preemptionPolicy"]


# ---------------------------------------------------------------------------------------- limit ranges
def _admit_limit_ranges(twin: Twin, pod: Obj) -> None:
    ns = pod.get("metadata", {}).get("namespace") or "default"
    errors: list[str] = []
    defaulted_req: dict[str, list[str]] = {}
    defaulted_lim: dict[str, list[str]] = {}
    for lr in twin.store.list(LIMITRANGES, ns):
        for item in lr.get("spec", {}).get("limits") or []:
            if item.get("type") != "Container":
                continue
            for kind in ("initContainers", "containers"):
                for c in pod["spec"].get(kind) or []:
                    res = c.setdefault("resources", {})
                    lim = res.setdefault("limits", {})
                    req = res.setdefault("requests", {})
                    default_lim = item.get("default") or {}
                    default_req = {**default_lim, **(item.get("defaultRequest") or {})}
                    for r, q in lim.items():
                        req.setdefault(r, q)  # the API's own defaulting: request = limit
                    for r, q in default_lim.items():
                        if r not in lim:
                            lim[r] = q
                            defaulted_lim.setdefault(c["name"], []).append(r)
                    for r, q in default_req.items():
                        if r not in req:
                            req[r] = q
                            defaulted_req.setdefault(c["name"], []).append(r)
                    if not lim:
                        res.pop("limits")
                    if not req:
                        res.pop("requests")
                    errors.extend(_check_container_limits(item, c))
    if defaulted_req or defaulted_lim:
        parts = []
        for cname, rs in defaulted_req.items():
            parts.append(f"{', '.join(sorted(rs))} request for {_container_kind(pod, cname)} {cname}")
        for cname, rs in defaulted_lim.items():
            parts.append(f"{', '.join(sorted(rs))} limit for {_container_kind(pod, cname)} {cname}")
        ann = pod["metadata"].setdefault("annotations", {})
        ann["kubernetes.io/limit-ranger"] = "LimitRanger plugin set: " + "; ".join(parts)
    pod["status"]["qosClass"] = qos_class(pod)
    if errors:
        msg = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise _forbidden(PODS, _pod_name(pod), msg)


def _admit_claim_limit_ranges(twin: Twin, claim: Obj) -> None:
    """LimitRanger for a PersistentVolumeClaim: the ``PersistentVolumeClaim`` items' ``min`` and
    ``max`` against what the claim requests (``PersistentVolumeClaimValidateLimitFunc``)."""
    ns = claim.get("metadata", {}).get("namespace") or "default"
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    errors: list[str] = []
    for lr in twin.store.list(LIMITRANGES, ns):
        for item in lr.get("spec", {}).get("limits") or []:
            if item.get("type") != "PersistentVolumeClaim":
                continue
            for r, q in (item.get("min") or {}).items():
                if r not in requests:
                    errors.append(
                        f"minimum {r} usage per PersistentVolumeClaim is {q}.  No request is specified"
                    )
                elif parse_quantity(requests[r]) < parse_quantity(q):
                    errors.append(
                        f"minimum {r} usage per PersistentVolumeClaim is {q}, but request is {requests[r]}"
                    )
            for r, q in (item.get("max") or {}).items():
                if r not in requests:
                    errors.append(
                        f"maximum {r} usage per PersistentVolumeClaim is {q}.  No request is specified"
                    )
                elif parse_quantity(requests[r]) > parse_quantity(q):
                    errors.append(
                        f"maximum {r} usage per PersistentVolumeClaim is {q}, but request is {requests[r]}"
                    )
    if errors:
        msg = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise _forbidden(PVCS, claim.get("metadata", {}).get("name", ""), msg)


def _container_kind(pod: Obj, cname: str) -> str:
    for c in pod["spec"].get("initContainers") or []:
        if c.get("name") == cname:
            return "init container"
    return "container"


def _check_container_limits(item: Obj, c: Obj) -> list[str]:
    errs: list[str] = []
    res = c.get("resources") or {}
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    for r, q in sorted((item.get("min") or {}).items()):
        if r not in req:
            errs.append(f"minimum {r} usage per Container is {q}.  No request is specified")
        elif parse_quantity(req[r]) < parse_quantity(q):
            errs.append(f"minimum {r} usage per Container is {q}, but request is {req[r]}")
    for r, q in sorted((item.get("max") or {}).items()):
        if r not in lim:
            errs.append(f"maximum {r} usage per Container is {q}.  No limit is specified")
        elif parse_quantity(lim[r]) > parse_quantity(q):
            errs.append(f"maximum {r} usage per Container is {q}, but limit is {lim[r]}")
    for r, q in sorted((item.get("maxLimitRequestRatio") or {}).items()):
        if r in req and r in lim and parse_quantity(req[r]) > 0:
            ratio = parse_quantity(lim[r]) / parse_quantity(req[r])
            if ratio > parse_quantity(q):
                errs.append(
                    f"{r} max limit to request ratio per Container is {q}, but provided ratio is {ratio:.6f}"
                )
    return errs


# ---------------------------------------------------------------------------------------- quota
def pod_usage(pod: Obj) -> dict[str, float]:
    """The quota usage of one pod (containers summed; init containers by max, like the real one)."""
    spec = pod.get("spec", {})
    totals: dict[str, float] = {"pods": 1.0, "count/pods": 1.0}
    for field in ("requests", "limits"):
        for r in COMPUTE:
            s = sum(
                parse_quantity(((c.get("resources") or {}).get(field) or {}).get(r, 0))
                for c in spec.get("containers") or []
            )
            init = max(
                (
                    parse_quantity(((c.get("resources") or {}).get(field) or {}).get(r, 0))
                    for c in spec.get("initContainers") or []
                ),
                default=0.0,
            )
            v = max(s, init)
            if any(r in (((c.get("resources") or {}).get(field)) or {}) for c in _all_containers(spec)):
                totals[f"{field}.{r}"] = v
                if field == "requests":
                    totals[r] = v
    return totals


MEMO_LIMIT = 20_000


def _stored_pod_usage(twin: Twin, pod: Obj) -> dict[str, float]:
    """:func:`pod_usage` of a stored pod, memoised by uid and resourceVersion (a quota check sums
    every pod of the namespace, at each admission)."""
    md = pod.get("metadata") or {}
    key = (md.get("uid"), md.get("resourceVersion"))
    if not (key[0] and key[1]):
        return pod_usage(pod)
    memo = twin.memo.setdefault("quota.pod_usage", {})
    got = memo.get(key)
    if got is None:
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        got = memo[key] = pod_usage(pod)
    return dict(got)


def _all_containers(spec: Obj) -> list[Obj]:
    return list(spec.get("containers") or []) + list(spec.get("initContainers") or [])


def _quota_applies(quota: Obj, pod: Obj | None) -> bool:
    scopes = quota.get("spec", {}).get("scopes") or []
    if pod is None:
        return not scopes
    spec = pod.get("spec", {})
    for s in scopes:
        if s == "Terminating" and spec.get("activeDeadlineSeconds") is None:
            return False
        if s == "NotTerminating" and spec.get("activeDeadlineSeconds") is not None:
            return False
        if s == "BestEffort" and qos_class(pod) != "BestEffort":
            return False
        if s == "NotBestEffort" and qos_class(pod) == "BestEffort":
            return False
    return True


def count_name(gr: GroupResource) -> str:
    return f"count/{gr.resource}.{gr.group}" if gr.group else f"count/{gr.resource}"


def namespace_usage(twin: Twin, namespace: str, quota: Obj) -> dict[str, float]:
    """What ``quota`` counts as used in ``namespace`` right now."""
    hard = quota.get("spec", {}).get("hard") or {}
    used: dict[str, float] = {r: 0.0 for r in hard}
    pod_keys = [r for r in hard if r in _VALIDATION_SET or r in ("pods", "count/pods")]
    if pod_keys:
        for pod in twin.store.list(PODS, namespace):
            if is_terminal(pod) or not _quota_applies(quota, pod):
                continue
            u = _stored_pod_usage(twin, pod)
            for r in pod_keys:
                used[r] += u.get(r, 0.0)
    for r in hard:
        if r in pod_keys:
            continue
        gr = _gr_for_quota_resource(twin, r)
        if gr is None:
            continue
        objs = twin.store.list(gr, namespace)
        if r == "services.loadbalancers":
            used[r] = float(sum(1 for o in objs if o.get("spec", {}).get("type") == "LoadBalancer"))
        elif r == "services.nodeports":
            used[r] = float(sum(1 for o in objs if o.get("spec", {}).get("type") == "NodePort"))
        else:
            used[r] = float(len(objs))
    return used


def _gr_for_quota_resource(twin: Twin, r: str) -> GroupResource | None:
    if r in _CORE_COUNT_NAMES:
        return GroupResource("", _CORE_COUNT_NAMES[r])
    if r in ("services.loadbalancers", "services.nodeports"):
        return SERVICES
    if r.startswith("count/"):
        rest = r[len("count/") :]
        resource, _, group = rest.partition(".")
        return GroupResource(group, resource)
    return None


def _object_usage(gr: GroupResource, obj: Obj, hard: dict[str, Any]) -> dict[str, float]:
    if gr == PODS:
        return pod_usage(obj)
    usage = {count_name(gr): 1.0}
    if gr.group == "" and gr.resource in _CORE_COUNT_NAMES:
        usage[gr.resource] = 1.0
    if gr == SERVICES:
        t = obj.get("spec", {}).get("type")
        if t == "LoadBalancer":
            usage["services.loadbalancers"] = 1.0
        if t == "NodePort":
            usage["services.nodeports"] = 1.0
    return usage


def _admit_quota(twin: Twin, gr: GroupResource, obj: Obj) -> None:
    ns = obj.get("metadata", {}).get("namespace") or ""
    if not ns:
        return
    name = _pod_name(obj)
    for quota in twin.store.list(RESOURCEQUOTAS, ns):
        if gr == PODS and not _quota_applies(quota, obj):
            continue
        hard: dict[str, Any] = quota.get("spec", {}).get("hard") or {}
        qname = quota["metadata"]["name"]
        if gr == PODS:
            required = sorted(set(hard) & _VALIDATION_SET)
            missing: dict[str, list[str]] = {}
            for c in _all_containers(obj.get("spec", {})):
                res = c.get("resources") or {}
                have = set()
                for r in COMPUTE:
                    if r in (res.get("requests") or {}):
                        have |= {r, f"requests.{r}"}
                    if r in (res.get("limits") or {}):
                        have.add(f"limits.{r}")
                for r in required:
                    if r not in have:
                        missing.setdefault(r, []).append(c["name"])
            if missing:
                parts = [f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing)]
                raise _forbidden(gr, name, f"failed quota: {qname}: must specify {'; '.join(parts)}")
        usage = _object_usage(gr, obj, hard)
        relevant = [r for r in sorted(hard) if r in usage]
        if not relevant:
            continue
        used = namespace_usage(twin, ns, quota)
        exceeded = [r for r in relevant if used.get(r, 0.0) + usage[r] > parse_quantity(hard[r]) + 1e-9]
        if exceeded:
            req = ",".join(f"{r}={format_quantity(usage[r], str(hard[r]))}" for r in exceeded)
            use = ",".join(f"{r}={format_quantity(used.get(r, 0.0), str(hard[r]))}" for r in exceeded)
            lim = ",".join(f"{r}={hard[r]}" for r in exceeded)
            raise _forbidden(
                gr, name, f"exceeded quota: {qname}, requested: {req}, used: {use}, limited: {lim}"
            )
