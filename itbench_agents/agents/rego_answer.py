"""Leave a ``k8s-opa`` answer in the work folder as an agent would: ``script.sh`` and ``policy.rego``
written, the script run once with the agent's credential to leave ``collected_data.json``. Used by
the in-process baselines (oracle, ciso-catalogue, the Rego audit strategies) and ciso-react."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .base import AgentOutput, EventSink, Task

SCRIPT_TIMEOUT_S = 60.0


def run_script(task: Task, events: EventSink, timeout_s: float = SCRIPT_TIMEOUT_S) -> tuple[int | None, str]:
    """Run ``bash script.sh`` in the work folder with the agent's kubeconfig: (exit status or None
    when it ran past ``timeout_s``, the tail of its stderr)."""
    work = Path(task.workdir)
    events({"type": "tool_call", "tool": "shell", "args": {"command": "bash script.sh"}})
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work), "KUBECONFIG": task.endpoints.kubeconfig}
    try:
        r = subprocess.run(
            ["bash", "script.sh"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        events(
            {"type": "observation", "tool": "shell", "content": f"script.sh ran longer than {timeout_s:g} s"}
        )
        return None, ""
    events({"type": "observation", "tool": "shell", "content": f"exit {r.returncode} {r.stderr[-500:]}"})
    return r.returncode, r.stderr.strip()[-500:]


def leave_rego_answer(
    task: Task, script: str, policy: str, events: EventSink, **extra: object
) -> AgentOutput:
    work = Path(task.workdir)
    (work / "script.sh").write_text(script)
    (work / "policy.rego").write_text(policy)
    rc, _ = run_script(task, events)
    ran = (
        f"ran script.sh: exit {rc}" if rc is not None else f"script.sh ran longer than {SCRIPT_TIMEOUT_S:g} s"
    )
    return AgentOutput(
        mitigation_actions=["wrote script.sh and policy.rego", ran], steps=2, extra=dict(extra)
    )
