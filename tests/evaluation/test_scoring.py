"""Scoring math: alias-aware matching, P/R/F1, NTAM worked examples, LCS chains, pass@k, aggregation."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable

import pytest
from ntam_fixture import ground_truth, topology

from itbench_agents.core.output import Diagnosis, DiagnosisEntity, Propagation
from itbench_agents.evaluation.chain import contract, lcs_length
from itbench_agents.evaluation.diagnosis import score_diagnosis
from itbench_agents.evaluation.entities import AliasIndex, EntityRef
from itbench_agents.evaluation.ntam import NtamParams, NtamScorer
from itbench_agents.evaluation.stats import pass_at_k, pass_hat_k, stderr
from itbench_agents.evaluation.topology import Topology
from itbench_agents.scenario.propagation import gt_chain
from itbench_agents.scenario.spec import GroundTruth


def diag(*names: str, props: tuple[tuple[str, str], ...] = ()) -> Diagnosis:
    return Diagnosis(
        entities=[DiagnosisEntity(name=n, contributing_factor=True) for n in names],
        propagations=[Propagation(source=a, target=b) for a, b in props],
    )


def test_entity_names_parse_and_normalise() -> None:
    assert EntityRef.parse("otel-demo/Deployment/ad") == EntityRef("otel-demo", "deployment", "ad")
    assert EntityRef.parse("otel-demo/deployments.apps/ad") == EntityRef("otel-demo", "deployment", "ad")
    assert EntityRef.parse("Node/worker-1") == EntityRef(None, "node", "worker-1")
    assert EntityRef.parse("just-a-name") is None


def test_every_spelling_kubectl_accepts_names_the_same_kind() -> None:
    from collections import defaultdict

    from itbench_agents.evaluation.entities import norm_kind
    from itbench_agents.k8s.kinds import BUILTIN
    from itbench_agents.k8s.kinds import CHAOS_MESH_GROUP as GROUP
    from itbench_agents.k8s.kinds import CHAOS_MESH_KINDS as KINDS

    kinds_of = defaultdict(set)  # a plain name two kinds share ("nodes": Node, NodeMetrics) is the core one's
    for r in BUILTIN:
        for n in (r.resource, r.singular_name, *r.short_names):
            kinds_of[n].add(r.kind)
    for r in BUILTIN:
        plain = [
            r.kind,
            r.kind.upper(),
            *(n for n in (r.resource, r.singular_name, *r.short_names) if len(kinds_of[n]) == 1),
        ]
        qualified = [
            f"{r.resource}.{r.group}",
            f"{r.singular_name}.{r.group}",
            f"{r.resource}.{r.version}.{r.group}",
        ]
        for spelling in plain + (qualified if r.group else []):
            assert norm_kind(spelling) == r.kind.lower(), (spelling, r.kind)
    assert norm_kind("nodes") == "node" and norm_kind("nodes.metrics.k8s.io") == "nodemetrics"
    for kind, plural in KINDS.items():
        for spelling in (kind, plural, plural.capitalize(), f"{plural}.{GROUP}", f"{kind.lower()}.{GROUP}"):
            assert norm_kind(spelling) == kind.lower(), spelling
    assert norm_kind("Widgets.example.com") == "widgets"  # unknown: as written, without its group


def test_a_chaos_root_cause_is_correct_in_kubectls_spellings() -> None:
    gt = GroundTruth.model_validate(
        {
            "groups": [
                {
                    "id": "s",
                    "kind": "Schedule",
                    "namespace": "otel-demo",
                    "name": "ad-jvm",
                    "root_cause": True,
                },
            ]
        }
    )
    for kind in ("Schedule", "Schedules", "schedules.chaos-mesh.org", "schedule.chaos-mesh.org"):
        assert score_diagnosis(gt, diag(f"otel-demo/{kind}/ad-jvm")).correct, kind
    assert not score_diagnosis(gt, diag("otel-demo/PodChaos/ad-jvm")).correct


AD, FRONTEND, PROXY, CART = (
    f"otel-demo/Deployment/{n}" for n in ("ad", "frontend", "frontend-proxy", "cart")
)
CHAIN = ((AD, FRONTEND), (FRONTEND, PROXY))
"""The agent's propagations: ad -> frontend -> frontend-proxy, as the ground truth has it."""


