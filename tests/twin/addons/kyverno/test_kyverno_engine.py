"""The twin's Kyverno engine, piece by piece: pattern anchors, operators, conditions, variables,
match/exclude, autogen and rule results with Kyverno's messages (issue 28, slice 1)."""

from __future__ import annotations

import pytest

from itbench_agents.twin.addons.kyverno.conditions import evaluate
from itbench_agents.twin.addons.kyverno.engine import Admission, apply_policy
from itbench_agents.twin.addons.kyverno.pattern import match_pattern
from itbench_agents.twin.addons.kyverno.values import parse_go_duration, parse_quantity, value_matches
from itbench_agents.twin.addons.kyverno.variables import Context, VariableError, substitute


def pod(**spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


@pytest.mark.parametrize(
    ("value", "pattern", "ok"),
    [
        ("nginx:1.2", "*:*", True),
        ("nginx", "*:*", False),
        ("nginx:latest", "!*:latest", False),
        ("256Mi", ">=100Mi", True),
        ("64Mi", ">=100Mi", False),
        (5, "1-10", True),
        (11, "1-10", False),
        (11, "1!-10", True),
        ("a", "a | b", True),
        ("", "?*", False),
        ("x", "?*", True),
        (0, None, True),
        (3, 3, True),
        ("3", 3, True),
        (True, False, False),
    ],
)
def test_scalar_patterns(value: object, pattern: object, ok: bool) -> None:
    assert value_matches(value, pattern) is ok


def test_quantities_and_durations() -> None:
    assert parse_quantity("500m") == parse_quantity("0.5")
    assert parse_quantity("1Gi") == 1024**3
    assert parse_quantity("abc") is None
    assert parse_go_duration("1h30m") == 5400 and parse_go_duration("1x") is None


def test_anchors() -> None:
    privileged = pod(containers=[{"name": "a", "securityContext": {"privileged": True}}])
    rule = {"spec": {"containers": [{"=(securityContext)": {"=(privileged)": "false"}}]}}
    miss = match_pattern(privileged, rule)
    assert (
        miss is not None and not miss.skips and miss.path == "/spec/containers/0/securityContext/privileged/"
    )
    assert match_pattern(pod(containers=[{"name": "a"}]), rule) is None  # equality: absent is fine
    conditional = {"spec": {"containers": [{"(name)": "b*", "image": "x"}]}}
    skipped = match_pattern(pod(containers=[{"name": "a", "image": "y"}]), conditional)
    assert skipped is not None and skipped.skips  # no element satisfies the condition: skip
    negation = {"spec": {"X(hostPID)": "null"}}
    assert match_pattern(pod(hostPID=True), negation).kind == "negation"  # type: ignore[union-attr]
    existence = {"spec": {"^(containers)": [{"name": "b"}]}}
    assert match_pattern(pod(containers=[{"name": "a"}, {"name": "b"}]), existence) is None
    assert match_pattern(pod(containers=[{"name": "a"}]), existence) is not None
    global_ = {"spec": {"containers": [{"<(image)": "ghcr.io/*"}], "imagePullSecrets": [{"name": "s"}]}}
    assert match_pattern(pod(containers=[{"image": "docker.io/x"}]), global_).skips  # type: ignore[union-attr]


def test_variables_keep_their_type_and_text_is_spliced() -> None:
    ctx = Context({"request": {"object": {"spec": {"replicas": 3}, "metadata": {"labels": {"app": "web"}}}}})
    assert substitute("{{ request.object.spec.replicas }}", ctx) == 3
    assert substitute("app={{request.object.metadata.labels.app}}!", ctx) == "app=web!"
    assert substitute("{{ to_upper(request.object.metadata.labels.app) }}", ctx) == "WEB"
    with pytest.raises(VariableError, match="not resolved"):
        substitute("{{ request.object.nope }}", ctx)
    assert substitute("{{ request.object.nope }}", ctx, missing="") == ""


@pytest.mark.parametrize(
    ("key", "op", "value", "ok"),
    [
        ("nginx", "Equals", "ngin*", True),
        ("1Gi", "GreaterThan", "512Mi", True),
        ("2h", "DurationGreaterThan", "90m", True),
        (["a", "b"], "AllIn", ["a", "b", "c"], True),
        (["a", "z"], "AllIn", ["a", "b"], False),
        (["a", "z"], "AnyIn", ["a", "b"], True),
        (["a", "z"], "AnyNotIn", ["a", "b"], True),
        ("CREATE", "AnyIn", ["CREATE", "UPDATE"], True),
        (5, "LessThanOrEquals", "5", True),
        ("1.2.3", "GreaterThan", "1.10.0", False),
    ],
)
def test_condition_operators(key: object, op: str, value: object, ok: bool) -> None:
    assert evaluate({"key": key, "operator": op, "value": value}, Context()) is ok


POLICY = {
    "apiVersion": "kyverno.io/v1",
    "kind": "ClusterPolicy",
    "metadata": {"name": "disallow-privileged"},
    "spec": {
        "rules": [
            {
                "name": "privileged",
                "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "validate": {
                    "message": "Privileged mode is disallowed",
                    "pattern": {"spec": {"containers": [{"=(securityContext)": {"=(privileged)": "false"}}]}},
                },
            }
        ]
    },
}


