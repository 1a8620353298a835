"""Render one episode's ``trajectory.jsonl`` as a readable, self-contained HTML page."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from ..harness.records import EpisodeRecord
from ..harness.trajectory import read_trajectory

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
.ev{border-left:4px solid #bbb;margin:.6em 0;padding:.3em .8em;background:#fafafa}
.model_call{border-color:#7b5bd6}.tool_call{border-color:#2f7bd6}.observation{border-color:#3aa56b}
.env_event{border-color:#999}.error{border-color:#d33}.score{border-color:#d9a400}
pre{white-space:pre-wrap;word-break:break-word;margin:.3em 0;font-size:.85em;max-height:30em;overflow:auto}
.meta{color:#777;font-size:.8em}
.msg{margin:.4em 0 .4em .8em}.role{font-size:.8em;font-weight:bold;color:#555}
.role.system{color:#a05a00}.role.user{color:#2f7bd6}.role.assistant{color:#7b5bd6}.role.tool{color:#3aa56b}
"""


def _pre(x: Any) -> str:
    if x is None:
        return ""
    text = x if isinstance(x, str) else json.dumps(x, indent=2, default=repr)
    return f"<pre>{html.escape(text[:20000])}</pre>"


ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def _message_html(doc: dict[str, Any]) -> str:
    """One message as LangChain's ``message_to_dict`` wrote it (``llm/exchange.py``)."""
    data = doc.get("data") or {}
    role = ROLES.get(str(doc.get("type")), str(doc.get("type", "message")))
    name = data.get("name") or data.get("tool_call_id") or ""
    head = f"<div class='role {html.escape(role)}'>{html.escape(role)}{' · ' + html.escape(str(name)) if name else ''}</div>"
    calls = "".join(
        f"<div class='call'>→ <b>{html.escape(str(c.get('name')))}</b>{_pre(c.get('args'))}</div>"
        for c in data.get("tool_calls") or []
        if isinstance(c, dict)
    )
    content = data.get("content")
    return f"<div class='msg'>{head}{_pre(content) if content else ''}{calls}</div>"


def _reply_key(content: Any, calls: Any) -> tuple[str, tuple[str, ...]]:
    names = tuple(str(c.get("name")) for c in calls or [] if isinstance(c, dict))
    return (content if isinstance(content, str) else str(content or "")), names


def _prompt_html(prompt: Any, previous: tuple[str, tuple[str, ...]] | None = None) -> str:
    """What this call added to the conversation: the messages no earlier call carried (each is
    shown once, where it first appears) and the tools offered, the first time they were. The
    model's own previous response, which the conversation now carries, is only referred to."""
    if not isinstance(prompt, dict):
        return _pre(prompt)
    new = prompt.get("new") or {}
    out = []
    for k in prompt.get("ids") or []:
        doc = new.get(k)
        if not isinstance(doc, dict):
            continue
        data = doc.get("data") or {}
        if doc.get("type") == "ai" and _reply_key(data.get("content"), data.get("tool_calls")) == previous:
            out.append(
                "<div class='msg'><div class='role assistant'>assistant</div><div class='meta'>the previous response, above</div></div>"
            )
        else:
            out.append(_message_html(doc))
    schemas = prompt.get("tool_schemas")
    if schemas:
        names = ", ".join(
            str((t.get("function") or {}).get("name", "?")) for t in schemas if isinstance(t, dict)
        )
        out.append(
            f"<details><summary>tools offered: {html.escape(names)}</summary>{_pre(schemas)}</details>"
        )
    seen = len(prompt.get("ids") or []) - len(new)
    note = f"<div class='meta'>{prompt.get('messages', '?')} messages sent, {max(seen, 0)} of them shown with earlier calls</div>"
    return note + "".join(out)


def events_html(events: list[Any]) -> list[str]:
    """The trajectory's events as HTML blocks: every model call with the messages it added and its
    response, tool calls, observations, environment events, scores and errors."""
    out = []
    previous: dict[str, tuple[str, tuple[str, ...]]] = {}  # per client role: its last response
    for ev in events:
        data = ev.model_dump() if hasattr(ev, "model_dump") else dict(ev)
        kind = data.get("type", "note")
        meta = f"<div class='meta'>{html.escape(str(kind))} · t={data.get('t_wall') or 0:.2f}s</div>"
        if kind == "model_call":
            role = str(data.get("role") or "")
            body = (
                f"<b>{html.escape(str(data.get('model', '')))}</b> in {data.get('input_tokens')} / out {data.get('output_tokens')} tokens"
                + _prompt_html(data.get("prompt"), previous.get(role))
                + "<div class='role assistant'>response</div>"
                + _pre(data.get("response"))
            )
            response = data.get("response")
            if isinstance(response, dict):
                previous[role] = _reply_key(response.get("content"), response.get("tool_calls"))
        elif kind == "tool_call":
            body = f"<b>{html.escape(str(data.get('tool')))}</b>" + _pre(data.get("args"))
        elif kind == "observation":
            body = _pre(data.get("error") or data.get("content"))
        elif kind == "env_event":
            body = f"<b>{html.escape(str(data.get('phase')))}</b>" + _pre(data.get("detail"))
        elif kind == "score":
            body = _pre(data.get("scores"))
        elif kind == "error":
            body = f"<b>{html.escape(str(data.get('where')))}</b>" + _pre(data.get("message"))
        else:
            body = _pre(data.get("content") if "content" in data else data.get("raw"))
        out.append(f"<div class='ev {html.escape(str(kind))}'>{meta}{body}</div>")
    return out


def record_summary_html(record: EpisodeRecord) -> str:
    d = "correct" if record.diagnosis and record.diagnosis.correct else "wrong"
    m = (
        "n/a"
        if not record.mitigation or not record.mitigation.applicable
        else ("passed" if record.mitigation.passed else "failed")
    )
    return (
        f"<p>scenario <b>{html.escape(record.scenario_id)}</b>, agent <b>{html.escape(record.agent)}</b>, trial {record.trial}, "
        f"termination <b>{html.escape(record.termination)}</b>; diagnosis {d}, mitigation {m}.</p>"
    )


def write_trajectory_html(traj_path: Path, record: EpisodeRecord | None = None) -> Path:
    events = read_trajectory(traj_path)
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(traj_path.parent.name)}</title><style>{CSS}</style></head><body>"
    ]
    out.append(f"<h1>{html.escape(traj_path.parent.name)}</h1>")
    if record is not None:
        out.append(record_summary_html(record))
    out.extend(events_html(events))
    out.append("</body></html>")
    page = traj_path.with_name("trajectory.html")
    page.write_text("\n".join(out))
    return page


def episode_link(episode_id: str, links: dict[str, str]) -> str:
    """The episode's id as HTML, linked to its trajectory page when it has one."""
    link = links.get(episode_id)
    return f"<a href='{html.escape(link)}'>{html.escape(episode_id)}</a>" if link else html.escape(episode_id)
