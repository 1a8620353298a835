"""ciso-catalogue, the non-LLM CISO baseline: the control's text → a catalogued Kyverno policy.

Its keywords were written with the library's wording in view, so its score on the library is what
retrieval alone can reach there (docs/metrics.md); paraphrases outside the library and controls it
does not know show how far that goes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from itbench_agents.agents.ciso_catalogue import best_entry, catalogue, control_text, rules_for
from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.records import AgentSpec, RunConfig
from itbench_agents.harness.runfolder import read_episodes
from itbench_agents.personas.ciso.library import ciso_library


def test_the_goal_yields_the_control_of_both_classes() -> None:
    for s in ciso_library():
        assert control_text(s.goal("/w/kubeconfig")) == s.control, s.id


@pytest.mark.parametrize(
    ("control", "cis"),
    [
        ("Do not let pods use the node's network (hostNetwork).", "5.2.5"),
        ("Workloads should never run privileged containers.", "5.2.2"),
        ("No container may request host ports.", "5.2.13"),
        ("Every container drops all capabilities.", "5.2.10"),
        ("Block images that do not come from registry.example.io.", None),  # keyword retrieval misses it
        ("Pods must not run in the default namespace.", "5.7.4"),
    ],
)
def test_paraphrases_outside_the_library(control: str, cis: str | None) -> None:
    entry = best_entry(control)
    assert (entry.cis if entry else None) == cis


def test_a_registry_control_takes_the_registry_from_the_text() -> None:
    entry = best_entry("Only allow images from the trusted registry (registry.corp.io).")
    assert entry is not None
    assert "registry.corp.io/*" in str(rules_for(entry, "Only allow images from registry.corp.io."))
    assert rules_for(entry, "Only allow images from a trusted registry.") == []  # no registry named


def test_an_unknown_control_gets_no_policy() -> None:
    assert best_entry("Ensure that the etcd data directory is owned by etcd:etcd.") is None
    assert len({e.cis for e in catalogue()}) == len(catalogue())


def test_episodes_of_both_classes_and_of_an_unknown_control(tmp_path: Path) -> None:
    cat = Catalogue.default()
    unknown = cat.get("ciso/kyverno-host-network-v1").model_copy(
        update={"control": "Ensure that the etcd data directory is owned by etcd:etcd."}
    )
    cat.library["ciso"] = [
        *cat.library["ciso"],
        unknown.model_copy(update={"id": "ciso/kyverno-unknown-control-v1"}),
    ]
    ids = [
        "ciso/kyverno-seccomp-v1",
        "ciso/kyverno-update-secrets-as-env-v1",
        "ciso/kyverno-unknown-control-v1",
    ]
    cfg = RunConfig(scenarios=ids, agents=[AgentSpec(name="ciso-catalogue")])
    _, specs, _ = start_run(tmp_path / "run", cfg, cat)
    run_batch(tmp_path / "run", specs)
    recs = {r.scenario_id: r for r in read_episodes(tmp_path / "run")}
    assert recs["ciso/kyverno-seccomp-v1"].scores["strict"].value == 1.0
    update = recs["ciso/kyverno-update-secrets-as-env-v1"]
    assert update.scores["strict"].value == 1.0, update.scores["strict"].explanation
    lost = recs["ciso/kyverno-unknown-control-v1"]
    assert lost.termination == "submitted" and lost.scores["strict"].value == 0.0
    assert "no policy deployed" in lost.scores["detected"].explanation


def _k8s_opa_answer(scenario_id: str) -> tuple[str, str]:
    from itbench_agents.agents.ciso_catalogue import rego_answer

    s = next(x for x in ciso_library() if x.id == scenario_id)
    entry = best_entry(control_text(s.goal("/w/kubeconfig", "/w")))
    assert entry is not None
    answer = rego_answer(entry, s.namespace)
    assert answer is not None and "--kubeconfig" not in answer[0]
    return answer


def test_k8s_opa_answers_from_the_goal_alone() -> None:
    from itbench_agents.personas.ciso.rego_score import score_rego

    s = next(x for x in ciso_library() if x.id == "ciso/k8s-opa-privileged-v1")
    assert score_rego(s, *_k8s_opa_answer(s.id)).strict


@pytest.mark.slow
def test_k8s_opa_library_upper_bound_of_retrieval() -> None:
    from itbench_agents.personas.ciso.rego_score import score_rego

    missed = [
        s.id
        for s in ciso_library()
        if s.task_class == "k8s-opa" and not score_rego(s, *_k8s_opa_answer(s.id)).strict
    ]
    assert missed == []


def test_rhel_controls_find_their_entry_from_the_goal_alone() -> None:
    from itbench_agents.agents.ciso_catalogue.rhel import best_rhel_entry, rhel_answer, rhel_catalogue

    assert len({e["cis"] for e in rhel_catalogue()}) == len(rhel_catalogue())
    for s in ciso_library():
        if s.task_class == "rhel-opa":
            entry = best_rhel_entry(control_text(s.goal("/w/kubeconfig", "/w", "/w/inventory.ini")))
            assert entry is not None and [entry["cis"]] == s.cis, s.id
            playbook, policy = rhel_answer(entry)
            assert "hosts: rhel9_servers" in playbook and policy.startswith("package check\n")
    assert best_rhel_entry("Ensure the bootloader password is set.") is None


@pytest.mark.slow
def test_rhel_answers_pass_on_both_hosts() -> None:
    from itbench_agents.agents.ciso_catalogue.rhel import best_rhel_entry, rhel_answer
    from itbench_agents.personas.ciso.host_score import score_playbook

    for sid in ("ciso/rhel-opa-passwd-permissions-v1", "ciso/rhel-opa-audit-logs-kept-v1"):
        s = next(x for x in ciso_library() if x.id == sid)
        entry = best_rhel_entry(s.control)
        assert entry is not None
        score = score_playbook(s, *rhel_answer(entry))
        assert score.strict, (sid, score)
