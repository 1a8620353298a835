"""How often the wire probe (``wire_probe.py``: HTTP through the service proxy, consumer lag in
Prometheus) agrees with a backend's own probe of the user journeys, journey by journey, on a
scenario's two end states that matter: the fault in place (after the alerts fire) and the reference
mitigation applied (after the settle). ``itbench backends probe-agreement`` prints it for a suite.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ProbeComparison:
    state: str
    """``fault`` or ``mitigated``."""
    own: dict[str, bool]
    wire: dict[str, bool]
    details: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Journey → (own detail, wire detail), for the journeys that disagree."""

    @property
    def disagreements(self) -> list[str]:
        return sorted(n for n in self.own if self.wire.get(n) != self.own[n])


@dataclass
class AgreementResult:
    scenario: str
    comparisons: list[ProbeComparison] = field(default_factory=list)
    error: str = ""


def compare_probes(env: Any, state: str) -> ProbeComparison:
    """The backend's own journeys and the wire probe's, now, on ``env`` (a deployed ``TwinEnvironment``)."""
    from kubernetes import config

    from .app_data import AppData
    from .wire_probe import WireProbe

    backend = env.backend
    kube = config.new_client_from_config(config_file=backend.endpoints.kubeconfig)
    own_list = backend.journeys()
    wire_list = WireProbe(
        kube,
        AppData.load(env.scenario.app),
        env.scenario.namespace,
        prometheus_url=env.endpoints.prometheus_url,
    ).journeys()
    comp = ProbeComparison(state, {j.name: j.ok for j in own_list}, {j.name: j.ok for j in wire_list})
    own_detail = {j.name: j.detail for j in own_list}
    wire_detail = {j.name: j.detail for j in wire_list}
    for name in comp.disagreements:
        comp.details[name] = (own_detail.get(name, ""), wire_detail.get(name, ""))
    return comp


def probe_agreement(scenario: Any, seed: int = 0, history_s: float = 600.0) -> AgreementResult:
    """Deploy ``scenario`` on the twin, inject it, compare; apply its reference mitigation, settle, compare."""
    from ..core.task import Limits
    from ..k8s.client import KubeApi
    from ..scenario.inject import apply_operations
    from .twin_env import TwinEnvironment

    res = AgreementResult(scenario.id)
    with tempfile.TemporaryDirectory(prefix="itbench-probe-") as work:
        env = TwinEnvironment(scenario, seed=seed, workdir=work, history_s=history_s)
        try:
            env.deploy()
            env.inject()
            env.wait_for_alerts()
            res.comparisons.append(compare_probes(env, "fault"))
            task = env.task(Limits())
            agent_api = KubeApi.from_kubeconfig(env.endpoints.kube_url, task.endpoints.kubeconfig)
            apply_operations(agent_api, scenario.mitigation, env._now_dt)
            env.settle()
            res.comparisons.append(compare_probes(env, "mitigated"))
        except Exception as e:  # a scenario that does not run is reported, not raised
            res.error = f"{type(e).__name__}: {e}"
        finally:
            env.teardown()
    return res
