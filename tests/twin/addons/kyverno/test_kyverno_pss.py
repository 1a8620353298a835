"""Pod Security Standards (``validate.podSecurity``) checked against upstream's pattern policies
for the same controls: every resource the upstream ``disallow-privileged-containers`` test expects
to fail must violate "Privileged Containers" under PSS, and every one it expects to pass must not."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from itbench_agents.twin.addons.kyverno.celrules import POD_CONTROLLERS, pod_view
from itbench_agents.twin.addons.kyverno.pss import check

CONTROLS = {
    "baseline/disallow-capabilities": ("baseline", "Capabilities"),
    "baseline/disallow-host-namespaces": ("baseline", "Host Namespaces"),
    "baseline/disallow-host-path": ("baseline", "HostPath Volumes"),
    "baseline/disallow-host-process": ("baseline", "HostProcess"),
    "baseline/disallow-privileged-containers": ("baseline", "Privileged Containers"),
    "baseline/disallow-selinux": ("baseline", "SELinux"),
    "baseline/restrict-apparmor-profiles": ("baseline", "AppArmor"),
    "baseline/restrict-seccomp": ("baseline", "Seccomp"),
    "restricted/disallow-capabilities-strict": ("restricted", "Capabilities"),
    "restricted/disallow-privilege-escalation": ("restricted", "Privilege Escalation"),
    "restricted/require-run-as-non-root-user": ("restricted", "Running as Non-root user"),
    "restricted/restrict-seccomp-strict": ("restricted", "Seccomp"),
}


@pytest.mark.parametrize("case", sorted(CONTROLS))
def test_pss_agrees_with_upstreams_pattern_policy(shared_dir: Path, case: str) -> None:
    level, control = CONTROLS[case]
    folder = shared_dir / "conformance/kyverno/policies/pod-security" / case / ".kyverno-test"
    test = yaml.safe_load((folder / "kyverno-test.yaml").read_text())
    resources = {}
    for f in test["resources"]:
        for doc in yaml.safe_load_all((folder / f).read_text()):
            if isinstance(doc, dict):
                resources[doc["metadata"]["name"]] = doc
    checked, wrong = 0, []
    for entry in test["results"]:
        for name in entry["resources"]:
            r = resources[name]
            template = POD_CONTROLLERS.get(r["kind"])
            pod = pod_view(r, template) if template else r
            # a policy with one rule per field (require-drop-all, adding-capabilities-strict)
            field = (
                "drop"
                if "drop" in str(entry.get("rule", ""))
                else "add"
                if "add" in str(entry.get("rule", ""))
                else ""
            )
            flagged = any(v.control == control and field in v.field for v in check(pod or {}, level))
            checked += 1
            if flagged != (entry["result"] == "fail"):
                wrong.append(
                    (name, entry["result"], [str(v) for v in check(pod or {}, level) if v.control == control])
                )
    assert checked > 0
    assert not wrong, wrong
