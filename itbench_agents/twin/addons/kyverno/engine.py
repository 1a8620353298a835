"""Apply Kyverno policies (``kyverno.io/v1`` ClusterPolicy / Policy, validate rules) to one
admission request and say, rule by rule, ``pass``, ``fail``, ``warn``, ``skip`` or ``error`` with
Kyverno's messages.

A rule is evaluated as Kyverno's validate handler does: match/exclude, context entries,
preconditions (unmet: skip), then ``deny`` conditions, ``pattern`` / ``anyPattern`` (after
variable substitution) or ``foreach``. What this engine does not implement (``validate.cel``,
``podSecurity``, image verification...) is an ``error`` result saying so, never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from .autogen import generate
from .conditions import ConditionError, evaluate_block
from .match import Request, rule_selects
from .pattern import match_pattern
from .variables import Context, VariableError, query, substitute

SCORED = "policies.kyverno.io/scored"


class ClusterReader(Protocol):
    """The cluster as a rule's context entries see it (Kyverno reads through its own credential)."""

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def api_get(self, url_path: str) -> Any:
        """The JSON the API server answers ``GET url_path`` with; ``LookupError`` with the
        server's message when it answers an error."""
        ...


@dataclass(frozen=True)
class RuleResult:
    policy: str
    rule: str
    status: str  # pass | fail | warn | skip | error
    message: str = ""


@dataclass
class Admission:
    """One request: the object (None for DELETE), the old object, the operation, who asks, and
    the values a test or a cluster supplies (namespace labels, rule values, context data)."""

    obj: dict[str, Any] | None
    operation: str = "CREATE"
    old: dict[str, Any] | None = None
    namespace_labels: dict[str, str] = field(default_factory=dict)
    user_info: dict[str, Any] = field(default_factory=dict)
    roles: list[str] = field(default_factory=list)
    cluster_roles: list[str] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    """Resource-level values (dotted keys), e.g. ``request.operation``."""
    rule_values: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per rule name: values injected into that rule's context."""
    foreach_values: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    namespace_object: dict[str, Any] | None = None
    """The request's Namespace (CEL's ``namespaceObject``), when known."""
    params: Any = None
    """CEL's ``params`` (a policy's parameter resource), when the policy has one."""
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    """PolicyExceptions in force (``kyverno.io/v2``, and CEL ones ``policies.kyverno.io``)."""
    cluster: ClusterReader | None = None
    """Where rule ``context`` entries read ConfigMaps and API calls from (Kyverno in a cluster);
    without one they need supplied values, as in ``kyverno test``."""
    cel_cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    """CEL activations converted once for this request (``celrules.cached_activation``)."""

    @property
    def resource(self) -> dict[str, Any]:
        return self.obj if self.obj is not None else (self.old or {})


_RULES: dict[int, tuple[dict[str, Any], list[dict[str, Any]]]] = {}


def policy_rules(policy: dict[str, Any]) -> list[dict[str, Any]]:
    """The policy's rules plus the ones Kyverno generates for Pod controllers (computed once per
    policy object: a changed policy is a new object)."""
    cached = _RULES.get(id(policy))
    if cached is not None and cached[0] is policy:
        return cached[1]
    rules = list((policy.get("spec") or {}).get("rules") or []) + generate(policy)
    if len(_RULES) > 4096:
        _RULES.clear()
    _RULES[id(policy)] = (policy, rules)
    return rules


