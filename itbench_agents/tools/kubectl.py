"""The ``kubectl`` tool: the real kubectl binary, run with an argv list (never a shell)."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

from .context import ToolContext
from .kubectl_policy import check
from .spec import ToolError, tool


def parse_command(command: str) -> list[str]:
    """Split a kubectl command line the way a POSIX shell would quote it (no expansion, no pipes)."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ToolError(f"cannot parse the command line: {exc}") from None
    if argv and argv[0] in {"kubectl", "/usr/bin/kubectl", "k"}:
        argv = argv[1:]
    for tok in argv:
        if tok in {"|", "||", "&&", ";", ">", ">>", "<", "&"} or tok.startswith("$("):
            raise ToolError(f"shell syntax ({tok}) is not supported: give one kubectl command")
    return argv


def run_kubectl(ctx: ToolContext, argv: list[str], stdin: str | None = None) -> tuple[int, str]:
    """Run kubectl with the environment's kubeconfig; (exit code, stdout+stderr)."""
    full = [ctx.kubectl_bin, f"--kubeconfig={ctx.kubeconfig}", *argv]
    try:
        proc = subprocess.run(
            full,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=ctx.timeout_s,
            cwd=ctx.workdir,
            check=False,
        )
    except FileNotFoundError:
        raise ToolError(f"kubectl binary not found ({ctx.kubectl_bin})") from None
    except subprocess.TimeoutExpired:
        raise ToolError(f"kubectl timed out after {ctx.timeout_s:.0f}s") from None
    out = proc.stdout
    if proc.stderr.strip():
        out = (out + "\n" if out else "") + proc.stderr.strip()
    return proc.returncode, out.strip()


@tool(kind="mutate")
def kubectl(ctx: ToolContext, command: str, stdin: str | None = None) -> str:
    """Run one kubectl command against the cluster, e.g. `get pods -n otel-demo -o wide`.

    During diagnosis only read-only commands run (get, describe, logs, top, events, rollout
    history); mutating commands (patch, scale, rollout undo, delete ...) run during mitigation.
    exec, port-forward, proxy, edit, cp and attach are never allowed. Without -n the task's
    namespace is used.

    Args:
        command: The kubectl arguments, with or without the leading "kubectl".
        stdin: Text passed on standard input, e.g. a manifest for `apply -f -`.
    """
    argv = parse_command(command)
    decision = check(argv, phase=ctx.phase, namespaces=ctx.namespaces, workdir=ctx.workdir)
    if not decision.allowed:
        raise ToolError(f"refused: {decision.reason}")
    code, out = run_kubectl(ctx, decision.argv, stdin)
    if code != 0:
        raise ToolError(f"kubectl exited with code {code}:\n{out}")
    if decision.mutating:
        ctx.actions.append("kubectl " + shlex.join(decision.argv))
    return out or "(no output)"


def kubectl_json(ctx: ToolContext, command: str) -> dict[str, Any]:
    """Run a read-only kubectl command with ``-o json`` (same binary and policy as the tool, but
    without the observation cap: for programs such as the heuristic agent, not for LLMs)."""
    argv = parse_command(command) + ["-o", "json"]
    decision = check(argv, phase=ctx.phase, namespaces=ctx.namespaces, workdir=ctx.workdir)
    if not decision.allowed:
        raise ToolError(f"refused: {decision.reason}")
    if decision.mutating:
        raise ToolError("kubectl_json is for read-only commands")
    code, out = run_kubectl(ctx, decision.argv)
    if code != 0:
        raise ToolError(f"kubectl exited with code {code}:\n{out}")
    try:
        data: dict[str, Any] = json.loads(out)
    except json.JSONDecodeError:
        raise ToolError(f"kubectl did not return JSON: {out[:300]}") from None
    return data