def test_a_policy_on_a_pod_and_on_a_deployment_through_autogen() -> None:
    bad = pod(containers=[{"name": "a", "securityContext": {"privileged": True}}])
    (r,) = apply_policy(POLICY, Admission(obj=bad))
    assert (r.rule, r.status) == ("privileged", "fail")
    assert r.message == (
        "validation error: Privileged mode is disallowed. rule privileged failed at path "
        "/spec/containers/0/securityContext/privileged/"
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"template": {"spec": bad["spec"]}},
    }
    (r,) = apply_policy(POLICY, Admission(obj=deployment))
    assert (r.rule, r.status) == ("autogen-privileged", "fail")
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "c"},
        "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}}},
    }
    (r,) = apply_policy(POLICY, Admission(obj=cron))
    assert (r.rule, r.status) == ("autogen-cronjob-privileged", "pass")
    assert (
        apply_policy(
            POLICY, Admission(obj={"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}})
        )
        == []
    )


def test_deny_preconditions_and_unsupported_rules() -> None:
    policy = {
        "kind": "ClusterPolicy",
        "metadata": {"name": "no-delete", "annotations": {"policies.kyverno.io/scored": "false"}},
        "spec": {
            "rules": [
                {
                    "name": "deny-delete",
                    "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                    "preconditions": {
                        "all": [{"key": "{{request.operation}}", "operator": "Equals", "value": "DELETE"}]
                    },
                    "validate": {"message": "{{request.object.metadata.name || 'it'}} stays", "deny": {}},
                },
                {
                    "name": "cel",
                    "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                    "validate": {"cel": {"expressions": [{"expression": "object.metadata.name == 'q'"}]}},
                },
                {
                    "name": "pss",
                    "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                    "validate": {"podSecurity": {"level": "baseline", "version": "latest"}},
                },
                {
                    "name": "signed",
                    "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                    "validate": {"manifests": {"attestors": []}},
                },
            ]
        },
    }
    results = {r.rule: r for r in apply_policy(policy, Admission(obj=pod()))}
    assert results["deny-delete"].status == "skip"
    assert results["cel"].status == "warn"  # a CEL failure, reported as a warning: the policy is unscored
    assert results["pss"].status == "pass"  # a bare pod meets the baseline Pod Security Standard
    assert (
        results["signed"].status == "error" and "not supported" in results["signed"].message
    )  # never a pass
    deleted = {r.rule: r for r in apply_policy(policy, Admission(obj=None, old=pod(), operation="DELETE"))}
    assert deleted["deny-delete"].status == "warn"  # a failure of an unscored policy


def test_cel_optional_syntax_is_rewritten_not_ignored() -> None:
    from itbench_agents.twin.addons.kyverno.cel_eval import CelError, evaluate
    from itbench_agents.twin.addons.kyverno.cel_optional import OptionalSyntaxError, rewrite

    assert (
        rewrite("object.spec.?hostNetwork.orValue(false)")
        == "kyv_opt ( object . spec , [ 'hostNetwork' ] , false )"
    )
    assert rewrite("x[0].?a.hasValue()") == "kyv_has ( x [ 0 ] , [ 'a' ] )"
    with pytest.raises(OptionalSyntaxError, match="does not end in"):
        rewrite("object.?spec == null")
    obj = {"object": {"spec": {"containers": [{"name": "a", "securityContext": {"privileged": True}}]}}}
    expr = "object.spec.containers.all(c, c.?securityContext.?privileged.orValue(false) == false)"
    assert bool(evaluate(expr, obj)) is False
    assert bool(evaluate("object.spec.?initContainers.orValue([]).size() == 0", obj)) is True
    assert str(evaluate("'abc'.upperAscii()", obj)) == "ABC"
    with pytest.raises(CelError):
        evaluate("object.spec.nope == 1", obj)


def test_a_validating_policy_on_a_pod_and_its_deployment() -> None:
    from itbench_agents.twin.addons.kyverno.celrules import validating_policy

    vpol = {
        "apiVersion": "policies.kyverno.io/v1alpha1",
        "kind": "ValidatingPolicy",
        "metadata": {"name": "no-host-network"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "variables": [{"name": "net", "expression": "object.spec.?hostNetwork.orValue(false)"}],
            "validations": [{"expression": "!variables.net", "message": "host network is disallowed"}],
        },
    }
    assert validating_policy(vpol, Admission(obj=pod(hostNetwork=True)), []) == (
        "fail",
        "host network is disallowed",
    )
    assert validating_policy(vpol, Admission(obj=pod()), []) == ("pass", "")
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"hostNetwork": True}}},
    }
    assert validating_policy(vpol, Admission(obj=deployment), [])[0] == "fail"  # type: ignore[index]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    assert validating_policy(vpol, Admission(obj=service), []) is None


