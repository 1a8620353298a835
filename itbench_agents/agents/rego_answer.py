"""Leave a ``k8s-opa`` answer in the work folder as an agent would: ``script.sh`` and ``policy.rego``
written, the script run once with the agent's credential to leave ``collected_data.json``. Used by
the in-process baselines (oracle, ciso-catalogue, the Rego audit strategies)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .base import AgentOutput, EventSink, Task


def leave_rego_answer(
    task: Task, script: str, policy: str, events: EventSink, **extra: object
) -> AgentOutput:
    work = Path(task.workdir)
    (work / "script.sh").write_text(script)
    (work / "policy.rego").write_text(policy)
    events({"type": "tool_call", "tool": "shell", "args": {"command": "bash script.sh"}})
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work), "KUBECONFIG": task.endpoints.kubeconfig}
    try:
        r = subprocess.run(
            ["bash", "script.sh"], cwd=work, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        ran = f"ran script.sh: exit {r.returncode}"
        events({"type": "observation", "tool": "shell", "content": f"exit {r.returncode} {r.stderr[-500:]}"})
    except subprocess.TimeoutExpired:
        ran = "script.sh ran longer than 60 s"
        events({"type": "observation", "tool": "shell", "content": ran})
    return AgentOutput(
        mitigation_actions=["wrote script.sh and policy.rego", ran], steps=2, extra=dict(extra)
    )