def apply_policy(policy: dict[str, Any], adm: Admission) -> list[RuleResult]:
    """Every rule of ``policy`` that selects the request, with its result."""
    name = str((policy.get("metadata") or {}).get("name", ""))
    resource = adm.resource
    if policy.get("kind") == "Policy":
        pns = (policy.get("metadata") or {}).get("namespace") or "default"
        if (resource.get("metadata") or {}).get("namespace", "") != pns:
            return []
    scored = (
        str(((policy.get("metadata") or {}).get("annotations") or {}).get(SCORED, "true")).lower() != "false"
    )
    req = Request(
        resource=resource,
        operation=adm.operation,
        namespace_labels=adm.namespace_labels,
        username=str(adm.user_info.get("username", "")),
        groups=list(adm.user_info.get("groups") or []),
        roles=adm.roles,
        cluster_roles=adm.cluster_roles,
    )
    out = []
    for rule in policy_rules(policy):
        if "validate" not in rule or not rule_selects(rule, req):
            continue
        exception = _exception_for(name, str(rule.get("name", "")), adm, req)
        if exception:
            exc_name, exc_spec = exception
            status, message = "skip", f"rule is skipped due to policy exception {exc_name}"
            if exc_spec.get("podSecurity") and "podSecurity" in (rule.get("validate") or {}):
                # the exception forgives only the controls it names
                status, detail = _pod_security(rule, adm, exc_spec["podSecurity"])
                if status == "pass":
                    status = "skip"
                else:
                    message = detail
            out.append(RuleResult(name, str(rule.get("name", "")), status, message))
            continue
        ctx = _context(adm, rule)
        status, message = _validate_rule(rule, ctx, adm)
        if status == "fail" and not scored:
            status = "warn"
        out.append(RuleResult(name, str(rule.get("name", "")), status, message))
    return out


def parse_image(ref: str) -> dict[str, str]:
    """An image reference as Kyverno's ``images`` variable describes it (registry defaults to
    ``docker.io``, tag to ``latest`` unless a digest pins it)."""
    rest, _, digest = ref.partition("@")
    registry, path = "docker.io", rest
    first, sep, remainder = rest.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, remainder
    tag = ""
    slash = path.rfind("/")
    colon = path.rfind(":")
    if colon > slash:
        path, tag = path[:colon], path[colon + 1 :]
    if not tag and not digest:
        tag = "latest"
    reference = f"{registry}/{path}" + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")
    return {
        "registry": registry,
        "path": path,
        "name": path.rsplit("/", 1)[-1],
        "tag": tag,
        "digest": digest,
        "reference": reference,
        "referenceWithTag": f"{registry}/{path}:{tag}" if tag else f"{registry}/{path}",
    }


def images_of(resource: dict[str, Any]) -> dict[str, dict[str, dict[str, str]]]:
    """``images.containers.<name>``, ``images.initContainers.<name>``... of a Pod or of a Pod
    controller's template."""
    from .celrules import POD_CONTROLLERS

    spec: Any = resource.get("spec") or {}
    for key in POD_CONTROLLERS.get(str(resource.get("kind", "")), ())[1:]:
        spec = spec.get(key) if isinstance(spec, dict) else {}
    if POD_CONTROLLERS.get(str(resource.get("kind", ""))):
        spec = (spec or {}).get("spec") or {}
    out: dict[str, dict[str, dict[str, str]]] = {}
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        for c in (spec or {}).get(kind) or []:
            if isinstance(c, dict) and isinstance(c.get("image"), str):
                out.setdefault(kind, {})[str(c.get("name", ""))] = parse_image(c["image"])
    return out


def _exception_for(policy: str, rule: str, adm: Admission, req: Request) -> tuple[str, dict[str, Any]] | None:
    """The ``ns/name`` and spec of a Kyverno PolicyException that exempts this request from the rule."""
    from .values import wildcard_match

    for exc in adm.exceptions:
        if not str(exc.get("apiVersion", "")).startswith("kyverno.io/"):
            continue
        spec = exc.get("spec") or {}
        names = [
            e
            for e in spec.get("exceptions") or []
            if str(e.get("policyName", "")).split("/")[-1] == policy
            and any(wildcard_match(str(r), rule) for r in e.get("ruleNames") or [])
        ]
        if not names or not rule_selects(
            {"match": spec.get("match") or {}, "exclude": spec.get("exclude")}, req
        ):
            continue
        if spec.get("conditions"):
            try:
                if not evaluate_block(spec["conditions"], _context(adm, {}), missing=""):
                    continue
            except ConditionError:
                continue
        meta = exc.get("metadata") or {}
        return f"{meta.get('namespace', '')}/{meta.get('name', '')}".lstrip("/"), spec
    return None


def _context(adm: Admission, rule: dict[str, Any]) -> Context:
    """The rule's JSON context: the request's (built once per admission) plus the rule's values."""
    base = adm.__dict__.get("_base_context")
    if base is None:
        base = _request_context(adm)
        adm.__dict__["_base_context"] = base
    ctx = base.copy()
    for key, value in _rule_values(adm, rule).items():
        ctx.set(key, value)
    return ctx


