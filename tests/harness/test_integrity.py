"""Harness integrity: exploits of a hostile command agent, each through the real ``itbench`` CLI.

Each test writes a small agent program (run by the system's ``python3``, standard library only),
runs ``itbench run --agent command`` on a real scenario and checks the records and scores. What
holds without bubblewrap is tested with ``--sandbox none``; what needs the sandbox skips with the
reason where ``bwrap`` cannot run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from itbench_agents.harness.runfolder import check_episodes, read_episodes
from itbench_agents.sandbox import bwrap_works

ITBENCH = [sys.executable, "-m", "itbench_agents.cli"]
PY = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"
needs_bwrap = pytest.mark.skipif(
    not bwrap_works(), reason="bubblewrap (bwrap) is missing or cannot create namespaces here"
)

# the agents share these helpers (standard library only: they run outside the project's venv)
PRELUDE = """
import json, os, re, sys, time, urllib.request, urllib.error
WORK = os.environ["ITBENCH_WORKDIR"]
def token(path=None):
    text = open(path or os.environ["KUBECONFIG"]).read()
    return re.search(r"token: (\\S+)", text).group(1)
def call(method, url, body=None, tok=None):
    req = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None)
    req.add_header("Content-Type", "application/json")
    if tok:
        req.add_header("Authorization", "Bearer " + tok)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
def report(entities, **found):
    json.dump({"entities": [{"name": n, "contributing_factor": True} for n in entities]},
              open(os.path.join(WORK, "agent_output.json"), "w"))
    json.dump(found, open(os.path.join(WORK, "findings.json"), "w"))
"""


def agent_script(tmp_path: Path, name: str, body: str) -> Path:
    p = tmp_path / "agents" / f"{name}.py"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(PRELUDE + textwrap.dedent(body))
    return p


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ITBENCH, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False
    )


def run_command_agent(
    tmp_path: Path, script: Path, scenario: str, *extra: str, run: str = "run"
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    run_dir = tmp_path / run
    r = run_cli(
        "run", "--scenario", scenario, "--agent", "command", "--command", f"{PY} {script}",
        "--run-dir", str(run_dir), "--wall-time", "120", *extra,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    return run_dir, r


def findings(run_dir: Path) -> dict:  # type: ignore[type-arg]
    (ep,) = (run_dir / "episodes").iterdir()
    return json.loads((ep / "work" / "findings.json").read_text())  # type: ignore[no-any-return]


SNOOP = r"""
hits = []
# 1. the filesystem: anything that looks like run records, trajectories or scenario files
roots = [os.path.dirname(WORK), "/tmp", os.path.expanduser("~"), "/work", "/root", "/home", "/usr", "/opt", "/etc", "/srv", "/var"]
# bounded, so the walk does not depend on how much this machine holds: with the sandbox the
# visible tree is small and the walk must finish (the test checks ``walk_complete``)
seen, deadline, walk_complete = 0, time.monotonic() + 45, True
for root in roots:
    for d, dirs, files in os.walk(root):
        if d.startswith(WORK) or d.startswith("/proc") or d.startswith("/sys"):
            continue
        for f in files:
            seen += 1
            if f in ("episodes.jsonl", "trajectory.jsonl", "run.json", ".harness-key") or (
                f.endswith(".yaml") and "sre" in d.split(os.sep)):
                hits.append(os.path.join(d, f))
        if seen > 400000 or time.monotonic() > deadline:
            walk_complete = False
            break
    if not walk_complete:
        break
# 2. the environment: nothing beyond the documented variables
documented = {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "KUBECONFIG", "KUBECONFIG_READONLY",
              "KUBE_URL", "PROMETHEUS_URL", "LOKI_URL", "JAEGER_URL", "ALERTMANAGER_URL", "OPENCOST_URL", "ITBENCH_WORKDIR",
              "ITBENCH_TASK", "ITBENCH_NAMESPACES", "ITBENCH_MASKED", "ITBENCH_MAX_STEPS", "ITBENCH_WALL_TIME_S",
              "ITBENCH_EVENTS", "ITBENCH_AGENT_RUN", "PWD", "SHLVL", "_"}
