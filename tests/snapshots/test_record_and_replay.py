"""Issue 18's "done when" for snapshots: scenarios recorded with `itbench snapshot record` replay
through `itbench run --snapshots`, and the heuristic baseline diagnoses each as it does on the twin
with the same seed (same entities, same scores). The propagation path and the alerts it explains
may differ: the recording and the run are two episodes started at different wall-clock minutes,
which the twin's telemetry noise is keyed to (87/87 scores equal over the SRE suite, docs/snapshots.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from itbench_agents.cli import app
from itbench_agents.sandbox import bwrap_works
from itbench_agents.snapshots.read import find_snapshots, load_snapshot

SCENARIOS = [
    "sre/hotel-geo-scaled-to-zero-v1",  # hotel-reservation: a workload scaled to zero
    "sre/control-hotel-reservation-healthy-v1",  # a no-fault control: nothing to report
]
RELEASE = "sre/frontend-regression-image-rollout-v1"  # otel-demo: a release (the scorer's `released`)


def _itbench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ITBENCH_")}
    return subprocess.run(
        [str(Path(sys.executable).parent / "itbench"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


def _diagnoses(run_dir: Path) -> dict[str, tuple[object, ...]]:
    out: dict[str, tuple[object, ...]] = {}
    for line in (run_dir / "episodes.jsonl").read_text().splitlines():
        r = json.loads(line)
        d = r.get("diagnosis") or {}
        output = json.loads((run_dir / "episodes" / r["episode_id"] / "output.json").read_text())
        out[r["scenario_id"]] = (
            r["termination"],
            d.get("correct"),
            d.get("precision"),
            d.get("recall"),
            d.get("f1"),
            d.get("ntam"),
            sorted(e["name"] for e in output["diagnosis"]["entities"]),
        )
    return out


@pytest.mark.slow
def test_the_heuristic_diagnoses_a_recorded_snapshot_as_it_does_the_twin(tmp_path: Path) -> None:
    picks = [a for s in SCENARIOS for a in ("-s", s)]
    rec = CliRunner().invoke(
        app,
        ["snapshot", "record", *picks, "--seed", "4", "--out", str(tmp_path / "snaps"), "--window-s", "900"],
    )
    assert rec.exit_code == 0, rec.output
    found = find_snapshots(tmp_path / "snaps")
    assert sorted(found) == sorted(SCENARIOS)
    meta, recording = load_snapshot(found["sre/hotel-geo-scaled-to-zero-v1"])
    assert meta is not None and meta.alerts_expected and not meta.alerts_missing
    assert recording.series and recording.traces and recording.streams and recording.objects

    twin = _itbench(
        "run", *picks, "--agent", "sre-heuristic", "--seed", "4", "--run-dir", str(tmp_path / "twin")
    )
    assert twin.returncode == 0, twin.stderr
    snap = _itbench(
        "run",
        "--snapshots",
        str(tmp_path / "snaps"),
        "--agent",
        "sre-heuristic",
        "--run-dir",
        str(tmp_path / "snap"),
    )
    assert snap.returncode == 0, snap.stderr
    assert "mitigation 0/0" in snap.stderr  # nothing to mitigate on a recording
    on_twin, on_snapshot = _diagnoses(tmp_path / "twin"), _diagnoses(tmp_path / "snap")
    assert on_snapshot == on_twin
    assert on_twin["sre/hotel-geo-scaled-to-zero-v1"][1] is True


@pytest.mark.slow
def test_a_run_records_each_episode_as_its_agent_found_it_and_the_snapshot_replays_it_exactly(
    tmp_path: Path,
) -> None:
    """``--record-snapshots``: the snapshot is taken in the episode itself, just before the agent's
    turn, so the replayed episode is the same one: the whole diagnosis comes back identical."""
    twin = _itbench(
        "run", "-s", RELEASE, "--agent", "sre-heuristic", "--record-snapshots", "--run-dir", str(tmp_path / "twin"),
        "--no-report",
    )  # fmt: skip
    assert twin.returncode == 0, twin.stderr
    (ep,) = (tmp_path / "twin" / "episodes").iterdir()
    meta, _ = load_snapshot(ep / "snapshot")
    assert meta is not None and meta.scenario_id == RELEASE and meta.alerts_expected
    notes = [json.loads(x) for x in (ep / "trajectory.jsonl").read_text().splitlines()]
    (hook,) = [n for n in notes if n.get("phase") == "before_agent"]
    assert hook["detail"]["snapshot"] == "snapshot" and hook["detail"]["counts"]["objects"] > 100
    snap = _itbench(
        "run", "--snapshots", str(tmp_path / "twin"), "--agent", "sre-heuristic", "--run-dir", str(tmp_path / "snap"),
        "--no-report",
    )  # fmt: skip
    assert snap.returncode == 0, snap.stderr
    (snap_ep,) = (tmp_path / "snap" / "episodes").iterdir()
    on_twin = json.loads((ep / "output.json").read_text())["diagnosis"]
    on_snapshot = json.loads((snap_ep / "output.json").read_text())["diagnosis"]
    assert on_snapshot == on_twin
    assert _diagnoses(tmp_path / "snap") == _diagnoses(tmp_path / "twin")
    assert _diagnoses(tmp_path / "twin")[RELEASE][1] is True


@pytest.fixture(scope="module")
def control_snapshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The no-fault control recorded (5 minutes of telemetry) under ``<tmp>/snaps``."""
    out = tmp_path_factory.mktemp("control") / "snaps"
    rec = CliRunner().invoke(
        app, ["snapshot", "record", "-s", SCENARIOS[1], "--out", str(out), "--window-s", "300"]
    )
    assert rec.exit_code == 0, rec.output
    return out


