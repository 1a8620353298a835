"""Harness benchmark: per-episode overhead, twin start with days of history, `scenarios validate
--all` and `scenarios audit --all` wall time, oracle episodes/min.

    uv run python benchmarks/harness.py            # everything but the audit
    uv run python benchmarks/harness.py --quick    # fewer scenarios, no validate --all
    uv run python benchmarks/harness.py --audit    # also `scenarios audit --all --jobs 2` (the judged strategies)
    uv run python benchmarks/harness.py --audit --reported   # ... and the same with the 5 reported ones too
    uv run python benchmarks/harness.py --finops   # FinOps cost incidents: overhead (alone, and 3 agents sharing), validate/audit --suite finops
    uv run python benchmarks/harness.py --executors   # episodes/min: worker processes vs a local Ray
    uv run python benchmarks/harness.py --shared   # 3 agents per scenario: a shared preparation vs one each
    uv run python benchmarks/harness.py --finops --repeat 3   # the overhead's episodes 3 times (a noisy machine)

Prints medians (the overhead also by harness phase: deploy, inject, alert wait, settle + evaluate...);
nothing is asserted (performance is measured here, not in tests).
Targets: overhead < 1 s per episode on the twin (churn and history on, as in every run; FinOps
episodes too, issue 16); twin start with 7 days of history < 1 s; validate --all < 3 min and audit
--all < 10 min on 2 cores; validate --suite finops < 3 min.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from itbench_agents.harness.batch import run_batch, start_run
from itbench_agents.harness.executors import Executor, ProcessExecutor
from itbench_agents.harness.records import AgentSpec, RunConfig
from itbench_agents.scenario.registry import ScenarioRegistry

REPO = Path(__file__).resolve().parents[1]
SMALL = [
    "sre/ad-failure-flag-v1",
    "sre/shipping-quote-addr-env-v1",
    "sre/ad-scaled-to-zero-v1",
    "sre/frontend-ingress-network-policy-v1",
    "sre/control-otel-demo-healthy-v1",
]

FINOPS_SMALL = [
    "finops/forgotten-load-test-v1",
    "finops/ad-idle-replicas-v1",
    "finops/runaway-report-cronjob-v1",
    "finops/accounting-hpa-scales-up-never-down-v1",
    "finops/cost-alert-threshold-too-low-v1",
]


PHASES = {
    "deployed": "deploy",
    "baseline": "baseline",
    "injected": "inject",
    "churn": "churn",
    "alerts": "alert wait",
    "task": "task",
    "agent_finished": "agent",
    "evaluated": "settle + evaluate",
    "persona_scores": "scores",
}
"""The harness phases an episode's trajectory marks (``env_event``), as the breakdown names them."""


def phase_times(run: Path) -> list[dict[str, float]]:
    """Per episode of ``run``: wall seconds from the previous mark to each phase's mark (the
    trajectory's ``t_wall``; what follows the last mark, the teardown and the records, is not in it).
    An episode that shared its preparation counts the whole preparation (its marks' clock starts
    again at the episode's own start)."""
    out = []
    for traj in sorted(run.glob("episodes/*/trajectory.jsonl")):
        prev, times = 0.0, {}
        for line in traj.read_text(encoding="utf-8").splitlines():
            ev = json.loads(line)
            label = PHASES.get(ev.get("phase", "")) if ev.get("type") == "env_event" else None
            if label is not None and ev["t_wall"] < prev:  # the episode's own process begins
                prev = 0.0
            if label is not None:
                times[label] = times.get(label, 0.0) + ev["t_wall"] - prev
                prev = ev["t_wall"]
        out.append(times)
    return out


def batch(
    agent: str | list[AgentSpec],
    scenarios: list[str],
    concurrency: int,
    trials: int = 1,
    cpu: list[float] | None = None,
    executor: Executor | None = None,
    phases: list[dict[str, float]] | None = None,
    share: bool = False,
) -> tuple[float, list]:  # type: ignore[type-arg]
    """Run a batch; with ``cpu`` (concurrency 1: episodes run in this process) append each episode's
    process CPU time (all threads: harness, twin servers, agent); with ``phases``, each episode's
    :func:`phase_times`; with ``share``, the agents of a scenario share its preparation."""
    reg = ScenarioRegistry.default()
    agents = [AgentSpec(name=agent)] if isinstance(agent, str) else agent
    with tempfile.TemporaryDirectory() as d:
        cfg = RunConfig(scenarios=scenarios, agents=agents, trials=trials)
        _, specs, _ = start_run(Path(d) / "run", cfg, reg)
        last = [time.process_time()]

        def on_record(rec: object, summary: object) -> None:
            now = time.process_time()
            if cpu is not None:
                cpu.append(now - last[0])
            last[0] = now

        t0 = time.perf_counter()
        s = run_batch(
            Path(d) / "run",
            specs,
            concurrency=concurrency,
            on_record=on_record,
            executor=executor,
            share_prepared=share,
        )
        wall = time.perf_counter() - t0
        if phases is not None:
            phases.extend(phase_times(Path(d) / "run"))
        return wall, s.records