@pytest.mark.parametrize(
    ("names", "props", "correct", "exact", "p", "r"),
    [
        ([AD], (), True, True, 1.0, 1.0),
        (["otel-demo/Service/ad"], (), True, True, 1.0, 1.0),  # alias of the Deployment
        (["otel-demo/Pod/ad-7d9f8c6b5-x2x4z"], (), True, True, 1.0, 1.0),  # filter match
        ([AD, "otel-demo/Pod/ad-7d9f8c6b5-x2x4z"], (), True, True, 1.0, 1.0),  # same class twice
        ([FRONTEND], CHAIN, False, False, 0.0, 0.0),  # a symptom alone: the root cause missed
        ([FRONTEND, PROXY], CHAIN, False, False, 0.0, 0.0),  # the whole chain but its root
        # the root cause and what it broke, shown as its consequences: precision drops, the pass holds
        ([AD, FRONTEND], CHAIN, True, False, 0.5, 1.0),
        ([AD, FRONTEND, PROXY], CHAIN, True, False, 1 / 3, 1.0),
        (
            [AD, PROXY],
            (("otel-demo/Service/ad", "otel-demo/Pod/frontend-1-2"), (FRONTEND, PROXY)),
            True,
            False,
            0.5,
            1.0,
        ),
        # ... but not without saying which one started it: every alerting service named, no chain
        ([AD, FRONTEND, PROXY], (), False, False, 1 / 3, 1.0),
        ([AD, FRONTEND], ((FRONTEND, PROXY),), False, False, 0.5, 1.0),  # nothing leads from ad
        ([AD, FRONTEND], ((FRONTEND, AD), (AD, FRONTEND)), False, False, 0.5, 1.0),  # ad a consequence too
        ([AD, FRONTEND], ((CART, AD), (AD, FRONTEND)), False, False, 0.5, 1.0),
        # anything the fault did not reach fails the pass, whatever the chain says
        ([AD, CART], ((AD, CART),), False, False, 0.5, 1.0),
        ([AD, FRONTEND, PROXY, CART], (*CHAIN, (AD, CART)), False, False, 0.25, 1.0),
        ([AD, "otel-demo/Deployment/nope"], ((AD, "otel-demo/Deployment/nope"),), False, False, 0.5, 1.0),
        (["other-ns/Deployment/ad"], (), False, False, 0.0, 0.0),
        ([], (), False, False, 0.0, 0.0),
    ],
)
def test_root_causes_must_all_be_named_and_extras_only_shown_on_the_faults_chain(
    names: list[str], props: tuple[tuple[str, str], ...], correct: bool, exact: bool, p: float, r: float
) -> None:
    s = score_diagnosis(ground_truth(), diag(*names, props=props))
    assert (s.correct, s.exact, s.recall) == (correct, exact, r)
    assert s.precision == pytest.approx(p)
    assert set(s.on_chain) <= {FRONTEND, PROXY}
    assert s.correct == (not s.missed and bool(names) and not s.wrong())


def test_extras_are_forgiven_only_downstream_of_the_root_cause() -> None:
    """The chain runs from the root cause to the alerting service; its reverse is not the fault's:
    with frontend as the root cause, ad (which frontend calls) is an extra that fails the pass even
    when the agent draws an arrow to it, while frontend-proxy (which frontend broke) is forgiven."""
    gt = ground_truth()
    for g in gt.groups:
        g.root_cause = g.id.startswith("frontend-") and not g.id.startswith("frontend-proxy")
    gt.propagations = [p for p in gt.propagations if not p.source.startswith("ad")]
    assert score_diagnosis(gt, diag(FRONTEND, PROXY, props=((FRONTEND, PROXY),))).correct
    s = score_diagnosis(gt, diag(FRONTEND, AD, props=((FRONTEND, AD),)))
    assert not s.correct and s.unmatched == [AD] and s.on_chain == []