def _rule_values(adm: Admission, rule: dict[str, Any], table: dict[str, Any] | None = None) -> Any:
    """The values supplied for a rule (``table``: the rules' values, or their foreach values); an
    ``autogen-*`` rule reads those of the rule it came from."""
    table = adm.rule_values if table is None else table
    name = str(rule.get("name", ""))
    if name in table:
        return table[name]
    for prefix in ("autogen-cronjob-", "autogen-"):
        if name.startswith(prefix) and name[len(prefix) :] in table:
            return table[name[len(prefix) :]]
    return {}


def _request_context(adm: Admission) -> Context:
    resource = adm.resource
    meta = resource.get("metadata") or {}
    request: dict[str, Any] = {
        "operation": adm.operation,
        "object": adm.obj if adm.obj is not None else {},
        "oldObject": adm.old if adm.old is not None else {},
        "namespace": meta.get("namespace", "")
        if resource.get("kind") != "Namespace"
        else meta.get("name", ""),
        "name": meta.get("name", ""),
        "userInfo": adm.user_info,
        "roles": adm.roles,
        "clusterRoles": adm.cluster_roles,
        "kind": {"kind": resource.get("kind", "")},
    }
    ctx = Context({"request": request, "images": images_of(resource)})
    username = str(adm.user_info.get("username", ""))
    if username.startswith("system:serviceaccount:"):
        parts = username.split(":")
        ctx.data["serviceAccountName"] = parts[-1]
        ctx.data["serviceAccountNamespace"] = parts[2] if len(parts) > 3 else ""
    for key, value in adm.variables.items():
        ctx.set(key, value)
    return ctx


def _load_context(
    entries: list[dict[str, Any]], ctx: Context, given: dict[str, Any], cluster: ClusterReader | None = None
) -> None:
    """Context entries: ``variable`` entries are computed; configMap and apiCall entries are read
    from the cluster when there is one; the others (and those, without a cluster) come from the
    supplied values (a test's Values file)."""
    for entry in entries or []:
        name = str(entry.get("name", ""))
        if "variable" in entry:
            var = entry["variable"] or {}
            value = substitute(var.get("value"), ctx, f"/context/{name}/") if "value" in var else None
            if var.get("jmesPath"):
                source = value if "value" in var else ctx.data
                try:
                    value = query(substitute(var["jmesPath"], ctx), source)
                except VariableError:
                    value = None
            if value is None and "default" in var:
                value = substitute(var["default"], ctx)
            if value is None:
                raise VariableError(f"failed to add variable {name} to the context: no value")
            ctx.set(name, value)
        elif (
            name not in given
            and _lookup(ctx, name) is None
            and cluster is not None
            and ("configMap" in entry or "apiCall" in entry)
        ):
            ctx.set(name, _from_cluster(entry, ctx, cluster))
        elif name not in given and _lookup(ctx, name) is None:
            kind = next(
                (k for k in ("configMap", "apiCall", "imageRegistry", "globalReference") if k in entry), "?"
            )
            raise VariableError(f"context entry {name} ({kind}) needs a cluster; no value was supplied")


def _from_cluster(entry: dict[str, Any], ctx: Context, cluster: ClusterReader) -> Any:
    """A configMap or apiCall context entry read from the cluster, as Kyverno's context loaders do."""
    name = str(entry.get("name", ""))
    if "configMap" in entry:
        ref = substitute(entry["configMap"] or {}, ctx, f"/context/{name}/configMap/")
        ns, cm_name = str(ref.get("namespace") or "default"), str(ref.get("name", ""))
        found = cluster.config_map(ns, cm_name)
        if found is None:
            raise VariableError(f'failed to get configmap {ns}/{cm_name} : configmaps "{cm_name}" not found')
        return found
    call = entry.get("apiCall") or {}
    path = str(substitute(call.get("urlPath", ""), ctx, f"/context/{name}/apiCall/urlPath/"))
    try:
        value = cluster.api_get(path)
    except LookupError as exc:
        if "default" in call:
            return substitute(call["default"], ctx)
        raise VariableError(f"failed to GET resource with raw url {path}: {exc}") from exc
    if call.get("jmesPath"):
        value = query(substitute(call["jmesPath"], ctx), value)
    return value