def _burn(_: int) -> float:
    t = time.perf_counter()
    x = 0
    for i in range(10_000_000):
        x += i
    return time.perf_counter() - t


def machine_parallelism() -> float:
    """Speed-up of 2 pure-CPU processes over 1 on this machine right now (2.0 = two free cores)."""
    import multiprocessing

    one = _burn(0)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        t = time.perf_counter()
        pool.map(_burn, [0, 1])
        two = time.perf_counter() - t
    return 2 * one / two


def twin_start_s(history_s: float, repeats: int = 3) -> list[float]:
    """Wall seconds to build an otel-demo twin with ``history_s`` of pre-history and a past
    (old revisions, as every episode with churn has), median over ``repeats`` seeds."""
    from itbench_agents.twin.instance import Twin

    times = []
    for seed in range(repeats):
        t = time.perf_counter()
        twin = Twin.for_app("otel-demo", seed=seed, history_s=history_s, past=True)
        times.append(time.perf_counter() - t)
        twin.close()
    return times


def timed_cli(*args: str) -> tuple[float, str, int]:
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "itbench_agents.cli", *args], cwd=REPO, capture_output=True, text=True
    )
    last = ((r.stderr.strip() or r.stdout.strip()).splitlines() or ["?"])[-1]
    return time.perf_counter() - t0, last, r.returncode


def overhead(label: str, scenarios: list[str], repeat: int = 1) -> None:
    """The overhead of ``scenarios``' noop episodes after one episode of the first (the first in a
    process pays the imports: reported apart, as a run pays it once per worker); with ``repeat``,
    the batch that many times, and also each scenario's least disturbed episode (a shared machine's
    neighbours move single figures by a quarter)."""
    _, first = batch("noop", scenarios[:1], 1)
    cpu: list[float] = []
    phases: list[dict[str, float]] = []
    recs = []
    for _ in range(repeat):
        recs += batch("noop", scenarios, 1, cpu=cpu, phases=phases)[1]
    over = [r.timing.harness_overhead_s for r in recs]
    print(
        f"harness overhead per episode ({label}, noop agent, {len(recs)} episodes, twin, excl. agent): "
        f"median {statistics.median(over):.2f} s, max {max(over):.2f} s  (target < 1 s); "
        f"the first episode in a process, with its imports: {first[0].timing.harness_overhead_s:.2f} s"
    )
    if repeat > 1:
        least = {s: min(r.timing.harness_overhead_s for r in recs if r.scenario_id == s) for s in scenarios}
        print(
            f"  each scenario's least disturbed of {repeat}: median {statistics.median(least.values()):.2f} s  ("
            + ", ".join(f"{s.split('/')[-1]} {v:.2f}" for s, v in least.items())
            + ")"
        )
    print(
        f"  CPU time per episode (process time, all threads; independent of other load on the machine): "
        f"median {statistics.median(cpu):.2f} s, max {max(cpu):.2f} s"
    )
    parts = [f"{n} {statistics.median(p.get(n, 0.0) for p in phases):.2f}" for n in PHASES.values()]
    print("  where it goes (median wall s per phase, from the trajectories): " + ", ".join(parts))
    bad = [r for r in recs if r.termination != "submitted"]
    if bad:
        print(
            f"  note: {len(bad)} episode(s) did not submit: {[(r.scenario_id, r.termination, r.error) for r in bad]}"
        )


def shared(label: str, scenarios: list[str], pairs: int = 2) -> None:
    """Three agents per scenario (noop, labelled apart) on one worker process: each scenario's
    preparation shared by its three episodes (``itbench run``'s default with worker processes) vs
    one preparation per episode, one after the other (``pairs`` times)."""
    agents = [AgentSpec(name="noop", label=f"noop-{i}") for i in (1, 2, 3)]
    for _ in range(pairs):
        for share in (False, True):
            wall, recs = batch(agents, scenarios, 1, executor=ProcessExecutor(1), share=share)
            over = [r.timing.harness_overhead_s for r in recs]
            print(
                f"{label}, 3 agents x {len(scenarios)} scenarios on one worker process, "
                f"{'one shared preparation per scenario' if share else 'a preparation per episode'}: "
                f"{wall:.1f} s wall, harness overhead per episode median {statistics.median(over):.2f} s "
                f"(with its share of the preparation; target < 1 s)"
            )