extra_env = sorted(k for k in os.environ if k not in documented)
# 3. the process table: the harness's command line
cmdlines = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "itbench_agents" in cmd or "--scenario" in cmd or "--run-dir" in cmd or "ITBENCH" in cmd:
            cmdlines.append(cmd)
report(["otel-demo/Deployment/frontend"], files=hits, walk_complete=walk_complete, env=extra_env, cmdlines=cmdlines, parent=os.listdir(os.path.dirname(WORK)))
"""


@needs_bwrap
@pytest.mark.slow
def test_snooping_agent_finds_no_answer_and_no_records(tmp_path: Path) -> None:
    script = agent_script(tmp_path, "snoop", SNOOP)
    run_dir, _ = run_command_agent(tmp_path, script, "sre/payment-failure-flag-v1")
    found = findings(run_dir)
    assert found["walk_complete"], "the sandboxed walk should see a small tree and finish"
    assert found["files"] == [], found["files"][:5]
    assert found["env"] == []
    assert found["cmdlines"] == []
    (rec,) = read_episodes(run_dir)
    assert rec.termination == "submitted" and rec.diagnosis is not None and not rec.diagnosis.correct


@pytest.mark.slow
def test_without_sandbox_the_work_folder_and_environment_still_hide_the_run(tmp_path: Path) -> None:
    script = agent_script(tmp_path, "snoop", SNOOP)
    run_dir, _ = run_command_agent(tmp_path, script, "sre/payment-failure-flag-v1", "--sandbox", "none")
    found = findings(run_dir)
    assert found["env"] == [], "the harness's environment leaked"
    assert "trajectory.jsonl" not in found["parent"] and "episodes.jsonl" not in found["parent"]
    (ep,) = (run_dir / "episodes").iterdir()
    assert not any("kubeconfig" in p.name for p in (ep / "work").iterdir()), "credentials copied back"


FORGER = r"""
import subprocess
run_dir = {run_dir!r}
rec = {{"schema_version": 1, "episode_id": "forged", "run_id": os.path.basename(run_dir),
       "scenario_id": "sre/payment-failure-flag-v1", "agent": "command", "trial": 0, "seed": 1,
       "termination": "submitted", "started_at": "x", "finished_at": "x", "wall_s": 1.0,
       "diagnosis": {{"correct": True, "precision": 1.0, "recall": 1.0, "f1": 1.0}},
       "mitigation": {{"applicable": True, "passed": True}}}}
line = json.dumps(rec) + "\n"
# now, and from a detached child after the harness has written its own record
try:
    open(os.path.join(run_dir, "episodes.jsonl"), "a").write(line)
except OSError:
    pass
