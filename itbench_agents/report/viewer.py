"""`itbench view RUN_DIR...`: run folders as a local web app, read afresh at every request.

``/`` lists every episode of the runs — the recorded ones and those still running (an episode
folder without a record) — filtered by persona, agent, scenario (a substring) and outcome, and
reloads itself every few seconds while a run has episodes to go. ``/episode?run=N&id=EPISODE``
shows one episode: its scores (diagnosis, mitigation and its end-state checks, named scores), its
times and usage, and the whole conversation (every message a model was sent, once, and every
response, tool call and observation). ``/run/N/report.html`` serves the run's report (``itbench
report``) and the trajectory pages it links to; ``/atif?run=N&id=EPISODE`` a recorded episode as an
ATIF trajectory (``atif.py``, linked from its page). Plain HTML forms and links; no script, no network. Only
the run folders named on the command line are read, and an episode is found by its exact id
among them (no path from the URL reaches the disk).
"""

from __future__ import annotations

import html
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from ..harness.records import EpisodeRecord
from ..harness.runfolder import RunFolderError, read_episodes, read_manifest
from ..harness.trajectory import read_trajectory
from .trajectory_html import CSS, events_html

REFRESH_S = 3
SERVED = {
    "report.html": "text/html; charset=utf-8",
    "report.md": "text/plain; charset=utf-8",
    "summary.json": "application/json",
}
"""What ``/run/N/...`` serves of a run folder: these files and ``episodes/<id>/trajectory.html``, the
pages ``itbench report`` wrote; nothing an agent wrote (its work folder is in the run folder too)."""
OUTCOMES = ("passed", "failed", "error", "running")
ERRORS = ("env_error", "harness_error", "agent_error")

PAGE_CSS = (
    CSS
    + """
body{max-width:1300px}table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}th{background:#f3f3f3}
.passed{color:#17803d;font-weight:bold}.failed{color:#c0262d;font-weight:bold}
.error{color:#8a5a00;font-weight:bold}.running{color:#2f7bd6;font-weight:bold}
form.filters{display:flex;gap:1em;align-items:end;flex-wrap:wrap;background:#f6f6f6;padding:.6em}
form.filters label{display:flex;flex-direction:column;font-size:.8em}
"""
)


@dataclass(frozen=True)
class Row:
    """One episode of a run: recorded, or still running (``record`` None)."""

    run: int
    episode_id: str
    record: EpisodeRecord | None

    @property
    def outcome(self) -> str:
        return outcome(self.record)


def outcome(record: EpisodeRecord | None) -> str:
    """``running`` (no record yet), ``error`` (the environment, harness or agent broke), ``passed``
    (SRE and FinOps incidents: diagnosis right and mitigation passed or not applicable; named
    scores: every one passed) or ``failed``."""
    if record is None:
        return "running"
    if record.termination in ERRORS:
        return "error"
    if record.diagnosis is not None or record.mitigation is not None:
        diag = record.diagnosis is not None and record.diagnosis.correct
        mit = record.mitigation is None or not record.mitigation.applicable or record.mitigation.passed
        return "passed" if diag and mit else "failed"
    if record.scores:
        return "passed" if all(s.passed for s in record.scores.values()) else "failed"
    return "failed"


@dataclass
class RunView:
    path: Path
    run_id: str
    planned: int
    rows: list[Row]

    @property
    def recorded(self) -> int:
        return sum(r.record is not None for r in self.rows)

    @property
    def in_progress(self) -> bool:
        return self.recorded < self.planned


def read_run(index: int, path: Path) -> RunView:
    """The run's records and its episode folders that have none yet (episodes in flight)."""
    try:
        manifest = read_manifest(path)
        run_id, planned = manifest.run_id, manifest.episodes_planned
    except RunFolderError:
        run_id, planned = path.name, 0
    records = read_episodes(path) if (path / "episodes.jsonl").exists() else []
    rows = [Row(index, r.episode_id, r) for r in records]
    done = {r.episode_id for r in records}
    folder = path / "episodes"
    if folder.is_dir():
        for d in sorted(folder.iterdir()):
            if d.is_dir() and d.name not in done and (d / "trajectory.jsonl").exists():
                rows.append(Row(index, d.name, None))
    return RunView(path, run_id, planned, rows)


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _page(title: str, body: str, refresh: bool) -> str:
    meta = f"<meta http-equiv='refresh' content='{REFRESH_S}'>" if refresh else ""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'>{meta}<title>{_esc(title)}</title>"
        f"<style>{PAGE_CSS}</style></head><body>{body}</body></html>"
    )