@pytest.mark.slow
def test_run_with_snapshots_skips_what_was_not_recorded_and_refuses_a_folder_without_any(
    tmp_path: Path, control_snapshots: Path
) -> None:
    r = _itbench(
        "run",
        "--snapshots",
        str(control_snapshots),
        "-s",
        SCENARIOS[1],
        "-s",
        SCENARIOS[0],
        "--agent",
        "noop",
        "--run-dir",
        str(tmp_path / "r"),
        "--no-report",
    )
    assert r.returncode == 0, r.stderr
    assert f"skipped {SCENARIOS[0]}: no snapshot recorded under --snapshots" in r.stderr
    assert "1 ran" in r.stderr
    manifest = json.loads((tmp_path / "r" / "run.json").read_text())
    assert manifest["config"]["snapshots"] == str(control_snapshots.resolve())
    empty = _itbench("run", "--snapshots", str(tmp_path), "--agent", "noop", "--run-dir", str(tmp_path / "e"))
    assert empty.returncode == 2
    assert "no snapshot recorded there" in empty.stderr
    both = _itbench("run", "--snapshots", str(control_snapshots), "--backend", "live", "--agent", "noop")
    assert both.returncode == 2 and "leave --backend and --environment out" in both.stderr


SNOOP = """
import json, os, re, urllib.request, urllib.error
work = os.environ["ITBENCH_WORKDIR"]
found = [os.path.join(d, f) for d, _, fs in os.walk(SNAPS) for f in fs]
try:
    open(os.path.join(SNAPS, "control-hotel-reservation-healthy-v1", "ground_truth.yaml")).read()
    read = True
except OSError:
    read = False
token = re.search(r"token: (\\S+)", open(os.environ["KUBECONFIG"]).read()).group(1)
req = urllib.request.Request(
    os.environ["KUBE_URL"] + "/api/v1/namespaces/hotel-reservation/pods", method="DELETE"
)
req.add_header("Authorization", "Bearer " + token)
try:
    status = urllib.request.urlopen(req, timeout=30).status
except urllib.error.HTTPError as e:
    status = e.code
json.dump({"entities": []}, open(os.path.join(work, "agent_output.json"), "w"))
json.dump({"found": found, "read": read, "delete": status}, open(os.path.join(work, "findings.json"), "w"))
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not bwrap_works(), reason="bubblewrap (bwrap) is missing or cannot create namespaces here"
)
def test_a_sandboxed_agent_cannot_read_the_snapshot_or_change_it(
    tmp_path: Path, control_snapshots: Path
) -> None:
    """Even with the snapshots' folder bound into its sandbox, a command agent finds it empty (the
    ground truth is there), and its credential cannot delete anything."""
    script = tmp_path / "snoop.py"
    script.write_text(f"SNAPS = {str(control_snapshots.resolve())!r}\n" + SNOOP)
    r = _itbench(
        "run",
        "--snapshots",
        str(control_snapshots),
        "--agent",
        "command",
        "--command",
        f"{shutil.which('python3', path='/usr/bin:/bin') or '/usr/bin/python3'} {script}",
        "--sandbox",
        "require",
        "--sandbox-bind",
        str(control_snapshots),
        "--run-dir",
        str(tmp_path / "r"),
        "--no-report",
    )
    assert r.returncode == 0, r.stderr
    (ep,) = (tmp_path / "r" / "episodes").iterdir()
    found = json.loads((ep / "work" / "findings.json").read_text())
    assert found == {"found": [], "read": False, "delete": 403}