def finops(audit: bool, repeat: int) -> None:
    overhead("FinOps cost incidents", FINOPS_SMALL, repeat)
    shared("FinOps cost incidents", FINOPS_SMALL, pairs=1)
    wall, last, rc = timed_cli("scenarios", "validate", "--suite", "finops", "--jobs", "2")
    print(
        f"itbench scenarios validate --suite finops --jobs 2: {wall:.1f} s wall ({last}; exit {rc})  (target < 180 s)"
    )
    if audit:
        wall, last, rc = timed_cli("scenarios", "audit", "--suite", "finops", "--jobs", "2")
        print(f"itbench scenarios audit --suite finops --jobs 2: {wall:.1f} s wall ({last}; exit {rc})")


def executors(quick: bool) -> None:
    """Oracle episodes/min at concurrency 2 on worker processes (writing the run folder, and
    shipping their folders back) and on a local Ray (issue 18), in this process, same scenarios."""
    from itbench_agents.harness.ray_executor import RayExecutor, import_ray

    trials = 2 if quick else 4
    ray = import_ray()
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False)
    ray_start = time.perf_counter() - t0
    try:
        for label, ex in (
            ("processes", ProcessExecutor(2)),
            ("processes-shipped", ProcessExecutor(2, ship_artifacts=True)),
            ("ray (local, started)", RayExecutor(2)),
        ):
            wall, recs = batch("oracle", SMALL, 2, trials=trials, executor=ex)
            ok = sum(1 for r in recs if r.diagnosis and r.diagnosis.correct)
            print(
                f"executor {label}, concurrency 2: {len(recs)} episodes in {wall:.1f} s = "
                f"{len(recs) / wall * 60:.1f} episodes/min (diagnosis correct {ok}/{len(recs)})"
            )
    finally:
        t0 = time.perf_counter()
        ray.shutdown()
        print(f"local Ray: start {ray_start:.1f} s, shutdown {time.perf_counter() - t0:.1f} s (once per run)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--audit", action="store_true", help="also time `scenarios audit --all --jobs 2`")
    ap.add_argument(
        "--reported",
        action="store_true",
        help="with --audit: also time the audit with --reported (no target)",
    )
    ap.add_argument(
        "--finops",
        action="store_true",
        help="only the FinOps cost incidents: overhead, validate --suite finops (and with --audit its audit)",
    )
    ap.add_argument(
        "--shared",
        action="store_true",
        help="only 3 agents per scenario, SRE and FinOps: a shared preparation vs one per episode",
    )
    ap.add_argument(
        "--executors",
        action="store_true",
        help="only oracle episodes/min on worker processes vs a local Ray (concurrency 2)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run the overhead's episodes N times; also print each scenario's least disturbed one",
    )
    args = ap.parse_args()
    if args.executors:
        executors(args.quick)
        return
    if args.finops:
        finops(args.audit, args.repeat)
        return
    if args.shared:
        shared("FinOps cost incidents", FINOPS_SMALL)
        shared("SRE", SMALL)
        return

    for label, history_s in (("1 hour", 3600.0), ("7 days", 7 * 86400.0)):
        times = twin_start_s(history_s)
        print(
            f"twin start (otel-demo, {label} of history, with a past): median {statistics.median(times):.2f} s, "
            f"max {max(times):.2f} s over {len(times)} seeds"
            + ("  (target < 1 s)" if label == "7 days" else "")
        )
    scenarios = SMALL[:3] if args.quick else SMALL

    overhead("SRE", scenarios, args.repeat)

    rates = {}
    for c in (1, 2):
        wall, recs = batch("oracle", scenarios, c, trials=2 if args.quick else 4)
        rates[c] = len(recs) / wall * 60
        ok = sum(1 for r in recs if r.diagnosis and r.diagnosis.correct)
        print(
            f"oracle, concurrency {c}: {len(recs)} episodes in {wall:.1f} s = {rates[c]:.1f} episodes/min "
            f"(diagnosis correct {ok}/{len(recs)})"
        )
    print(
        f"speed-up concurrency 2 vs 1: {rates[2] / rates[1]:.2f}x "
        f"(this machine's pure-CPU 2-process speed-up right now: {machine_parallelism():.2f}x)"
    )

    if not args.quick:
        wall, last, rc = timed_cli("scenarios", "validate", "--all", "--jobs", "2")
        print(
            f"itbench scenarios validate --all --jobs 2: {wall:.1f} s wall ({last}; exit {rc})  (target < 180 s)"
        )
    if args.audit:
        wall, last, rc = timed_cli("scenarios", "audit", "--all", "--jobs", "2")
        print(
            f"itbench scenarios audit --all --jobs 2: {wall:.1f} s wall ({last}; exit {rc})  (target < 600 s)"
        )
        if args.reported:
            wall, last, rc = timed_cli("scenarios", "audit", "--all", "--jobs", "2", "--reported")
            print(f"itbench scenarios audit --all --jobs 2 --reported: {wall:.1f} s wall ({last}; exit {rc})")


if __name__ == "__main__":
    main()
