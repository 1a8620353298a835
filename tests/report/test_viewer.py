"""`itbench view`: run folders as a local web app — every episode listed with its outcome, filters
by persona, agent, scenario and outcome, a page per episode with its scores and whole conversation
(each message once), live reload while a run has episodes to go, 404s for what is not there; and
the pages render in headless Chromium."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from support.headless_chromium import CHROMIUM, PNG, dump_dom, screenshot
from support.run_folders import ciso_run, finops_run, mixed_sre_run

from itbench_agents.core.events import ModelCall
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.harness.trajectory import TrajectoryWriter
from itbench_agents.llm.exchange import ExchangeLog
from itbench_agents.report.viewer import Viewer, outcome


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("view")
    return [mixed_sre_run(base / "sre"), ciso_run(base / "ciso"), finops_run(base / "finops")]


@pytest.fixture()
def viewer(runs: list[Path]) -> Iterator[Viewer]:
    v = Viewer(runs, port=0).start()
    yield v
    v.close()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def listed(page: str) -> int:
    return page.count("<td><a href='/episode?")


def test_every_episode_is_listed_and_the_filters_narrow_it(viewer: Viewer, runs: list[Path]) -> None:
    records = [r for d in runs for r in read_episodes(d)]
    status, page = get(viewer.url)
    assert status == 200 and listed(page) == len(records)
    assert "<meta http-equiv='refresh'" not in page  # every planned episode is recorded
    for want in ("passed", "failed", "error"):
        _, page = get(viewer.url + f"?outcome={want}")
        assert listed(page) == sum(outcome(r) == want for r in records), want
        assert listed(page) > 0, want  # the fixtures hold each outcome
    _, page = get(viewer.url + "?persona=ciso")
    assert listed(page) == sum(r.persona == "ciso" for r in records)
    _, page = get(viewer.url + "?persona=finops&agent=oracle&scenario=anomaly-drift")
    expected = [
        r
        for r in records
        if r.persona == "finops" and r.agent == "oracle" and "anomaly-drift" in r.scenario_id
    ]
    assert listed(page) == len(expected) > 0
    _, page = get(viewer.url + "?scenario=no-such-scenario")
    assert listed(page) == 0 and "0 of " in page


def test_an_episode_page_has_its_scores(viewer: Viewer, runs: list[Path]) -> None:
    rec = next(r for r in read_episodes(runs[1]) if r.scores)
    status, page = get(viewer.url + "episode?" + urllib.parse.urlencode({"run": 1, "id": rec.episode_id}))
    assert status == 200
    for name, score in rec.scores.items():
        assert f"<td>{name}</td>" in page and f"{score.value:.2f}" in page
    assert "no trajectory was written" in page


def test_what_is_not_there_is_a_404_not_a_crash(viewer: Viewer, runs: list[Path]) -> None:
    rec = read_episodes(runs[0])[0]
    for query in (
        {"run": 7, "id": rec.episode_id},
        {"run": "x", "id": rec.episode_id},
        {"run": 0, "id": "../../run.json"},
        {"run": 1, "id": rec.episode_id},  # in another run
    ):
        status, page = get(viewer.url + "episode?" + urllib.parse.urlencode(query))
        assert status == 404 and "no such episode" in page, query
    assert get(viewer.url + "nothing-here")[0] == 404


def conversation(folder: Path) -> None:
    """Two model calls of one client: the second re-sends the first's messages."""
    log = ExchangeLog()
    system = SystemMessage("SYSTEM-PROMPT: you are on call")
    human = HumanMessage("the alerts are firing")
    ai = AIMessage("", tool_calls=[{"name": "kubectl", "args": {"command": "get pods"}, "id": "c1"}])
    tool = ToolMessage("ad-1 0/1 CrashLoopBackOff", tool_call_id="c1")
    writer = TrajectoryWriter(folder / "trajectory.jsonl")
    # the response as the LLM client records it (llm/client.py)
    called = {"content": "", "tool_calls": [{"name": "kubectl", "args": {"command": "get pods"}}]}
    first = log.prompt([system, human], tools=[])
    writer.write(ModelCall(model="m", role="agent", prompt=first, response=called))
    second = log.prompt([system, human, ai, tool], tools=[])
    writer.write(ModelCall(model="m", role="agent", prompt=second, response={"content": "FINAL-ANSWER"}))