subprocess.Popen([sys.executable, "-c",
    "import time,sys; time.sleep(3); open(sys.argv[1],'a').write(sys.argv[2]); open(sys.argv[3],'w').write('alive')",
    os.path.join(run_dir, "episodes.jsonl"), line, os.path.join({marker_dir!r}, "child-was-alive")],
    start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
report(["otel-demo/Deployment/frontend"])
"""


@pytest.mark.slow
def test_forged_records_do_not_change_scores(tmp_path: Path) -> None:
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    run_dir = tmp_path / "run"
    script = agent_script(tmp_path, "forger", FORGER.format(run_dir=str(run_dir), marker_dir=str(marker_dir)))
    run_dir, r = run_command_agent(tmp_path, script, "sre/payment-failure-flag-v1", "--sandbox", "none")
    import time

    time.sleep(4)  # the detached child would have written by now
    assert not (marker_dir / "child-was-alive").exists(), "the agent's detached child outlived the episode"
    check = check_episodes(run_dir)
    assert len(check.records) == 1
    (rec,) = check.records
    assert not rec.diagnosis or not rec.diagnosis.correct  # type: ignore[union-attr]
    assert not rec.mitigation or not rec.mitigation.passed
    # without the sandbox the agent could append while it ran: reported, never trusted
    assert check.foreign and "not signed by this run's harness" in check.foreign[0]
    if check.foreign:
        assert "not written by the harness" in r.stderr
    rep = run_cli("report", str(run_dir))
    assert rep.returncode == 0, rep.stderr
    (row,) = json.loads((run_dir / "summary.json").read_text())["scenarios"]
    assert row["diagnosis"]["mean"] == 0.0 and row["mitigation"]["mean"] == 0.0
    if check.foreign:
        assert "not written by the harness" in (run_dir / "report.md").read_text()
    scored = run_cli("score", str(run_dir))
    assert scored.returncode == 0, scored.stderr
    assert len(read_episodes(run_dir)) == 1


CLOCK = r"""
kube = os.environ["KUBE_URL"]
tok = token()
res = {}
res["no_token"] = call("POST", kube + "/itbench/v1/advance", {"seconds": 90000})[0]
res["static_token"] = call("POST", kube + "/itbench/v1/advance", {"seconds": 90000}, tok="itbench-twin")[0]
res["own_token_25h"] = call("POST", kube + "/itbench/v1/advance", {"seconds": 90000}, tok=tok)
res["own_token_60s"] = call("POST", kube + "/itbench/v1/advance", {"seconds": 60}, tok=tok)[0]
report(["otel-demo/Deployment/payment"], **res)
"""


@pytest.mark.slow
def test_clock_advances_are_budgeted_and_authenticated(tmp_path: Path) -> None:
    script = agent_script(tmp_path, "clock", CLOCK)
    run_dir, _ = run_command_agent(tmp_path, script, "sre/payment-pod-failure-v1", "--sandbox", "none")
    found = findings(run_dir)
    assert found["no_token"] == 401
    assert found["static_token"] == 401
    code, body = found["own_token_25h"]
    assert code == 429 and "refused" in body
    assert found["own_token_60s"] == 200
    (rec,) = read_episodes(run_dir)
    assert rec.mitigation is not None and not rec.mitigation.passed, "waiting out the 24 h PodChaos passed"
    assert rec.timing.agent_advanced_twin_s == 60


@pytest.mark.slow
def test_relative_run_dir_gives_absolute_paths_to_agents(tmp_path: Path) -> None:
    script = agent_script(
        tmp_path,
        "paths",
        r"""
        status, _ = call("GET", os.environ["KUBE_URL"] + "/api/v1/namespaces/otel-demo/pods", tok=token())
        report([], kubeconfig=os.environ["KUBECONFIG"], workdir=WORK, pods=status)
        """,
    )
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    r = run_cli(
        "run", "--scenario", "sre/payment-failure-flag-v1", "--agent", "command", "--command",
        f"{PY} {script}", "--runs-dir", "runs", "--sandbox", "none", cwd=cwd,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    (run_dir,) = (cwd / "runs").iterdir()
    found = findings(run_dir)
    assert Path(found["kubeconfig"]).is_absolute() and Path(found["workdir"]).is_absolute()
    assert found["pods"] == 200


def test_the_sandbox_hides_the_package_the_scenario_library_and_the_prompts() -> None:
    """What `harness_paths` names is what a sandboxed agent must not read: wherever the module
    lives in the package, the paths are the package, the scenarios and the prompts themselves."""
    import itbench_agents
    from itbench_agents.paths import prompts_dir, scenarios_dir
    from itbench_agents.sandbox import harness_paths

    hidden = harness_paths()
    package = Path(itbench_agents.__file__).resolve().parent
    for folder in (package, scenarios_dir().resolve(), prompts_dir().resolve()):
        assert folder.is_dir(), folder
        assert any(folder == h or h in folder.parents for h in hidden), (folder, hidden)
    assert package.parent not in hidden  # the checkout itself is not hidden wholesale
