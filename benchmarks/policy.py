"""Kyverno engine benchmarks (issue 28): prints numbers, asserts nothing.

1. Background scan: 30 policies (upstream's pod-security and best-practices ClusterPolicies, pattern
   and CEL flavours) over 1,000 Pods and Deployments — the work a report controller does after a
   policy change. Target < 2 s.
2. Admission: 50 policies on one request at a time, per-request latency p50 / p95. Target p50 < 5 ms.
3. The same two through the twin's Kyverno addon: a full rescan into PolicyReports (store writes
   included) after a policy change, and the resource webhook's latency per request.
4. ``itbench scenarios validate --suite ciso --jobs 2``: every CISO scenario proven on the twin.
   Target < 2 min on 2 cores. Then the same work in one process, one scenario at a time, by class
   (a rhel-opa scenario is two runs of ``ansible-playbook``: most of its time is Ansible's own).
5. CISO episodes through the harness (oracle, noop, ciso-catalogue on every scenario): wall time
   and per-episode median.
6. Rego decisions per second (issue 29): ITBench's `data.check.result` over a 100-pod kubectl list,
   through the twin's engine (regorus in its worker process, time and memory limits, a fresh
   engine per decision), beside regorus called in this process (no isolation) as the baseline.
7. A 10-task playbook run by real ``ansible-playbook`` against the RHEL host twin (issue 29),
   beside the same playbook with ``connection: local`` on this machine as the baseline (read-only
   tasks). Target < 5 s.

    uv run python benchmarks/policy.py                       # both, policies from ../shared
    uv run python benchmarks/policy.py --resources 200 --repeat 1
    uv run python benchmarks/policy.py --only rego
    uv run python benchmarks/policy.py --only playbook
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from itbench_agents.twin.addons.kyverno.engine import Admission, apply_policy

SHARED = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "kyverno" / "policies"


def load_policies(n: int) -> list[dict[str, Any]]:
    if not SHARED.is_dir():
        sys.exit(f"policies not found: {SHARED} (the ../shared folder beside the checkout)")
    found: list[dict[str, Any]] = []
    for folder in ("pod-security", "best-practices", "pod-security-cel", "best-practices-cel"):
        for f in sorted((SHARED / folder).rglob("*.yaml")):
            if ".kyverno-test" in f.parts:
                continue
            for doc in yaml.safe_load_all(f.read_text()):
                if isinstance(doc, dict) and doc.get("kind") == "ClusterPolicy":
                    found.append(doc)
    if not found:
        sys.exit("no ClusterPolicy found")
    return [found[i % len(found)] for i in range(n)]


def make_resources(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        container: dict[str, Any] = {
            "name": f"c{i}",
            "image": rng.choice(
                ["nginx:1.27", "ghcr.io/acme/app:latest", "busybox", "registry.k8s.io/pause:3.9"]
            ),
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        }
        if rng.random() < 0.3:
            container["securityContext"] = {
                "privileged": rng.random() < 0.5,
                "runAsNonRoot": rng.random() < 0.5,
            }
        spec: dict[str, Any] = {"containers": [container], "hostNetwork": rng.random() < 0.1}
        meta = {
            "name": f"r{i}",
            "namespace": rng.choice(["default", "shop", "ops"]),
            "labels": {"app": f"a{i % 17}"},
        }
        if i % 2:
            out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
        else:
            out.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": meta,
                    "spec": {
                        "replicas": 1,
                        "template": {"metadata": {"labels": meta["labels"]}, "spec": spec},
                    },
                }
            )
    return out


def scan(policies: list[dict[str, Any]], resources: list[dict[str, Any]]) -> tuple[float, int]:
    t0 = time.perf_counter()
    results = 0
    for r in resources:
        adm = Admission(obj=r)
        for p in policies:
            results += len(apply_policy(p, adm))
    return time.perf_counter() - t0, results


def admission_latencies(
    policies: list[dict[str, Any]], resources: list[dict[str, Any]], convert_each_time: bool = False
) -> list[float]:
    """Per-request milliseconds, sorted; ``convert_each_time``: no converted CEL context is reused."""
    from itbench_agents.twin.addons.kyverno import celrules

    cached = celrules.cached_activation
    if convert_each_time:
        celrules.cached_activation = lambda adm, template: (cached(adm, template)[0], None)  # type: ignore[assignment]
    try:
        out = []
        for r in resources:
            t0 = time.perf_counter()
            adm = Admission(obj=r)
            for p in policies:
                apply_policy(p, adm)
            out.append((time.perf_counter() - t0) * 1000)
    finally:
        celrules.cached_activation = cached
    return sorted(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--resources", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["rego", "playbook"], help="run one benchmark")
    args = ap.parse_args()
    if args.only == "rego":
        rego_numbers()
        return
    if args.only == "playbook":
        playbook_numbers(args.repeat)
        return

    policies = load_policies(30)
    resources = make_resources(args.resources)
    scan(policies[:2], resources[:10])  # warm: imports, compiled CEL programs
    times = []
    for _ in range(args.repeat):
        took, results = scan(policies, resources)
        times.append(took)
    print(
        f"background scan: {len(policies)} policies x {len(resources)} resources = {results} rule results; "
        f"median {statistics.median(times):.2f} s over {args.repeat} run(s) (target < 2 s)"
    )

    fifty = load_policies(50)
    latencies = admission_latencies(fifty, resources[:300])
    p95 = latencies[int(0.95 * (len(latencies) - 1))]
    print(
        f"admission, 50 policies per request: p50 {statistics.median(latencies):.2f} ms, p95 {p95:.2f} ms "
        f"over {len(latencies)} requests (target p50 < 5 ms)"
    )
    baseline = statistics.median(admission_latencies(fifty, resources[:300], convert_each_time=True))
    print(
        f"  baseline in this process, CEL activation converted at every evaluation (before cd48df1): "
        f"p50 {baseline:.2f} ms, {baseline / statistics.median(latencies):.2f}x the time"
    )

    addon_numbers(policies, fifty, resources)
    ciso_validation()
    ciso_episodes()
    rego_numbers()
    playbook_numbers(args.repeat)


HOST_NETWORK_REGO = """package check
import rego.v1

