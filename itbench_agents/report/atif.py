"""Episodes as ATIF trajectories (Agent Trajectory Interchange Format v1.4, Harbor's RFC 0001: the
format SREGym converts its agents' runs to), so that the tools that read ATIF — viewers, SFT and RL
pipelines — read ours.

    itbench export RUN_DIR --out atif/        # one <episode_id>.json per episode

One episode's ``trajectory.jsonl`` becomes one trajectory (``session_id``: the episode id):

- the system and user messages each model call was the first to send (the system prompt, the
  task, what the agent's program told the model later) → ``system`` and ``user`` steps, in order;
- each model call → an ``agent`` step: the reply's text as ``message``, its tool calls (ids
  ``call_<step>_<n>``), the results of those calls as its ``observation`` (matched by tool name in
  order), tokens and cost as ``metrics``;
- a tool call no model asked for (a rule-based agent's) → an ``agent`` step of its own; without
  model calls, the task is the ``user`` step and the agent's messages are ``agent`` steps;
- the harness's events (deploy, fault, alerts, end state) and the scores go to ``extra.itbench``,
  not to steps: they are not the agent's conversation.

The models below are the schema's fields this exporter writes (extra fields refused), so what is
written is checked against them.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..harness.records import EpisodeRecord
from ..harness.runfolder import read_episodes, read_manifest

SCHEMA_VERSION: Literal["ATIF-v1.4"] = "ATIF-v1.4"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AtifAgent(_Strict):
    name: str
    version: str
    model_name: str | None = None
    extra: dict[str, Any] | None = None


class AtifToolCall(_Strict):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]


class AtifResult(_Strict):
    source_call_id: str | None = None
    content: str | None = None


class AtifObservation(_Strict):
    results: list[AtifResult]


class AtifMetrics(_Strict):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    extra: dict[str, Any] | None = None


class AtifStep(_Strict):
    step_id: int
    source: Literal["system", "user", "agent"]
    message: str
    model_name: str | None = None
    tool_calls: list[AtifToolCall] | None = None
    observation: AtifObservation | None = None
    metrics: AtifMetrics | None = None
    extra: dict[str, Any] | None = None


class AtifFinalMetrics(_Strict):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = None


class AtifTrajectory(_Strict):
    schema_version: Literal["ATIF-v1.4"] = SCHEMA_VERSION
    session_id: str
    agent: AtifAgent
    steps: list[AtifStep]
    notes: str | None = None
    final_metrics: AtifFinalMetrics | None = None
    extra: dict[str, Any] | None = None


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # LangChain content blocks
        parts = [b.get("text", "") if isinstance(b, dict) else str(b) for b in content]
        if all(isinstance(b, str) or (isinstance(b, dict) and "text" in b) for b in content):
            return "".join(parts)
    return json.dumps(content, default=str)


def _arguments(args: Any) -> dict[str, Any]:
    if isinstance(args, dict):
        return args
    return {} if args is None else {"input": args}


def _package_version() -> str:
    try:
        return version("itbench-agents")
    except PackageNotFoundError:  # a checkout run without installing
        return "0+unknown"


class _Builder:
    """Steps from the events in order (see the module docstring)."""

    def __init__(self) -> None:
        self.steps: list[AtifStep] = []
        self.sent: set[str] = set()  # digests of the messages already made steps
        self.store: dict[str, Any] = {}  # digest -> message dict (``exchange.ExchangeLog``)
        self.pending: list[tuple[AtifStep, AtifToolCall]] = []  # asked, no result yet
        self.asked: list[tuple[AtifStep, AtifToolCall]] = []  # asked, no tool_call event yet

    def add(self, source: Literal["system", "user", "agent"], message: str, **kw: Any) -> AtifStep:
        step = AtifStep(step_id=len(self.steps) + 1, source=source, message=message, **kw)
        self.steps.append(step)
        return step

    def model_call(self, ev: dict[str, Any]) -> None:
        prompt: dict[str, Any] = ev["prompt"] if isinstance(ev.get("prompt"), dict) else {}
        self.store.update(prompt.get("new") or {})
        for key in prompt.get("ids") or []:
            doc = self.store.get(key) or {}
            kind = doc.get("type")
            if key in self.sent or kind not in ("system", "human"):
                continue  # the model's own replies and the tools' results are agent steps already
            self.sent.add(key)
            self.add("system" if kind == "system" else "user", _text((doc.get("data") or {}).get("content")))
        response: dict[str, Any] = ev["response"] if isinstance(ev.get("response"), dict) else {}
        n = len(self.steps) + 1
        calls = [
            AtifToolCall(
                tool_call_id=f"call_{n}_{i}",
                function_name=str(c.get("name", "")),
                arguments=_arguments(c.get("args")),
            )
            for i, c in enumerate(response.get("tool_calls") or [])
            if isinstance(c, dict)
        ]
        step = self.add(
            "agent",
            _text(response.get("content")),
            model_name=ev.get("model") or None,
            tool_calls=calls or None,
            metrics=AtifMetrics(
                prompt_tokens=int(ev.get("input_tokens") or 0),
                completion_tokens=int(ev.get("output_tokens") or 0),
                cost_usd=float(ev.get("cost_usd") or 0.0),
            ),
            extra={"role": ev["role"]} if ev.get("role") else None,
        )
        self.asked = [(step, c) for c in calls]

    def tool_call(self, ev: dict[str, Any]) -> None:
        name = str(ev.get("tool", ""))
        found = next((sc for sc in self.asked if sc[1].function_name == name), None)
        if found is not None:
            self.asked.remove(found)
        else:  # no model asked for it: a rule-based agent's action
            call = AtifToolCall(
                tool_call_id=f"call_{len(self.steps) + 1}_0",
                function_name=name,
                arguments=_arguments(ev.get("args")),
            )
            found = (self.add("agent", "", tool_calls=[call]), call)
        self.pending.append(found)

    def observation(self, ev: dict[str, Any]) -> None:
        name = str(ev.get("tool", ""))
        found = next((sc for sc in self.pending if sc[1].function_name == name), None)
        content = _text(ev.get("content"))
        if ev.get("error"):
            content = (content + "\n" if content else "") + f"error: {ev['error']}"
        if found is None:
            return  # a result of a call the trajectory never showed: nothing to attach it to
        self.pending.remove(found)
        step, call = found
        if step.observation is None:
            step.observation = AtifObservation(results=[])
        step.observation.results.append(AtifResult(source_call_id=call.tool_call_id, content=content))


def episode_atif(record: EpisodeRecord, events: list[dict[str, Any]]) -> AtifTrajectory:
    """One episode's ATIF trajectory from its record and its trajectory's events (as JSON dicts)."""
    b = _Builder()
    llm = any(ev.get("type") == "model_call" for ev in events)
    harness: list[dict[str, Any]] = []
    for ev in events:
        kind = ev.get("type")
        if kind == "model_call":
            b.model_call(ev)
        elif kind == "tool_call":
            b.tool_call(ev)
        elif kind == "observation":
            b.observation(ev)
        elif kind == "agent_message" and not llm:
            b.add("agent", _text(ev.get("content")))
        elif kind == "env_event":
            if ev.get("phase") == "task" and not llm:
                b.add("user", _text((ev.get("detail") or {}).get("goal")))
            harness.append({"phase": ev.get("phase"), "t_wall": ev.get("t_wall"), "detail": ev.get("detail")})
        elif kind in ("error", "warning"):
            harness.append({"type": kind, "where": ev.get("where"), "message": ev.get("message")})
    agent_steps = [s for s in b.steps if s.metrics is not None]
    usage = record.usage
    return AtifTrajectory(
        session_id=record.episode_id,
        agent=AtifAgent(
            name=record.agent,
            version=_package_version(),
            model_name=next((s.model_name for s in agent_steps if s.model_name), None),
            extra={"framework": "itbench-agents"},
        ),
        steps=b.steps,
        notes=(
            "Exported by itbench-agents from trajectory.jsonl: system and user steps are the messages "
            "each model call first sent; tool-call ids are assigned on export; the harness's events and "
            "the episode's scores are in extra.itbench."
        ),
        final_metrics=AtifFinalMetrics(
            total_prompt_tokens=usage.input_tokens,
            total_completion_tokens=usage.output_tokens,
            total_cost_usd=usage.cost_usd,
            total_steps=len(b.steps),
        ),
        extra={
            "itbench": {
                "run_id": record.run_id,
                "scenario_id": record.scenario_id,
                "persona": record.persona,
                "trial": record.trial,
                "termination": record.termination,
                "record": json.loads(record.model_dump_json()),
                "harness_events": harness,
            }
        },
    )


def trajectory_events(run_dir: Path, episode_id: str) -> list[dict[str, Any]]:
    """The events of an episode's ``trajectory.jsonl`` as JSON dicts (a torn or foreign line left
    out; none when the file is missing)."""
    traj = run_dir / "episodes" / episode_id / "trajectory.jsonl"
    events = []
    if traj.is_file():
        for line in traj.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(ev, dict):
                events.append(ev)
    return events


def atif_json(doc: AtifTrajectory) -> str:
    """A trajectory as written: the schema's fields that have a value."""
    return doc.model_dump_json(indent=1, exclude_none=True) + "\n"


def export_run(run_dir: str | Path, out: str | Path | None = None) -> list[Path]:
    """Every recorded episode of ``run_dir`` as ``<out>/<episode_id>.json`` (default ``out``:
    ``<run_dir>/atif``); an episode whose trajectory is missing is exported with no steps. A folder
    that is not a run folder raises ``RunFolderError`` naming it."""
    run = Path(run_dir)
    read_manifest(run)
    folder = Path(out) if out is not None else run / "atif"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for record in read_episodes(run):
        doc = episode_atif(record, trajectory_events(run, record.episode_id))
        path = folder / f"{record.episode_id}.json"
        path.write_text(atif_json(doc), encoding="utf-8")
        written.append(path)
    return written
