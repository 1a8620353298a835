"""Run folders for report and notebook tests: a run of the fake environment and agents (the
harness's own plugins), and signed records of many shapes written without running an episode."""

from __future__ import annotations

import math
from pathlib import Path

from itbench_agents.core.task import Limits
from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.episode import EpisodeSpec
from itbench_agents.harness.records import AgentSpec, RunConfig, Timing
from itbench_agents.harness.runfolder import EpisodeLog
from itbench_agents.report.frames import PROXIMITY
from itbench_agents.scenario.registry import ScenarioRegistry
from support.episode_records import episode

SRE = "sre/ad-failure-flag-v1"
CONTROL = "sre/control-otel-demo-healthy-v1"


def fake_sre_run(d: Path, trials: int = 2) -> Path:
    """Two fault scenarios and a control, the fake ``good`` agent and noop, on the fake environment
    (``tests/harness/plugins/itbench_fakes.py``, which must be importable: the caller puts it on
    ``sys.path``)."""
    cfg = RunConfig(
        scenarios=[SRE, "sre/shipping-quote-addr-env-v1", CONTROL],
        agents=[AgentSpec(name="itbench_fakes:good", label="good"), AgentSpec(name="noop")],
        trials=trials,
        limits=Limits(),
        environment="itbench_fakes:make_env",
    )
    _, specs, _ = start_run(d, cfg, ScenarioRegistry.default())
    run_batch(d, specs)
    return d


def mixed_sre_run(d: Path) -> Path:
    """Two agents, two fault scenarios and a control, three trials, outcomes mixed, some
    episodes never mitigated, one harness error, one episode without traces."""
    faults = [SRE, "sre/ad-scaled-to-zero-v1"]
    cfg = RunConfig(
        scenarios=[*faults, CONTROL], agents=[AgentSpec(name="noop"), AgentSpec(name="oracle")], trials=3
    )
    start_run(d, cfg, ScenarioRegistry.default(), run_id="mixed")
    log = EpisodeLog(d)
    n = 0
    for agent in ("noop", "oracle"):
        for sid in [*faults, CONTROL]:
            for trial in range(3):
                n += 1
                ok = (n * 7) % 3 != 0
                rec = episode(sid, agent, ok, None if sid == CONTROL else (n % 2 == 0), trial=trial)
                rec.run_id = "mixed"
                rec.control = sid == CONTROL
                assert rec.diagnosis is not None
                rec.diagnosis.ntam_fl = (n % 5) / 4
                rec.diagnosis.ntam_fpc = (n % 3) / 2
                rec.timing = Timing(
                    mttd_wall_s=10.0 * n if ok else math.inf,
                    mttr_wall_s=30.0 * n if n % 2 == 0 else math.inf,
                )
                if n == 4:
                    rec.termination = "harness_error"
                if n == 11:
                    rec.masked = ["traces"]
                log.append(rec)
    log.close()
    return d


def finops_run(d: Path) -> Path:
    """Cost incidents and anomalies, two agents, three trials, a harness error, scores mixed."""
    incidents = ["finops/ad-idle-replicas-v1", "finops/forgotten-load-test-v1"]
    anomalies = ["finops/anomaly-drift-application-v1", "finops/anomaly-drift-family-v1"]
    cfg = RunConfig(
        scenarios=[*incidents, *anomalies],
        agents=[AgentSpec(name="noop"), AgentSpec(name="oracle")],
        trials=3,
    )
    start_run(d, cfg, Catalogue.default(), run_id="fin")
    log = EpisodeLog(d)
    n = 0
    for agent in ("noop", "oracle"):
        for sid in [*incidents, *anomalies]:
            for trial in range(3):
                n += 1
                anomaly = sid in anomalies
                if anomaly:
                    scores = {
                        k: ((n * 3 + i) % 5) / 4
                        for i, k in enumerate(
                            ("pinpointed", "root_cause_resource", "precision", "recall", "f1")
                        )
                    }
                    if n % 4 == 0:
                        del scores["recall"]  # a missing score counts 0
                else:
                    scores = {k: ((n + i) % 7) / 6 for i, k in enumerate(PROXIMITY)}
                rec = episode(sid, agent, n % 3 == 0, n % 2 == 0, trial=trial, scores=scores)
                rec.run_id, rec.persona = "fin", "finops"
                rec.category = "anomaly" if anomaly else "Resource Saturation"
                rec.timing = Timing(agent_wall_s=float(n))
                if n == 5:
                    rec.termination = "harness_error"
                log.append(rec)
    log.close()
    return d


CISO = {
    "ciso/kyverno-added-capabilities-v1": "kyverno",
    "ciso/kyverno-seccomp-v1": "kyverno",
    "ciso/k8s-opa-added-capabilities-v1": "k8s-opa",
    "ciso/kyverno-update-added-capabilities-v1": "kyverno-update",
}


def ciso_run(d: Path) -> Path:
    """Four CISO scenarios (three classes, none of rhel-opa), two agents, three trials, scores mixed
    (one missing), one harness error."""
    cfg = RunConfig(scenarios=list(CISO), agents=[AgentSpec(name="noop"), AgentSpec(name="oracle")], trials=3)
    start_run(d, cfg, Catalogue.default(), run_id="ciso")
    log = EpisodeLog(d)
    n = 0
    names = ("detected", "compliant_clean", "strict", "generate_policy", "evidence_available")
    for agent in ("noop", "oracle"):
        for sid, cls in CISO.items():
            for trial in range(3):
                n += 1
                scores = {k: float((n + i) % 3 != 0) for i, k in enumerate(names)}
                if n % 5 == 0:
                    del scores["strict"]
                rec = episode(sid, agent, False, None, trial=trial, scores=scores)
                rec.run_id, rec.persona, rec.category = "ciso", "ciso", cls
                rec.diagnosis, rec.mitigation = None, None
                rec.timing = Timing(agent_wall_s=float(n))
                if n == 7:
                    rec.termination = "harness_error"
                log.append(rec)
    log.close()
    return d


def fake_batch(run_dir: Path, agent: str = "itbench_fakes:good", trials: int = 2) -> list[EpisodeSpec]:
    """The episodes of a fault scenario and a control × ``trials`` for ``agent`` on the fake
    environment, planned into a new run folder (for executor tests)."""
    cfg = RunConfig(
        scenarios=[SRE, CONTROL],
        agents=[AgentSpec(name=agent)],
        trials=trials,
        environment="itbench_fakes:make_env",
    )
    _, specs, _ = start_run(run_dir, cfg, ScenarioRegistry.default())
    return specs


def episode_files(run_dir: Path) -> dict[str, set[str]]:
    """Each episode folder's files, by path relative to it."""
    return {
        d.name: {str(p.relative_to(d)) for p in d.rglob("*") if p.is_file()}
        for d in sorted((run_dir / "episodes").iterdir())
    }
