"""The twin starts from any valid manifest: the upstream apps serve, and a field a real API server
accepts as ``null`` is the same as no field at all (it never reaches a controller as ``None``)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from itbench_agents.k8s.kinds import GroupResource
from itbench_agents.twin.clock import VirtualClock
from itbench_agents.twin.instance import Twin
from itbench_agents.twin.serve import load_manifest_dir

UPSTREAM = Path(__file__).resolve().parents[3] / "shared" / "upstream"
SETS = {
    "otel-demo": UPSTREAM / "otel-demo" / "kubernetes",
    "hotel-reservation": UPSTREAM / "hotel-reservation",
}
DEPLOYMENTS = GroupResource("apps", "deployments")
PODS = GroupResource("", "pods")
T0 = 1_780_000_000.0

POD_FIELDS = ("volumes", "initContainers", "tolerations", "imagePullSecrets")
CONTAINER_FIELDS = ("env", "ports", "args", "resources", "volumeMounts")


def _manifests(name: str) -> list[dict[str, Any]]:
    path = SETS[name]
    if not path.is_dir():
        pytest.skip(f"upstream manifests not found at {path} (the ../shared folder beside the checkout)")
    return load_manifest_dir(path)


def _twin(objs: list[dict[str, Any]]) -> Twin:
    return Twin.for_manifests(objs, seed=0, clock=VirtualClock.paused_at(T0))


def _not_ready(twin: Twin) -> list[str]:
    bad = []
    for d in twin.store.list(DEPLOYMENTS):
        want = d["spec"].get("replicas", 1)
        if (d.get("status") or {}).get("readyReplicas", 0) != want:
            bad.append(f"{d['metadata']['namespace']}/{d['metadata']['name']}")
    return bad


@pytest.mark.parametrize("name", sorted(SETS))
def test_every_upstream_manifest_set_reaches_ready_pods(name: str) -> None:
    twin = _twin(_manifests(name))
    twin.advance(600)
    assert twin.store.list(DEPLOYMENTS)
    assert not _not_ready(twin)
    for pod in twin.store.list(PODS):
        assert None not in (pod["spec"].get(f) for f in POD_FIELDS if f in pod["spec"]), pod["metadata"][
            "name"
        ]


def _pod_specs(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        o["spec"]["template"]["spec"]
        for o in objs
        if o.get("kind") in ("Deployment", "StatefulSet", "DaemonSet")
    ]


def _null_sites(objs: list[dict[str, Any]]) -> list[tuple[int, int | None, str]]:
    """(pod spec index, container index or None, field) of every place a null may be written."""
    sites: list[tuple[int, int | None, str]] = []
    for i, spec in enumerate(_pod_specs(objs)):
        sites += [(i, None, f) for f in POD_FIELDS]
        for j, _c in enumerate(spec.get("containers") or []):
            sites += [(i, j, f) for f in CONTAINER_FIELDS]
    return sites


def _edit(
    objs: list[dict[str, Any]], sites: list[tuple[int, int | None, str]], null: bool
) -> list[dict[str, Any]]:
    out = copy.deepcopy(objs)
    specs = _pod_specs(out)
    for i, j, f in sites:
        target = specs[i] if j is None else specs[i]["containers"][j]
        if null:
            target[f] = None
        else:
            target.pop(f, None)
    return out


def _state(twin: Twin) -> list[Any]:
    return [(gr, twin.store.list(gr)) for gr in (DEPLOYMENTS, PODS)]


HOTEL_SITES = (
    _null_sites(load_manifest_dir(SETS["hotel-reservation"])) if SETS["hotel-reservation"].is_dir() else []
)


@pytest.mark.skipif(not HOTEL_SITES, reason=f"upstream manifests not found at {SETS['hotel-reservation']}")
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(HOTEL_SITES or [(0, None, "volumes")]), min_size=1, max_size=12, unique=True))
def test_a_null_field_is_the_same_as_no_field(sites: list[tuple[int, int | None, str]]) -> None:
    """Nulling any of the fields a real API server accepts as null gives the cluster that leaving
    them out gives, object for object, after the controllers have run."""
    objs = _manifests("hotel-reservation")
    nulled, absent = _twin(_edit(objs, sites, null=True)), _twin(_edit(objs, sites, null=False))
    nulled.advance(120)
    absent.advance(120)
    assert _state(nulled) == _state(absent)