def test_a_policy_exception_skips_only_what_it_names() -> None:
    exception = {
        "apiVersion": "kyverno.io/v2",
        "kind": "PolicyException",
        "metadata": {"name": "tools", "namespace": "ops"},
        "spec": {
            "exceptions": [
                {"policyName": "disallow-privileged", "ruleNames": ["privileged", "autogen-privileged"]}
            ],
            "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": ["ops"], "names": ["tool-*"]}}]},
        },
    }
    bad = pod(containers=[{"name": "a", "securityContext": {"privileged": True}}])
    tool = {**bad, "metadata": {"name": "tool-1", "namespace": "ops"}}
    (r,) = apply_policy(POLICY, Admission(obj=tool, exceptions=[exception]))
    assert (r.status, r.message) == ("skip", "rule is skipped due to policy exception ops/tools")
    other = {**bad, "metadata": {"name": "web", "namespace": "ops"}}
    (r,) = apply_policy(POLICY, Admission(obj=other, exceptions=[exception]))
    assert r.status == "fail"


def test_the_images_variable() -> None:
    from itbench_agents.twin.addons.kyverno.engine import images_of, parse_image

    assert parse_image("nginx")["reference"] == "docker.io/nginx:latest"
    got = parse_image("ghcr.io/acme/app:1.2@sha256:abc")
    assert (got["registry"], got["path"], got["tag"], got["digest"]) == (
        "ghcr.io",
        "acme/app",
        "1.2",
        "sha256:abc",
    )
    deployment = {
        "kind": "Deployment",
        "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "foo.io/x:1"}]}}},
    }
    assert images_of(deployment)["containers"]["a"]["registry"] == "foo.io"


def test_pod_security_with_an_excluded_control() -> None:
    from itbench_agents.twin.addons.kyverno.pss import evaluate as pss

    bad = pod(
        containers=[
            {"name": "a", "image": "redis:7", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}
        ]
    )
    status, message = pss(bad, {"level": "baseline", "version": "latest"})
    assert status == "fail" and "Capabilities" in message
    forgiven = {"level": "baseline", "exclude": [{"controlName": "Capabilities", "images": ["redis*"]}]}
    assert pss(bad, forgiven) == ("pass", "")
    other_image = {"level": "baseline", "exclude": [{"controlName": "Capabilities", "images": ["nginx*"]}]}
    assert pss(bad, other_image)[0] == "fail"
    assert pss(pod(hostNetwork=True), {"level": "privileged"}) == ("pass", "")


def test_setting_a_value_does_not_leak_into_the_context_it_was_copied_from() -> None:
    """An UPDATE's object and oldObject may be the same resource; a value set on one (a test's
    ``request.oldObject.metadata.labels.x``) must not change the other or the shared base."""
    shared = {"metadata": {"labels": {"app": "a"}}}
    base = Context({"request": {"object": shared, "oldObject": shared}})
    ctx = base.copy()
    ctx.set("request.oldObject.metadata.labels.app", "b")
    assert ctx.query("request.object.metadata.labels.app") == "a"
    assert ctx.query("request.oldObject.metadata.labels.app") == "b"
    assert (
        base.query("request.oldObject.metadata.labels.app") == "a"
        and shared["metadata"]["labels"]["app"] == "a"
    )
