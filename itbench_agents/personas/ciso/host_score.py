"""Score a ``rhel-opa`` answer — an Ansible playbook and a Rego policy — by executing them, as
ITBench's evaluator does (itbench.md §3.5: ``ansible-playbook playbook.yml -i inventory``, then
``opa eval --data policy.rego --input collected_data.json data.check.result`` must be ``false``).

The playbook runs against fresh RHEL host twins the agent never touched — the violating host, then
the compliant one (where the same playbook and policy must say ``true``) — from an inventory that
names only that host, with the controller in the agents' sandbox (``twin/host/controller.py``) and
within :data:`PLAYBOOK_TIMEOUT_S`. A playbook that makes the host compliant before collecting
(remediating instead of assessing) collects compliant evidence and so fails violation detection.
The metrics are the k8s-opa ones (``rego_score.py``), with ``playbook.yml`` in the script's place.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ...twin.host.ansible import ServedHost, inventory_text
from ...twin.host.controller import PLAYBOOK_TIMEOUT_S, run_playbook
from ...twin.host.host import HostTwin
from .environment import Variant
from .rego_score import Collected, RegoScore, decide, read_collected
from .spec import CisoScenario

INVENTORY = "inventory.ini"


def host_of(scenario: CisoScenario, variant: Variant, folder: Path) -> HostTwin:
    spec = scenario.host if variant == "violating" else scenario.host_compliant
    return HostTwin.create(folder, spec)


def find_playbook_answer(workdir: Path) -> tuple[str | None, str | None, str]:
    """(playbook, policy, why): the agent's ``playbook.yml`` and ``policy.rego``."""
    files = {n: workdir / n for n in ("playbook.yml", "policy.rego")}
    missing = [n for n, p in files.items() if not p.is_file()]
    if missing:
        return None, None, "missing: " + ", ".join(missing)
    linked = [n for n, p in files.items() if p.is_symlink()]
    if linked:
        return None, None, f"{linked[0]} is a symbolic link"
    return (
        files["playbook.yml"].read_text(errors="replace"),
        files["policy.rego"].read_text(errors="replace"),
        "found playbook.yml and policy.rego",
    )


def collect_host(
    scenario: CisoScenario, variant: Variant, playbook: str, *, timeout_s: float = PLAYBOOK_TIMEOUT_S
) -> Collected:
    """Create a fresh ``variant`` host and run the playbook against it from a one-host inventory."""
    with tempfile.TemporaryDirectory(prefix="itbench-ciso-host-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        with ServedHost(host_of(scenario, variant, Path(tmp) / "host")) as served:
            (work / INVENTORY).write_text(inventory_text([served]))
            (work / "playbook.yml").write_text(playbook)
            rc, tail = run_playbook(work, timeout_s=timeout_s)
        why = ""
        if rc is None:
            why = f"playbook.yml ran longer than {timeout_s:g} s"
        elif rc != 0:
            last = [line for line in tail.splitlines() if line.strip()][-3:]
            why = f"ansible-playbook exited with status {rc}" + (f": {' / '.join(last)}" if last else "")
        return read_collected(variant, work, why)


def score_playbook(
    scenario: CisoScenario,
    playbook: str | None,
    policy: str | None,
    *,
    timeout_s: float = PLAYBOOK_TIMEOUT_S,
) -> RegoScore:
    if playbook is None or policy is None:
        missing = [n for n, v in (("playbook.yml", playbook), ("policy.rego", policy)) if v is None]
        return RegoScore(False, "missing: " + ", ".join(missing))
    violating = decide(collect_host(scenario, "violating", playbook, timeout_s=timeout_s), policy)
    compliant = decide(collect_host(scenario, "compliant", playbook, timeout_s=timeout_s), policy)
    return RegoScore(True, "playbook.yml and policy.rego present", violating, compliant)