def _select(name: str, options: Sequence[str], chosen: str) -> str:
    opts = "".join(
        f"<option value='{_esc(o)}'{' selected' if o == chosen else ''}>{_esc(o or 'any')}</option>"
        for o in ("", *options)
    )
    return f"<label>{_esc(name)}<select name='{_esc(name)}'>{opts}</select></label>"


def _scores_cell(rec: EpisodeRecord | None) -> str:
    if rec is None:
        return ""
    parts = []
    if rec.diagnosis is not None:
        parts.append(f"diagnosis {'✓' if rec.diagnosis.correct else '✗'}")
    if rec.mitigation is not None and rec.mitigation.applicable:
        parts.append(f"mitigation {'✓' if rec.mitigation.passed else '✗'}")
    parts += [f"{name} {s.value:.2f}" for name, s in rec.scores.items()]
    return _esc(", ".join(parts))


def index_page(runs: list[RunView], query: dict[str, str]) -> str:
    rows = [r for run in runs for r in run.rows]
    persona, agent = query.get("persona", ""), query.get("agent", "")
    scenario, want = query.get("scenario", "").strip(), query.get("outcome", "")
    shown = [
        r
        for r in rows
        if (not persona or (r.record is not None and r.record.persona == persona))
        and (not agent or (r.record is not None and r.record.agent == agent))
        and (not scenario or scenario in (r.record.scenario_id if r.record else r.episode_id))
        and (not want or r.outcome == want)
    ]
    personas = sorted({r.record.persona for r in rows if r.record})
    agents = sorted({r.record.agent for r in rows if r.record})
    out = ["<h1>itbench runs</h1><table><tr><th>run</th><th>folder</th><th>episodes</th></tr>"]
    for i, run in enumerate(runs):
        state = " <span class='running'>running</span>" if run.in_progress else ""
        report = (
            f" · <a href='/run/{i}/report.html'>report</a>" if (run.path / "report.html").is_file() else ""
        )
        out.append(
            f"<tr><td>{_esc(run.run_id)}{report}</td><td>{_esc(run.path)}</td>"
            f"<td>{run.recorded} of {run.planned} recorded{state}</td></tr>"
        )
    out.append("</table>")
    out.append(
        "<form class='filters' method='get' action='/'>"
        + _select("persona", personas, persona)
        + _select("agent", agents, agent)
        + f"<label>scenario<input name='scenario' value='{_esc(scenario)}' placeholder='id contains'></label>"
        + _select("outcome", OUTCOMES, want)
        + "<button type='submit'>filter</button></form>"
    )
    counts = {o: sum(r.outcome == o for r in shown) for o in OUTCOMES}
    out.append(
        f"<p>{len(shown)} of {len(rows)} episodes: "
        + ", ".join(f"<span class='{o}'>{counts[o]} {o}</span>" for o in OUTCOMES)
        + "</p>"
    )
    out.append(
        "<table><tr><th>episode</th><th>scenario</th><th>agent</th><th>trial</th><th>persona</th>"
        "<th>outcome</th><th>termination</th><th>scores</th><th>agent time</th><th>tokens</th></tr>"
    )
    for r in shown:
        rec = r.record
        link = "/episode?" + urlencode({"run": r.run, "id": r.episode_id})
        if rec is None:
            cells = ["", "", "", "", "<span class='running'>running</span>", "", "", "", ""]
        else:
            tokens = rec.usage.input_tokens + rec.usage.output_tokens
            cells = [
                _esc(rec.scenario_id),
                _esc(rec.agent),
                str(rec.trial),
                _esc(rec.persona),
                f"<span class='{r.outcome}'>{r.outcome}</span>",
                _esc(rec.termination),
                _scores_cell(rec),
                f"{rec.timing.agent_wall_s:.1f} s",
                str(tokens) if tokens else "",
            ]
        out.append(
            f"<tr><td><a href='{_esc(link)}'>{_esc(r.episode_id)}</a></td><td>"
            + "</td><td>".join(cells)
            + "</td></tr>"
        )
    out.append("</table>")
    return _page("itbench runs", "".join(out), refresh=any(run.in_progress for run in runs))


