"""The backend seam (issue 30, step 2): the twin passes ``check_backend()`` on every app, the kit
fails a backend that breaks its promises (and says which), and the SRE environment on the twin
reaches the cluster only through its backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from itbench_agents.core.endpoints import Endpoints
from itbench_agents.harness.backend import Backend, ProvisionRequest
from itbench_agents.harness.backend_check import check_backend
from itbench_agents.harness.endstate import JourneyState
from itbench_agents.harness.twin_backend import TwinBackend
from itbench_agents.harness.twin_env import TwinEnvironment
from itbench_agents.paths import scenarios_dir
from itbench_agents.scenario.registry import ScenarioRegistry

APPS = sorted(p.name for p in (scenarios_dir() / "apps").iterdir() if (p / "app.yaml").is_file())


@pytest.mark.parametrize("app", APPS)
def test_the_twin_passes_check_backend(app: str) -> None:
    report = check_backend(TwinBackend, app=app)
    assert report.ok, report.render()
    names = [c.name for c in report.checks]
    assert "fork: serve again after stop_serving" in names and names[-1] == "close stops the endpoints"


class FrozenClock(TwinBackend):
    name = "frozen-clock"

    def advance(self, seconds: float, *, step: float) -> None:
        pass


class StillServing(TwinBackend):
    name = "still-serving"

    def close(self) -> None:
        pass  # the endpoints stay up


class BrokenJourneys(TwinBackend):
    name = "broken-journeys"

    def journeys(self) -> list[JourneyState]:
        return [JourneyState(name="checkout", ok=False, detail="HTTP 500")]


class NoCluster(TwinBackend):
    name = "no-cluster"

    def provision(self, request: ProvisionRequest) -> Endpoints:
        raise ConnectionError("no cluster at https://10.0.0.1:6443")


class AppOnly(TwinBackend):
    name = "app-only"

    def provision(self, request: ProvisionRequest) -> Endpoints:
        import dataclasses

        return super().provision(
            dataclasses.replace(request, customize=None)
        )  # what the scenario deploys: dropped


class Boasting(TwinBackend):
    name = "boasting"
    capabilities = frozenset({"fast_forward", "fork", "time_travel"})


@pytest.mark.parametrize(
    ("backend", "failing", "why"),
    [
        (FrozenClock, "clock advances", "advance(60) moved the clock 0 s"),
        (StillServing, "close stops the endpoints", "still answering after close"),
        # its own probe says fail where the app works: the wire probe disagrees too
        (
            BrokenJourneys,
            (
                "app data: journeys pass on the healthy app",
                "the journeys over the wire (service proxy) agree",
            ),
            "checkout: HTTP 500",
        ),
        (NoCluster, "provision", "ConnectionError: no cluster at https://10.0.0.1:6443"),
        (Boasting, "capabilities", "unknown capabilities ['time_travel']"),
        (AppOnly, "a team namespace deployed with the app", "Not Found"),
    ],
)
def test_check_backend_fails_a_backend_that_breaks_a_promise(
    backend: type, failing: str | tuple[str, ...], why: str
) -> None:
    made: list[TwinBackend] = []

    def make() -> TwinBackend:
        made.append(backend())
        return made[-1]

    report = check_backend(make, app="chain")
    try:
        assert not report.ok
        bad = {c.name: c.detail for c in report.failures()}
        names = list(failing) if isinstance(failing, tuple) else [failing]
        assert list(bad) == names, report.render()
        assert why in bad[names[0]], report.render()
        assert f"backend {backend.name} on chain: FAIL" in report.render()
        if backend is NoCluster:  # nothing to check without a cluster
            assert len(report.checks) == 1
    finally:
        for b in made:
            TwinBackend.close(b)


class Counting:
    """A backend that is only a Backend: the twin behind it, reached through the protocol alone (no
    ``twin`` attribute), counting the calls."""

    name = "counting"

    def __init__(self) -> None:
        self.inner = TwinBackend()
        self.capabilities = self.inner.capabilities
        self.calls: dict[str, int] = {}

    def __getattr__(self, attr: str) -> Any:
        if attr in ("twin", "inner", "calls") or attr.startswith("_"):
            raise AttributeError(attr)
        target = getattr(self.inner, attr)
        if callable(target):

            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls[attr] = self.calls.get(attr, 0) + 1
                return target(*args, **kwargs)

            return counted
        return target

    @property
    def endpoints(self) -> Endpoints:
        return self.inner.endpoints


def test_the_environment_reaches_the_cluster_only_through_its_backend(tmp_path: Path) -> None:
    scenario = ScenarioRegistry.default().get("sre/ad-scaled-to-zero-v1")
    backend = Counting()
    _: Backend = backend  # type: ignore[assignment]  # the protocol, structurally
    env = TwinEnvironment(scenario, seed=3, workdir=tmp_path, churn="default", backend=backend)  # type: ignore[arg-type]
    try:
        env.deploy()
        assert env.twin is None  # nothing here reaches past the protocol
        env.inject()
        assert env.wait_for_alerts().ok
        env.settle()
        score = env.evaluate()
        assert not score.passed and score.alerts_firing  # the fault is still there
        assert {"provision", "advance", "sync", "journeys", "call_edges", "end_agent_turn"} <= set(
            backend.calls
        )
    finally:
        env.teardown()
    assert backend.calls.get("close") == 1


def test_a_finops_cost_incident_on_a_backend_without_the_twin_is_an_environment_error(tmp_path: Path) -> None:
    from itbench_agents.harness.environment import EnvironmentError_

    scenario = ScenarioRegistry.default().get("finops/ad-idle-replicas-v1")
    env = TwinEnvironment(scenario, seed=3, workdir=tmp_path, backend=Counting())  # type: ignore[arg-type]
    try:
        with pytest.raises(EnvironmentError_, match="backend 'counting' has none"):
            env.deploy()
    finally:
        env.teardown()


@pytest.mark.parametrize("app", APPS)
def test_a_backend_deploying_the_app_gets_the_twins_app_data_from_the_folder(
    app: str, tmp_path: Path
) -> None:
    """``AppData.load(app)`` (what a backend on a real cluster uses) answers as the running twin."""
    from itbench_agents.harness.app_data import AppData

    twin = TwinBackend()
    twin.provision(ProvisionRequest(app=app, seed=1, history_s=600, folder=tmp_path))
    try:
        data = AppData.load(app)
        assert data.call_edges("ns") == twin.call_edges("ns") and data.call_edges("ns")
        assert data.external_workloads() == twin.external_workloads()
        assert data.pipeline_workloads() == twin.pipeline_workloads()
    finally:
        twin.close()
    assert AppData(None).call_edges("ns") == [] and AppData(None).pipeline_workloads() == []