default result := false

result if {
  every pod in input.items {
    not pod.spec.hostNetwork
  }
}
"""


def rego_numbers(seconds: float = 3.0) -> None:
    import json

    import regorus

    from itbench_agents.twin.addons.opa.engine import RegoEngine

    pods = {"items": [{"metadata": {"name": f"p{i}"}, "spec": {"hostNetwork": i == 99}} for i in range(100)]}
    modules = {"policy.rego": HOST_NETWORK_REGO}
    engine = RegoEngine()
    try:
        assert engine.evaluate(modules, "data.check.result", input=pods).value is False  # warm, and right
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            engine.evaluate(modules, "data.check.result", input=pods)
            n += 1
        ours = n / (time.perf_counter() - t0)
    finally:
        engine.close()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        e = regorus.Engine()
        e.add_policy("policy.rego", HOST_NETWORK_REGO)
        e.set_input_json(json.dumps(pods))
        json.loads(e.eval_query_as_json("data.check.result"))
        n += 1
    direct = n / (time.perf_counter() - t0)
    print(
        f"Rego decisions (data.check.result over 100 pods): {ours:.0f}/s through the twin's engine; "
        f"baseline in this process, regorus called directly: {direct:.0f}/s ({direct / ours:.2f}x)"
    )


TEN_TASKS = """\
- hosts: {hosts}
  gather_facts: false
  tasks:
    - {{command: sshd -T, changed_when: false}}
    - {{command: systemctl is-enabled sshd, changed_when: false}}
    - {{command: rpm -q openssh-server, changed_when: false}}
    - {{command: sysctl -n kernel.randomize_va_space, changed_when: false}}
    - {{command: modprobe -n -v cramfs, changed_when: false}}
    - {{command: findmnt -kn /tmp, changed_when: false}}
    - {{stat: {{path: /etc/passwd}}}}
    - {{slurp: {{src: /etc/hostname}}}}
    - {{command: cat /etc/redhat-release, changed_when: false, failed_when: false}}
    - {{shell: "grep -c . /etc/group", changed_when: false}}
