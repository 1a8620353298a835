"""The process that holds an interactive problem: one episode of the harness, run as `itbench run`
runs it (deploy, baseline, churn, fault, alert wait, the agent's credential; then settle, end-state
checks, the signed record), whose agent is ``agent.InteractiveAgent``. `itbench problem start`
starts it detached (``python -m itbench_agents.problem.server FOLDER``); SIGTERM (`problem stop`)
tears the environment down and records nothing."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

from ..core.task import Limits
from ..harness.batch import BatchInterrupted, interrupt_on_signals, run_batch, start_run
from ..harness.catalogue import Catalogue
from ..harness.records import AgentSpec, RunConfig
from ..scenario.registry import add_scenario_dirs
from .state import ProblemDir, ProblemRequest, ProblemResult

AGENT = "itbench_agents.problem.agent:make_agent"
LABEL = "interactive"


def run_config(request: ProblemRequest, problem: ProblemDir) -> RunConfig:
    return RunConfig(
        scenarios=[request.scenario],
        agents=[AgentSpec(name=AGENT, label=LABEL, options={"problem_dir": str(problem.root)})],
        base_seed=request.seed,
        masked=request.masked,
        limits=Limits(wall_time_s=request.wall_time_s),
        history_s=request.history_s,
        churn="none" if request.churn == "none" else "default",
        scenario_dirs=request.scenario_dirs,
    )


def serve(problem: ProblemDir) -> int:
    interrupt_on_signals()
    request = problem.request()
    if request is None:
        print(f"error: {problem.request_file} is missing or unreadable", file=sys.stderr)
        return 2
    result = ProblemResult(run_dir=request.run_dir)
    try:
        add_scenario_dirs(request.scenario_dirs)
        _, specs, _ = start_run(Path(request.run_dir), run_config(request, problem), Catalogue.default())
        run_batch(request.run_dir, specs)
        result.episode_id = specs[0].episode_id
    except BatchInterrupted:
        result.failure = "stopped before anything was submitted (`itbench problem stop`)"
    except Exception as e:  # recorded for `problem start/submit`, which print it
        traceback.print_exc()
        result.failure = f"{type(e).__name__}: {e}"
    problem.write(problem.result_file, result)
    return 0 if result.failure is None else 1


def main() -> None:
    if len(sys.argv) != 2:
        print("usage: python -m itbench_agents.problem.server PROBLEM_FOLDER", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(serve(ProblemDir(Path(sys.argv[1]))))


if __name__ == "__main__":
    main()
