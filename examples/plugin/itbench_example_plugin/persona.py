"""The ``log-triage`` persona: a deliberately small persona that shows the persona seam (a library
of scenarios in its own format, their environment and named scores), not a benchmark of note.

An episode writes an application log into the agent's work folder: a day of ordinary lines from a
handful of services and one ERROR from the service that failed (the scenario's ``culprit``, never
the busiest service). The agent answers ``{"service": NAME}`` in ``answer.json``; ``found`` is 1
only for exactly the culprit (a list, every service, or the busiest one score 0).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from itbench_agents.core.endpoints import Endpoints
from itbench_agents.core.persona import EnvironmentRequest
from itbench_agents.core.score import Score
from itbench_agents.core.task import Limits, Task
from itbench_agents.harness.environment import AlertCheck

NAME = "log-triage"
LOG = "app.log"
ANSWER = "answer.json"
GOAL = (
    "One service of this application logged an error and users saw failures. The application's log "
    'is {log}. Find the service that failed and write its name as JSON, {{"service": "NAME"}}, to '
    "{answer} in your work folder ({workdir})."
)


class LogTriageScenario(BaseModel):
    id: str
    persona: Literal["log-triage"] = NAME
    services: list[str] = Field(min_length=3)
    culprit: str
    """The service that logs the error (ground truth: never in the agent's work folder)."""
    lines: int = Field(default=400, ge=50)
    complexity: Literal["easy", "medium", "hard"] = "easy"
    tags: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _culprit_is_a_service(self) -> LogTriageScenario:
        if self.culprit not in self.services:
            raise ValueError(f"culprit {self.culprit!r} is not one of the services")
        if not self.id.startswith(NAME + "/"):
            raise ValueError(f"id {self.id!r} does not start with {NAME + '/'!r}")
        return self


LIBRARY = [
    LogTriageScenario(
        id="log-triage/payment-timeout-v1",
        services=["frontend", "cart", "checkout", "payment"],
        culprit="payment",
        tags=["example-plugin"],
    ),
    LogTriageScenario(
        id="log-triage/cart-redis-down-v1",
        services=["frontend", "cart", "checkout", "payment", "email"],
        culprit="cart",
        complexity="medium",
        tags=["example-plugin"],
    ),
]


def write_log(scenario: LogTriageScenario, seed: int, path: Path) -> int:
    """The day's log (seeded): the first service is the busiest, the culprit logs one ERROR."""
    rng = random.Random(f"{scenario.id}:{seed}")
    weights = [3.0 if i == 0 else 1.0 for i in range(len(scenario.services))]
    rows = []
    for i in range(scenario.lines):
        svc = rng.choices(scenario.services, weights)[0]
        rows.append(f"2026-12-01T{i // 60 % 24:02d}:{i % 60:02d}:00Z INFO service={svc} request served")
    at = rng.randrange(scenario.lines // 2, scenario.lines)
    rows.insert(at, f"2026-12-01T12:00:00Z ERROR service={scenario.culprit} upstream call failed")
    path.write_text("\n".join(rows) + "\n")
    return len(rows)


class LogTriageEnvironment:
    def __init__(self, scenario: LogTriageScenario, *, seed: int, workdir: Path) -> None:
        self.scenario = scenario
        self.seed = seed
        self.workdir = Path(workdir).resolve()
        self.answers = self.workdir

    def score_from(self, folder: Path) -> None:
        """Score the answer as the work folder held it when the agent's turn ended (the harness's copy)."""
        self.answers = Path(folder)

    def deploy(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)

    def inject(self) -> list[str]:
        n = write_log(self.scenario, self.seed, self.workdir / LOG)
        return [f"wrote {LOG} ({n} lines)"]

    def wait_for_alerts(self) -> AlertCheck:
        return AlertCheck(firing=["ErrorsLogged"])

    def task(self, limits: Limits) -> Task:
        endpoints = Endpoints(kubeconfig="", kube_url="")  # nothing to reach: the log is in the folder
        endpoints.write(self.workdir / "endpoints.json")
        goal = GOAL.format(log=self.workdir / LOG, answer=ANSWER, workdir=self.workdir)
        return Task(
            goal=goal,
            kind="diagnosis",
            persona=NAME,
            endpoints=endpoints,
            workdir=str(self.workdir),
            limits=limits,
            on_twin=False,
        )

    def now(self) -> float:
        return time.time()

    def settle(self) -> None:
        pass

    def scores(self) -> dict[str, Score]:
        f = self.answers / ANSWER
        try:
            answer = json.loads(f.read_text()) if f.is_file() and f.stat().st_size < 4096 else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            answer = None
        named = answer.get("service") if isinstance(answer, dict) else None
        if not isinstance(named, str):
            return {"found": Score(value=0.0, explanation=f'no {{"service": NAME}} in {ANSWER}')}
        ok = named == self.scenario.culprit
        return {"found": Score(value=float(ok), explanation=f"named {named!r}: {'right' if ok else 'wrong'}")}

    def privileged_context(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "truth": self.scenario.culprit}

    def teardown(self) -> None:
        pass


class LogTriagePersona:
    name = NAME
    description = "find the failing service in an application log (example plug-in)"

    def library(self) -> Sequence[LogTriageScenario]:
        return LIBRARY

    def tags(self, scenario: Any) -> set[str]:
        return set(scenario.tags)

    def record_fields(self, scenario: Any) -> dict[str, Any]:
        return {"category": "log-triage", "bucket": scenario.complexity}

    def make_environment(self, request: EnvironmentRequest) -> LogTriageEnvironment:
        return LogTriageEnvironment(request.scenario, seed=request.seed, workdir=request.workdir)

    def twin_extension(self, scenario: Any) -> None:
        return None


PERSONA = LogTriagePersona()
