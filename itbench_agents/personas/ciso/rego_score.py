"""Score a ``k8s-opa`` answer — a kubectl script and a Rego policy — by executing them, as ITBench's
evaluator does (itbench.md §3.5): run the script against the cluster (no kubeconfig arguments: it
gets ``$KUBECONFIG``), then ``opa eval --data policy.rego --input collected_data.json
data.check.result`` must be ``false`` on the violating environment and ``true`` on the compliant one.

Both runs happen on fresh environments the agent never touched, with a read-only credential, in the
agents' sandbox (``itbench_agents/sandbox.py``: bubblewrap where available) and within
:data:`SCRIPT_TIMEOUT_S` — the script is the agent's code. The four metrics are ITBench-Lite's:
``required_files_exist``, ``fetch_generates_data``, ``violation_detection``, ``compliance_validation``.
"""

from __future__ import annotations

import json
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...core.endpoints import kubeconfig_cluster, kubeconfig_yaml
from ...core.score import Score
from ...harness.access import grant_access
from ...k8s.client import KubeApi
from ...processes import wait_for_exit
from ...sandbox import (
    MARKER,
    bwrap_argv,
    harness_paths,
    hidden_options,
    kill_tree,
    resolve_mode,
    scrubbed_env,
    start_process,
)
from ...twin.addons.opa.engine import RegoError, shared_engine
from .access import read_rules
from .environment import Variant, bring_up
from .spec import CisoScenario

SCRIPT_TIMEOUT_S = 60.0
"""How long the agent's script may run (ITBench-Lite's evaluator allows 60 s)."""
SCRIPT_NAMES = ("script.sh", "fetcher.sh", "fetch.sh")
"""Where the script may be: the goal asks for ``script.sh``; ITBench's evaluator runs ``fetcher.sh``
(its agent copies the script there) and ITBench-Lite's ``fetch.sh``."""
OUTPUT_LIMIT = 16 * 1024 * 1024
"""The most of ``collected_data.json`` read (bytes)."""


@dataclass(frozen=True)
class Run:
    """One variant: did the script produce JSON, and what did the policy decide on it."""

    variant: Variant
    data_ok: bool
    decision: object = None
    """``True`` / ``False`` / another value; ``None`` when undefined or not reached."""
    why: str = ""


@dataclass(frozen=True)
class RegoScore:
    required_files_exist: bool
    files_why: str
    violating: Run | None = None
    compliant: Run | None = None

    @property
    def fetch_generates_data(self) -> bool:
        return bool(self.violating and self.violating.data_ok)

    @property
    def violation_detection(self) -> bool:
        """The paper's pass: the decision on the violating environment is exactly ``false``."""
        return bool(self.violating and self.violating.decision is False)

    @property
    def compliance_validation(self) -> bool:
        """The same script and policy say ``true`` on the compliant environment."""
        return bool(self.compliant and self.compliant.decision is True)

    @property
    def strict(self) -> bool:
        return self.violation_detection and self.compliance_validation


def find_answer(workdir: Path) -> tuple[str | None, str | None, str]:
    """(script, policy, why): the agent's ``script.sh`` (or ``fetcher.sh``) and ``policy.rego``."""
    script = next((workdir / n for n in SCRIPT_NAMES if (workdir / n).is_file()), None)
    policy = workdir / "policy.rego"
    missing = [n for n, p in (("script.sh", script), ("policy.rego", policy)) if p is None or not p.is_file()]
    if missing:
        return None, None, "missing: " + ", ".join(missing)
    assert script is not None
    for p in (script, policy):
        if p.is_symlink():
            return None, None, f"{p.name} is a symbolic link"
    return (
        script.read_text(errors="replace"),
        policy.read_text(errors="replace"),
        f"found {script.name} and policy.rego",
    )


def score_rego(
    scenario: CisoScenario,
    script: str | None,
    policy: str | None,
    *,
    seed: int = 0,
    timeout_s: float = SCRIPT_TIMEOUT_S,
) -> RegoScore:
    if script is None or policy is None:
        return RegoScore(
            False,
            "missing: "
            + ", ".join(n for n, v in (("script.sh", script), ("policy.rego", policy)) if v is None),
        )
    violating = run_variant(scenario, "violating", script, policy, seed=seed, timeout_s=timeout_s)
    compliant = run_variant(scenario, "compliant", script, policy, seed=seed, timeout_s=timeout_s)
    return RegoScore(True, "script.sh and policy.rego present", violating, compliant)


@dataclass(frozen=True)
class Collected:
    """What the script left on one variant: the evidence (parsed JSON), or why there is none."""

    variant: Variant
    evidence: object = None
    ok: bool = False
    why: str = ""


