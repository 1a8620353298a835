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
"""


def _pre(x: Any) -> str:
    if x is None:
        return ""
    text = x if isinstance(x, str) else json.dumps(x, indent=2, default=repr)
    return f"<pre>{html.escape(text[:20000])}</pre>"


def write_trajectory_html(traj_path: Path, record: EpisodeRecord | None = None) -> Path:
    events = read_trajectory(traj_path)
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(traj_path.parent.name)}</title><style>{CSS}</style></head><body>"
    ]
    out.append(f"<h1>{html.escape(traj_path.parent.name)}</h1>")
    if record is not None:
        d = "correct" if record.diagnosis and record.diagnosis.correct else "wrong"
        m = (
            "n/a"
            if not record.mitigation or not record.mitigation.applicable
            else ("passed" if record.mitigation.passed else "failed")
        )
        out.append(
            f"<p>scenario <b>{html.escape(record.scenario_id)}</b>, agent <b>{html.escape(record.agent)}</b>, trial {record.trial}, "
            f"termination <b>{html.escape(record.termination)}</b>; diagnosis {d}, mitigation {m}.</p>"
        )
    for ev in events:
        data = ev.model_dump()
        kind = data.get("type", "note")
        meta = f"<div class='meta'>{kind} · t={data.get('t_wall', 0):.2f}s</div>"
        body = ""
        if kind == "model_call":
            body = (
                f"<b>{html.escape(str(data.get('model', '')))}</b> in {data.get('input_tokens')} / out {data.get('output_tokens')} tokens"
                + _pre(data.get("response"))
            )
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
        out.append(f"<div class='ev {html.escape(kind)}'>{meta}{body}</div>")
    out.append("</body></html>")
    page = traj_path.with_name("trajectory.html")
    page.write_text("\n".join(out))
    return page


def episode_link(episode_id: str, links: dict[str, str]) -> str:
    """The episode's id as HTML, linked to its trajectory page when it has one."""
    link = links.get(episode_id)
    return f"<a href='{html.escape(link)}'>{html.escape(episode_id)}</a>" if link else html.escape(episode_id)
