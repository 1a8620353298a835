"""The report's figures as inline SVG (matplotlib's object API, no pyplot state, no display): static
markup in the self-contained HTML, no scripts, and the same bytes for the same run (no date in the
metadata, ids hashed from a fixed salt).

- :func:`pass_at_k_svg`: diagnosis and mitigation pass@k (solid) and pass^k (dashed) curves per
  agent (the unbiased estimators the table beside it shows), when a scenario ran at least twice;
- :func:`rate_bars_svg`: rates per group and agent, grouped bars, a panel per metric (SRE:
  diagnosis and mitigation pass@1 by fault category; CISO: pass@1 and strict by task class;
  FinOps: by fault category, and anomaly detection's scores);
- :func:`percentile_svg`: P50 and P95 per agent of an episode quantity (the agent's wall time,
  its model cost, its tokens), over the episodes that ran.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..harness.records import EpisodeRecord

COLORS = ("#3465a4", "#cc0000", "#4e9a06", "#c4a000", "#75507b", "#ce5c00", "#06989a", "#555753")
WIDTH_IN = 7.0


def _svg(fig: Any) -> str:
    """``fig`` as an SVG element (the XML prolog and DOCTYPE dropped: it goes inline)."""
    from matplotlib import rc_context

    buf = io.StringIO()
    with rc_context({"svg.hashsalt": "itbench-agents", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    # inline in HTML the parser gives <svg> (and xlink:href) their namespaces; the RDF metadata
    # names only vocabularies: without them the page holds no URL at all
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    return re.sub(r' xmlns(:xlink)?="[^"]*"', "", text)


def _figure(height_in: float, ncols: int = 1) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, height_in))
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    for ax in axes:
        ax.spines[["top", "right"]].set_visible(False)
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
    return fig, axes


def pass_at_k_svg(
    curves: Mapping[str, Mapping[str, Mapping[str, Sequence[float | None]]]], ks: Sequence[int]
) -> str:
    """``curves``: per agent (and condition) label, per metric (``diagnosis``, ``mitigation``), per
    estimator (``pass@k`` drawn solid, ``pass^k`` dashed) a fraction for each k of ``ks``."""
    from matplotlib.lines import Line2D

    fig, (ax_d, ax_m) = _figure(2.8, ncols=2)
    for i, (label, c) in enumerate(sorted(curves.items())):
        color = COLORS[i % len(COLORS)]
        for ax, metric in ((ax_d, "diagnosis"), (ax_m, "mitigation")):
            for estimator, style in (("pass@k", "-"), ("pass^k", "--")):
                values = c[metric].get(estimator, [])
                ys = [100 * v if v is not None and not math.isnan(v) else np.nan for v in values]
                ax.plot(list(ks), ys, style, marker="o", color=color, label=label if style == "-" else None)
    for ax, title in ((ax_d, "diagnosis"), (ax_m, "mitigation")):
        ax.set_title(f"{title} pass@k and pass^k", fontsize=10)
        ax.set_xlabel("k (trials)")
        ax.set_xticks(list(ks))
        ax.set_ylim(0, 100)
    ax_d.set_ylabel("% of scenarios")
    handles, _ = ax_m.get_legend_handles_labels()
    handles += [
        Line2D([], [], color="#555753", linestyle="-", label="pass@k (one of k)"),
        Line2D([], [], color="#555753", linestyle="--", label="pass^k (all k)"),
    ]
    ax_m.legend(handles=handles, fontsize=8, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _svg(fig)


def rate_bars_svg(
    title: str,
    rates: Mapping[tuple[str, str], tuple[float | None, ...]],
    metrics: Sequence[str] = ("diagnosis pass@1", "mitigation pass@1"),
) -> str:
    """``rates``: per (group, agent), one fraction per metric (None: nothing to score, e.g. the
    mitigation of a no-fault control); one panel per metric, grouped bars."""
    groups = sorted({g for g, _ in rates})
    agents = sorted({a for _, a in rates})
    fig, axes = _figure(0.9 + 0.35 * len(groups) * max(1, len(agents)) / 2, ncols=len(metrics))
    y = np.arange(len(groups))
    h = 0.8 / max(1, len(agents))
    for i, agent in enumerate(agents):
        color = COLORS[i % len(COLORS)]
        for j, ax in enumerate(axes):
            vals = [rates.get((g, agent), (None,) * len(metrics))[j] for g in groups]
            xs = [100 * v if v is not None and not math.isnan(v) else 0.0 for v in vals]
            ax.barh(y + i * h, xs, height=h, color=color, label=agent)
    for ax, metric in zip(axes, metrics, strict=True):
        ax.set_title(f"{metric} by {title}", fontsize=10)
        ax.set_xlim(0, 100)
        ax.set_xlabel("%")
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.grid(axis="y", visible=False)
        ax.set_yticks(
            y + h * (len(agents) - 1) / 2, groups if ax is axes[0] else [""] * len(groups), fontsize=8
        )
        ax.invert_yaxis()
    axes[-1].legend(fontsize=8, frameon=False, loc="lower right")
    return _svg(fig)


def percentiles(
    records: Sequence[EpisodeRecord], value: Callable[[EpisodeRecord], float]
) -> dict[str, tuple[float, float, int]]:
    """Per agent, (P50, P95, n) of ``value`` over the episodes that ran (scored terminations)."""
    by: dict[str, list[float]] = {}
    for r in records:
        if r.scored:
            v = value(r)
            if not math.isnan(v) and not math.isinf(v):
                by.setdefault(r.agent, []).append(v)
    return {a: (float(np.percentile(vs, 50)), float(np.percentile(vs, 95)), len(vs)) for a, vs in by.items()}


def percentile_svg(panels: Sequence[tuple[str, dict[str, tuple[float, float, int]]]]) -> str:
    """One panel per quantity (title, per agent (P50, P95, n)): a bar to P50, a tick at P95."""
    agents = sorted({a for _, per_agent in panels for a in per_agent})
    fig, axes = _figure(1.0 + 0.3 * len(agents), ncols=len(panels))
    y = np.arange(len(agents))
    for i, (ax, (title, per_agent)) in enumerate(zip(axes, panels, strict=True)):
        p50 = [per_agent.get(a, (np.nan, np.nan, 0))[0] for a in agents]
        p95 = [per_agent.get(a, (np.nan, np.nan, 0))[1] for a in agents]
        ax.barh(y, p50, height=0.6, color=COLORS[0], label="P50")
        ax.scatter(p95, y, marker="|", s=200, color=COLORS[1], label="P95", zorder=3)
        names = (
            [f"{a} (n={per_agent.get(a, (0, 0, 0))[2]})" for a in agents] if i == 0 else [""] * len(agents)
        )
        ax.set_yticks(y, names, fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.locator_params(axis="x", nbins=4)
        ax.invert_yaxis()
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.grid(axis="y", visible=False)
    axes[-1].legend(fontsize=8, frameon=False, loc="lower right")
    return _svg(fig)