def test_a_pod_name_counts_only_for_a_pod_that_existed() -> None:
    import copy

    topo = topology()
    assert "otel-demo/pod/ad-5f7-abcde" in topo.nodes
    real, invented = "otel-demo/Pod/ad-5f7-abcde", "otel-demo/Pod/ad-zzzz-yyyyy"  # both fit the pattern
    assert score_diagnosis(ground_truth(), diag(invented), None).correct  # no topology: not checked
    assert score_diagnosis(ground_truth(), diag(invented), topo).correct  # nothing recorded at the fault
    ended = copy.deepcopy(topo)
    ended.nodes.discard("otel-demo/pod/ad-5f7-abcde")  # restarted away by the end ...
    ended.at_fault = {"otel-demo/pod/ad-5f7-abcde"}  # ... but there when the alerts fired
    assert score_diagnosis(ground_truth(), diag(real), ended).correct
    assert score_diagnosis(ground_truth(), diag("pods/ad-5f7-abcde"), ended).correct  # no namespace
    s = score_diagnosis(ground_truth(), diag(invented), ended)
    assert not s.correct and s.unmatched == [invented]
    assert score_diagnosis(ground_truth(), diag("otel-demo/Deployment/ad"), ended).correct  # named: as before
    assert Topology.from_json(ended.to_json()).at_fault == ended.at_fault


def test_the_faulty_release_names_its_deployment_and_an_older_replicaset_nothing() -> None:
    """A rollout fault's new ReplicaSet (made after the injection: ``Topology.released``) counts
    as its Deployment; the ReplicaSet that ran before the fault, a benign release of another
    Deployment and a ReplicaSet that never existed do not."""
    import copy

    topo = topology()
    topo.at_fault = set(topo.nodes) | {"otel-demo/replicaset/ad-9c8", "otel-demo/replicaset/frontend-1a2"}
    topo.add_edge("otel-demo/deployment/ad", "otel-demo/replicaset/ad-9c8", "owns")
    topo.add_edge("otel-demo/deployment/frontend", "otel-demo/replicaset/frontend-1a2", "owns")
    topo.released = {"otel-demo/replicaset/ad-9c8", "otel-demo/replicaset/frontend-1a2"}
    gt = ground_truth()
    for name in ("otel-demo/ReplicaSet/ad-9c8", "otel-demo/replicasets.apps/ad-9c8", "rs/ad-9c8"):
        s = score_diagnosis(gt, diag(name), topo)
        assert s.correct and s.matched == [name], name
    assert score_diagnosis(gt, diag("otel-demo/Deployment/ad", "otel-demo/ReplicaSet/ad-9c8"), topo).correct
    for wrong in (
        "otel-demo/ReplicaSet/ad-5f7",  # ran before the fault: the healthy release
        "otel-demo/ReplicaSet/frontend-1a2",  # the churn's benign release of another Deployment
        "otel-demo/ReplicaSet/ad-zzz",  # never existed
        "other-ns/ReplicaSet/ad-9c8",
    ):
        s = score_diagnosis(gt, diag(wrong), topo)
        assert not s.correct and s.unmatched == [wrong], wrong
    # the Deployment deleted by the end: the name still says whose release it was
    gone = copy.deepcopy(topo)
    gone.edges = [e for e in gone.edges if e[0] != "otel-demo/deployment/ad"]
    assert score_diagnosis(gt, diag("otel-demo/ReplicaSet/ad-9c8"), gone).correct
    # recorded with the episode: a re-score reads the same
    again = Topology.from_json(topo.to_json())
    assert again.released == topo.released
    assert score_diagnosis(gt, diag("otel-demo/ReplicaSet/ad-9c8"), again).correct
    # nothing recorded (an old run): a ReplicaSet names nothing, as before
    topo.released = set()
    assert not score_diagnosis(gt, diag("otel-demo/ReplicaSet/ad-9c8"), topo).correct


