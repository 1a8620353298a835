"""Pure functions of the API layer: selectors, strategic merge patch, table cells."""

from __future__ import annotations

import pytest

from itbench_agents.twin.kube.errors import ApiError
from itbench_agents.twin.kube.patch import json_merge, strategic_merge
from itbench_agents.twin.kube.selectors import labels_match, parse_field_selector, parse_label_selector
from itbench_agents.twin.kube.tables import human_duration, pod_status_reason


def _o(**labels: str) -> dict:
    return {"metadata": {"labels": labels}}


@pytest.mark.parametrize(
    ("sel", "labels", "ok"),
    [
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "db"}, False),
        ("app!=web", {}, True),
        ("env in (prod, staging)", {"env": "staging"}, True),
        ("env notin (prod)", {}, True),
        ("env notin (prod)", {"env": "prod"}, False),
        ("!legacy", {"legacy": "1"}, False),
        ("tier", {"tier": ""}, True),
        ("app=web,tier in (fe),!old", {"app": "web", "tier": "fe"}, True),
        ("example.com/owner=sre", {"example.com/owner": "sre"}, True),
    ],
)
def test_label_selectors(sel: str, labels: dict[str, str], ok: bool) -> None:
    assert labels_match(parse_label_selector(sel), _o(**labels)) is ok


@pytest.mark.parametrize("bad", ["a b c", "=x", "app=(x", "a in x", "-bad=1"])
def test_malformed_label_selectors_are_bad_requests(bad: str) -> None:
    with pytest.raises(ApiError) as e:
        parse_label_selector(bad)
    assert e.value.code == 400


def test_field_selectors() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running"},
    }
    assert parse_field_selector("spec.nodeName=n1,status.phase!=Pending", "pods", "Pod")(pod)
    assert not parse_field_selector("metadata.name=q", "pods", "Pod")(pod)
    with pytest.raises(ApiError):
        parse_field_selector("spec.nope=1", "pods", "Pod")
    with pytest.raises(ApiError):
        parse_field_selector("garbage", "pods", "Pod")


def test_strategic_merge_uses_merge_keys_and_directives() -> None:
    dep = {
        "metadata": {"name": "d", "finalizers": ["a"]},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "a:1",
                            "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
                            "ports": [{"containerPort": 80, "name": "http"}],
                        },
                        {"name": "side", "image": "s:1"},
                    ],
                    "volumes": [{"name": "v", "emptyDir": {}}],
                }
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        },
    }
    patch = {
        "metadata": {"finalizers": ["b"]},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "a:2",
                            "env": [{"name": "Y", "$patch": "delete"}, {"name": "Z", "value": "3"}],
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        },
                        {"name": "side", "$patch": "delete"},
                    ],
                    "$setElementOrder/containers": [{"name": "app"}],
                    "volumes": [
                        {
                            "name": "v",
                            "emptyDir": None,
                            "configMap": {"name": "cm"},
                            "$retainKeys": ["name", "configMap"],
                        }
                    ],
                }
            },
            "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
        },
    }
    out = strategic_merge(dep, patch, "V1Deployment")
    spec = out["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["app"]
    app = spec["containers"][0]
    assert app["image"] == "a:2"
    assert app["env"] == [{"name": "X", "value": "1"}, {"name": "Z", "value": "3"}]
    assert app["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}]
    assert spec["volumes"] == [{"name": "v", "configMap": {"name": "cm"}}]
    assert out["spec"]["strategy"] == {"type": "Recreate"}
    assert out["metadata"]["finalizers"] == ["a", "b"]
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "a:1"  # input untouched
    replaced = strategic_merge(
        dep,
        {
            "spec": {
                "template": {
                    "spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "o:1"}]}
                }
            }
        },
        "V1Deployment",
    )
    assert replaced["spec"]["template"]["spec"]["containers"] == [{"name": "only", "image": "o:1"}]
    tolerations = strategic_merge(
        {"spec": {"tolerations": [{"key": "a"}]}}, {"spec": {"tolerations": [{"key": "b"}]}}, "V1Pod"
    )
    assert tolerations["spec"]["tolerations"] == [{"key": "b"}]  # no merge key upstream: replaced


def test_json_merge_patch_rfc7386() -> None:
    assert json_merge({"a": 1, "b": {"c": 2, "d": 3}, "l": [1]}, {"b": {"c": None, "e": 4}, "l": [2]}) == {
        "a": 1,
        "b": {"d": 3, "e": 4},
        "l": [2],
    }


@pytest.mark.parametrize(
    ("secs", "text"),
    [
        (0, "0s"),
        (59, "59s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 120, "3h2m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (20 * 86400, "20d"),
        (800 * 86400, "2y70d"),
    ],
)
def test_human_duration_matches_kubectl(secs: int, text: str) -> None:
    assert human_duration(secs) == text


def _pod(statuses: list[dict], init: list[dict] | None = None, phase: str = "Running", **meta: str) -> dict:
    return {
        "metadata": {"name": "p", **meta},
        "spec": {
            "containers": [{"name": s["name"]} for s in statuses],
            "initContainers": [{"name": s["name"]} for s in init or []],
        },
        "status": {"phase": phase, "containerStatuses": statuses, "initContainerStatuses": init or []},
    }


def test_pod_status_column() -> None:
    running = {"name": "a", "ready": True, "restartCount": 0, "state": {"running": {}}}
    crash = {
        "name": "b",
        "ready": False,
        "restartCount": 4,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-01-01T00:00:00Z"}},
    }
    assert pod_status_reason(_pod([running])) == ("Running", 1, 0, "")
    assert pod_status_reason(_pod([running, crash]))[:3] == ("CrashLoopBackOff", 1, 4)
    pull = {
        "name": "a",
        "ready": False,
        "restartCount": 0,
        "state": {"waiting": {"reason": "ImagePullBackOff"}},
    }
    assert pod_status_reason(_pod([pull], phase="Pending"))[0] == "ImagePullBackOff"
    init_wait = {"name": "i", "restartCount": 0, "state": {"running": {}}}
    waiting = {
        "name": "a",
        "ready": False,
        "restartCount": 0,
        "state": {"waiting": {"reason": "PodInitializing"}},
    }
    assert pod_status_reason(_pod([waiting], init=[init_wait], phase="Pending"))[0] == "Init:0/1"
    assert pod_status_reason(_pod([running], deletionTimestamp="2026-01-01T00:00:00Z"))[0] == "Terminating"
    oom = {
        "name": "a",
        "ready": False,
        "restartCount": 1,
        "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
    }
    assert pod_status_reason(_pod([oom]))[0] == "OOMKilled"