def _lookup(ctx: Context, dotted: str) -> Any:
    node: Any = ctx.data
    for p in dotted.split("."):
        if not isinstance(node, dict) or p not in node:
            return None
        node = node[p]
    return node


def _validate_rule(rule: dict[str, Any], ctx: Context, adm: Admission) -> tuple[str, str]:
    validate = rule.get("validate") or {}
    try:
        _load_context(rule.get("context") or [], ctx, _rule_values(adm, rule), adm.cluster)
    except VariableError as exc:
        return "error", f"failed to load context: {exc}"
    try:
        if not evaluate_block(rule.get("preconditions"), ctx, missing=""):
            return "skip", "preconditions not met"
    except ConditionError as exc:
        return "error", f"failed to evaluate preconditions: {exc}"
    if rule.get("celPreconditions"):
        from .celrules import cached_activation, run_validations

        act, context = cached_activation(adm, None)
        status, message = run_validations({"matchConditions": rule["celPreconditions"]}, act, context=context)
        if status != "pass":
            return status, "preconditions not met" if status == "skip" else message
    return _validate_body(rule, validate, ctx, adm, nesting=0)


def _validate_body(
    rule: dict[str, Any], body: dict[str, Any], ctx: Context, adm: Admission, nesting: int
) -> tuple[str, str]:
    name = str(rule.get("name", ""))
    message = (rule.get("validate") or {}).get("message", "")
    if "deny" in body:
        try:
            denied = evaluate_block((body.get("deny") or {}).get("conditions"), ctx)
        except ConditionError as exc:
            return "error", f"failed to check deny conditions: {exc}"
        if denied:
            return "fail", _message(message, ctx) or f"validation error: rule {name} failed"
        return "pass", f"validation rule '{name}' passed."
    if "pattern" in body or "anyPattern" in body:
        return _patterns(rule, body, ctx, adm)
    if "foreach" in body:
        return _foreach(rule, body["foreach"], ctx, adm, nesting)
    if "cel" in body:
        from .celrules import cel_rule

        template = rule.get("_podTemplate")
        status, msg = cel_rule(body["cel"] or {}, adm, tuple(template) if template else None)
        return status, msg if status != "pass" else f"validation rule '{name}' passed."
    if "podSecurity" in body:
        status, msg = _pod_security(rule, adm)
        if status == "fail":
            return "fail", f"Validation rule '{name}' failed. It {msg}"
        return status, msg or f"validation rule '{name}' passed."
    for unsupported in ("manifests", "assert"):
        if unsupported in body:
            return "error", f"validate.{unsupported} is not supported by this engine"
    return "error", f"rule {name}: no deny, pattern, anyPattern or foreach to validate with"


def _pod_security(
    rule: dict[str, Any], adm: Admission, extra: list[dict[str, Any]] | None = None
) -> tuple[str, str]:
    from .celrules import pod_view
    from .pss import evaluate as pss_evaluate

    if adm.obj is None:
        return "skip", "skipping validation on deleted resource"
    template = rule.get("_podTemplate")
    pod = pod_view(adm.obj, tuple(template)) if template else adm.obj
    return pss_evaluate(pod or {}, (rule.get("validate") or {}).get("podSecurity") or {}, extra)


def _message(message: str, ctx: Context) -> str:
    if not message:
        return ""
    try:
        out = substitute(message, ctx)
    except VariableError:
        return message
    return out if isinstance(out, str) else str(out)


