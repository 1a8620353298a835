"""SRE through the persona seam (issue 30, step 4): the harness's twin environment words no goal and
runs no persona's checks of its own; every twin scenario's persona gives its twin extension (SRE:
its goal and nothing else), and a persona that gives none is refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from itbench_agents.core.task import Limits
from itbench_agents.harness import twin_env
from itbench_agents.harness.environment import EnvironmentError_
from itbench_agents.harness.twin_env import TwinEnvironment, persona_extension
from itbench_agents.personas.finops.twin_extension import FinopsTwinExtension
from itbench_agents.personas.sre.twin_extension import SreTwinExtension
from itbench_agents.scenario.registry import ScenarioRegistry

HARNESS = Path(twin_env.__file__).parent

# the goal every SRE agent was given before the goal moved into the persona, word for word
GOAL_BEFORE = (
    "You are an SRE on call for the application running in namespace otel-demo of this Kubernetes "
    "cluster. Alerts are firing or users may be affected. Diagnose the incident: identify the "
    "root-cause entities (as namespace/Kind/name) and how the fault propagated to the alerting "
    "services, then mitigate it on the cluster so that the alerts clear and the application works "
    "end to end. If nothing is wrong, report no contributing entities. Write your diagnosis as JSON "
    "(entities, propagations, alerts_explained) to agent_output.json in your work folder."
)


def test_each_twin_scenario_gets_its_personas_extension() -> None:
    reg = ScenarioRegistry.default()
    sre = persona_extension(reg.get("sre/ad-failure-flag-v1"))
    assert isinstance(sre, SreTwinExtension)
    assert sre.goal(["otel-demo"]) == GOAL_BEFORE
    assert (sre.addons(), sre.history_s, sre.churn_past, sre.clock_grid_s) == ([], 0.0, True, 60.0)
    assert isinstance(persona_extension(reg.get("finops/forgotten-load-test-v1")), FinopsTwinExtension)


def test_a_persona_without_a_twin_extension_is_refused_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class NoExtension:
        def twin_extension(self, scenario: object) -> None:
            return None

    monkeypatch.setattr(twin_env, "persona_of", lambda scenario: NoExtension())
    scenario = ScenarioRegistry.default().get("sre/ad-failure-flag-v1")
    with pytest.raises(EnvironmentError_, match=r"persona 'sre' gives no twin extension .*its goal"):
        persona_extension(scenario)


def test_the_harness_words_no_goal_of_its_own() -> None:
    for path in HARNESS.glob("*.py"):
        assert "You are " not in path.read_text(encoding="utf-8"), path.name


def test_the_agent_is_given_its_personas_goal(tmp_path: Path) -> None:
    class Wording(SreTwinExtension):
        def goal(self, namespaces: list[str]) -> str:
            return f"the persona's words for {namespaces}"

    scenario = ScenarioRegistry.default().get("sre/hotel-geo-scaled-to-zero-v1")
    for extension, goal in (
        (None, GOAL_BEFORE.replace("otel-demo", "hotel-reservation")),
        (Wording(), "the persona's words for ['hotel-reservation']"),
    ):
        env = TwinEnvironment(scenario, seed=0, workdir=tmp_path / "work", history_s=120, extension=extension)
        try:
            env.deploy()
            assert env.task(Limits()).goal == goal
        finally:
            env.teardown()
