"""Run one episode: deploy → inject → wait for alerts → agent → settle → evaluate → teardown.

:func:`run_episode` never raises: whatever happens becomes an :class:`EpisodeRecord` whose
``termination`` says who failed. Environment failures (``env_error``) and harness bugs
(``harness_error``) are recorded but never scored as the agent being wrong.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import importlib
import json
import math
import re
import shutil
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agents.base import AgentConfig
from ..core.agent import LimitExceeded
from ..core.events import EnvEvent, ErrorEvent, ScoreEvent, to_event
from ..core.output import AgentOutput
from ..core.persona import EnvironmentRequest
from ..core.task import Limits
from ..evaluation.diagnosis import DiagnosisScore, score_diagnosis
from ..evaluation.topology import Topology
from ..llm.retry import CONFIG_ERRORS
from ..scenario.spec import Scenario
from .catalogue import AnyScenario
from .environment import Environment, EnvironmentError_, Scorer
from .limits import LimitTracker
from .personas import persona_of
from .records import UNSCORED, AgentSpec, EpisodeRecord, MitigationScore, Score, Termination, Timing
from .timeline import TwinTimeline
from .trajectory import TrajectoryWriter
from .workdir import copy_back, private_workdir

SELF_LIMITS = ("max_steps", "timeout", "cost_limit")
"""Values of ``AgentOutput.extra["termination"]`` the harness records as the episode's termination."""
AGENT_GRACE_S = 5.0
"""Extra seconds an in-process agent gets past its wall-time limit (at most 10 % of the limit, at least 0.5 s)."""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def episode_id(scenario_id: str, agent_label: str, trial: int) -> str:
    return f"{_slug(scenario_id.split('/', 1)[-1])}__{_slug(agent_label)}__t{trial:03d}"


def trial_seed(base_seed: int, scenario_id: str, trial: int) -> int:
    """A per-trial seed, stable across runs and machines (independent of agent)."""
    h = hashlib.sha256(f"{base_seed}:{scenario_id}:{trial}".encode()).digest()
    return int.from_bytes(h[:4], "big")


def _utc() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class EpisodeSpec:
    run_id: str
    run_dir: str
    scenario: AnyScenario
    agent: AgentSpec
    trial: int
    seed: int
    masked: list[str] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    history_s: float = 3600.0
    settle_s: float | None = None
    environment: str = "twin"
    """``twin`` or ``module:factory`` for a plug-in environment (``factory(spec, workdir) -> Environment``)."""
    backend: str = "twin"
    """What serves the cluster of a twin scenario file (``backends.py``)."""
    artifacts_dir: str | None = None
    """Where the episode's folder is written (``<artifacts_dir>/episodes/<id>``) when not in the run
    folder: a worker's staging folder, shipped back by its executor (``executors.py``)."""
    churn: str = "default"
    """Benign churn around the fault (``churn.py``): ``default`` or ``none``."""
    before_agent: str | None = None
    """``module:function`` called with (environment, episode folder) before the agent's turn; what
    it returns is noted in the trajectory (``RunConfig.before_agent``)."""

    @property
    def episode_id(self) -> str:
        return episode_id(self.scenario.id, self.agent.display, self.trial)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.scenario.id, self.agent.display, self.trial)

    def record(self, **outcome: Any) -> EpisodeRecord:
        """This episode's record: which episode it is (from the spec) plus ``outcome``."""
        return EpisodeRecord(
            episode_id=self.episode_id,
            run_id=self.run_id,
            scenario_id=self.scenario.id,
            agent=self.agent.display,
            trial=self.trial,
            seed=self.seed,
            masked=self.masked,
            **scenario_fields(self.scenario),
            **outcome,
        )


def scenario_fields(scenario: AnyScenario) -> dict[str, Any]:
    """What a record says about its scenario, by persona."""
    if isinstance(scenario, Scenario):
        return {
            "persona": scenario.persona,
            "category": scenario.category,
            "complexity": scenario.complexity,
            "bucket": scenario.complexity_bucket,
            "control": scenario.control,
        }
    return {"persona": scenario.persona, **persona_of(scenario).record_fields(scenario)}


