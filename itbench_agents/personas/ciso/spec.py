"""A CISO compliance scenario (``scenarios/ciso/<class>/*.yaml``): a CIS control, a namespace with a
workload that violates it, a compliant variant of the same workload, and the reference policy that
only the oracle and validation see.

The paper's classes (ITBench §3.1): ``kyverno`` (write a new Kyverno policy for the control),
``kyverno-update`` (edit the deployed ClusterPolicies — ``existing`` — so that the one named ``edit``
also enforces the control, without creating, renaming or changing the others) and ``k8s-opa`` (write
a kubectl script that collects the evidence into ``collected_data.json`` and a Rego policy whose
``data.check.result`` is false on a violation; the reference is ``fetcher`` + ``rego``) and
``rhel-opa`` (the same on a RHEL 9 host: an Ansible playbook collects the evidence; the host's
state comes from ``host`` and ``host_compliant``, RHEL host twin specs laid over a stock RHEL 9.4;
the reference is ``playbook`` + ``rego``).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ...twin.host.spec import HostSpec

Obj = dict[str, Any]
CISO_ID = re.compile(r"^ciso/[a-z0-9][a-z0-9-]*-v\d+$")
CIS_ID = re.compile(r"^5\.\d+\.\d+$")
CIS_RHEL_ID = re.compile(r"^\d+(\.\d+){1,3}$")
WORKLOAD_KINDS = ("Pod", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicaSet")

# the paper's Kyverno goal template, as far as its fragments are published (ITBench
# playbooks/goal.yml; ../shared/reference/itbench.md §3.3), wording and typos kept
KYVERNO_GOAL = (
    "I would like to check if the following condition is satisfiled, given a Kubernetes cluster with "
    "`kubeconfig.yaml`\n    {control}\n\nTo check the condition, do the following steps.\n"
    "- deploy a Kyverno policy to the cluster\n- chcek if the policy is correctly deployed.\n\n"
    "The cluster's kubeconfig is at `{kubeconfig}`.\n"
)

# the paper's K8s-OPA goal, composed from its published fragments (itbench.md §3.3) in the Kyverno
# template's frame; the Rego convention (package check, rule result) and the namespace are stated
# because the evaluator depends on them (ITBench's agent gets them from its tool prompts)
K8S_OPA_GOAL = (
    "I would like to check if the following condition is satisfiled, given a Kubernetes cluster with "
    "`kubeconfig.yaml`\n    {control}\n\nTo check the condition, do the following steps.\n"
    "- get related resource(s) on the cluster by kubectl command\n"
    "- chcek if the conditions are satisfied by OPA Rego policy\n\n"
    "for those steps, you need to create an OPA Rego policy `policy.rego` (package `check`, a rule "
    "`result` that is true when the condition is satisfied and false when it is not). Also, save the "
    "kubectl command as `script.sh`; it must write the collected resources to `collected_data.json`, "
    "which is the policy's input. Remove any kubeconfig configuration (e.g. --kubeconfig args) from "
    "the script: it runs with $KUBECONFIG set. The workloads to check are in namespace `{namespace}`.\n\n"
    "The cluster's kubeconfig is at `{kubeconfig}`. Save `script.sh`, `policy.rego` and "
    "`collected_data.json` in `{workdir}`.\n"
)

# the paper's RHEL goal (itbench.md §3.3: "given a host name `rhel9_servers`, on RHEL by using Ansible
# Playbook and OPA Rego policy ... create ansible playbook `playbook.yml` and OPA rego policy
# `policy.rego` ... `collected_data.json` ... inventory"), in the same frame as K8S_OPA_GOAL
RHEL_OPA_GOAL = (
    "I would like to check if the following condition is satisfiled, given a host name `rhel9_servers`, "
    "on RHEL by using Ansible Playbook and OPA Rego policy\n    {control}\n\n"
    "To check the condition, do the following steps.\n"
    "- collect configuration from the RHEL host by Ansible Playbook\n"
    "- chcek if the conditions are satisfied by OPA Rego policy\n\n"
    "for those steps, you need to create ansible playbook `playbook.yml` and OPA rego policy "
    "`policy.rego` (package `check`, a rule `result` that is true when the condition is satisfied and "
    "false when it is not). The playbook must save the collected data to `collected_data.json` in the "
    "playbook's folder, which is the policy's input; it is run as `ansible-playbook -i <inventory> "
    "playbook.yml`.\n\nThe inventory is at `{inventory}` (group `rhel9_servers`). Save `playbook.yml`, "
    "`policy.rego` and `collected_data.json` in `{workdir}`.\n"
)

UPDATE_GOAL = (
    "Currently, the following Kyverno policies are deployed in the cluster:\n{policies}\n\n"
    "Please edit them to meet additional security requirements. Please avoid creating new policy "
    "resources; instead, update the existing ones.\n\nThe additional requirement:\n    {control}\n\n"
    "Do not change the resource names. The cluster's kubeconfig is at `{kubeconfig}`.\n"
)


class CisoScenario(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str
    persona: Literal["ciso"] = "ciso"
    task_class: Literal["kyverno", "kyverno-update", "k8s-opa", "rhel-opa"] = Field(alias="class")
    name: str
    description: str
    cis: list[str] = Field(min_length=1)
    """CIS Kubernetes Benchmark ids (v1.9 numbering, as ITBench's "5.2.5 = host network"); for
    ``rhel-opa`` CIS RHEL 9 v1.0.0 ids (ITBench's "5.2.12 = SSH X11 forwarding")."""
    control: str
    """The control's text, as the goal states it."""
    namespace: str = ""
    violating: list[Obj] = Field(default_factory=list)
    """The injected workload(s) that violate the control; their reports are what the scorer reads."""
    compliant: list[Obj] = Field(default_factory=list)
    """The same workload(s), compliant (plus any object that makes them so, e.g. a NetworkPolicy):
    a right policy reports no failure for them."""
    reference: list[Obj] = Field(default_factory=list)
    """The reference Kyverno policy documents (oracle and validation only); for ``kyverno-update``
    the edited policy, which replaces the existing one of the same name. Empty for ``k8s-opa``."""
    fetcher: str | None = None
    """``k8s-opa``: the reference ``script.sh`` (kubectl, no kubeconfig arguments) that writes
    ``collected_data.json`` (oracle and validation only)."""
    rego: str | None = None
    """``k8s-opa``, ``rhel-opa``: the reference ``policy.rego`` (``package check``; ``result`` false
    on a violation)."""
    host: HostSpec | None = None
    """``rhel-opa``: the violating host, as changes to a stock RHEL 9.4 (``twin/host/spec.py``)."""
    host_compliant: HostSpec | None = None
    """``rhel-opa``: the compliant host, as changes to a stock RHEL 9.4."""
    playbook: str | None = None
    """``rhel-opa``: the reference ``playbook.yml`` that writes ``collected_data.json`` (oracle and
    validation only)."""
    existing: list[Obj] = Field(default_factory=list)
    """``kyverno-update``: the ClusterPolicies deployed before the agent starts."""
    edit: str | None = None
    """``kyverno-update``: the existing policy the new requirement belongs in."""
    complexity: Literal["easy", "medium", "hard"] = "easy"
    technologies: list[str] = Field(default_factory=lambda: ["kubernetes", "kyverno"])
    tags: list[str] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not CISO_ID.match(v):
            raise ValueError(f"id must look like 'ciso/<name>-v<N>' (lowercase, digits, dashes), got {v!r}")
        return v

    @field_validator("cis")
    @classmethod
    def _cis(cls, v: list[str], info: ValidationInfo) -> list[str]:
        if info.data.get("task_class") == "rhel-opa":
            bad = [c for c in v if not CIS_RHEL_ID.match(c)]
            if bad:
                raise ValueError(f"CIS RHEL 9 ids look like '5.2.12' or '1.6.1.4', got {bad}")
            return v
        bad = [c for c in v if not CIS_ID.match(c)]
        if bad:
            raise ValueError(f"CIS Kubernetes ids look like '5.2.5', got {bad}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> CisoScenario:
        if self.task_class == "rhel-opa":
            if self.violating or self.compliant or self.namespace or self.reference or self.fetcher:
                raise ValueError(
                    "a rhel-opa scenario's states are `host` and `host_compliant` (no workloads, "
                    "namespace, Kyverno policies or fetcher)"
                )
            if self.host is None or self.host_compliant is None or not self.playbook or not self.rego:
                raise ValueError(
                    "a rhel-opa scenario needs `host`, `host_compliant`, and the reference `playbook` and `rego`"
                )
            return self
        if self.host is not None or self.host_compliant is not None or self.playbook:
            raise ValueError("only rhel-opa scenarios have `host`, `host_compliant` and `playbook`")
        if not self.namespace or not self.violating or not self.compliant:
            raise ValueError("a Kubernetes scenario needs `namespace`, `violating` and `compliant`")
        for field, docs in (("violating", self.violating), ("compliant", self.compliant)):
            for doc in docs:
                meta = doc.get("metadata") or {}
                if not doc.get("kind") or not doc.get("apiVersion") or not meta.get("name"):
                    raise ValueError(f"{field}: every document needs apiVersion, kind and metadata.name")
                if meta.get("namespace", self.namespace) != self.namespace:
                    raise ValueError(
                        f"{field}: {doc['kind']} {meta['name']} is outside namespace {self.namespace}"
                    )
        if _keys(self.violating) != _keys(self.compliant):
            raise ValueError("compliant must hold the same workloads (kind and name) as violating")
        if not self.targets():
            raise ValueError(
                f"violating needs a workload ({', '.join(WORKLOAD_KINDS)}): the scorer reads its reports"
            )
        if self.task_class == "k8s-opa":
            if self.reference or not self.fetcher or not self.rego:
                raise ValueError(
                    "a k8s-opa scenario's reference is `fetcher` and `rego`, not policy documents"
                )
            if "--kubeconfig" in self.fetcher:
                raise ValueError("the reference fetcher must not name a kubeconfig (the goal forbids it)")
        elif not self.reference or self.fetcher or self.rego:
            raise ValueError(
                "a Kyverno scenario's reference is Kyverno policy documents (no fetcher or rego)"
            )
        for doc in [*self.reference, *self.existing]:
            if doc.get("apiVersion") != "kyverno.io/v1" or doc.get("kind") not in ("ClusterPolicy", "Policy"):
                raise ValueError(
                    "reference and existing documents are kyverno.io/v1 ClusterPolicy or Policy objects"
                )
        if self.task_class == "kyverno-update":
            names = [(d.get("metadata") or {}).get("name") for d in self.existing]
            if not self.existing or self.edit not in names:
                raise ValueError("a kyverno-update scenario names in `edit` one of its `existing` policies")
            if [(d.get("metadata") or {}).get("name") for d in self.reference] != [self.edit]:
                raise ValueError("a kyverno-update scenario's reference is the edited policy alone")
        elif self.existing or self.edit:
            raise ValueError("only kyverno-update scenarios have existing policies to edit")
        return self

    def final_reference(self) -> list[Obj]:
        """The policies in the cluster after the reference solution: for ``kyverno-update`` the
        existing ones with the edited policy replaced."""
        if self.task_class != "kyverno-update":
            return list(self.reference)
        return [self.reference[0] if _name(d) == self.edit else d for d in self.existing]

    def goal(self, kubeconfig: str, workdir: str = ".", inventory: str = "inventory.ini") -> str:
        if self.task_class == "rhel-opa":
            return RHEL_OPA_GOAL.format(control=self.control, inventory=inventory, workdir=workdir)
        if self.task_class == "k8s-opa":
            return K8S_OPA_GOAL.format(
                control=self.control, kubeconfig=kubeconfig, namespace=self.namespace, workdir=workdir
            )
        if self.task_class == "kyverno-update":
            deployed = "\n".join(f"- {_name(d)}" for d in self.existing)
            return UPDATE_GOAL.format(policies=deployed, control=self.control, kubeconfig=kubeconfig)
        return KYVERNO_GOAL.format(control=self.control, kubeconfig=kubeconfig)

    def targets(self) -> list[tuple[str, str, str, str]]:
        """(apiVersion, kind, namespace, name) of the injected workloads the scorer looks up."""
        return [
            (d["apiVersion"], d["kind"], self.namespace, d["metadata"]["name"])
            for d in self.violating
            if d.get("kind") in WORKLOAD_KINDS
        ]


def _name(doc: Obj) -> str:
    return str((doc.get("metadata") or {}).get("name", ""))


def _keys(docs: list[Obj]) -> list[tuple[str, str]]:
    """The workloads of ``docs`` (the compliant variant may add other objects, e.g. a NetworkPolicy)."""
    return sorted(
        (str(d.get("kind")), str((d.get("metadata") or {}).get("name")))
        for d in docs
        if d.get("kind") in WORKLOAD_KINDS
    )