def collect(
    scenario: CisoScenario,
    variant: Variant,
    script: str,
    *,
    seed: int = 0,
    timeout_s: float = SCRIPT_TIMEOUT_S,
) -> Collected:
    """Bring up ``variant`` and run the script there with a read-only credential."""
    twin = bring_up(scenario, variant, seed=seed)
    with tempfile.TemporaryDirectory(prefix="itbench-ciso-eval-") as tmp:
        private, work = Path(tmp) / "private", Path(tmp) / "work"
        private.mkdir()
        work.mkdir()
        try:
            twin.admin_token = secrets.token_urlsafe(32)
            endpoints = twin.serve(private)
            api = KubeApi(endpoints.kube_url, token=twin.admin_token)
            token = grant_access(api, "ciso-evaluator", read_rules())
            server, ca = kubeconfig_cluster(endpoints.kubeconfig)
            kubeconfig = work / ".kubeconfig"
            kubeconfig.write_text(
                kubeconfig_yaml(
                    server, context="itbench", namespace=scenario.namespace, token=token, ca_data=ca
                )
            )
            kubeconfig.chmod(0o600)
            (work / "script.sh").write_text(script)
            why = run_script(work, kubeconfig, timeout_s)
        finally:
            twin.close()
        return read_collected(variant, work, why)


def read_collected(variant: Variant, work: Path, why: str = "") -> Collected:
    """The ``collected_data.json`` a script or playbook left in ``work`` (``why``: what went wrong
    running it, if anything)."""
    data_file = work / "collected_data.json"
    if not data_file.is_file() or data_file.is_symlink():
        return Collected(variant, why=f"{why}; no collected_data.json" if why else "no collected_data.json")
    if data_file.stat().st_size > OUTPUT_LIMIT:
        return Collected(variant, why=f"collected_data.json is over {OUTPUT_LIMIT} bytes")
    try:
        return Collected(variant, json.loads(data_file.read_text(errors="replace")), True)
    except json.JSONDecodeError as e:
        return Collected(variant, why=f"collected_data.json is not JSON: {e}")


def decide(collected: Collected, policy: str) -> Run:
    """``data.check.result`` of ``policy`` on the evidence (the twin's Rego engine)."""
    if not collected.ok:
        return Run(collected.variant, False, why=collected.why)
    try:
        result = shared_engine().evaluate(
            {"policy.rego": policy}, "data.check.result", input=collected.evidence
        )
    except RegoError as e:
        return Run(collected.variant, True, why=f"opa eval: {e}")
    if not result.defined:
        return Run(collected.variant, True, why="data.check.result is undefined")
    return Run(
        collected.variant, True, decision=result.value, why=f"data.check.result = {json.dumps(result.value)}"
    )


def run_variant(
    scenario: CisoScenario,
    variant: Variant,
    script: str,
    policy: str,
    *,
    seed: int = 0,
    timeout_s: float = SCRIPT_TIMEOUT_S,
) -> Run:
    """Bring up ``variant``, run the script there with a read-only credential, decide with the policy."""
    return decide(collect(scenario, variant, script, seed=seed, timeout_s=timeout_s), policy)


def run_script(work: Path, kubeconfig: Path, timeout_s: float = SCRIPT_TIMEOUT_S) -> str:
    """Run ``bash script.sh`` in ``work`` as the agents' sandbox runs a command agent; '' when it
    exited 0, else why it did not."""
    marker = secrets.token_hex(8)
    env = scrubbed_env({"KUBECONFIG": str(kubeconfig), MARKER: marker}, home=work)
    argv, options = ["bash", "script.sh"], b""
    if resolve_mode("auto") == "bwrap":
        argv, options = hidden_options(
            bwrap_argv(["bash", "script.sh"], workdir=work, env=env, hide=[str(p) for p in harness_paths()])
        )
    with (work / ".stdout").open("wb") as so, (work / ".stderr").open("wb") as se:
        proc = start_process(argv, options, cwd=work, env=env, stdout=so, stderr=se)
        try:
            rc = wait_for_exit(proc, timeout_s)
        finally:
            kill_tree(proc, marker)
            proc.wait()
        if rc is None:
            return f"script.sh ran longer than {timeout_s:g} s"
    if rc != 0:
        tail = (work / ".stderr").read_text(errors="replace").strip().splitlines()[-3:]
        return f"script.sh exited with status {rc}" + (f": {' / '.join(tail)}" if tail else "")
    return ""


REGO_SCORES = ("required_files_exist", "fetch_generates_data", "violation_detection", "compliance_validation")
"""ITBench-Lite's four metrics, recorded beside the persona's common ones."""


def rego_scores(result: RegoScore) -> dict[str, Score]:
    """The episode's scores: the CISO persona's common names (``detected`` = violation detection,
    ``compliant_clean`` = compliance validation, ``strict`` = both, ``generate_policy`` = the files
    exist, ``evidence_available`` = the script produced JSON) and ITBench-Lite's four."""
    v, c = result.violating, result.compliant
    files = Score(value=float(result.required_files_exist), explanation=result.files_why)
    data = Score(
        value=float(result.fetch_generates_data),
        explanation=(v.why if v and not v.data_ok else "the script wrote collected_data.json (JSON)")
        if v
        else result.files_why,
    )
    detect = Score(
        value=float(result.violation_detection),
        explanation=f"violating environment: {v.why}" if v else result.files_why,
    )
    validate = Score(
        value=float(result.compliance_validation),
        explanation=f"compliant environment: {c.why}" if c else result.files_why,
    )
    strict = Score(value=float(result.strict), explanation=f"{detect.explanation}; {validate.explanation}")
    return {
        "detected": detect,
        "compliant_clean": validate,
        "strict": strict,
        "generate_policy": files,
        "evidence_available": data,
        "required_files_exist": files,
        "fetch_generates_data": data,
        "violation_detection": detect,
        "compliance_validation": validate,
    }
