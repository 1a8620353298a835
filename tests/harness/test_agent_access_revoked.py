"""The agent's turn ends for the agent too (issue 30, step 3: the agent run as a cancellable unit):
an in-process agent that ignores its time limit keeps running in its thread, but once the harness
takes over — settle, evaluate — the agent's credential is dead, so what it does late changes
nothing that is scored."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from itbench_agents.agents.base import AgentConfig, AgentOutput, EventSink, Task
from itbench_agents.core.task import Limits
from itbench_agents.harness.episode import EpisodeSpec, run_episode
from itbench_agents.harness.records import AgentSpec
from itbench_agents.harness.twin_env import TwinEnvironment
from itbench_agents.k8s.client import KubeApi, KubeApiError
from itbench_agents.scenario.registry import ScenarioRegistry

GO = threading.Event()
DONE = threading.Event()
RESULT: dict[str, Any] = {}


class LateFixer:
    """Sleeps through its limit, then (when the harness settles) tries the fix with its kubeconfig."""

    name = "late-fixer"

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        GO.wait(60)
        api = KubeApi.from_kubeconfig(None, task.endpoints.kubeconfig)
        try:
            api.patch("apps/v1", "Deployment", "otel-demo", "ad", {"spec": {"replicas": 1}})
            RESULT["write"] = "accepted"
        except KubeApiError as e:
            RESULT["write"] = f"refused {e.code}"
        finally:
            DONE.set()
        return AgentOutput()


def make_agent(config: AgentConfig) -> LateFixer:
    return LateFixer(config)


def test_an_agent_past_its_limit_can_change_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    settle = TwinEnvironment.settle

    def settle_after_the_late_write(self: TwinEnvironment) -> None:
        GO.set()  # the agent wakes now, during the harness's turn
        assert DONE.wait(60)
        settle(self)

    monkeypatch.setattr(TwinEnvironment, "settle", settle_after_the_late_write)
    spec = EpisodeSpec(
        run_id="r",
        run_dir=str(tmp_path),
        scenario=ScenarioRegistry.default().get("sre/ad-scaled-to-zero-v1"),
        agent=AgentSpec(name=f"{__name__}:make_agent"),
        trial=0,
        seed=3,
        limits=Limits(wall_time_s=1.0),
    )
    rec = run_episode(spec)
    assert rec.termination == "timeout", rec.error
    assert RESULT["write"] == "refused 401"
    assert rec.mitigation is not None and not rec.mitigation.passed


def test_an_answer_written_after_the_turn_is_not_scored(tmp_path: Path, monkeypatch: Any) -> None:
    """A file answer (here a FinOps anomaly's ``answer.json``) counts as the work folder held it when
    the turn ended: what a late writer puts there during the harness's turn is not scored."""
    import json

    from itbench_agents.harness.catalogue import Catalogue
    from itbench_agents.personas.finops.episode import AnomalyEnvironment

    settle = AnomalyEnvironment.settle

    def late_answer(self: AnomalyEnvironment) -> None:
        assert self.bill is not None
        truth = [{"name": t["name"], "type": t["type"]} for t in self.bill.truth]
        (self.workdir / "answer.json").write_text(json.dumps({"resource": truth}))
        settle(self)

    monkeypatch.setattr(AnomalyEnvironment, "settle", late_answer)
    scenario = next(s for s in Catalogue.default().library["finops"])
    spec = EpisodeSpec(
        run_id="r", run_dir=str(tmp_path), scenario=scenario, agent=AgentSpec(name="noop"), trial=0, seed=3
    )
    rec = run_episode(spec)
    assert rec.termination == "submitted", rec.error
    assert rec.scores["pinpointed"].value == 0.0, rec.scores["pinpointed"].explanation
    assert "no answer.json" in rec.scores["pinpointed"].explanation
