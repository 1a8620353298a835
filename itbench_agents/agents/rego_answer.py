"""Leave a ``k8s-opa`` answer in the work folder as an agent would: ``script.sh`` and ``policy.rego``
written, the script run once with the agent's credential to leave ``collected_data.json``; or a
``rhel-opa`` answer: ``playbook.yml`` and ``policy.rego`` written, the playbook run once against the
task's inventory. Used by the in-process baselines (oracle, ciso-catalogue, the Rego audit
strategies) and ciso-react."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..core.agent import EventSink
from ..core.output import AgentOutput
from ..core.task import Task

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
    _write(task, {"script.sh": script, "policy.rego": policy})
    rc, _ = run_script(task, events)
    ran = (
        f"ran script.sh: exit {rc}" if rc is not None else f"script.sh ran longer than {SCRIPT_TIMEOUT_S:g} s"
    )
    return _answered("script.sh", ran, extra)


def _write(task: Task, files: dict[str, str]) -> None:
    for name, text in files.items():
        (Path(task.workdir) / name).write_text(text)


def _answered(collector: str, ran: str, extra: dict[str, object]) -> AgentOutput:
    return AgentOutput(
        mitigation_actions=[f"wrote {collector} and policy.rego", ran], steps=2, extra=dict(extra)
    )


def run_playbook_once(task: Task, events: EventSink) -> tuple[int | None, str]:
    """``ansible-playbook -i <the task's inventory> playbook.yml`` in the work folder, sandboxed as
    the evaluator runs it: (exit status or None on time-out, the tail of its output)."""
    from ..twin.host.controller import run_playbook

    work = Path(task.workdir)
    inventory = task.endpoints.ansible_inventory or str(work / "inventory.ini")
    events(
        {
            "type": "tool_call",
            "tool": "shell",
            "args": {"command": "ansible-playbook -i inventory.ini playbook.yml"},
        }
    )
    rc, tail = run_playbook(work, inventory=inventory)
    events({"type": "observation", "tool": "shell", "content": f"exit {rc} {tail[-500:]}"})
    return rc, tail


def leave_playbook_answer(
    task: Task, playbook: str, policy: str, events: EventSink, **extra: object
) -> AgentOutput:
    _write(task, {"playbook.yml": playbook, "policy.rego": policy})
    rc, _ = run_playbook_once(task, events)
    ran = f"ran playbook.yml: exit {rc}" if rc is not None else "playbook.yml ran out of time"
    return _answered("playbook.yml", ran, extra)
