"""A fake environment and scripted agents for harness tests (importable by spawned workers).

The fake environment keeps "cluster state" in a JSON file in the work folder: the fault sets
``broken``; an agent "fixes" it by writing ``fixed``. Mitigation passes when ``fixed`` is set.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from itbench_agents.agents.base import AgentConfig
from itbench_agents.agents.oracle import ground_truth_diagnosis
from itbench_agents.core.endpoints import Endpoints
from itbench_agents.core.output import AgentOutput, Diagnosis, write_agent_output
from itbench_agents.core.task import Limits, Task
from itbench_agents.evaluation.topology import Topology
from itbench_agents.harness.environment import AlertCheck, EnvironmentError_
from itbench_agents.harness.records import MitigationScore


class FakeEnvironment:
    def __init__(self, spec: Any, workdir: Path) -> None:
        self.spec = spec
        self.scenario = spec.scenario
        self.workdir = Path(workdir)
        self.t = 1_767_225_600.0

    def _state(self) -> dict[str, Any]:
        p = self.workdir / "state.json"
        return json.loads(p.read_text()) if p.exists() else {}

    def _save(self, st: dict[str, Any]) -> None:
        (self.workdir / "state.json").write_text(json.dumps(st))

    def deploy(self) -> None:
        if "env-broken" in self.scenario.tags or os.environ.get("FAKE_ENV_FAIL") == self.scenario.id:
            raise EnvironmentError_("fake deploy failure")
        self._save({"broken": False, "fixed": False})

    def inject(self) -> list[str]:
        st = self._state()
        st["broken"] = not self.scenario.control
        self._save(st)
        return [op.describe() for op in self.scenario.faults]

    def wait_for_alerts(self) -> AlertCheck:
        self.t += 180
        names = [a.name for a in self.scenario.alerts]
        return AlertCheck(firing=names, missing=[], elapsed_s=180.0)

    def task(self, limits: Limits) -> Task:
        ep = Endpoints(kubeconfig=str(self.workdir / "kubeconfig"), kube_url="http://127.0.0.1:9")
        return Task(
            goal="fix it",
            endpoints=ep,
            workdir=str(self.workdir),
            limits=limits,
            namespaces=[self.scenario.namespace],
            masked=self.spec.masked,
        )

    def now(self) -> float:
        return self.t + float(self._state().get("waited", 0.0))  # an agent's fast-forwards

    def settle(self) -> None:
        self.t += 300

    def evaluate(self) -> MitigationScore:
        st = self._state()
        if self.scenario.control:
            return MitigationScore(applicable=False, passed=True, probe_ok=True)
        ok = bool(st.get("fixed"))
        return MitigationScore(
            passed=ok,
            alerts_firing=[] if ok else [a.name for a in self.scenario.alerts],
            probe_ok=ok,
            reason=None if ok else "alerts still firing",
        )

    def topology(self) -> Topology:
        return Topology()

    def privileged_context(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "episode_id": self.spec.episode_id}

    def teardown(self) -> None:
        pass


def make_env(spec: Any, workdir: Path) -> FakeEnvironment:
    return FakeEnvironment(spec, workdir)


class GoodAgent:
    """Knows the answer (privileged, like the oracle) and fixes the fake cluster."""

    name = "good"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.scenario: Any = None

    def prime(self, ctx: dict[str, Any]) -> None:
        self.scenario = ctx["scenario"]

    def run(self, task: Task, events: Any) -> AgentOutput:
        events({"type": "tool_call", "tool": "kubectl", "args": {"cmd": "get pods"}})
        events({"type": "observation", "tool": "kubectl", "content": "ok"})
        events(
            {"type": "model_call", "model": "fake", "input_tokens": 10, "output_tokens": 5, "cost_usd": 0.001}
        )
        if self.delay:
            time.sleep(self.delay)
        p = Path(task.workdir) / "state.json"
        st = json.loads(p.read_text())
        st["fixed"] = True
        p.write_text(json.dumps(st))
        out = AgentOutput(diagnosis=ground_truth_diagnosis(self.scenario), steps=1)
        write_agent_output(task.workdir, out)
        return out


class WaitingAgent(GoodAgent):
    """Diagnoses at once, then fast-forwards the clock 600 s (as the ``wait`` tool does) and fixes."""

    name = "waiting"

    def run(self, task: Task, events: Any) -> AgentOutput:
        t0 = time.perf_counter()
        events({"type": "tool_call", "tool": "kubectl", "args": {"cmd": "get pods"}})
        diagnosed = time.perf_counter() - t0
        p = Path(task.workdir) / "state.json"
        st = json.loads(p.read_text())
        st["waited"] = 600.0
        p.write_text(json.dumps(st))
        events({"type": "tool_call", "tool": "wait", "args": {"seconds": 600}})
        out = super().run(task, events)
        out.diagnosis_time_s = diagnosed
        return out


def waiting(config: AgentConfig) -> WaitingAgent:
    return WaitingAgent()


def good(config: AgentConfig) -> GoodAgent:
    return GoodAgent(float(config.options.get("delay", 0.0)))


def slow(config: AgentConfig) -> GoodAgent:
    return GoodAgent(0.4)


class ChattyAgent:
    """Calls tools forever (until the harness stops it)."""

    name = "chatty"

    def run(self, task: Task, events: Any) -> AgentOutput:
        while True:
            events({"type": "tool_call", "tool": "kubectl", "args": {}})


def chatty(config: AgentConfig) -> ChattyAgent:
    return ChattyAgent()


class CrashingAgent:
    name = "crash"

    def run(self, task: Task, events: Any) -> AgentOutput:
        raise RuntimeError("boom")


def crash(config: AgentConfig) -> CrashingAgent:
    return CrashingAgent()


class SleepyAgent:
    name = "sleepy"

    def run(self, task: Task, events: Any) -> AgentOutput:
        time.sleep(30)
        return AgentOutput(diagnosis=Diagnosis())


def sleepy(config: AgentConfig) -> SleepyAgent:
    return SleepyAgent()


class SpendyAgent:
    name = "spendy"

    def run(self, task: Task, events: Any) -> AgentOutput:
        for _ in range(100):
            events(
                {
                    "type": "model_call",
                    "model": "fake",
                    "input_tokens": 1000,
                    "output_tokens": 1000,
                    "cost_usd": 0.5,
                }
            )
        return AgentOutput(diagnosis=Diagnosis())


def spendy(config: AgentConfig) -> SpendyAgent:
    return SpendyAgent()


class SelfLimitedAgent:
    """Stops itself at its own step limit and says so in ``extra``."""

    name = "self-limited"

    def run(self, task: Task, events: Any) -> AgentOutput:
        return AgentOutput(
            diagnosis=None, diagnosis_error="no diagnosis (max_steps)", extra={"termination": "max_steps"}
        )


def self_limited(config: AgentConfig) -> SelfLimitedAgent:
    return SelfLimitedAgent()


class DyingAgent:
    """Kills its own worker process (as an OOM kill would) on one scenario."""

    name = "dying"

    def __init__(self) -> None:
        self.scenario: Any = None

    def prime(self, ctx: dict[str, Any]) -> None:
        self.scenario = ctx["scenario"]

    def run(self, task: Task, events: Any) -> AgentOutput:
        if self.scenario.id == "sre/ad-failure-flag-v1":
            import signal

            os.kill(os.getpid(), signal.SIGKILL)
        return AgentOutput(diagnosis=Diagnosis())


def dying(config: AgentConfig) -> DyingAgent:
    return DyingAgent()


class DyingOnceAgent(DyingAgent):
    """Kills its own worker process on the first attempt of each ad-failure-flag episode only: a
    marker per episode in ``$FAKE_DYING_MARKERS`` says the attempt was made."""

    name = "dying-once"

    def prime(self, ctx: dict[str, Any]) -> None:
        self.scenario, self.episode_id = ctx["scenario"], ctx["episode_id"]

    def run(self, task: Task, events: Any) -> AgentOutput:
        marker = Path(os.environ["FAKE_DYING_MARKERS"]) / self.episode_id
        if self.scenario.id == "sre/ad-failure-flag-v1" and not marker.exists():
            marker.write_text("died once")
            import signal

            os.kill(os.getpid(), signal.SIGKILL)
        return AgentOutput(diagnosis=Diagnosis())


def dying_once(config: AgentConfig) -> DyingOnceAgent:
    return DyingOnceAgent()