"""


def playbook_numbers(repeat: int) -> None:
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    from itbench_agents.twin.host.ansible import ServedHost, ansible_env, inventory_text, playbook_argv
    from itbench_agents.twin.host.host import HostTwin, host_sandbox_problem

    if host_sandbox_problem():
        print(f"playbook: skipped ({host_sandbox_problem()})")
        return

    def run(work: Path, inventory: str, hosts: str, ten_true: bool = False) -> float:
        (work / "inventory.ini").write_text(inventory)
        text = TEN_TASKS.format(hosts=hosts)
        if ten_true:
            text = (
                text.split("  tasks:\n")[0]
                + "  tasks:\n"
                + "    - {command: 'true', changed_when: false}\n" * 10
            )
        (work / "playbook.yml").write_text(text)
        t0 = time.perf_counter()
        r = subprocess.run(
            playbook_argv("playbook.yml", "inventory.ini"),
            cwd=work, env=ansible_env(dict(os.environ), work), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        took = time.perf_counter() - t0
        if "failed=0" not in r.stdout:
            raise SystemExit(f"playbook failed:\n{r.stdout[-3000:]}{r.stderr[-2000:]}")
        return took

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        twin_times, local_times = [], []
        with ServedHost(HostTwin.create(work / "host")) as served:
            for _ in range(repeat):
                twin_times.append(run(work, inventory_text([served]), "rhel9_servers"))
        local = "[local]\nlocalhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n"
        for _ in range(repeat):
            local_times.append(run(work, local, "local", ten_true=True))
        twin = statistics.median(twin_times)
        base = statistics.median(local_times)
        print(
            f"10-task playbook against the RHEL host twin: median {twin:.2f} s over {repeat} run(s) (target < 5 s); "
            f"baseline on this machine, 10 `command: true` tasks with connection local: {base:.2f} s "
            f"({twin / base:.2f}x)"
        )


def ciso_validation() -> None:
    """``itbench scenarios validate --suite ciso --jobs 2`` as a user runs it (the target is for 2
    cores), beside the same work in this process, one scenario after another, by class."""
    import subprocess
    from collections import defaultdict

    from itbench_agents.personas.ciso.library import ciso_library
    from itbench_agents.personas.ciso.validate import validate_ciso

    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "itbench_agents.cli", "scenarios", "validate", "--suite", "ciso", "--jobs", "2"],
        capture_output=True, text=True,
    )  # fmt: skip
    took = time.perf_counter() - t0
    last = (r.stdout.strip().splitlines() or ["?"])[-1]
    print(
        f"itbench scenarios validate --suite ciso --jobs 2: {took:.1f} s wall ({last}; exit {r.returncode}) (target < 2 min)"
    )
    by_class: dict[str, list[float]] = defaultdict(list)
    for scenario in ciso_library():
        t = time.perf_counter()
        validate_ciso(scenario)
        by_class[scenario.task_class].append(time.perf_counter() - t)
    parts = [f"{c} {len(v)} x {statistics.median(v):.2f} s" for c, v in sorted(by_class.items())]
    total = sum(sum(v) for v in by_class.values())
    print(f"  one process, one at a time: {total:.1f} s; median per scenario by class: " + ", ".join(parts))


def ciso_episodes() -> None:
    """`itbench run --suite ciso --agent oracle --agent noop --agent ciso-catalogue` in this process."""
    import tempfile

    from itbench_agents.harness.batch import run_batch, start_run
    from itbench_agents.harness.catalogue import Catalogue
    from itbench_agents.harness.records import AgentSpec, RunConfig

    catalogue = Catalogue.default()
    ids = [s.id for s in catalogue.select(suite="ciso")]
    agents = [AgentSpec(name=n) for n in ("oracle", "noop", "ciso-catalogue")]
    with tempfile.TemporaryDirectory() as d:
        _, specs, _ = start_run(Path(d) / "run", RunConfig(scenarios=ids, agents=agents), catalogue)
        t0 = time.perf_counter()
        summary = run_batch(Path(d) / "run", specs)
        took = time.perf_counter() - t0
    walls = sorted(r.wall_s for r in summary.records)
    print(
        f"CISO episodes: {summary.ran} ({len(ids)} scenarios x oracle, noop, ciso-catalogue) in {took:.1f} s, "
        f"median {statistics.median(walls):.2f} s per episode; strict {summary.compliance_pass}/"
        f"{summary.compliance_scored}, errors {summary.errors}"
    )


def addon_numbers(
    policies: list[dict[str, Any]], fifty: list[dict[str, Any]], resources: list[dict[str, Any]]
) -> None:
    from itbench_agents.twin.addons.base import AdmissionRequest
    from itbench_agents.twin.addons.kyverno.addon import REPORTS_GR
    from itbench_agents.twin.instance import Twin

    twin = Twin(seed=1)
    addon = twin.install_addon("kyverno")
    twin.advance(30)  # Kyverno's controllers become available
    namespaces = sorted({r["metadata"]["namespace"] for r in resources} - {"default"})
    twin.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces])
    twin.apply([_storable(r) for r in resources])
    unique = {p["metadata"]["name"]: p for p in policies}
    twin.apply(list(unique.values()))
    twin.sync()
    times = []
    for _ in range(3):
        addon._rescan_all = True
        t0 = time.perf_counter()
        addon.scan()
        times.append(time.perf_counter() - t0)
    reports = len(twin.store.list(REPORTS_GR))
    print(
        f"addon rescan: {len(unique)} distinct policies over {len(resources)} stored resources -> {reports} "
        f"PolicyReports; median {statistics.median(times):.2f} s (target < 2 s for 30 policies)"
    )
    latencies = []
    for r in resources[:300]:
        meta = r["metadata"]
        req = AdmissionRequest(
            "UPDATE", "" if r["kind"] == "Pod" else "apps", "v1", r["kind"],
            "pods" if r["kind"] == "Pod" else "deployments", meta["namespace"], meta["name"], r, r,
        )  # fmt: skip
        t0 = time.perf_counter()
        with contextlib.suppress(Exception):  # a denial is an answer too
            addon.resource_webhook(req)
        latencies.append((time.perf_counter() - t0) * 1000)
    latencies.sort()
    print(
        f"addon resource webhook, {len(unique)} policies in the cluster: p50 {statistics.median(latencies):.2f} ms, "
        f"p95 {latencies[int(0.95 * (len(latencies) - 1))]:.2f} ms over {len(latencies)} requests"
    )


def _storable(r: dict[str, Any]) -> dict[str, Any]:
    """What the API server accepts: Deployments with a selector (and no replicas to run), Pods on no node."""
    if r["kind"] != "Deployment":
        return r
    selector = {"matchLabels": r["spec"]["template"]["metadata"]["labels"]}
    return {**r, "spec": {**r["spec"], "replicas": 0, "selector": selector}}


if __name__ == "__main__":
    main()