def _seconds(x: float | None) -> str:
    return "never" if x is None or math.isinf(x) else f"{x:.0f} s"


def _record_html(rec: EpisodeRecord) -> str:
    out = [
        "<table>",
        f"<tr><th>scenario</th><td>{_esc(rec.scenario_id)}</td><th>agent</th><td>{_esc(rec.agent)}</td></tr>",
        f"<tr><th>trial · seed</th><td>{rec.trial} · {rec.seed}</td><th>masked</th><td>{_esc(', '.join(rec.masked) or '-')}</td></tr>",
        f"<tr><th>outcome</th><td><span class='{outcome(rec)}'>{outcome(rec)}</span></td>"
        f"<th>termination</th><td>{_esc(rec.termination)}{': ' + _esc(rec.error) if rec.error else ''}</td></tr>",
        f"<tr><th>agent time</th><td>{rec.timing.agent_wall_s:.1f} s wall, {rec.timing.agent_twin_s:.0f} s twin</td>"
        f"<th>MTTD · MTTR (twin)</th><td>{_seconds(rec.timing.mttd_twin_s)} · {_seconds(rec.timing.mttr_twin_s)}</td></tr>",
        f"<tr><th>usage</th><td colspan='3'>{rec.usage.model_calls} model calls, {rec.usage.tool_calls} tool calls, "
        f"{rec.usage.input_tokens} in / {rec.usage.output_tokens} out tokens, ${rec.usage.cost_usd:.4f}</td></tr>",
        "</table>",
    ]
    if rec.diagnosis is not None:
        d = rec.diagnosis
        out.append(
            f"<h3>diagnosis: <span class='{'passed' if d.correct else 'failed'}'>{'correct' if d.correct else 'wrong'}</span></h3>"
            f"<p>precision {d.precision:.2f}, recall {d.recall:.2f}, F1 {d.f1:.2f}, NTAM (fault localisation) {d.ntam_fl:.2f}; "
            f"named right: {_esc(', '.join(d.matched) or '-')}; on the fault's chain: {_esc(', '.join(d.on_chain) or '-')}; "
            f"wrong: {_esc(', '.join(d.wrong()) or '-')}; "
            f"root causes missed: {len(d.missed)}{'; ' + _esc(d.reason) if d.reason else ''}</p>"
        )
    if rec.mitigation is not None and rec.mitigation.applicable:
        m = rec.mitigation
        out.append(
            f"<h3>mitigation: <span class='{'passed' if m.passed else 'failed'}'>{'passed' if m.passed else 'failed'}</span></h3>"
        )
        if m.reason:
            out.append(f"<p>{_esc(m.reason)}</p>")
        out.append("<table><tr><th>end-state check</th><th>result</th><th>detail</th></tr>")
        for c in m.checks:
            state = "not evaluated" if c.ok is None else ("ok" if c.ok else "failed")
            cls = "" if c.ok is None else ("passed" if c.ok else "failed")
            out.append(
                f"<tr><td>{_esc(c.name)}</td><td class='{cls}'>{state}</td><td>{_esc(c.detail)}</td></tr>"
            )
        out.append("</table>")
        if m.alerts_firing:
            out.append(f"<p>alerts still firing: {_esc(', '.join(m.alerts_firing))}</p>")
        for col in m.collateral:
            out.append(f"<p>collateral: {_esc(col.object)} {_esc(col.change)} {_esc(col.detail)}</p>")
    if rec.scores:
        out.append("<h3>scores</h3><table><tr><th>score</th><th>value</th><th>why</th></tr>")
        for name, s in rec.scores.items():
            out.append(
                f"<tr><td>{_esc(name)}</td><td class='{'passed' if s.passed else 'failed'}'>{s.value:.2f}</td>"
                f"<td>{_esc(s.explanation)}</td></tr>"
            )
        out.append("</table>")
    return "".join(out)


