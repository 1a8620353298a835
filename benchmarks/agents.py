"""Agent benchmarks (issue 6): prints numbers, asserts nothing.

1. sre-heuristic on the full SRE library: diagnosis and mitigation pass rates, wall time.
2. scripted sre-react episodes (a fixed tool sequence, no model latency) on a sample of scenarios:
   median / max tokens per observation after summarisation (target: none over 2,000) and harness +
   tool overhead per step, excluding the model (target < 300 ms).

    uv run python benchmarks/agents.py                      # both parts
    uv run python benchmarks/agents.py --part heuristic --concurrency 2
    uv run python benchmarks/agents.py --part react --react-scenarios 'sre/*flag*'
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REACT_SAMPLE = [
    "sre/ad-scaled-to-zero-v1",
    "sre/cart-failure-flag-v1",
    "sre/checkout-network-delay-v1",
    "sre/product-catalog-deleted-service-v1",
    "sre/recommendation-crashing-init-container-v1",
    "sre/payment-failure-flag-v1",
    "sre/frontend-http-delay-v1",
    "sre/hotel-geo-scaled-to-zero-v1",
]

GENERIC_SCRIPT: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "alerts", "args": {}}]},
    {"tool_calls": [{"name": "topology", "args": {}}]},
    {"tool_calls": [{"name": "kubectl", "args": {"command": "get pods -o wide"}}]},
    {"tool_calls": [{"name": "kubectl", "args": {"command": "get events --sort-by=.lastTimestamp"}}]},
    {"tool_calls": [{"name": "kubectl", "args": {"command": "describe deployments"}}]},
    {
        "tool_calls": [
            {
                "name": "promql",
                "args": {
                    "query": 'sum by (service_name) (rate(traces_span_metrics_calls_total{status_code="STATUS_CODE_ERROR"}[5m]))',
                    "range": "30m",
                },
            }
        ]
    },  # fmt: skip
    {"tool_calls": [{"name": "promql", "args": {"query": "up"}}]},
    {
        "tool_calls": [
            {"name": "logql", "args": {"query": '{service_name=~".+"} |~ "(?i)error|fail"', "since": "30m"}}
        ]
    },
    {"tool_calls": [{"name": "traces", "args": {}}]},
    {"tool_calls": [{"name": "traces", "args": {"service": "frontend", "errors_only": True}}]},
    {
        "content": json.dumps(
            {"entities": [{"name": "otel-demo/Deployment/frontend", "contributing_factor": True}]}
        )
    },
    {"tool_calls": [{"name": "kubectl", "args": {"command": "get deployments"}}]},
    {"content": "No change made (benchmark script)."},
]


def itbench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-m", "itbench_agents.cli", *args], capture_output=True, text=True, env=env
    )


def episodes(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "episodes.jsonl"
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


def part_heuristic(concurrency: int, trials: int) -> None:
    run_dir = Path(tempfile.mkdtemp(prefix="bench-heuristic-"))
    t0 = time.perf_counter()
    res = itbench("run", "--suite", "sre", "--agent", "sre-heuristic", "--run-dir", str(run_dir), "--trials", str(trials),
                  "--concurrency", str(concurrency), "--no-report")  # fmt: skip
    wall = time.perf_counter() - t0
    eps = episodes(run_dir)
    if not eps:
        print(f"heuristic: no episodes ran (exit {res.returncode}): {res.stderr.strip()[-500:]}")
        return
    scored = [e for e in eps if e["termination"] == "submitted"]
    errors = [e for e in eps if e["termination"] != "submitted"]
    faults = [e for e in scored if not e.get("control")]
    diag_ok = sum(1 for e in scored if (e.get("diagnosis") or {}).get("correct"))
    mit = [e for e in scored if (e.get("mitigation") or {}).get("applicable")]
    mit_ok = sum(1 for e in mit if e["mitigation"]["passed"])
    agent_s = [e["timing"]["agent_wall_s"] for e in scored]
    print("== sre-heuristic, full SRE library ==")
    print(f"episodes: {len(eps)} ({len(scored)} scored, {len(errors)} not scored: "
          f"{sorted({e['termination'] for e in errors})}; {len(faults)} fault scenarios)")  # fmt: skip
    print(f"diagnosis pass rate:  {diag_ok}/{len(scored)} = {diag_ok / max(len(scored), 1):.1%}")
    fault_ok = sum(1 for e in faults if (e.get("diagnosis") or {}).get("correct"))
    print(f"  fault scenarios only: {fault_ok}/{len(faults)} = {fault_ok / max(len(faults), 1):.1%}")
    print(f"mitigation pass rate: {mit_ok}/{len(mit)} = {mit_ok / max(len(mit), 1):.1%}")
    missed = [e["scenario_id"] for e in scored if not (e.get("diagnosis") or {}).get("correct")]
    print(f"  diagnosis misses: {', '.join(missed) or '-'}")
    print(f"wall time: {wall:.1f} s total (concurrency {concurrency}); agent time per episode: "
          f"median {statistics.median(agent_s):.2f} s, max {max(agent_s):.2f} s")  # fmt: skip
    print(f"run folder: {run_dir}")


def part_react(scenarios: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-react-"))
    script = work / "generic.yaml"
    script.write_text(yaml.safe_dump(GENERIC_SCRIPT))
    run_dir = work / "run"
    args = [
        "run",
        "--agent",
        "sre-react",
        "--model",
        f"scripted:{script}",
        "--run-dir",
        str(run_dir),
        "--no-report",
    ]
    for s in scenarios:
        args += ["--scenario", s]
    res = itbench(*args)
    eps = episodes(run_dir)
    if not eps:
        print(f"react: no episodes ran (exit {res.returncode}): {res.stderr.strip()[-500:]}")
        return
    tokens: list[int] = []
    overhead: list[float] = []
    framework: list[float] = []
    for ep in eps:
        traj = run_dir / "episodes" / ep["episode_id"] / "trajectory.jsonl"
        if not traj.exists():
            continue
        events = [json.loads(line) for line in traj.read_text().splitlines() if line.strip()]
        tokens += [
            int(e.get("tokens", 0)) for e in events if e.get("type") == "observation" and "tokens" in e
        ]
        # one step = from the end of one model call to the end of the next; minus the model's own time
        calls = [i for i, e in enumerate(events) if e.get("type") == "model_call"]
        for a, b in zip(calls, calls[1:], strict=False):
            step = events[b]["t_wall"] - events[a]["t_wall"] - float(events[b].get("latency_s", 0.0))
            tool_s = 0.0
            pending: dict[str, float] = {}
            for e in events[a + 1 : b]:
                if e.get("type") == "tool_call":
                    pending[e.get("tool", "")] = e["t_wall"]
                elif e.get("type") == "observation" and e.get("tool", "") in pending:
                    tool_s += e["t_wall"] - pending.pop(e.get("tool", ""))
            overhead.append(step)
            framework.append(max(step - tool_s, 0.0))
    print("== sre-react, scripted episodes (direct tools) ==")
    print(f"episodes: {len(eps)} ({sorted({e['termination'] for e in eps})}), observations: {len(tokens)}")
    if tokens:
        over = sum(1 for t in tokens if t > 2000)
        print(
            f"tokens per observation: median {statistics.median(tokens):.0f}, max {max(tokens)}, over 2,000: {over}"
        )
    if overhead:
        ms = sorted(x * 1000 for x in overhead)
        print(f"harness + tool overhead per step (model excluded, {len(ms)} steps): median {statistics.median(ms):.0f} ms, "
              f"p90 {ms[int(0.9 * (len(ms) - 1))]:.0f} ms, max {ms[-1]:.0f} ms")  # fmt: skip
        fw = sorted(x * 1000 for x in framework)
        print(f"  of which agent framework (graph, prompts, events; tools excluded): median {statistics.median(fw):.0f} ms, "
              f"max {fw[-1]:.0f} ms")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--part", choices=["all", "heuristic", "react"], default="all")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--react-scenarios", nargs="*", default=REACT_SAMPLE)
    args = ap.parse_args()
    if args.part in ("all", "heuristic"):
        part_heuristic(args.concurrency, args.trials)
    if args.part in ("all", "react"):
        part_react(args.react_scenarios)


if __name__ == "__main__":
    main()
