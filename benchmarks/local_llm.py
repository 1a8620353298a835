"""sre-react against a language model on your own OpenAI-compatible server (issue 17): prints pass
rates, model tokens per second and time per episode on a fixed subset of scenarios; asserts nothing.

Any server that speaks OpenAI's chat-completions protocol works: llama.cpp's ``llama-server``,
Ollama (``http://127.0.0.1:11434/v1``), vLLM. Nothing is downloaded; bring your own model.

    llama-server -m YOUR-MODEL.gguf --port 8080 --jinja        # in another shell
    uv run python benchmarks/local_llm.py --base-url http://127.0.0.1:8080/v1 --model local
    uv run python benchmarks/local_llm.py ... --text-tool-calls  # the server returns calls as text

``--text-tool-calls`` turns on sre-react's fallback that reads tool calls a model wrote as JSON in
its reply (``llm/text_tool_calls.py``); each use is a warning event in the trajectory and is
counted below. The run folder (``--run-dir``, default a temporary one) keeps every prompt and
response: ``itbench view RUN_DIR`` shows them, ``--replay-dir`` on a recorded run replays them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SUBSET = [
    "sre/ad-scaled-to-zero-v1",  # easy: a Deployment at zero replicas
    "sre/cart-failure-flag-v1",  # a feature flag turned on
    "sre/control-otel-demo-healthy-v1",  # nothing is wrong: the right answer is "no incident"
]


def model_calls(run_dir: Path, episode_id: str) -> list[dict[str, Any]]:
    path = run_dir / "episodes" / episode_id / "trajectory.jsonl"
    if not path.is_file():
        return []
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e for e in events if e.get("type") == "model_call"]


def warnings(run_dir: Path, episode_id: str, where: str) -> int:
    path = run_dir / "episodes" / episode_id / "trajectory.jsonl"
    if not path.is_file():
        return 0
    n = 0
    for line in path.read_text().splitlines():
        if line.strip():
            e = json.loads(line)
            n += e.get("type") in ("warning", "error") and e.get("where") == where
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--base-url", required=True, help="the server's OpenAI-compatible URL, e.g. http://127.0.0.1:8080/v1"
    )
    ap.add_argument("--model", required=True, help="the model name the server answers to")
    ap.add_argument("--api-key-env", help="environment variable holding the server's key, if it wants one")
    ap.add_argument(
        "--scenario", "-s", action="append", help=f"scenario id (repeatable; default: {', '.join(SUBSET)})"
    )
    ap.add_argument("--text-tool-calls", action="store_true", help="read tool calls written as JSON text")
    ap.add_argument("--wall-time", type=float, default=900.0, help="seconds per episode (default 900)")
    ap.add_argument("--max-steps", type=int, default=30)
    ap.add_argument("--run-dir", type=Path, help="keep the run here (default: a temporary folder)")
    args = ap.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    from itbench_agents.agents.base import AgentConfig
    from itbench_agents.agents.sre_react import preflight
    from itbench_agents.core.task import Limits
    from itbench_agents.harness.batch import run_batch, start_run
    from itbench_agents.harness.catalogue import Catalogue
    from itbench_agents.harness.records import AgentSpec, RunConfig
    from itbench_agents.harness.runfolder import read_episodes
    from itbench_agents.llm.models import ModelConfigError

    # litellm's OpenAI-compatible provider, whatever the server calls the model (vLLM: "Qwen/...")
    model = args.model if args.model.startswith("openai/") else f"openai/{args.model}"
    config: dict[str, Any] = {"base_url": args.base_url}
    if args.api_key_env:
        config["api_key_env"] = args.api_key_env
    options = {"text_tool_calls": "true"} if args.text_tool_calls else {}
    try:
        preflight(AgentConfig(model=model, **config))
    except ModelConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    run_dir = (args.run_dir or Path(tempfile.mkdtemp(prefix="itbench-local-llm-"))).resolve()
    cfg = RunConfig(
        scenarios=args.scenario or SUBSET,
        agents=[AgentSpec(name="sre-react", model=model, label="sre-react", config=config, options=options)],
        limits=Limits(wall_time_s=args.wall_time, max_steps=args.max_steps),
    )
    _, specs, _ = start_run(run_dir, cfg, Catalogue.default())
    print(f"{len(specs)} episodes of sre-react with {model} at {args.base_url} -> {run_dir}", flush=True)
    t0 = time.perf_counter()

    def progress(rec: Any, _: Any) -> None:
        calls = model_calls(run_dir, rec.episode_id)
        print(
            f"  {rec.scenario_id}: {rec.termination}, diagnosis {'ok' if rec.diagnosis and rec.diagnosis.correct else 'wrong'}, "
            f"mitigation {'-' if not rec.mitigation or not rec.mitigation.applicable else ('ok' if rec.mitigation.passed else 'failed')}, "
            f"{len(calls)} model calls, {rec.wall_s:.0f} s",
            flush=True,
        )

    run_batch(run_dir, specs, on_record=progress)
    wall = time.perf_counter() - t0
    records = read_episodes(run_dir)
    faults = [r for r in records if r.mitigation is not None and r.mitigation.applicable]
    calls = [c for r in records for c in model_calls(run_dir, r.episode_id)]
    out_tokens = sum(int(c.get("output_tokens") or 0) for c in calls)
    in_tokens = sum(int(c.get("input_tokens") or 0) for c in calls)
    model_s = sum(float(c.get("latency_s") or 0.0) for c in calls)
    text_calls = sum(warnings(run_dir, r.episode_id, "text_tool_call") for r in records)
    premature = sum(warnings(run_dir, r.episode_id, "premature_diagnosis") for r in records)
    terminations: dict[str, int] = {}
    for r in records:
        terminations[r.termination] = terminations.get(r.termination, 0) + 1
    print(f"\nsre-react with {model} on {len(records)} episodes ({wall:.0f} s in all)")
    print(f"  diagnosis   {sum(bool(r.diagnosis and r.diagnosis.correct) for r in records)}/{len(records)}")
    print(
        f"  mitigation  {sum(bool(r.mitigation and r.mitigation.passed) for r in faults)}/{len(faults)} (fault scenarios)"
    )
    print(f"  terminations {json.dumps(terminations)}")
    print(f"  model calls {len(calls)}; tokens in {in_tokens}, out {out_tokens}")
    rate = f"{out_tokens / model_s:.1f}" if model_s > 0 else "n/a"
    print(f"  output tokens/s {rate} (over {model_s:.1f} s of model calls)")
    if records:
        print(f"  time per episode: median {statistics.median(r.wall_s for r in records):.1f} s")
    print(
        f"  tool calls read from text: {text_calls}; diagnoses sent back for lack of observation: {premature}"
    )
    print(f"  run folder: {run_dir} (itbench view {run_dir})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
