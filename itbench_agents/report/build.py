"""Build ``report.md`` and a self-contained ``report.html`` from one or more run folders.

Contents: the Table-4 style SRE table (overall, per traces condition), breakdowns by complexity
bucket (with bars) and fault category, a per-scenario heat map (diagnosis and mitigation rates per
agent), pass@k, links to every episode's trajectory rendered as readable HTML, and for CISO
episodes the Table-5 style table (``ciso.py``), for FinOps episodes the Table-6 style one (``finops.py``).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..harness.records import EpisodeRecord
from ..harness.runfolder import check_episodes, read_episodes, read_manifest
from .aggregate import GroupResult, ScenarioResult, Summary, summarize
from .ciso import ciso_html, ciso_markdown
from .consistency import ESTIMATORS, PASSK_NOTE, macro_curve
from .finops import finops_html, finops_markdown
from .plugin_personas import BUILTIN_TABLES, plugin_html, plugin_markdown
from .tables import TABLE4_HEADER, TIMES_HEADER, fmt, fmt_time, md_table, table4_row, times_row
from .trajectory_html import episode_link, write_trajectory_html


def _group_rows(groups: Sequence[GroupResult]) -> list[list[str]]:
    return [
        [
            g.agent,
            g.group,
            str(g.scenarios),
            fmt(g.diagnosis, pct=True),
            fmt(g.ntam_fl),
            fmt(g.mitigation, pct=True),
            fmt_time(g.mttd_wall),
            fmt_time(g.mttr_wall),
        ]
        for g in groups
    ]


GROUP_HEADER = ["agent", "group", "scenarios", "diagnosis %", "FL NTAM", "mitigation %", "MTTD s", "MTTR s"]


def pass_at_k_curves(
    summary: Summary,
) -> tuple[list[int], dict[tuple[str, str], dict[str, dict[str, list[float | None]]]]]:
    """Diagnosis and mitigation pass@k and pass^k for k = 1..(fewest trials of a scenario), per
    agent and condition: ``curves[(agent, condition)][metric][estimator]``, the macro average over
    scenarios of the unbiased estimators (``evaluation/stats.py``), None where no scenario has it.
    No k when every scenario ran once (pass@1 is then Table 4)."""
    cells: dict[tuple[str, str], list[ScenarioResult]] = {}
    for s in summary.scenarios:
        if s.trials > 0:
            cells.setdefault((s.agent, s.condition), []).append(s)
    kmax = min((s.trials for ss in cells.values() for s in ss), default=0)
    if kmax < 2:
        return [], {}
    ks = list(range(1, kmax + 1))
    fields = {
        "diagnosis": {"pass@k": "pass_at_k", "pass^k": "pass_hat_k"},
        "mitigation": {"pass@k": "mitigation_pass_at_k", "pass^k": "mitigation_pass_hat_k"},
    }
    curves = {
        key: {
            metric: {est: macro_curve([getattr(s, f) for s in ss], ks) for est, f in by_estimator.items()}
            for metric, by_estimator in fields.items()
        }
        for key, ss in sorted(cells.items())
    }
    return ks, curves


def pass_at_k_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """:func:`pass_at_k_curves` as a table (percentages), a row per agent, condition and estimator;
    empty when every scenario ran once."""
    ks, curves = pass_at_k_curves(summary)
    if not ks:
        return [], []
    header = ["agent", "condition", "estimator"]
    header += [f"{metric} k={k} %" for metric in ("diagnosis", "mitigation") for k in ks]
    rows = []
    for (agent, cond), c in curves.items():
        for estimator in ESTIMATORS:
            row = [agent, cond, estimator]
            for metric in ("diagnosis", "mitigation"):
                row += ["—" if v is None else f"{100 * v:.1f}" for v in c[metric][estimator]]
            rows.append(row)
    return header, rows


def _stat_mean(s: Any) -> float | None:
    return None if s is None or math.isnan(s.mean) else float(s.mean)


def figures_html(summary: Summary, records: list[EpisodeRecord]) -> dict[str, str]:
    """The report's inline SVG figures by section (``figures.py``): ``passk``, ``category``,
    ``latency`` (absent where there is nothing to draw)."""
    from .figures import pass_at_k_svg, rate_bars_svg

    out: dict[str, str] = {}
    ks, curves = pass_at_k_curves(summary)
    several = len({cond for _, cond in curves}) > 1
    if ks:
        labelled = {(a + (f" / {c}" if several else "")): v for (a, c), v in curves.items()}
        out["passk"] = pass_at_k_svg(labelled, ks)
    if summary.by_category:
        out["category"] = rate_bars_svg(
            "fault category",
            {
                (g.group, g.agent): (_stat_mean(g.diagnosis), _stat_mean(g.mitigation))
                for g in summary.by_category
            },
        )
    latency = latency_svg(records)
    if latency is not None:
        out["latency"] = latency
    return out


def latency_svg(records: Sequence[EpisodeRecord]) -> str | None:
    """P50 and P95 per agent of its wall time, and of its tokens and model cost where it used any;
    None when no episode ran."""
    from .figures import percentile_svg, percentiles

    panels = [("agent wall time, s", percentiles(records, lambda r: r.timing.agent_wall_s))]
    if any(r.usage.input_tokens + r.usage.output_tokens for r in records):
        panels.append(
            ("tokens", percentiles(records, lambda r: r.usage.input_tokens + r.usage.output_tokens))
        )
    if any(r.usage.cost_usd for r in records):
        panels.append(("model cost, $", percentiles(records, lambda r: r.usage.cost_usd)))
    return percentile_svg(panels) if panels[0][1] else None


LATENCY_NOTE = "<p class='muted'>P50 (bar) and P95 (tick) over the episodes that ran.</p>"


def latency_html(records: Sequence[EpisodeRecord], anchor: str, title: str) -> str:
    svg = latency_svg(records)
    if svg is None:
        return ""
    return f"<h2 id='{anchor}'>{html.escape(title)}</h2>{LATENCY_NOTE}<div class='figure'>{svg}</div>"


FAULTS_ONLY = "Faults only (no-fault controls left out: the paper's denominator)"


def render_markdown(summary: Summary, runs: list[str], records: list[EpisodeRecord]) -> str:
    parts = ["# itbench-agents report", "", "Runs: " + ", ".join(f"`{r}`" for r in runs), ""]
    parts += [
        "## SRE results (Table 4 layout)",
        "",
        "Mean ± standard error (macro average over scenarios; MTTD/MTTR over successful runs, ∞ when none).",
        "",
    ]
    parts.append(md_table(TABLE4_HEADER, [table4_row(g) for g in summary.overall]))
    if summary.faults_only:
        parts += [
            "",
            f"### {FAULTS_ONLY}",
            "",
            md_table(TABLE4_HEADER, [table4_row(g) for g in summary.faults_only]),
        ]
    parts += [
        "",
        "## Times (wall and twin seconds)",
        "",
        md_table(TIMES_HEADER, [times_row(g) for g in summary.overall]),
    ]
    pk_header, pk_rows = pass_at_k_rows(summary)
    if pk_rows:
        parts += ["", "## pass@k and pass^k", "", PASSK_NOTE, "", md_table(pk_header, pk_rows)]
    for title, groups in (
        ("By traces condition", summary.by_condition),
        ("By complexity bucket", summary.by_bucket),
        ("By fault category", summary.by_category),
    ):
        parts += ["", f"## {title}", "", md_table(GROUP_HEADER, _group_rows(groups))]
    parts += ["", "## Per scenario", ""]
    rows = []
    for s in summary.scenarios:
        rows.append(
            [
                s.scenario_id,
                s.agent,
                s.condition,
                s.bucket,
                str(s.trials),
                fmt(s.diagnosis, pct=True),
                fmt(s.mitigation, pct=True),
                fmt(s.ntam_fl),
                f"{s.pass_at_k.get(1, 0.0):.2f}",
                ", ".join(f"{k}×{v}" for k, v in sorted(s.terminations.items())),
            ]
        )
    parts.append(
        md_table(
            [
                "scenario",
                "agent",
                "condition",
                "bucket",
                "trials",
                "diagnosis %",
                "mitigation %",
                "FL NTAM",
                "pass@1",
                "terminations",
            ],
            rows,
        )
    )
    errs = [r for r in records if r.error]
    if errs:
        parts += ["", "## Episodes with errors", ""]
        parts += [f"- `{r.episode_id}` ({r.termination}): {r.error}" for r in errs[:200]]
    return "\n".join(parts) + "\n"


CSS = """
.figure svg{max-width:100%;height:auto}
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1400px}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
.heat td.cell{text-align:center;min-width:3.5em;color:#000}
.bar{display:inline-block;height:12px;background:#4a7bd0;vertical-align:middle}
.bar.m{background:#3aa56b}.muted{color:#777}
a{color:#2456a6}
"""


def _heat(v: float | None) -> str:
    if v is None or math.isnan(v):
        return "#eeeeee"
    r = int(230 - 150 * v)
    g = int(90 + 140 * v)
    return f"rgb({r},{g},110)"


def _table_html(header: list[str], rows: list[list[str]], cls: str = "") -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>'


def render_html(
    summary: Summary, runs: list[str], records: list[EpisodeRecord], links: dict[str, str]
) -> str:
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>itbench-agents report</title><style>{CSS}</style></head><body>"
    ]
    out.append("<h1>itbench-agents report</h1>")
    out.append("<p class='muted'>Runs: " + ", ".join(html.escape(r) for r in runs) + "</p>")
    out.append("<h2 id='table4'>SRE results (Table 4 layout)</h2>")
    out.append(
        "<p class='muted'>Mean ± standard error; macro average over scenarios; MTTD/MTTR over successful runs (∞ when none).</p>"
    )
    out.append(_table_html(TABLE4_HEADER, [table4_row(g) for g in summary.overall], "table4"))
    if summary.faults_only:
        out.append(
            f"<h3 id='faults-only'>{html.escape(FAULTS_ONLY)}</h3>"
            + _table_html(TABLE4_HEADER, [table4_row(g) for g in summary.faults_only])
        )
    out.append(
        "<h2>Times (wall and twin seconds)</h2>"
        + _table_html(TIMES_HEADER, [times_row(g) for g in summary.overall])
    )
    figures = figures_html(summary, records)
    if "latency" in figures:
        out.append(
            "<h2 id='latency'>Latency and cost per agent</h2>"
            + LATENCY_NOTE
            + f"<div class='figure'>{figures['latency']}</div>"
        )
    pk_header, pk_rows = pass_at_k_rows(summary)
    if pk_rows:
        out.append(
            "<h2 id='passk'>pass@k and pass^k</h2>"
            + f"<p class='muted'>{html.escape(PASSK_NOTE)}</p>"
            + _table_html(pk_header, pk_rows)
        )
        out.append("<div class='figure'>" + figures["passk"] + "</div>")
    out.append("<h2>By traces condition</h2>" + _table_html(GROUP_HEADER, _group_rows(summary.by_condition)))
    out.append("<h2 id='complexity'>By complexity bucket</h2>")
    rows = []
    for g in summary.by_bucket:
        d = 0.0 if math.isnan(g.diagnosis.mean) else g.diagnosis.mean
        m = None if g.mitigation is None or math.isnan(g.mitigation.mean) else g.mitigation.mean
        bars = f"<span class='bar' style='width:{d * 200:.0f}px'></span> {d * 100:.0f}% diagnosis<br>"
        bars += (
            f"<span class='bar m' style='width:{m * 200:.0f}px'></span> {m * 100:.0f}% mitigation"
            if m is not None
            else "<span class='muted'>no mitigation (controls)</span>"
        )
        rows.append(
            f"<tr><td>{html.escape(g.agent)}</td><td>{html.escape(g.group)}</td><td>{g.scenarios}</td><td style='text-align:left'>{bars}</td></tr>"
        )
    out.append(
        "<table class='bars'><thead><tr><th>agent</th><th>bucket</th><th>scenarios</th><th>pass rates</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
    out.append(
        "<h2 id='category'>By fault category</h2>"
        + _table_html(GROUP_HEADER, _group_rows(summary.by_category))
    )
    if "category" in figures:
        out.append("<div class='figure'>" + figures["category"] + "</div>")
    # heat map: scenarios × agents (diagnosis | mitigation)
    several_conditions = len({x.condition for x in summary.scenarios}) > 1
    cells: dict[tuple[str, str], tuple[float | None, float | None]] = {}
    for s in summary.scenarios:
        col = s.agent + (" / " + s.condition if several_conditions else "")
        cells[(s.scenario_id, col)] = (s.diagnosis.mean, s.mitigation.mean if s.mitigation else None)
    agents = sorted({col for _, col in cells})
    out.append(
        "<h2 id='heatmap'>Per-scenario heat map</h2><p class='muted'>Each cell: diagnosis rate | mitigation rate over trials.</p>"
    )
    head = (
        "<tr><th rowspan='2'>scenario</th>"
        + "".join(f"<th colspan='2'>{html.escape(a)}</th>" for a in agents)
        + "</tr><tr>"
        + "<th>diagnosis %</th><th>mitigation %</th>" * len(agents)
        + "</tr>"
    )
    body = []
    for sid in sorted({s.scenario_id for s in summary.scenarios}):
        tds = []
        for a in agents:
            for v in cells.get((sid, a), (None, None)):
                txt = "—" if v is None or math.isnan(v) else f"{v * 100:.0f}"
                tds.append(f"<td class='cell' style='background:{_heat(v)}'>{txt}</td>")
        body.append(f"<tr><td>{html.escape(sid)}</td>{''.join(tds)}</tr>")
    out.append(f"<table class='heat'><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>")
    out.append("<h2 id='episodes'>Episodes</h2>")
    rows2 = []
    for r in sorted(records, key=lambda r: (r.scenario_id, r.agent, r.trial)):
        name = episode_link(r.episode_id, links)
        dmark = "✓" if r.diagnosis and r.diagnosis.correct else "✗"
        mmark = (
            "–" if not r.mitigation or not r.mitigation.applicable else ("✓" if r.mitigation.passed else "✗")
        )
        rows2.append(
            f"<tr><td>{name}</td><td>{html.escape(r.termination)}</td><td>{dmark}</td><td>{mmark}</td><td>{r.wall_s:.1f}</td><td style='text-align:left'>{html.escape(r.error or '')}</td></tr>"
        )
    out.append(
        "<table><thead><tr><th>episode</th><th>termination</th><th>diagnosis</th><th>mitigation</th><th>wall s</th><th>error</th></tr></thead><tbody>"
        + "".join(rows2)
        + "</tbody></table>"
    )
    out.append("</body></html>")
    return "\n".join(out)


def _read_run(run_dir: str | Path) -> list[EpisodeRecord]:
    read_manifest(run_dir)  # schema check
    return read_episodes(run_dir)


def load_records(run_dirs: Sequence[str | Path]) -> list[EpisodeRecord]:
    return [r for d in run_dirs for r in _read_run(d)]


def _with_warning(md_text: str, html_text: str, head: str, lines: list[str]) -> tuple[str, str]:
    """Both reports with a warning (``head`` and its ``lines``) appended."""
    md_text += f"\n**{head}**\n\n" + "".join(f"- {x}\n" for x in lines)
    items = "".join(f"<li>{html.escape(x)}</li>" for x in lines)
    html_text = html_text.replace(
        "</body></html>",
        f"<div class='warning'><p>{html.escape(head)}</p><ul>{items}</ul></div></body></html>",
    )
    return md_text, html_text


def write_reports(run_dirs: Sequence[str | Path], out: str | Path | None = None) -> tuple[Path, Path]:
    dirs = [Path(d) for d in run_dirs]
    out_dir = Path(out) if out else dirs[0]
    out_dir.mkdir(parents=True, exist_ok=True)
    per_run = [(d, _read_run(d)) for d in dirs]
    records = [r for _, recs in per_run for r in recs]
    sre = [r for r in records if r.persona == "sre"]
    ciso = [r for r in records if r.persona == "ciso"]
    finops = [r for r in records if r.persona == "finops"]
    others = [r for r in records if r.persona not in BUILTIN_TABLES]
    summary = summarize(sre)
    links: dict[str, str] = {}
    for d, recs in per_run:
        for r in recs:
            traj = d / "episodes" / r.episode_id / "trajectory.jsonl"
            if traj.exists():
                page = write_trajectory_html(traj, r)
                try:
                    links[r.episode_id] = str(page.resolve().relative_to(out_dir.resolve()))
                except ValueError:
                    links[r.episode_id] = page.resolve().as_uri()
    runs = [str(d) for d in dirs]
    skipped = [f"{d}: {line}" for d in dirs for line in check_episodes(d).foreign]
    not_run = [f"{sid}: {why}" for d in dirs for sid, why in read_manifest(d).config.skipped.items()]
    md = out_dir / "report.md"
    md_text = render_markdown(summary, runs, sre)
    html_text = render_html(summary, runs, sre, links)
    if (ciso or finops or others) and not sre:  # a run of other personas: their tables alone
        md_text = md_text[: md_text.index("## SRE results")].rstrip() + "\n"
        html_text = html_text[: html_text.index("<h2 id='table4'>")] + "</body></html>"
    if ciso:  # the CISO table after the SRE one
        md_text += "\n" + ciso_markdown(ciso)
        section = ciso_html(ciso, links) + latency_html(
            ciso, "ciso-latency", "CISO latency and cost per agent"
        )
        html_text = html_text.replace("</body></html>", section + "\n</body></html>")
    if finops:  # then FinOps
        md_text += "\n" + finops_markdown(finops)
        section = finops_html(finops, links) + latency_html(
            finops, "finops-latency", "FinOps latency and cost per agent"
        )
        html_text = html_text.replace("</body></html>", section + "\n</body></html>")
    if others:  # then plug-in personas', each with its named scores
        md_text += "\n" + plugin_markdown(others)
        html_text = html_text.replace("</body></html>", plugin_html(others, links) + "\n</body></html>")
    if not_run:  # chosen, but the backend could not run them: said, never silently out of the tables
        head = f"{len(not_run)} chosen scenario(s) the backend could not run (in no table above):"
        md_text, html_text = _with_warning(md_text, html_text, head, not_run)
    if skipped:
        head = f"{len(skipped)} record line(s) not written by the harness were skipped:"
        md_text, html_text = _with_warning(md_text, html_text, head, skipped)
    md.write_text(md_text)
    page = out_dir / "report.html"
    page.write_text(html_text)
    (out_dir / "summary.json").write_text(json.dumps(json.loads(summary.model_dump_json()), indent=1) + "\n")
    return md, page
