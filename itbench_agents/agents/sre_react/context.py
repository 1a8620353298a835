"""Run-time configuration of the sre-react graph (LangGraph ``context_schema``).

The agent wrapper passes a fully built :class:`Services` (LLM clients bound to the trajectory,
tool context bound to the task's endpoints). LangGraph Studio passes only the plain fields and the
services are built from them (``ITBENCH_ENDPOINTS``, ``ITBENCH_MODEL`` environment variables).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any


@dataclass(kw_only=True)
class Context:
    model: str = field(default_factory=lambda: os.environ.get("ITBENCH_MODEL", ""))
    """Agent model: litellm ``provider/model`` or ``scripted:FILE``."""
    tool_model: str | None = field(default_factory=lambda: os.environ.get("ITBENCH_TOOL_MODEL"))
    base_url: str | None = field(default_factory=lambda: os.environ.get("ITBENCH_BASE_URL"))
    api_key_env: str | None = field(default_factory=lambda: os.environ.get("ITBENCH_API_KEY_ENV"))
    tools: str = "direct"
    """``direct`` query tools or the paper's ``nl2`` tools, plus or minus registered tools by name
    (``direct,+runbook``; see ``itbench_agents/tools/toolsets.py``)."""
    endpoints_file: str | None = field(default_factory=lambda: os.environ.get("ITBENCH_ENDPOINTS"))
    namespaces: list[str] = field(default_factory=list)
    max_steps: int = 40
    wall_time_s: float | None = None
    """Stop calling the model after this many seconds (the harness enforces its own limit too)."""
    max_format_errors: int = 3
    max_repairs: int = 1
    max_reflections: int = 2
    settle_s: int = 60
    text_tool_calls: bool = False
    """Read tool calls the model wrote as JSON text when the server returned none
    (``llm/text_tool_calls.py``; small local models); each use is recorded as a warning event."""
    observe_first: bool = True
    """A diagnosis is accepted only once a tool call has returned something (the paper's agent
    investigates first); an earlier one is answered with a prompt and counts as a format error."""
    """How long to wait after a mitigation action before re-checking the alerts."""
    prompts: str = "sre_react"
    """Folder of ``prompts/`` whose templates the graph renders; a template it lacks comes from
    ``sre_react/`` (finops-react brings its own diagnosis and mitigation prompts)."""
    services: Any = None
    """A built :class:`~.tools.Services`; None → built from the fields above on first use."""