def test_missing_and_control_diagnoses() -> None:
    assert score_diagnosis(ground_truth(), None, reason_if_missing="not JSON").reason == "not JSON"
    control = GroundTruth()
    ok = score_diagnosis(control, Diagnosis())
    assert ok.correct and ok.f1 == 1.0 and ok.ntam_fl == 1.0
    wrong = score_diagnosis(control, diag("otel-demo/Deployment/ad"))
    assert not wrong.correct and wrong.ntam_fl == 0.0 and wrong.precision == 0.0


def test_non_contributing_entities_do_not_count_as_root_causes() -> None:
    d = Diagnosis(
        entities=[
            DiagnosisEntity(name="otel-demo/Deployment/ad", contributing_factor=True),
            DiagnosisEntity(name="otel-demo/Deployment/frontend", contributing_factor=False),
        ]
    )
    assert score_diagnosis(ground_truth(), d).correct


# ---------------------------------------------------------------- NTAM worked examples (docs/metrics.md)
@pytest.mark.parametrize(
    ("preds", "expected"),
    [
        (["otel-demo/Deployment/ad"], 1.0),
        (["otel-demo/Pod/ad-5f7-abcde"], 1.0),
        (["otel-demo/Deployment/frontend"], math.exp(-0.5) / (1 + 0.5 * math.log(3))),
        (["otel-demo/Deployment/cart"], math.exp(-1.0) / (1 + 0.5 * math.log(3))),
        (["Namespace/otel-demo"], math.exp(-1.5) / (1 + 0.5 * math.log(18))),
        (["otel-demo/ConfigMap/flagd-config"], math.exp(-3.0)),
        (
            ["otel-demo/Deployment/ad", "otel-demo/Deployment/frontend", "otel-demo/Deployment/cart"],
            math.exp(-1.0),
        ),
        (["otel-demo/Deployment/nope"], 0.0),
        ([], 0.0),
    ],
)
def test_ntam_fault_localisation_worked_examples(preds: list[str], expected: float) -> None:
    assert NtamScorer(ground_truth(), topology()).fault_localization(preds) == pytest.approx(
        expected, abs=1e-9
    )


def test_ntam_fault_propagation_weights_chain_positions() -> None:
    s = NtamScorer(ground_truth(), topology())
    full = ["otel-demo/Deployment/ad", "otel-demo/Deployment/frontend", "otel-demo/Deployment/frontend-proxy"]
    assert s.fault_propagation(full) == pytest.approx(1.0)
    sim1 = math.exp(-0.5) / (1 + 0.5 * math.log(3))
    sim2 = math.exp(-1.0) / (1 + 0.5 * math.log(3))
    raw = (1 + 0.5 * sim1 + 0.25 * sim2) / 1.75
    assert s.fault_propagation(["otel-demo/Deployment/ad"]) == pytest.approx(raw * math.exp(-0.5 * 2 / 3))
    # missing the root costs more than missing the tail
    assert s.fault_propagation(full[:2]) > s.fault_propagation(full[1:])


def test_ntam_is_in_unit_interval_and_monotone_in_distance() -> None:
    s = NtamScorer(ground_truth(), topology(), NtamParams(lam=1.0))
    vals = [
        s.fault_localization([p])
        for p in ("otel-demo/Deployment/ad", "otel-demo/Deployment/frontend", "otel-demo/Deployment/cart")
    ]
    assert vals == sorted(vals, reverse=True) and all(0 <= v <= 1 for v in vals)


def test_ntam_without_topology_still_scores_exact_matches() -> None:
    s = NtamScorer(ground_truth(), None)
    assert s.fault_localization(["otel-demo/Service/ad"]) == 1.0
    # the ground-truth propagation edges alone give a distance
    assert 0 < s.fault_localization(["otel-demo/Service/frontend"]) < 1