def test_a_running_episode_reloads_and_shows_the_whole_conversation_once(
    tmp_path: Path, runs: list[Path]
) -> None:
    live = tmp_path / "live"
    shutil.copytree(runs[0], live)
    planned = read_episodes(live)
    # an episode in flight: its folder and trajectory exist, its record does not yet
    folder = live / "episodes" / "in-flight__agent__t000"
    folder.mkdir(parents=True)
    conversation(folder)
    data = json.loads((live / "run.json").read_text())
    data["episodes_planned"] = len(planned) + 1
    (live / "run.json").write_text(json.dumps(data))
    v = Viewer([live], port=0).start()
    try:
        _, page = get(v.url)
        assert "<meta http-equiv='refresh'" in page and "running" in page
        assert listed(page) == len(planned) + 1
        _, only = get(v.url + "?outcome=running")
        assert listed(only) == 1
        status, ep = get(v.url + "episode?" + urllib.parse.urlencode({"run": 0, "id": folder.name}))
        assert status == 200 and "<meta http-equiv='refresh'" in ep
        # every message the model was sent, each once; both responses; the tool call's arguments
        assert ep.count("SYSTEM-PROMPT: you are on call") == 1
        assert ep.count("the alerts are firing") == 1 and ep.count("CrashLoopBackOff") == 1
        assert "FINAL-ANSWER" in ep and "get pods" in ep
        assert "4 messages sent, 2 of them shown with earlier calls" in ep
        # the model's own reply, now part of the conversation, is referred to, not shown again
        assert ep.count("the previous response, above") == 1 and ep.count("get pods") == 1
    finally:
        v.close()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed")
@pytest.mark.slow
def test_the_viewer_renders_in_headless_chromium(viewer: Viewer, tmp_path: Path) -> None:
    url = viewer.url + "?persona=ciso"
    data = screenshot(url, tmp_path / "view.png", tmp_path / "p", size="1300,1400")
    assert data[:8] == PNG and len(data) > 20_000  # a real page, not a blank one
    dom = dump_dom(url, tmp_path / "p")
    assert "ciso/kyverno-seccomp-v1" in dom and "sre/ad-failure-flag-v1" not in dom
    assert '<select name="outcome">' in dom


def test_the_runs_report_is_served_and_nothing_outside_the_run(tmp_path: Path, runs: list[Path]) -> None:
    from itbench_agents.report.build import write_reports

    run = tmp_path / "with-report"
    shutil.copytree(runs[1], run)
    write_reports([run])
    (tmp_path / "secret.html").write_text("SECRET")
    v = Viewer([run], port=0).start()
    try:
        _, index = get(v.url)
        assert "<a href='/run/0/report.html'>report</a>" in index
        status, page = get(v.url + "run/0/report.html")
        assert status == 200 and "CISO results (Table 5 layout)" in page
        work = run / "episodes" / "e1" / "work"
        work.mkdir(parents=True)
        (work / "page.html").write_text("SECRET written by an agent")
        (run / "episodes" / "e1" / "trajectory.html").write_text("<p>trajectory page</p>")
        assert get(v.url + "run/0/episodes/e1/trajectory.html") == (200, "<p>trajectory page</p>")
        bad_paths = ("run/0/../secret.html", "run/0/%2e%2e/secret.html", "run/0/.harness-key", "run/0/run.json",
                     "run/0/episodes/e1/work/page.html", "run/1/report.html", "run/x/a")  # fmt: skip
        for bad in bad_paths:
            status, page = get(v.url + bad)
            assert status == 404 and "SECRET" not in page, bad
    finally:
        v.close()


def test_an_episode_downloads_as_an_atif_trajectory(viewer: Viewer, runs: list[Path]) -> None:
    from itbench_agents.report.atif import AtifTrajectory

    rec = read_episodes(runs[1])[0]
    query = urllib.parse.urlencode({"run": 1, "id": rec.episode_id})
    _, page = get(viewer.url + "episode?" + query)
    assert f"<a href='/atif?{query.replace('&', '&amp;')}' download>ATIF trajectory (JSON)</a>" in page
    status, body = get(viewer.url + "atif?" + query)
    assert status == 200
    doc = AtifTrajectory.model_validate_json(body)
    assert doc.session_id == rec.episode_id and doc.extra["itbench"]["scenario_id"] == rec.scenario_id  # type: ignore[index]
    for bad in ({"run": 1, "id": "no-such-episode"}, {"run": 9, "id": rec.episode_id}, {"run": "x"}):
        assert get(viewer.url + "atif?" + urllib.parse.urlencode(bad))[0] == 404, bad
