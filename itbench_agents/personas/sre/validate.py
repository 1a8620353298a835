"""``itbench scenarios validate``: prove a scenario on the twin.

For each scenario: (1) the app is healthy before injection (no expected alert firing); (2) every
expected alert fires within its window after injection; (3) the reference mitigation (what the
oracle applies) clears them after the settle period, the functional probe passes and so does
every end-state check of the mitigation scorer (``harness/endstate.py``); (4) every
ground-truth entity exists in the cluster (before or after injection). Controls: nothing fires
that was not already firing at the baseline (chronic noise the churn planted) and the probe passes.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...k8s.client import KubeApi
from ...scenario.checks import Check, ValidationResult
from ...scenario.kinds import matching_names
from ...scenario.spec import Scenario


def _existing_entities(api: KubeApi, scenario: Scenario) -> set[str]:
    """Group ids whose entity exists right now."""
    return {g.id for g in scenario.ground_truth.groups if matching_names(api, g)}


def _firing_in_namespaces(
    prometheus_url: str, namespaces: Sequence[str], known: Sequence[str] = ()
) -> list[str]:
    """Alert names firing in ``namespaces`` (a task's), except the alerts (identities) in ``known``."""
    from ...harness.endstate import alert_identity
    from ...harness.firing import incident_alerts

    return sorted(
        {
            (a.get("labels") or {}).get("alertname", "?")
            for a in incident_alerts(prometheus_url, *namespaces)
            if alert_identity(a.get("labels") or {}) not in known
        }
    )


def convention_problems(scenario: Scenario, file: Path | None = None) -> list[str]:
    """The library's rules a schema cannot state (they used to be checked only by a unit test,
    so a scenario that ``validate`` passed broke ``pytest``): the file is named after the id
    (``sre/foo-v1`` in ``foo.yaml``); a fault scenario has a reference solution and its
    technologies; the ground truth, reported as an agent would (the oracle), scores perfectly on
    every diagnosis metric (its propagations form one chain per root cause)."""
    from ...agents.oracle import ground_truth_diagnosis
    from ...evaluation.diagnosis import score_diagnosis

    out = []
    want = scenario.id.split("/", 1)[1].rsplit("-v", 1)[0] + ".yaml"
    if file is not None and file.name != want:
        out.append(f"file {file.name}: a scenario with id {scenario.id} lives in {want}")
    if not scenario.control:
        if not scenario.solutions:
            out.append("solutions: a fault scenario needs a reference solution (steps with commands)")
        if not scenario.technologies:
            out.append("technologies: a fault scenario lists the technologies it involves")
    sc = score_diagnosis(scenario.ground_truth, ground_truth_diagnosis(scenario))
    if not (sc.correct and sc.ntam_fl == 1.0 and sc.chain_f1 == 1.0 and abs(sc.ntam_fpc - 1.0) < 1e-9):
        out.append(
            "ground_truth: reported as an agent would, it does not score perfectly "
            f"(correct {sc.correct}, NTAM FL {sc.ntam_fl:.3f}, FPC {sc.ntam_fpc:.3f}, chain F1 "
            f"{sc.chain_f1:.3f}): propagations must form one chain from each root cause"
        )
    return out


def validate_scenario(
    scenario: Scenario,
    seed: int = 0,
    history_s: float = 3600.0,
    churn: str = "default",
    file: Path | None = None,
) -> ValidationResult:
    from ...core.task import Limits
    from ...harness.twin_env import TwinEnvironment
    from ...scenario.inject import apply_operations

    res = ValidationResult(scenario.id)
    conventions = convention_problems(scenario, file)
    res.checks.append(Check("library conventions", not conventions, "; ".join(conventions)))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="itbench-validate-") as work:
        env = TwinEnvironment(scenario, seed=seed, workdir=work, history_s=history_s, churn=churn)
        try:
            env.deploy()
            start_twin = env.now()
            assert env.api is not None
            before = env.check_alerts()
            if scenario.control:
                firing = _firing_in_namespaces(env.endpoints.prometheus_url, scenario.task_namespaces)
                res.checks.append(Check("healthy before injection", not firing, ", ".join(firing)))
            else:
                res.checks.append(
                    Check(
                        "healthy before injection",
                        not before.firing,
                        "already firing: " + ", ".join(before.firing),
                    )
                )
            present = _existing_entities(env.api, scenario)
            env.inject()
            if env.churn_plan is not None:
                _check_churn(res, env)
            check = env.wait_for_alerts()
            if scenario.control:
                known = env.baseline.alerts_active if env.baseline is not None else []
                firing = _firing_in_namespaces(env.endpoints.prometheus_url, scenario.task_namespaces, known)
                res.checks.append(Check("nothing new fires", not firing, ", ".join(firing)))
            else:
                res.checks.append(
                    Check(
                        "expected alerts fire",
                        check.ok,
                        (
                            f"after {check.elapsed_s:.0f}s"
                            if check.ok
                            else "missing: " + ", ".join(check.missing)
                        ),
                    )
                )
            present |= _existing_entities(env.api, scenario)
            missing = [g.id for g in scenario.ground_truth.groups if g.id not in present]
            res.checks.append(Check("ground-truth entities exist", not missing, ", ".join(missing)))
            # the reference fix goes through the agent's own credential: proof that RBAC allows it
            task = env.task(Limits())
            agent_api = KubeApi.from_kubeconfig(env.endpoints.kube_url, task.endpoints.kubeconfig)
            apply_operations(agent_api, scenario.mitigation, env._now_dt)
            env.settle()
            mit = env.evaluate()
            if scenario.control:
                res.checks.append(Check("probe passes", mit.probe_ok is True, mit.probe_detail or ""))
            else:
                res.checks.append(
                    Check("mitigation clears alerts", not mit.alerts_firing, ", ".join(mit.alerts_firing))
                )
                res.checks.append(
                    Check("probe passes after mitigation", mit.probe_ok is True, mit.probe_detail or "")
                )
            # the whole end-state scorer (harness/endstate.py): every check, collateral included
            res.checks.append(Check("end state passes (all mitigation checks)", mit.passed, mit.reason or ""))
            res.twin_s = env.now() - start_twin
        except Exception as e:  # a broken scenario or twin: report, never crash the batch
            res.checks.append(Check("runs", False, f"{type(e).__name__}: {e}"))
        finally:
            env.teardown()
    res.wall_s = time.perf_counter() - t0
    return res


