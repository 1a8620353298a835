"""Reports: Markdown + self-contained HTML from a run folder; a headless-Chromium screenshot."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.headless_chromium import CHROMIUM, PNG, dump_dom, screenshot
from support.run_folders import ciso_run, fake_sre_run, finops_run

from itbench_agents.report.build import write_reports

PLUGINS = Path(__file__).resolve().parents[1] / "harness" / "plugins"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(PLUGINS))
    return fake_sre_run(tmp_path_factory.mktemp("runs") / "r1")


def test_markdown_and_html_report(run_dir: Path) -> None:
    md, html = write_reports([run_dir])
    text = md.read_text()
    assert (
        "| agent | diagnosis pass@1 % | FL NTAM | FPC NTAM | MTTD s | mitigation pass@1 % | MTTR s |" in text
    )
    good = next(line for line in text.splitlines() if line.startswith("| good |"))
    assert "| 100.00 ± 0.00 |" in good
    noop = next(line for line in text.splitlines() if line.startswith("| noop |"))
    assert "33.33" in noop and "| ∞ |" in noop  # only the control right; no mitigation time
    # two trials: pass@1 and pass@2, pass^2 per agent and condition (issue 27: computed, never shown)
    assert "## pass@k and pass^k" in text
    assert (
        "| agent | condition | estimator | diagnosis k=1 % | diagnosis k=2 % | mitigation k=1 % | mitigation k=2 % |"
        in text
    )
    assert "| good | traces on | pass@k | 100.0 | 100.0 | 100.0 | 100.0 |" in text
    assert "| good | traces on | pass^k | 100.0 | 100.0 | 100.0 | 100.0 |" in text
    assert "| noop | traces on | pass@k | 33.3 | 33.3 | 0.0 | 0.0 |" in text
    page = html.read_text()
    assert "pass@k and pass^k</h2>" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page  # self-contained
    assert "Per-scenario heat map" in page and "By complexity bucket" in page
    assert page.count("<th>diagnosis %</th><th>mitigation %</th>") == 2  # each agent's two columns named
    # the control scored apart: faults only, noop diagnoses nothing (issue 17)
    faults = text.split("### Faults only", 1)[1].split("##", 1)[0]
    assert next(line for line in faults.splitlines() if line.startswith("| noop |")).startswith(
        "| noop | 0.00 ±"
    )
    # the figures (issue 17): inline SVG — latency and cost, pass@k curves, pass@1 by category —
    # static (no script, no URL: checked above) and the same bytes when written again
    assert page.count("<svg") == 3 and "<h2 id='latency'>" in page
    passk = page.split("<h2 id='passk'>", 1)[1].split("<h2", 1)[0]
    assert passk.count("<svg") == 1 and ">good</text>" in passk
    assert ">mitigation pass@k and pass^k</text>" in passk and ">pass^k (all k)</text>" in passk
    assert "<svg" in page.split("<h2 id='category'>", 1)[1].split("<h2", 1)[0]
    _, again = write_reports([run_dir])
    assert again.read_text() == page
    links = [p for p in page.split("href='")[1:]]
    assert links and all((run_dir / link.split("'")[0]).exists() for link in links)
    traj = (run_dir / links[0].split("'")[0]).read_text()
    assert "tool_call" in traj or "env_event" in traj
    assert (run_dir / "summary.json").exists()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed")
@pytest.mark.slow
def test_html_report_renders_in_headless_chromium(run_dir: Path, tmp_path: Path) -> None:
    _, html = write_reports([run_dir])
    shot = tmp_path / "report.png"
    data = screenshot(html.resolve().as_uri(), shot, tmp_path / "profile")
    assert data[:8] == PNG and len(data) > 20_000  # a real page, not a blank one
    # dump the page text too and check the tables are in the rendered DOM
    dom = dump_dom(html.resolve().as_uri(), tmp_path / "profile")
    assert "diagnosis pass@1 %" in dom and "heat" in dom
    if shutil.which("file"):
        assert "PNG image" in subprocess.run(["file", str(shot)], capture_output=True, text=True).stdout


def test_persona_reports_have_their_figures(tmp_path: Path) -> None:
    """A CISO or a FinOps run has no SRE section, and still its latency and cost figure, and its
    tables' rates drawn: CISO by task class, FinOps cost incidents by fault category and anomaly
    detection's scores."""
    cases = (
        (ciso_run, "ciso-latency", ["pass@1 by task class", "strict pass@1 by task class"], 2),
        (
            finops_run,
            "finops-latency",
            ["diagnosis pass@1 by fault category", "mean by score (anomaly detection)"],
            3,
        ),
    )
    for make, anchor, titles, svgs in cases:
        d = make(tmp_path / anchor)
        _, html = write_reports([d])
        page = html.read_text()
        assert "<h2 id='table4'>" not in page and page.count("<svg") == svgs, anchor
        figure = page.split(f"<h2 id='{anchor}'>", 1)[1]
        assert ">agent wall time, s</text>" in figure and ">oracle (n=" in figure
        for title in titles:
            assert f">{title}</text>" in page, (anchor, title)
        assert ">kyverno-update</text>" in page if make is ciso_run else ">f1</text>" in page
        _, again = write_reports([d])
        assert again.read_text() == page  # the same bytes for the same run


def test_scenarios_the_backend_could_not_run_are_said_in_the_report(run_dir: Path, tmp_path: Path) -> None:
    import json

    run = tmp_path / "r"
    shutil.copytree(run_dir, run)
    manifest = json.loads((run / "run.json").read_text())
    manifest["config"]["skipped"] = {"sre/checkout-network-delay-v1": "the cluster does not serve Schedule"}
    (run / "run.json").write_text(json.dumps(manifest))
    md, html = write_reports([run])
    line = "sre/checkout-network-delay-v1: the cluster does not serve Schedule"
    assert "1 chosen scenario(s) the backend could not run" in md.read_text() and line in md.read_text()
    assert line in html.read_text()