def _patterns(rule: dict[str, Any], body: dict[str, Any], ctx: Context, adm: Admission) -> tuple[str, str]:
    name = str(rule.get("name", ""))
    message = (rule.get("validate") or {}).get("message", "")
    if adm.obj is None:
        return "skip", "skipping validation on deleted resource"
    target: Any = adm.obj
    try:
        if "pattern" in body:
            pattern = substitute(body["pattern"], ctx)  # builds a new tree; the policy is untouched
            miss = match_pattern(target, pattern)
            if miss is None:
                return "pass", f"validation rule '{name}' passed."
            if miss.skips:
                return "skip", str(miss)
            return "fail", _failed_at(name, message, ctx, miss.path, str(miss))
        any_patterns = substitute(body["anyPattern"], ctx)
    except VariableError as exc:
        return "error", f"variable substitution failed: {exc}"
    if not isinstance(any_patterns, list):
        return "error", "failed to deserialize anyPattern, expected type array"
    failed, skipped = [], []
    for i, p in enumerate(any_patterns):
        miss = match_pattern(target, p)
        if miss is None:
            return "pass", f"validation rule '{name}' anyPattern[{i}] passed."
        if miss.skips:
            skipped.append(f"rule {name}[{i}] skipped: {miss}")
        elif miss.path:
            failed.append(f"rule {name}[{i}] failed at path {miss.path}")
        else:
            failed.append(f"rule {name}[{i}] failed: {miss}")
    if skipped and not failed:
        return "skip", " ".join(skipped)
    text = " ".join(failed)
    if not message:
        return "fail", f"validation error: {text}"
    msg = _message(message, ctx)
    return "fail", f"validation error: {msg} {text}" if msg.endswith(
        "."
    ) else f"validation error: {msg}. {text}"


def _failed_at(name: str, message: str, ctx: Context, path: str, err: str) -> str:
    if not message:
        if path:
            return f"validation error: rule {name} failed at path {path}"
        return f"validation error: rule {name} execution error: {err}"
    msg = _message(message, ctx)
    if not msg.endswith("."):
        msg += "."
    if path:
        return f"validation error: {msg} rule {name} failed at path {path}"
    return f"validation error: {msg} rule {name} execution error: {err}"


def _foreach(
    rule: dict[str, Any], loops: list[dict[str, Any]], ctx: Context, adm: Admission, nesting: int
) -> tuple[str, str]:
    applied = 0
    for loop in loops:
        try:
            elements = ctx.query(substitute(loop.get("list", ""), ctx, missing=""))
        except VariableError:
            continue
        if elements is None:
            continue
        if not isinstance(elements, list):
            elements = [elements]
        status, message, count = _elements(rule, loop, elements, ctx, adm, nesting)
        if status != "pass":
            return status, message
        applied += count
    if applied == 0:
        return "skip", "rule skipped"
    return "pass", "rule passed"


def _elements(
    rule: dict[str, Any],
    loop: dict[str, Any],
    elements: list[Any],
    ctx: Context,
    adm: Admission,
    nesting: int,
) -> tuple[str, str, int]:
    applied = 0
    per_rule = _rule_values(adm, rule, adm.foreach_values) or {}
    for index, element in enumerate(elements):
        if element is None:
            continue
        local = ctx.copy()
        local.data["element"] = element
        local.data["elementIndex"] = index
        local.data[f"element{nesting}"] = element
        local.data[f"elementIndex{nesting}"] = index
        for var, values in per_rule.items():
            if index < len(values):
                local.set(var, values[index])
        try:
            _load_context(loop.get("context") or [], local, {}, adm.cluster)
        except VariableError as exc:
            return "error", f"failed to load context: {exc}", applied
        try:
            if not evaluate_block(loop.get("preconditions"), local, missing=""):
                continue
        except ConditionError as exc:
            status, message = "error", f"failed to evaluate preconditions: {exc}"
        else:
            body = {k: v for k, v in loop.items() if k in ("deny", "pattern", "anyPattern")}
            if "foreach" in loop:
                body["foreach"] = loop["foreach"]
            if not body:
                continue
            if "pattern" in body or "anyPattern" in body:
                scoped = loop.get("elementScope", True) is not False and isinstance(element, dict)
                status, message = _element_patterns(rule, body, local, element if scoped else None, adm)
            elif "foreach" in body and "deny" not in body:
                status, message = _foreach(rule, body["foreach"], local, adm, nesting + 1)
            else:
                status, message = _validate_body(rule, body, local, adm, nesting + 1)
        if status == "skip":
            continue
        if status == "error" and index < len(elements) - 1:
            continue
        if status != "pass":
            return status, f"validation failure: {message}", applied
        applied += 1
    return "pass", "", applied


def _element_patterns(
    rule: dict[str, Any], body: dict[str, Any], ctx: Context, element: Any, adm: Admission
) -> tuple[str, str]:
    """A foreach pattern is matched against the element (``elementScope``, the default for map
    elements) or the whole resource."""
    if element is None:
        return _patterns(rule, body, ctx, adm)
    return _patterns(rule, body, ctx, Admission(obj=element, operation=adm.operation))