def _check_churn(res: ValidationResult, env: Any) -> None:
    """The churn before the fault left the app healthy (no alert of the namespace firing, every
    journey passing at the baseline); the plan is recorded as the check's detail."""
    plan = env.churn_plan
    base = env.baseline
    done = "; ".join(f"{c.phase}: {c.detail}" for c in plan.changes) or "no change"
    problems = []
    if not plan.changes:
        problems.append("no benign change possible: " + "; ".join(plan.skipped))
    if plan.unexplained_alerts():
        problems.append("alerts firing after the churn: " + ", ".join(plan.unexplained_alerts()))
    from ...harness.firing import match_expected

    expected, _ = match_expected(env.scenario.alerts, [{"labels": labels} for labels in plan.planted_labels])
    if expected:
        problems.append("a planted chronic alert is an expected alert: " + ", ".join(expected))
    if base is not None:
        bad = [j.name for j in base.journeys if not j.ok]
        if bad:
            problems.append("journeys failing after the churn: " + ", ".join(bad))
    res.checks.append(Check("churn is benign", not problems, "; ".join(problems) or done))


def validate_by_id(args: tuple[Any, ...]) -> dict[str, Any]:
    """Process-pool entry point: validate one scenario of the default registry
    (``(id, seed, history_s)`` or ``(id, seed, history_s, churn)``)."""
    from ...scenario.registry import ScenarioRegistry

    sid, seed, history_s, *rest = args
    churn = rest[0] if rest else "default"
    reg = ScenarioRegistry.default()
    r = validate_scenario(reg.get(sid), seed, history_s, churn, file=reg.files.get(sid))
    return {
        "scenario_id": r.scenario_id,
        "ok": r.ok,
        "wall_s": r.wall_s,
        "twin_s": r.twin_s,
        "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in r.checks],
    }