def make_environment(spec: EpisodeSpec, workdir: Path) -> Environment:
    if spec.environment == "twin":
        if not isinstance(spec.scenario, Scenario):  # a persona's library scenario: its own environment
            request = EnvironmentRequest(
                spec.scenario,
                seed=spec.seed,
                workdir=workdir,
                masked=list(spec.masked),
                history_s=spec.history_s,
                settle_s=spec.settle_s,
                churn=spec.churn,
            )
            made: Environment = persona_of(spec.scenario).make_environment(request)
            return made
        from .backends import make_backend
        from .twin_env import TwinEnvironment

        return TwinEnvironment(
            spec.scenario,
            seed=spec.seed,
            workdir=workdir,
            masked=spec.masked,
            history_s=spec.history_s,
            settle_s=spec.settle_s,
            churn=spec.churn,
            backend=make_backend(spec.backend),
        )
    env: Environment = _call_target(spec.environment, spec, workdir)
    return env


def _call_target(target: str, *args: Any) -> Any:
    """Call ``module:function`` with ``args``."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)(*args)


def agent_config_for(spec: AgentSpec) -> AgentConfig:
    """The ``AgentConfig`` an agent spec of a run stands for."""
    return AgentConfig.model_validate(
        {**spec.config, "model": spec.model, "command": spec.command, "options": dict(spec.options)}
    )


def make_agent_for(spec: AgentSpec) -> Any:
    """The agent of ``spec``, with what its turn would import loaded first (``registry.warm``: an
    LLM agent's libraries take seconds), so that no agent's timed turn pays for them, whichever
    episode of its process it is."""
    from ..agents.registry import make_agent, warm

    config = agent_config_for(spec)
    warm(spec.name, config)
    return make_agent(spec.name, config)


def score_outcome(
    scenario: AnyScenario,
    termination: Termination,
    output: AgentOutput | None,
    topology: Topology | None,
) -> DiagnosisScore | None:
    if termination in UNSCORED or not isinstance(scenario, Scenario):
        return None
    if output is None:
        return DiagnosisScore(reason=f"no output ({termination})")
    return score_diagnosis(
        scenario.ground_truth,
        output.diagnosis,
        topology,
        reason_if_missing=output.diagnosis_error or (None if termination == "submitted" else termination),
    )


def fill_times(
    timing: Timing, diag: DiagnosisScore | None, mit: MitigationScore | None, output: AgentOutput | None
) -> None:
    timing.mttd_wall_s = timing.mttd_twin_s = math.inf
    timing.mttr_wall_s = timing.mttr_twin_s = math.inf
    if diag is not None and diag.correct:
        reported = output.diagnosis_time_s if output is not None else None
        timing.mttd_wall_s = reported if reported is not None else timing.agent_wall_s
        diagnosed_twin = timing.diagnosis_twin_s if reported is not None else None
        timing.mttd_twin_s = diagnosed_twin if diagnosed_twin is not None else timing.agent_twin_s
    if mit is not None and mit.applicable and mit.passed:
        timing.mttr_wall_s = timing.agent_wall_s
        timing.mttr_twin_s = timing.agent_twin_s


def read_output_fallback(work: Path) -> AgentOutput | None:
    """The agent's output from ``work/agent_output.json`` when the agent returned none itself;
    None when that file was not written."""
    from ..agents.command import read_diagnosis

    path = work / "agent_output.json"
    if not path.exists():
        return None
    diag, err = read_diagnosis(path)
    return AgentOutput(diagnosis=diag, diagnosis_error=err)


@dataclass
class Prepared:
    """An environment made ready for an agent (deployed, baseline taken, faults injected, alerts
    waited for), or how that failed. Several episodes of one scenario, trial and seed can share
    one: ``shared.py`` forks a child per episode from it."""

    env: Environment | None
    events: list[EnvEvent] = field(default_factory=list)
    """The environment's notes for the trajectory (``deployed``, ``injected``, ``churn``, ``alerts``)."""
    alerts_fired_twin_s: float | None = None
    failure: str | None = None
    """Why the environment is not ready (an ``env_error``); None when it is."""
    shared_by: int = 1
    """How many episodes start from this preparation (``shared.py``)."""
    wall_s: float = 0.0
    """Wall seconds the preparation took, where it is shared (each episode's overhead counts its
    ``1 / shared_by`` of them)."""


def prepare(spec: EpisodeSpec, work: Path, t0: float) -> Prepared:
    """Deploy, inject, wait for the alerts and grant the agent's access; never raises (a failure is
    the result's ``failure``)."""
    out = Prepared(env=None)

    def note(phase: str, detail: Any = None) -> None:
        out.events.append(EnvEvent(phase=phase, detail=detail, t_wall=time.perf_counter() - t0))

    try:
        out.env = env = make_environment(spec, work)
        env.deploy()
        note("deployed", {"seed": spec.seed})
        protected = getattr(env, "protected", None)
        if protected is not None:  # the harness's record only, like the churn
            note("baseline", protected.describe())
        note("injected", env.inject())
        churn_plan = getattr(env, "churn_plan", None)
        if churn_plan is not None:  # the harness's record only: agents never see it
            note("churn", churn_plan.describe())
        check = env.wait_for_alerts()
        out.alerts_fired_twin_s = check.elapsed_s
        note("alerts", {"firing": check.firing, "missing": check.missing, "waited_s": check.elapsed_s})
        if not check.ok:
            raise EnvironmentError_(
                f"expected alerts did not fire within their window: {', '.join(check.missing)}"
            )
        grant = getattr(env, "grant_access", None)
        if callable(grant):  # the agent's credential (its kubeconfig is written with the task)
            grant()
    except EnvironmentError_ as e:
        out.failure = str(e)
    except Exception as e:
        out.failure = f"{type(e).__name__}: {e}"
    return out


def run_episode(spec: EpisodeSpec, prepared: Prepared | None = None) -> EpisodeRecord:
    """One episode; with ``prepared`` (in a process forked from a shared preparation, ``shared.py``)
    the environment is not deployed again but served afresh for this episode's agent."""
    t0 = time.perf_counter()
    started = _utc()
    ep_dir = Path(spec.artifacts_dir or spec.run_dir).resolve() / "episodes" / spec.episode_id
    if ep_dir.exists():  # leftovers of an episode interrupted by a crash: start it afresh
        shutil.rmtree(ep_dir)
    ep_dir.mkdir(parents=True)
    # the agent works in a private folder outside the run folder; it is copied back afterwards
    work = private_workdir()
    traj = TrajectoryWriter(ep_dir / "trajectory.jsonl")
    termination: Termination = "submitted"
    error: str | None = None
    output: AgentOutput | None = None
    mitigation: MitigationScore | None = None
    scores: dict[str, Score] = {}
    topology: Topology | None = None
    timing = Timing()
    tracker: LimitTracker | None = None
    env: Environment | None = None
    agent_wall = 0.0
    model_errors: list[str] = []

    def note(phase: str, detail: Any = None) -> None:
        ev = EnvEvent(phase=phase, detail=detail, t_wall=time.perf_counter() - t0)
        traj.write(ev)

    try:
        if prepared is None:
            prepared = prepare(spec, work, t0)
        elif prepared.env is not None and prepared.failure is None:
            try:
                prepared.env.reattach(work)  # type: ignore[attr-defined]
            except Exception as e:
                prepared.failure = f"serve the prepared environment: {type(e).__name__}: {e}"
        env = prepared.env
        for ev in prepared.events:
            traj.write(ev)
        write_baseline = getattr(env, "write_baseline", None)
        if callable(write_baseline):  # what the end-state check compares against
            write_baseline(ep_dir / "baseline.json")
        timing.alerts_fired_twin_s = prepared.alerts_fired_twin_s
        if prepared.failure is not None:
            termination, error = "env_error", prepared.failure
        if termination == "submitted":
            assert env is not None
            try:
                agent = make_agent_for(spec.agent)
            except Exception as e:
                termination, error = (
                    "agent_error",
                    f"cannot build agent {spec.agent.name!r}: {type(e).__name__}: {e}",
                )
                agent = None
            if agent is not None and spec.before_agent:
                try:  # the harness's own work (a snapshot of what the agent will see), not timed
                    note("before_agent", _call_target(spec.before_agent, env, ep_dir))
                except Exception as e:
                    traj.write(ErrorEvent(where="before_agent", message=f"{type(e).__name__}: {e}"))
            if agent is not None:
                prime = getattr(agent, "prime", None)
                if callable(prime):
                    prime(env.privileged_context())
                hide = getattr(agent, "hide_paths", None)
                if callable(hide):  # sandboxed agents: the run folder stays out of sight, and what
                    # the environment keeps from agents (a snapshot's ground truth)
                    private: list[str] = getattr(env, "private_paths", list)()
                    dirs = (spec.run_dir, spec.artifacts_dir, *private)
                    hide(sorted({str(Path(d).resolve()) for d in dirs if d}))
                task = env.task(spec.limits)
                tracker = LimitTracker(spec.limits)
                env_now = env.now
                timeline = TwinTimeline()

                def sink(event: dict[str, Any]) -> None:
                    typed = to_event(dict(event))
                    now_wall = time.perf_counter()
                    typed.t_wall = now_wall - t0  # type: ignore[attr-defined]
                    with contextlib.suppress(Exception):  # the environment may be gone (timeout)
                        typed.t_twin = env_now()  # type: ignore[attr-defined]
                        timeline.sample(now_wall, typed.t_twin)  # type: ignore[attr-defined]
                    traj.write(typed)
                    if event.get("type") == "error" and event.get("where") == "model":
                        model_errors.append(str(event.get("message", "")))
                    assert tracker is not None
                    tracker.observe(dict(event))

                box: dict[str, Any] = {}

                def target() -> None:
                    try:
                        box["output"] = agent.run(task, sink)
                    except BaseException as e:  # noqa: BLE001 - recorded, never re-raised
                        box["error"] = e
                        box["tb"] = traceback.format_exc()

                note("task", {"goal": task.goal, "limits": spec.limits.model_dump()})
                twin0 = env.now()
                a0 = time.perf_counter()
                timeline.sample(a0, twin0)
                th = threading.Thread(target=target, name=f"agent-{spec.episode_id}", daemon=True)
                th.start()
                th.join(spec.limits.wall_time_s + min(AGENT_GRACE_S, max(0.5, 0.1 * spec.limits.wall_time_s)))
                agent_wall = time.perf_counter() - a0
                timing.agent_wall_s = agent_wall
                timing.agent_twin_s = env.now() - twin0
                timeline.sample(a0 + agent_wall, twin0 + timing.agent_twin_s)
                advanced = getattr(env, "advanced_by_agent_s", lambda: 0.0)()
                timing.agent_advanced_twin_s = advanced
                revoke = getattr(env, "revoke_access", None)
                if callable(revoke):  # whatever of the agent still runs can change nothing now
                    revoke()  # (a failure is the harness's: harness_error, unscored)
                if th.is_alive():
                    termination, error = "timeout", f"the agent ran longer than {spec.limits.wall_time_s} s"
                elif isinstance(box.get("error"), LimitExceeded):
                    exc: LimitExceeded = box["error"]
                    termination, error = exc.reason, str(exc)
                elif "error" in box:
                    termination = "agent_error"
                    error = f"{type(box['error']).__name__}: {box['error']}"
                    traj.write(ErrorEvent(where="agent", message=box.get("tb", error)))
                else:
                    output = box.get("output")
                    if not isinstance(output, AgentOutput):
                        termination, error = (
                            "agent_error",
                            f"the agent returned {type(output).__name__}, not AgentOutput",
                        )
                        output = None
                    elif output.extra.get("termination") in CONFIG_ERRORS:
                        # wrong key / unknown model: says nothing about the agent
                        termination = "harness_error"
                        error = "model configuration error: " + (
                            model_errors[-1] if model_errors else str(output.extra["termination"])
                        )
                        output = None
                    elif output.extra.get("termination") in SELF_LIMITS:
                        # the agent stopped itself at a limit (its own loop enforces max steps / budget)
                        termination = output.extra["termination"]
                        error = f"the agent stopped at its {termination} limit"
                if termination == "submitted" and agent_wall + advanced > spec.limits.wall_time_s + 1.0:
                    termination = "timeout"
                    error = (
                        f"the agent used {agent_wall:.0f} s of wall time and advanced the twin "
                        f"{advanced:.0f} s: more than its {spec.limits.wall_time_s:g} s limit"
                    )
                if output is not None and output.diagnosis_time_s is not None:
                    at = timeline.twin_at(a0 + output.diagnosis_time_s)
                    if at is not None:
                        timing.diagnosis_twin_s = max(0.0, min(at - twin0, timing.agent_twin_s))
                if output is None and termination != "submitted":
                    output = read_output_fallback(work)
                if output is not None:
                    (ep_dir / "output.json").write_text(output.model_dump_json(indent=2) + "\n")
                note(
                    "agent_finished",
                    {"termination": termination, "error": error, "advanced_twin_s": advanced},
                )
                copy_back(work, ep_dir / "work")
                score_from = getattr(env, "score_from", None)
                if callable(
                    score_from
                ):  # answers as they were when the turn ended, not as a late writer left them
                    score_from(ep_dir / "work")
                try:
                    env.settle()
                    if isinstance(env, Scorer):  # a persona scored by named scores (CISO)
                        scores = env.scores()
                        dumped = {k: v.model_dump(mode="json") for k, v in scores.items()}
                        (ep_dir / "scores.json").write_text(json.dumps(dumped, indent=2) + "\n")
                        note("evaluated", dumped)
                    else:
                        mitigation = env.evaluate()
                        topology = env.topology()
                        (ep_dir / "mitigation.json").write_text(mitigation.model_dump_json(indent=2) + "\n")
                        topology.write(ep_dir / "topology.json")
                        note("evaluated", mitigation.model_dump(mode="json"))
                        persona_scores = getattr(env, "persona_scores", None)
                        if callable(persona_scores):  # FinOps on the twin: proximity to the optimal cost
                            scores = persona_scores()
                            dumped = {k: v.model_dump(mode="json") for k, v in scores.items()}
                            if dumped:
                                (ep_dir / "scores.json").write_text(json.dumps(dumped, indent=2) + "\n")
                                note("persona_scores", dumped)
                except Exception as e:
                    termination, error = "env_error", f"evaluation failed: {type(e).__name__}: {e}"
                    mitigation, scores = None, {}
    except Exception as e:  # a bug in the harness itself
        termination, error = "harness_error", f"{type(e).__name__}: {e}"
        traj.write(ErrorEvent(where="harness", message=traceback.format_exc()))
    finally:
        if env is not None:
            try:
                env.teardown()
            except Exception as e:  # pragma: no cover - best effort
                traj.write(ErrorEvent(where="teardown", message=str(e)))
        if not (ep_dir / "work").exists():
            copy_back(work, ep_dir / "work")
        shutil.rmtree(work, ignore_errors=True)

    diag = score_outcome(spec.scenario, termination, output, topology)
    if termination in UNSCORED:
        mitigation, scores = None, {}
    fill_times(timing, diag, mitigation, output)
    wall = time.perf_counter() - t0
    timing.harness_overhead_s = max(0.0, wall - agent_wall)
    if prepared is not None and prepared.shared_by > 1:  # its share of the preparation it started from
        timing.preparation_shared_by = prepared.shared_by
        timing.harness_overhead_s += prepared.wall_s / prepared.shared_by
    usage = tracker.usage if tracker else (output.usage if output else None)
    if output is not None and tracker is not None and output.usage.model_calls > tracker.usage.model_calls:
        usage = output.usage  # the agent counted more than it reported as events
    rec = spec.record(
        termination=termination,
        error=error,
        started_at=started,
        finished_at=_utc(),
        wall_s=wall,
        diagnosis=diag,
        mitigation=mitigation,
        scores=scores,
        timing=timing,
        usage=usage or AgentOutput().usage,
        steps=(tracker.steps if tracker else 0) or (output.steps if output else 0),
    )
    scored = {"termination", "diagnosis", "mitigation"} | ({"scores"} if scores else set())
    traj.write(ScoreEvent(scores=json.loads(rec.model_dump_json(include=scored))))
    traj.close()
    return rec
