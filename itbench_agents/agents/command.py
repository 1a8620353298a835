"""The ``command`` agent: benchmark any external program (HolmesGPT, Codex, a shell script...).

The program runs with its work folder as the current directory and these variables set:
``KUBECONFIG``, ``PROMETHEUS_URL``, ``LOKI_URL``, ``JAEGER_URL``, ``ALERTMANAGER_URL``,
``ITBENCH_WORKDIR``, ``ITBENCH_TASK`` (the goal text), ``ITBENCH_NAMESPACES``, ``ITBENCH_MASKED``,
``ITBENCH_MAX_STEPS`` and ``ITBENCH_EVENTS`` (a file where it may append trajectory events, one JSON
object per line). It must write its diagnosis to ``agent_output.json`` in the work folder
(ITBench-Lite's contract); anything that is not JSON or not the schema is scored 0 with the reason.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

from pydantic import ValidationError

from ..harness.limits import LimitExceeded
from .base import AgentConfig, AgentOutput, Diagnosis, EventSink, Task


def read_diagnosis(path: Path) -> tuple[Diagnosis | None, str | None]:
    """Parse ``agent_output.json``: (diagnosis, None) or (None, why it was rejected)."""
    if not path.exists():
        return None, "agent_output.json was not written"
    text = path.read_text(errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        return None, f"agent_output.json is not JSON: {e.msg} at line {e.lineno} column {e.colno}"
    if not isinstance(data, dict):
        return None, f"agent_output.json is a JSON {type(data).__name__}, expected an object"
    try:
        return Diagnosis.model_validate(data), None
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        return None, f"agent_output.json does not follow the schema: {loc}: {first['msg']}"


class CommandAgent:
    name = "command"

    def __init__(self, command: list[str]) -> None:
        if not command:
            raise ValueError("the command agent needs a program to run (--command '...')")
        self.command = command

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        work = Path(task.workdir)
        events_file = work / "agent_events.jsonl"
        out_file = work / "agent_output.json"
        env = dict(os.environ)
        ep = task.endpoints
        env.update(
            {
                "KUBECONFIG": ep.kubeconfig,
                "PROMETHEUS_URL": ep.prometheus_url or "",
                "LOKI_URL": ep.loki_url or "",
                "JAEGER_URL": ep.jaeger_url or "",
                "ALERTMANAGER_URL": ep.alertmanager_url or "",
                "ITBENCH_WORKDIR": str(work),
                "ITBENCH_TASK": task.goal,
                "ITBENCH_NAMESPACES": ",".join(task.namespaces),
                "ITBENCH_MASKED": ",".join(task.masked),
                "ITBENCH_MAX_STEPS": str(task.limits.max_steps),
                "ITBENCH_EVENTS": str(events_file),
            }
        )
        events({"type": "agent_message", "content": f"running {shlex.join(self.command)}"})
        start = time.perf_counter()
        with (work / "agent_stdout.log").open("wb") as so, (work / "agent_stderr.log").open("wb") as se:
            proc = subprocess.Popen(
                self.command, cwd=work, env=env, stdout=so, stderr=se, start_new_session=True
            )
            try:
                rc = proc.wait(timeout=task.limits.wall_time_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise LimitExceeded(
                    "timeout", f"the command ran longer than {task.limits.wall_time_s} s"
                ) from None
        elapsed = time.perf_counter() - start
        steps = 0
        if events_file.exists():
            for line in events_file.read_text(errors="replace").splitlines():
                try:
                    ev = json.loads(line)
                except json.JSONDecodeError:
                    ev = {"type": "note", "raw": line}
                if isinstance(ev, dict):
                    steps += ev.get("type") == "tool_call"
                    events(ev)
        diagnosis, error = read_diagnosis(out_file)
        if rc != 0:
            error = (error + "; " if error else "") + f"the command exited with status {rc}"
        return AgentOutput(
            diagnosis=diagnosis,
            diagnosis_error=error,
            steps=steps,
            diagnosis_time_s=elapsed if diagnosis else None,
            extra={"exit_code": rc},
        )


def make_agent(config: AgentConfig) -> CommandAgent:
    cmd = config.command or []
    if len(cmd) == 1:
        cmd = shlex.split(cmd[0])
    return CommandAgent(cmd)
