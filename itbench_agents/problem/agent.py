"""The agent of an interactive problem: it hands the task to whoever works on it (a person, another
agent, LangGraph Studio) through the problem folder and waits for `itbench problem submit`.

Its contract is the ``command`` agent's (``agents/command.py``): the same variables (written as
``env.sh``), the same work folder, the diagnosis read from ``agent_output.json`` in it, and the same
limit: no submission within the wall time ends the episode as a timeout. The harness then scores the
cluster as it is and records the episode, exactly as for any agent.
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

from ..agents.agent_commands import command_env, install_commands
from ..agents.base import AgentConfig
from ..agents.command import read_diagnosis, task_environment
from ..core.agent import EventSink, LimitExceeded
from ..core.output import AgentOutput
from ..core.task import Task
from .state import ProblemDir, ProblemTask

POLL_S = 0.2


def shell_exports(env: dict[str, str]) -> str:
    """``env`` as ``export NAME=value`` lines a POSIX shell can source."""
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())


class InteractiveAgent:
    name = "interactive"

    def __init__(self, problem: ProblemDir) -> None:
        self.problem = problem

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        work = Path(task.workdir)
        request = self.problem.request()
        if request is None:
            raise RuntimeError(f"{self.problem.request_file} is missing or unreadable")
        env = command_env(task.endpoints, task_environment(task, work / "agent_events.jsonl"), work)
        self.problem.bin_dir.mkdir(parents=True, exist_ok=True)
        if install_commands(task.endpoints, self.problem.bin_dir):  # `opa` where the scenario has one
            env["PATH"] = f"{self.problem.bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
        self.problem.env_file.write_text(shell_exports(env))
        task.endpoints.write(self.problem.endpoints_file)
        start = time.time()
        deadline = start + task.limits.wall_time_s
        self.problem.write(
            self.problem.task_file,
            ProblemTask(
                scenario=request.scenario,
                seed=request.seed,
                run_dir=request.run_dir,
                goal=task.goal,
                kind=task.kind,
                persona=task.persona,
                namespaces=task.namespaces,
                workdir=str(work),
                endpoints=task.endpoints,
                deadline_unix=deadline,
                env_file=str(self.problem.env_file),
                endpoints_file=str(self.problem.endpoints_file),
            ),
        )
        events({"type": "agent_message", "content": "interactive: waiting for `itbench problem submit`"})
        while not self.problem.submitted():
            if time.time() >= deadline:
                raise LimitExceeded("timeout", f"nothing was submitted within {task.limits.wall_time_s:g} s")
            time.sleep(POLL_S)
        elapsed = time.time() - start
        events({"type": "agent_message", "content": f"interactive: submitted after {elapsed:.0f} s"})
        out_file = work / "agent_output.json"
        diagnosis, error = read_diagnosis(out_file) if out_file.exists() else (None, None)
        if not out_file.exists() and "diagnosis" in task.kind:
            error = "agent_output.json was not written"
        return AgentOutput(
            diagnosis=diagnosis,
            diagnosis_error=error,
            diagnosis_time_s=elapsed if diagnosis else None,
            extra={"interactive": True},
        )


def make_agent(config: AgentConfig) -> InteractiveAgent:
    folder = config.options.get("problem_dir")
    if not folder:
        raise ValueError(
            "the interactive agent needs options.problem_dir (it is started by `itbench problem start`)"
        )
    return InteractiveAgent(ProblemDir(Path(folder)))
