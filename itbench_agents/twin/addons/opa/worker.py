"""The Rego engine's worker process: regorus (Microsoft's Rust Rego interpreter) evaluating one request
at a time.

Run as ``python -m itbench_agents.twin.addons.opa.worker``; ``engine.py`` starts it, writes one JSON
request per line on its stdin and reads one JSON reply per line on its stdout. The engine runs in a
process of its own because an evaluation cannot be interrupted from Python: a query that never ends
is killed with the process (``engine.py`` enforces the time and memory limits), and a crash of the
native library (regorus overflows its stack on a recursive rule) costs this process only.

Requests: ``{"modules": {name: text}, "data": {...} | null, "input": <json> (absent: no input),
"query": "...", "v0": true (optional: Rego v0 syntax)}``. Replies: ``{"status": "ok", "output": <OPA's result JSON>}``, ``{"status":
"parse", "module": name, "error": "..."}`` when a module is refused, ``{"status": "eval", "error":
"..."}`` when the query fails. ``engine.py`` turns errors into OPA's.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def handle(request: dict[str, Any]) -> dict[str, Any]:
    import regorus

    engine = regorus.Engine()
    if request.get("v0"):
        engine.set_rego_v0(True)
    for name, text in (request.get("modules") or {}).items():
        try:
            engine.add_policy(name, text)
        except RuntimeError as e:
            return {"status": "parse", "module": name, "error": str(e)}
    if request.get("data") is not None:
        engine.add_data_json(json.dumps(request["data"]))
    if "input" in request:
        engine.set_input_json(json.dumps(request["input"]))
    try:
        return {"status": "ok", "output": json.loads(engine.eval_query_as_json(request["query"]))}
    except RuntimeError as e:
        return {"status": "eval", "error": str(e)}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = handle(json.loads(line))
        except Exception as e:  # noqa: BLE001 - any failure is the request's, reported to the engine
            reply = {"status": "internal", "error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
