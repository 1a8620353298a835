"""The CISO Kyverno scenarios (issue 28, slice 3, first part): the library loads, every scenario is
proven on the twin (its reference policy is accepted, detects the violation and passes the compliant
workload; no policy detects nothing), and near misses of the reference score zero on the stricter
column. The blind strategies are the CISO audit's (tests/personas/test_ciso_audit.py)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from itbench_agents.personas.ciso.library import ciso_library, load_ciso
from itbench_agents.personas.ciso.score import score_policies
from itbench_agents.personas.ciso.spec import CisoScenario
from itbench_agents.personas.ciso.validate import validate_ciso
from itbench_agents.scenario.loader import ScenarioLoadError

LIBRARY = ciso_library()
BY_ID = {s.id: s for s in LIBRARY}
HOST_NETWORK = BY_ID["ciso/kyverno-host-network-v1"]


def test_the_library_loads_with_distinct_controls() -> None:
    new = [s for s in LIBRARY if s.task_class == "kyverno"]
    update = [s for s in LIBRARY if s.task_class == "kyverno-update"]
    rhel = [s for s in LIBRARY if s.task_class == "rhel-opa"]
    assert len(new) >= 15 and len(update) >= 10  # issue 28's counts
    assert len(rhel) >= 20 and {s.id for s in rhel} >= RHEL_SAMPLE  # issue 29's count
    for group in (new, update, rhel):
        assert len({tuple(s.cis) for s in group}) == len(group)  # one control per scenario of a class
    kinds = {k for s in LIBRARY for _, k, _, _ in s.targets()}
    assert {"Deployment", "DaemonSet", "StatefulSet", "CronJob", "Pod"} <= kinds  # autogen and plain pods


RHEL_NOT_IN_SHEET = {"1.1.1.1"}
"""cramfs disabled: numbered 1.1.1.1 in CIS RHEL benchmarks (ComplianceAsCode's CIS profiles), not
listed in the fact sheet's RHEL table."""


def test_cis_ids_exist_in_the_fact_sheet(shared_dir: Path) -> None:
    sheet = (shared_dir / "reference" / "cis-controls.md").read_text()
    kubernetes, rhel = sheet.split("## 3. CIS RHEL 9", 1)
    known = set(re.findall(r"^\| \**(5\.\d+\.\d+)\**", kubernetes, re.M))
    known_rhel = {
        i for cell in re.findall(r"^\| \**([\d.]+(?: / [\d.]+)*)\**", rhel, re.M) for i in cell.split(" / ")
    }
    assert known and known_rhel, "no CIS ids found in the fact sheet"
    for s in LIBRARY:
        assert set(s.cis) <= (known_rhel | RHEL_NOT_IN_SHEET if s.task_class == "rhel-opa" else known), (
            s.id,
            s.cis,
        )


RHEL_SAMPLE = {
    f"ciso/rhel-opa-{name}-v1"
    for name in (
        "ssh-x11-forwarding",  # sshd -T
        "sshd-config-permissions",  # stat
        "ip-forwarding",  # sysctl
        "auditd-enabled",  # systemctl
        "aide-installed",  # rpm
        "cramfs-disabled",  # modprobe
        "password-max-days",  # grep in a file
        "selinux-enforcing",  # getenforce
    )
}
"""One rhel-opa scenario per kind of evidence: each validation runs two playbooks (~5 s), so the
whole rhel-opa library is validated by ``.ci/run`` (``itbench scenarios validate``), not here."""
K8S_OPA_FAST = {
    f"ciso/k8s-opa-{name}-v1"
    for name in (
        "host-pid",  # a pod spec field
        "added-capabilities",  # a container's securityContext list
        "secrets-as-env",  # env valueFrom
        "automount-token",  # the pod's and its ServiceAccount's
        "network-policy",  # another kind of object
    )
}
"""The k8s-opa scenarios proven in the fast tier (one per kind of evidence; each validation runs the
reference fetcher on two environments, ~2 s): the others are proven in the slow tier."""
PROVEN = [
    pytest.param(s, marks=pytest.mark.slow)
    if s.task_class == "rhel-opa" or (s.task_class == "k8s-opa" and s.id not in K8S_OPA_FAST)
    else s
    for s in LIBRARY
    if s.task_class != "rhel-opa" or s.id in RHEL_SAMPLE
]


@pytest.mark.parametrize("scenario", PROVEN, ids=[getattr(s, "id", None) or s.values[0].id for s in PROVEN])
def test_every_scenario_is_proven_on_the_twin(scenario: CisoScenario) -> None:
    result = validate_ciso(scenario)
    assert result.ok, [(c.name, c.detail) for c in result.checks if not c.ok]


PODS = {"match": {"any": [{"resources": {"kinds": ["Pod"]}}]}}


def test_the_reference_scores_on_both_columns_and_a_refused_policy_scores_zero() -> None:
    assert score_policies(HOST_NETWORK, HOST_NETWORK.reference).strict
    broken = copy.deepcopy(HOST_NETWORK.reference[0])
    broken["spec"]["rules"][0]["validate"].pop("pattern")
    score = score_policies(HOST_NETWORK, [broken])
    assert (
        not score.detected
        and "one of pattern, anyPattern, deny, foreach, cel must be specified" in score.refused
    )


def test_fixing_the_workload_instead_of_writing_a_policy_scores_zero() -> None:
    fixed = HOST_NETWORK.model_copy(update={"violating": HOST_NETWORK.compliant})
    assert not score_policies(fixed, HOST_NETWORK.reference).detected


UPDATE = BY_ID["ciso/kyverno-update-run-as-non-root-v1"]


def _renamed(policy: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(policy)
    out["metadata"]["name"] = name
    return out


def test_update_goal_names_the_deployed_policies_and_the_requirement() -> None:
    goal = UPDATE.goal("/work/kubeconfig")
    assert "- service-account-requirements" in goal and "- container-security-controls" in goal
    assert "Prohibit running as the root user." in goal and "Do not change the resource names." in goal


@pytest.mark.parametrize(
    "strategy",
    ["re-apply unchanged", "new policy instead", "rename the edited", "weaken the other", "deny everything"],
)
def test_update_shortcuts_score_zero_on_the_stricter_column(strategy: str) -> None:
    existing = {p["metadata"]["name"]: copy.deepcopy(p) for p in UPDATE.existing}
    edited = copy.deepcopy(UPDATE.reference[0])
    if strategy == "re-apply unchanged":
        final = list(existing.values())
    elif strategy == "new policy instead":
        final = [*existing.values(), _renamed(edited, "run-as-non-root")]
    elif strategy == "rename the edited":
        final = [existing["service-account-requirements"], _renamed(edited, "container-security-controls-v2")]
    elif strategy == "weaken the other":
        weak = existing["service-account-requirements"]
        weak["spec"]["rules"] = weak["spec"]["rules"][:1]
        final = [weak, edited]
    else:
        edited["spec"]["rules"].append(
            {**PODS, "name": "deny-all", "validate": {"message": "no", "deny": {}}}
        )
        final = [existing["service-account-requirements"], edited]
    score = score_policies(UPDATE, final)
    assert not score.strict, score
    if strategy in ("new policy instead", "rename the edited", "weaken the other"):
        assert score.changed and not score.detected


def test_loader_errors_name_file_line_and_field(tmp_path: Path) -> None:
    src = yaml.safe_load(Path(_file_of(HOST_NETWORK)).read_text())
    folder = tmp_path / "kyverno"
    folder.mkdir()
    bad = {**src, "cis": ["5.2"]}
    (folder / "kyverno-host-network-v1.yaml").write_text(yaml.safe_dump(bad, sort_keys=False))
    with pytest.raises(ScenarioLoadError, match=r"kyverno-host-network-v1\.yaml:\d+: cis: .*'5\.2'"):
        load_ciso(folder / "kyverno-host-network-v1.yaml")
    (folder / "other-v1.yaml").write_text(yaml.safe_dump(src, sort_keys=False))
    with pytest.raises(ScenarioLoadError, match="file name must be the id's name"):
        load_ciso(folder / "other-v1.yaml")
    mismatch = copy.deepcopy(src)
    mismatch["compliant"][0]["metadata"]["name"] = "elsewhere"
    (folder / "kyverno-host-network-v1.yaml").write_text(yaml.safe_dump(mismatch, sort_keys=False))
    with pytest.raises(ScenarioLoadError, match="compliant must hold the same workloads"):
        load_ciso(folder / "kyverno-host-network-v1.yaml")


def test_scenarios_cli_lists_and_validates_the_ciso_suite() -> None:
    from itbench_agents.cli import app

    runner = CliRunner()
    listed = json.loads(runner.invoke(app, ["scenarios", "list", "--suite", "ciso", "--json"]).output)
    assert {r["id"] for r in listed} == set(BY_ID)
    res = runner.invoke(app, ["scenarios", "validate", "--suite", "ciso", "ciso/kyverno-host-*", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [r["id"] for r in out] == sorted(i for i in BY_ID if i.startswith("ciso/kyverno-host-"))
    assert all(r["ok"] for r in out)
    nope = runner.invoke(app, ["scenarios", "validate", "--suite", "ciso", "ciso/nope*"])
    assert nope.exit_code == 2 and "no CISO scenario matches" in nope.output


def _file_of(s: CisoScenario) -> Path:
    from itbench_agents.paths import scenarios_dir

    return scenarios_dir() / "ciso" / s.task_class / f"{s.id.split('/', 1)[1]}.yaml"


def test_scenarios_show_prints_a_ciso_scenario() -> None:
    from itbench_agents.cli import app

    res = CliRunner().invoke(app, ["scenarios", "show", "ciso/rhel-opa-ssh-x11-forwarding-v1"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("# class rhel-opa; CIS 5.2.12;") and "host_compliant:" in res.output
    res = CliRunner().invoke(app, ["scenarios", "show", "--json", "ciso/k8s-opa-privileged-v1"])
    assert res.exit_code == 0 and json.loads(res.output)["class"] == "k8s-opa"
    res = CliRunner().invoke(app, ["scenarios", "show", "ciso/no-such-v1"])
    assert res.exit_code == 2 and "unknown CISO scenario" in res.output
