"""A flag fault is named by its flag or by the service whose feature it is, never by the flag file
alone (issue 26): ground-truth groups with a configuration ``key``."""

from __future__ import annotations

import pytest

from itbench_agents.core.output import Diagnosis, DiagnosisEntity
from itbench_agents.evaluation.diagnosis import score_diagnosis
from itbench_agents.evaluation.entities import EntityRef
from itbench_agents.scenario.registry import ScenarioRegistry
from itbench_agents.scenario.spec import FlagOp

CM = "otel-demo/ConfigMap/flagd-config"


def _score(*entities: DiagnosisEntity):  # type: ignore[no-untyped-def]
    gt = ScenarioRegistry.default().get("sre/ad-failure-flag-v1").ground_truth
    return score_diagnosis(gt, Diagnosis(entities=list(entities)))


def _e(name: str, key: str | None = None) -> DiagnosisEntity:
    return DiagnosisEntity(name=name, key=key, contributing_factor=True)


@pytest.mark.parametrize(
    ("entity", "correct"),
    [
        (_e(CM), False),  # the flag file alone names no fault: every flag lives there
        (_e(CM, "adFailure"), True),
        (_e(CM, "demo.flagd.json#adFailure"), True),
        (_e(f"{CM}#adFailure"), True),
        (_e(f"{CM}#demo.flagd.json#adFailure"), True),
        (_e(CM, "cartFailure"), False),  # another flag
        (_e(CM, "demo.flagd.json"), False),  # the whole document is the file again
        (_e("otel-demo/Deployment/ad"), True),  # the service whose feature it is
        (_e("otel-demo/configmaps/flagd-config", "adFailure"), True),  # any kubectl spelling
    ],
)
def test_the_flag_names_the_fault_and_the_file_alone_does_not(entity: DiagnosisEntity, correct: bool) -> None:
    s = _score(entity)
    assert s.correct is correct, (entity, s)


def test_the_file_alone_does_not_localise_the_fault() -> None:
    alone, flag = _score(_e(CM)), _score(_e(CM, "adFailure"))
    assert alone.ntam_fl < flag.ntam_fl == 1.0
    assert alone.unmatched == [CM] and flag.matched == [f"{CM}#adFailure"]


def test_entity_ref_reads_the_key_after_the_name() -> None:
    assert EntityRef.parse(f"{CM}#demo.flagd.json#adFailure") == EntityRef(
        "otel-demo", "configmap", "flagd-config", "demo.flagd.json#adFailure"
    )
    assert EntityRef.parse(CM) == EntityRef("otel-demo", "configmap", "flagd-config")
    assert str(EntityRef.parse(f"{CM}#x")) == "otel-demo/configmap/flagd-config"


def test_no_flag_scenario_accepts_the_flag_file_alone() -> None:
    """Every root-cause group on a flag fault's ConfigMap carries the key of one of its flags."""
    from itbench_agents.evaluation.entities import AliasIndex

    checked = 0
    for sc in ScenarioRegistry.default().all():
        flags = {f"{op.key}#{op.name}": op.configmap for op in sc.faults if isinstance(op, FlagOp)}
        if not flags:
            continue
        al = AliasIndex(sc.ground_truth)
        rc = al.root_cause_classes()
        for g in sc.ground_truth.groups:
            if g.kind == "ConfigMap" and g.name in flags.values() and al.cls(g.id) in rc:
                assert g.key in flags, (sc.id, g.id, g.key)
                checked += 1
        assert not score_diagnosis(
            sc.ground_truth, Diagnosis(entities=[_e(f"{sc.namespace}/ConfigMap/flagd-config")])
        ).correct, sc.id
    assert checked >= 11


def test_naming_each_fault_flag_is_a_correct_diagnosis_in_every_flag_scenario() -> None:
    """One entity per flag the fault turned on (two-flag scenarios included), and nothing else."""
    checked = 0
    for sc in ScenarioRegistry.default().all():
        flags = [op for op in sc.faults if isinstance(op, FlagOp)]
        if not flags or any(not isinstance(op, FlagOp) and op.op != "restart" for op in sc.faults):
            continue
        named = [_e(f"{op.namespace}/ConfigMap/{op.configmap}", op.name) for op in flags]
        s = score_diagnosis(sc.ground_truth, Diagnosis(entities=named))
        assert s.correct, (sc.id, s.missed, s.unmatched)
        checked += 1
    assert checked >= 15


@pytest.mark.parametrize(
    ("sid", "secret", "workload"),
    [
        ("sre/valkey-cart-changed-password-v1", "valkey-credentials", "valkey-cart"),
        ("sre/postgresql-corrupted-secret-v1", "postgresql-credentials", "product-catalog"),
    ],
)
def test_a_credential_fault_is_named_by_its_secret_or_by_the_workload_it_acts_through(
    sid: str, secret: str, workload: str
) -> None:
    """The mechanism object and the workload are treated alike across families (docs/metrics.md):
    the Secret a fault created or corrupted, or the workload whose start-up it broke."""
    gt = ScenarioRegistry.default().get(sid).ground_truth
    for name in (f"otel-demo/Secret/{secret}", f"otel-demo/Deployment/{workload}"):
        assert score_diagnosis(gt, Diagnosis(entities=[_e(name)])).correct, (sid, name)
    assert not score_diagnosis(gt, Diagnosis(entities=[_e("otel-demo/Deployment/frontend")])).correct
