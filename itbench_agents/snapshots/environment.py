"""A recorded snapshot as an episode's environment: the agent diagnoses, nothing can be changed.

``itbench run --snapshots DIR`` runs each scenario recorded under ``DIR`` (``itbench snapshot
record``) in a :class:`SnapshotEnvironment`: the folder is served read-only (``twin/replay.py``),
the agent gets the same endpoints as on the twin with a read-only credential, and its diagnosis is
scored as on the twin, against the scenario's ground truth and the recorded topology (the objects
that existed when the alerts fired, the ReplicaSets made since the faults). Mitigation is not
scored: a snapshot has no future.

The harness reads the folder; the agent sees only the endpoints (never ``ground_truth.yaml`` or
``snapshot.json``).
"""

from __future__ import annotations

import datetime as _dt
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..core.task import Limits, Task
from ..evaluation.topology import Topology
from ..harness.access import grant_agent_access, write_agent_kubeconfigs
from ..harness.environment import AlertCheck, EnvironmentError_
from ..harness.firing import firing_alerts, match_expected
from ..harness.goal import in_namespaces
from ..harness.records import MitigationScore
from ..harness.twin_env import MASKED_FIELDS, episode_topology, topology_over_api
from ..k8s.client import KubeApi
from ..scenario.spec import Scenario
from .layout import SnapshotError
from .read import find_snapshots, load_snapshot

SNAPSHOTS_ENV = "ITBENCH_SNAPSHOTS"
"""The folder ``itbench run --snapshots`` names, for the episodes' processes."""
FACTORY = "itbench_agents.snapshots.environment:from_spec"

SNAPSHOT_GOAL = (
    "You are an SRE on call for the application running in {namespace} of this Kubernetes "
    "cluster. Alerts are firing or users may be affected. The cluster is a read-only recording of "
    "the moment the incident was noticed: diagnose it, changing nothing. Identify the root-cause "
    "entities (as namespace/Kind/name) and how the fault propagated to the alerting services. If "
    "nothing is wrong, report no contributing entities. Write your diagnosis as JSON (entities, "
    "propagations, alerts_explained) to agent_output.json in your work folder."
)


class SnapshotEnvironment:
    def __init__(
        self, scenario: Scenario, folder: str | Path, *, workdir: str | Path, masked: list[str] | None = None
    ) -> None:
        self.scenario = scenario
        self.folder = Path(folder)
        self.workdir = Path(workdir).resolve()
        self.masked = list(masked or [])
        self.private = Path(tempfile.mkdtemp(prefix="itbench-harness-"))
        self.twin: Any = None
        self.api: KubeApi | None = None
        self.meta: Any = None
        self.root: Path | None = None
        """The folder of snapshots this one was found in (hidden from sandboxed agents too)."""

    # ------------------------------------------------------------------ lifecycle
    def deploy(self) -> None:
        from ..twin.replay import replay_twin

        try:
            meta, recording = load_snapshot(self.folder)
        except SnapshotError as e:
            raise EnvironmentError_(f"snapshot: {e}") from e
        if meta is None or meta.scenario_id != self.scenario.id:
            found = meta.scenario_id if meta else "no snapshot.json"
            raise EnvironmentError_(f"snapshot {self.folder}: recorded {found}, not {self.scenario.id}")
        self.meta = meta
        try:
            self.twin = replay_twin(recording)
        except Exception as e:
            raise EnvironmentError_(f"snapshot {self.folder}: {type(e).__name__}: {e}") from e
        self.twin.admin_token = secrets.token_urlsafe(24)
        endpoints = self.twin.serve(self.private)
        self.api = KubeApi(endpoints.kube_url, token=self.twin.admin_token)

    @property
    def endpoints(self) -> Any:
        return self.twin.endpoints

    def now(self) -> float:
        return float(self.twin.now())

    def inject(self) -> list[str]:
        """Nothing: the faults are in the recording."""
        return []

    def check_alerts(self) -> AlertCheck:
        hit, miss = match_expected(self.scenario.alerts, firing_alerts(self.endpoints.prometheus_url))
        return AlertCheck(hit, miss)

    def wait_for_alerts(self) -> AlertCheck:
        """The recorded alerts (a snapshot does not wait)."""
        return self.check_alerts()

    def task(self, limits: Limits) -> Task:
        """A read-only credential in both of the agent's kubeconfigs, the endpoints less the masked
        sources, and a goal that asks for a diagnosis only."""
        assert self.api is not None
        namespaces = self.scenario.task_namespaces
        _, reader = grant_agent_access(self.api, namespaces, write=False)
        creds = write_agent_kubeconfigs(self.endpoints.kubeconfig, namespaces, self.workdir, reader, reader)
        agent_endpoints = self.endpoints.model_copy(
            update={
                "kubeconfig": str(creds.kubeconfig),
                "kubeconfig_readonly": str(creds.kubeconfig_readonly),
                **{field: None for source in self.masked for field in MASKED_FIELDS.get(source, ())},
            }
        )
        agent_endpoints.write(self.workdir / "endpoints.json")
        return Task(
            goal=SNAPSHOT_GOAL.format(namespace=in_namespaces(namespaces)),
            kind="diagnosis",
            persona=self.scenario.persona,
            endpoints=agent_endpoints,
            workdir=str(self.workdir),
            limits=limits,
            namespaces=namespaces,
            masked=self.masked,
            on_twin=False,
        )

    def settle(self) -> None:
        """Nothing happens in a snapshot."""

    def evaluate(self) -> MitigationScore:
        return MitigationScore(
            applicable=False,
            reason="a snapshot is read-only: mitigation is not scored",
        )

    def topology(self) -> Topology:
        """The recorded objects and call graph; the objects that existed when the alerts fired and
        the ReplicaSets made since the faults, as recorded."""
        assert self.api is not None
        edges = [(ns, a, b) for ns, a, b in self.meta.call_edges]
        topo = topology_over_api(self.api, self.scenario.task_namespaces, edges)
        return episode_topology(topo, set(self.meta.fault_objects), set(self.meta.replicasets_before))

    def private_paths(self) -> list[str]:
        """Folders a sandboxed agent must not see: the snapshot's (its ground truth is there)."""
        return [str(p.resolve()) for p in (self.folder, self.root) if p is not None]

    def privileged_context(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "kube_url": self.endpoints.kube_url,
            "now": lambda: _dt.datetime.fromtimestamp(self.now(), _dt.UTC),
        }

    def teardown(self) -> None:
        if self.api is not None:
            self.api.session.close()
        if self.twin is not None:
            self.twin.close()
        shutil.rmtree(self.private, ignore_errors=True)


def from_spec(spec: Any, workdir: Path) -> SnapshotEnvironment:
    """The harness's factory (``EpisodeSpec.environment``): the snapshot of ``spec.scenario``
    under ``$ITBENCH_SNAPSHOTS``."""
    root = os.environ.get(SNAPSHOTS_ENV)
    if not root:
        raise EnvironmentError_(f"${SNAPSHOTS_ENV} names no snapshot folder")
    found = find_snapshots(Path(root))
    folder = found.get(spec.scenario.id)
    if folder is None:
        raise EnvironmentError_(f"{root}: no snapshot of {spec.scenario.id}")
    env = SnapshotEnvironment(spec.scenario, folder, workdir=workdir, masked=list(spec.masked))
    env.root = Path(root)
    return env
