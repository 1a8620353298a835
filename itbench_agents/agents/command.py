"""The ``command`` agent: benchmark any external program (HolmesGPT, Codex, a shell script...).

The program runs in its private work folder (outside the run folder), sandboxed by bubblewrap
where available (``itbench_agents/sandbox.py``), with a scrubbed environment holding only PATH, HOME (the
work folder), locale and these variables: ``KUBECONFIG`` (its own ServiceAccount credential, write
access to the task's namespaces), ``KUBECONFIG_READONLY`` (a read-only one), ``KUBE_URL``,
``PROMETHEUS_URL``, ``LOKI_URL``, ``JAEGER_URL``, ``ALERTMANAGER_URL``, ``ITBENCH_WORKDIR``,
``ITBENCH_TASK`` (the goal text), ``ITBENCH_NAMESPACES``, ``ITBENCH_MASKED``, ``ITBENCH_MAX_STEPS``,
``ITBENCH_WALL_TIME_S`` and ``ITBENCH_EVENTS`` (a file where it may append trajectory events, one
JSON object per line); where the scenario runs an OPA, ``OPA_URL`` (its REST API) and an ``opa``
command on PATH (``agent_commands.py``). On the twin, ``POST $KUBE_URL/itbench/v1/advance {"seconds": N}`` with the
kubeconfig's bearer token fast-forwards the clock; those seconds count against
``ITBENCH_WALL_TIME_S`` (an advance past what is left is refused with 429). When the program
exits, every process it started is killed. It must write its diagnosis to ``agent_output.json`` in the work folder
(ITBench-Lite's contract); anything that is not JSON or not the schema is scored 0 with the reason.
"""

from __future__ import annotations

import json
import secrets
import shlex
import tempfile
import time
from pathlib import Path

from pydantic import ValidationError

from ..core.agent import EventSink, LimitExceeded
from ..core.output import AgentOutput, Diagnosis
from ..core.task import Task
from ..processes import wait_for_exit
from ..sandbox import (
    MARKER,
    NO_SANDBOX_WARNING,
    SandboxMode,
    bwrap_argv,
    harness_paths,
    hidden_options,
    kill_tree,
    resolve_mode,
    scrubbed_env,
    start_process,
)
from .agent_commands import command_env, command_mounts, install_commands
from .base import AgentConfig


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


def task_environment(task: Task, events_file: Path) -> dict[str, str]:
    """The variables a program working on ``task`` gets (documented above), nothing of the
    harness's own environment; ``command_env`` adds the scenario's (OPA, OpenCost, Ansible)."""
    ep = task.endpoints
    return {
        "KUBECONFIG": ep.kubeconfig,
        "KUBECONFIG_READONLY": ep.kubeconfig_readonly or "",
        "KUBE_URL": ep.kube_url,
        "PROMETHEUS_URL": ep.prometheus_url or "",
        "LOKI_URL": ep.loki_url or "",
        "JAEGER_URL": ep.jaeger_url or "",
        "ALERTMANAGER_URL": ep.alertmanager_url or "",
        "ITBENCH_WORKDIR": str(Path(task.workdir)),
        "ITBENCH_TASK": task.goal,
        "ITBENCH_NAMESPACES": ",".join(task.namespaces),
        "ITBENCH_MASKED": ",".join(task.masked),
        "ITBENCH_MAX_STEPS": str(task.limits.max_steps),
        "ITBENCH_WALL_TIME_S": f"{task.limits.wall_time_s:g}",
        "ITBENCH_EVENTS": str(events_file),
    }


class CommandAgent:
    name = "command"

    def __init__(
        self, command: list[str], sandbox: SandboxMode = "auto", binds: list[str] | None = None
    ) -> None:
        if not command:
            raise ValueError("the command agent needs a program to run (--command '...')")
        self.command = command
        self.sandbox: SandboxMode = sandbox
        self.binds = list(binds or [])
        self.hidden: list[str] = []
        """Extra folders to hide inside the sandbox (the harness adds the run folder)."""

    def hide_paths(self, paths: list[str]) -> None:
        self.hidden.extend(paths)

    def environment(self, task: Task, events_file: Path) -> dict[str, str]:
        """The documented variables, nothing of the harness's own environment."""
        return task_environment(task, events_file)

    def run(self, task: Task, events: EventSink) -> AgentOutput:
        mode = resolve_mode(self.sandbox)
        marker = secrets.token_hex(8)
        with tempfile.TemporaryDirectory(prefix="itbench-agent-bin-") as bin_dir:
            return self._run(task, events, mode, marker, Path(bin_dir))

    def _run(self, task: Task, events: EventSink, mode: str, marker: str, bin_dir: Path) -> AgentOutput:
        work = Path(task.workdir)
        events_file = work / "agent_events.jsonl"
        out_file = work / "agent_output.json"
        env = scrubbed_env({**self.environment(task, events_file), MARKER: marker}, home=work)
        binds = list(self.binds)
        env = command_env(task.endpoints, env, work)
        if install_commands(task.endpoints, bin_dir):
            env["PATH"] = f"{bin_dir}:{env['PATH']}"
            binds.append(str(bin_dir))
        argv = self.command
        options = b""
        if mode == "bwrap":
            argv, options = hidden_options(
                bwrap_argv(
                    self.command,
                    workdir=work,
                    env=env,
                    binds=binds,
                    hide=[*self.hidden, *map(str, harness_paths())],
                    mounts=command_mounts(task.endpoints),
                )
            )
        if mode == "none" and self.sandbox == "auto":
            events({"type": "warning", "where": "sandbox", "message": NO_SANDBOX_WARNING})
        events(
            {
                "type": "agent_message",
                "content": f"running {shlex.join(self.command)} (sandbox: {mode})",
            }
        )
        start = time.perf_counter()
        try:
            with (work / "agent_stdout.log").open("wb") as so, (work / "agent_stderr.log").open("wb") as se:
                proc = start_process(argv, options, cwd=work, env=env, stdout=so, stderr=se)
                try:
                    rc = wait_for_exit(proc, task.limits.wall_time_s)
                    if rc is None:
                        raise LimitExceeded(
                            "timeout", f"the command ran longer than {task.limits.wall_time_s} s"
                        )
                finally:
                    # the episode is over for the agent: nothing it started may outlive it
                    kill_tree(proc, marker)
                    proc.wait()
        except FileNotFoundError as e:
            raise RuntimeError(f"cannot run {self.command[0]!r}: {e.strerror}") from None
        elapsed = time.perf_counter() - start
        steps = 0
        if events_file.is_file() and not events_file.is_symlink():
            for line in events_file.read_text(errors="replace").splitlines()[:10000]:
                try:
                    ev = json.loads(line)
                except json.JSONDecodeError:
                    ev = {"type": "note", "raw": line[:2000]}
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
            extra={"exit_code": rc, "sandbox": mode},
        )


def make_agent(config: AgentConfig) -> CommandAgent:
    cmd = config.command or []
    if len(cmd) == 1:
        cmd = shlex.split(cmd[0])
    return CommandAgent(cmd, sandbox=config.sandbox, binds=config.sandbox_bind)