# ---------------------------------------------------------------- chains
def test_lcs_and_chain_scores() -> None:
    assert lcs_length("abcde", "ace") == 3 and lcs_length("", "abc") == 0 and lcs_length("abc", "cba") == 1
    assert contract(["a", "a", "b", "b", "a"]) == ["a", "b", "a"]
    gt = ground_truth()
    assert gt_chain(gt) == ["ad-service", "frontend-service", "frontend-proxy-service"]
    full = diag(
        "otel-demo/Deployment/ad",
        props=(
            ("otel-demo/Deployment/ad", "otel-demo/Service/frontend"),
            ("otel-demo/Service/frontend", "otel-demo/Service/frontend-proxy"),
        ),
    )
    s = score_diagnosis(gt, full)
    assert (s.chain_precision, s.chain_recall, s.chain_f1) == (1.0, 1.0, 1.0)
    # a detour through a wrong entity: LCS 2 of predicted 3, of truth 3
    detour = diag(
        "otel-demo/Deployment/ad",
        props=(
            ("otel-demo/Deployment/ad", "otel-demo/Deployment/cart"),
            ("otel-demo/Deployment/cart", "otel-demo/Service/frontend-proxy"),
        ),
    )
    s = score_diagnosis(gt, detour)
    assert s.chain_precision == pytest.approx(2 / 3) and s.chain_recall == pytest.approx(2 / 3)
    # pod and deployment of the same service contract to one hop
    same = diag(
        "otel-demo/Deployment/ad",
        props=(
            ("otel-demo/Pod/ad-1-2", "otel-demo/Deployment/ad"),
            ("otel-demo/Deployment/ad", "otel-demo/Service/frontend"),
        ),
    )
    s = score_diagnosis(gt, same)
    assert s.chain_precision == 1.0 and s.chain_recall == pytest.approx(2 / 3)


# ---------------------------------------------------------------- statistics
def _brute(n: int, c: int, k: int, test: Callable[[Iterable[int]], bool]) -> float:
    """The share of the k-subsets of n outcomes (c passes) that pass ``test`` (any: pass@k; all: pass^k)."""
    outcomes = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(1 for s in subsets if test(outcomes[i] for i in s)) / len(subsets)


@pytest.mark.parametrize(
    ("n", "c", "k"), [(n, c, k) for n in (1, 3, 5, 8) for c in range(n + 1) for k in range(1, n + 1)]
)
def test_pass_at_k_and_pass_hat_k_match_brute_force(n: int, c: int, k: int) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(_brute(n, c, k, any), abs=1e-12)
    got = pass_hat_k(n, c, k)
    assert got == pytest.approx(_brute(n, c, k, all), abs=1e-12)
    assert math.copysign(1.0, got) == 1.0  # never -0.0
    # pass^1 is pass@1, and all k passing is never likelier than one of them passing
    assert pass_hat_k(n, c, 1) == pytest.approx(c / n) == pytest.approx(pass_at_k(n, c, 1))
    assert got <= pass_hat_k(n, c, 1) + 1e-12 <= pass_at_k(n, c, k) + 2e-12


def test_pass_hat_k_of_a_lucky_agent_falls_where_pass_at_k_rises() -> None:
    # right once in ten trials (the paper's GPT-4o on its scenario 8): pass@k rewards the luck
    assert pass_at_k(10, 1, 5) == pytest.approx(0.5)
    assert pass_hat_k(10, 1, 2) == 0.0
    assert pass_hat_k(10, 10, 10) == 1.0
    assert pass_hat_k(10, 8, 2) == pytest.approx(8 * 7 / (10 * 9))


def test_pass_at_k_rejects_nonsense() -> None:
    for estimator in (pass_at_k, pass_hat_k):
        with pytest.raises(ValueError):
            estimator(3, 1, 4)
        with pytest.raises(ValueError):
            estimator(3, 5, 1)
        with pytest.raises(ValueError):
            estimator(3, 1, 0)


def test_stderr() -> None:
    assert math.isnan(stderr([1.0]))  # one trial: undefined, not 0
    assert stderr([0.0, 1.0]) == pytest.approx(0.5)
    assert math.isnan(stderr([]))


def test_alias_index_unions_transitively() -> None:
    gt = ground_truth()
    a = AliasIndex(gt)
    assert a.cls("ad-pod") == a.cls("ad-deployment") == a.cls("ad-service")
    assert a.cls("ad-pod") != a.cls("frontend-pod")
    assert a.root_cause_classes() == {a.cls("ad-service")}