def episode_page(runs: list[RunView], run: int, episode_id: str) -> str | None:
    """The episode's page; None when no run of the viewer has that episode."""
    if not 0 <= run < len(runs):
        return None
    row = next((r for r in runs[run].rows if r.episode_id == episode_id), None)
    if row is None:
        return None
    body = [f"<p><a href='/'>← all episodes</a></p><h1>{_esc(episode_id)}</h1>"]
    if row.record is None:
        body.append("<p><span class='running'>running</span>: the conversation so far</p>")
    else:
        body.append(_record_html(row.record))
        link = "/atif?" + urlencode({"run": run, "id": episode_id})
        body.append(f"<p><a href='{_esc(link)}' download>ATIF trajectory (JSON)</a></p>")
    traj = runs[run].path / "episodes" / episode_id / "trajectory.jsonl"
    body.append("<h2>conversation and events</h2>")
    if traj.is_file():
        body.extend(events_html(read_trajectory(traj)))
    else:
        body.append("<p>no trajectory was written</p>")
    return _page(episode_id, "".join(body), refresh=row.record is None)


class Viewer:
    """Serves ``run_dirs`` on ``host:port`` (port 0: any free one) from a background thread."""

    def __init__(self, run_dirs: Sequence[str | Path], host: str = "127.0.0.1", port: int = 0) -> None:
        self.run_dirs = [Path(d).resolve() for d in run_dirs]
        viewer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                served = viewer.run_file(self.path) or viewer.atif(self.path)
                if served is None:
                    status, page = viewer.respond(self.path)
                    served = (status, page.encode(), "text/html; charset=utf-8")
                status, data, content_type = served
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def runs(self) -> list[RunView]:
        return [read_run(i, d) for i, d in enumerate(self.run_dirs)]

    def run_file(self, target: str) -> tuple[int, bytes, str] | None:
        """``/run/N/PATH``: a file of run N's folder — its ``report.html`` and the trajectory pages
        it links to — never a path outside the folder; None when ``target`` is not such a path."""
        parts = urlsplit(target)
        bits = parts.path.split("/", 3)
        if len(bits) < 4 or bits[1] != "run":
            return None
        try:
            root = self.run_dirs[int(bits[2])]
        except (ValueError, IndexError):
            return 404, b"no such run", "text/plain; charset=utf-8"
        rel = unquote(bits[3])
        path = (root / rel).resolve()
        allowed = rel in SERVED or re.fullmatch(r"episodes/[^/]+/trajectory\.html", rel) is not None
        if not allowed or not path.is_relative_to(root) or not path.is_file():
            return 404, b"not found", "text/plain; charset=utf-8"
        return 200, path.read_bytes(), SERVED.get(rel, SERVED["report.html"])

    def atif(self, target: str) -> tuple[int, bytes, str] | None:
        """``/atif?run=N&id=EPISODE``: a recorded episode as an ATIF trajectory (``atif.py``);
        None when ``target`` is not such a path."""
        from .atif import atif_json, episode_atif, trajectory_events

        parts = urlsplit(target)
        if parts.path != "/atif":
            return None
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        try:
            root = self.run_dirs[int(query.get("run", "-1"))]
            record = next(r for r in read_episodes(root) if r.episode_id == query.get("id"))
        except (ValueError, IndexError, StopIteration, RunFolderError, OSError):
            return 404, b"no such recorded episode", "text/plain; charset=utf-8"
        doc = episode_atif(record, trajectory_events(root, record.episode_id))
        return 200, atif_json(doc).encode(), "application/json"

    def respond(self, target: str) -> tuple[int, str]:
        parts = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        try:
            if parts.path == "/":
                return 200, index_page(self.runs(), query)
            if parts.path == "/episode":
                try:
                    run = int(query.get("run", "-1"))
                except ValueError:
                    run = -1
                page = episode_page(self.runs(), run, query.get("id", ""))
                if page is not None:
                    return 200, page
                return 404, _page(
                    "not found", "<p>no such episode in these runs; <a href='/'>all episodes</a></p>", False
                )
        except (RunFolderError, OSError, ValueError) as e:
            return 500, _page("error", f"<p>cannot read the runs: {_esc(e)}</p>", False)
        return 404, _page("not found", "<p>not found; <a href='/'>all episodes</a></p>", False)

    def start(self) -> Viewer:
        self._thread = threading.Thread(target=self.server.serve_forever, name="itbench-view", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
