"""The Rego engine's worker process: rego-cpp (``regopy``) evaluating one request at a time.

Run as ``python -m itbench_agents.twin.addons.opa.worker``; ``engine.py`` starts it, writes one JSON
request per line on its stdin and reads one JSON reply per line. The engine runs in a process of its
own because rego-cpp cannot be interrupted: a query that never ends is killed with the process
(``engine.py`` enforces the time limit), and a crash of the C++ library costs this process only.

rego-cpp prints its compile errors, with ``file:row:col`` and the offending text, on the process's
standard output; the worker points file descriptor 1 at a scratch file and hands what was printed
back with the reply, so the protocol uses a duplicate of the original stdout.

Requests: ``{"op": "eval", "modules": {name: text}, "data": {...} | null, "input": <json> (absent:
no input), "query": "..."}``. Replies: ``{"status": "ok", "output": <rego-cpp's output string>,
"printed": "..."}``, or ``{"status": "parse", "module": name, "error": "...", "printed": "..."}``
when a module does not parse, or ``{"status": "query", "error": "...", "printed": "..."}`` when
rego-cpp raised while preparing the query. ``engine.py`` turns these into OPA's errors.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any


def _read_printed(scratch: Any) -> str:
    scratch.flush()
    os.lseek(1, 0, os.SEEK_SET)
    with open(scratch.name, encoding="utf-8", errors="replace") as f:
        text = f.read()
    os.ftruncate(1, 0)
    os.lseek(1, 0, os.SEEK_SET)
    return text


def handle(request: dict[str, Any]) -> dict[str, Any]:
    import regopy

    interp = regopy.Interpreter()
    for name, text in (request.get("modules") or {}).items():
        try:
            interp.add_module(name, text)
        except regopy.RegoError as e:
            return {"status": "parse", "module": name, "error": str(e)}
    if request.get("data") is not None:
        interp.add_data_json(json.dumps(request["data"]))
    if "input" in request:
        interp.set_input_term(json.dumps(request["input"]))
    from regopy.rego_shared import rego_free_output, rego_output_string, rego_query

    try:
        raw = rego_query(interp._impl, request["query"])  # noqa: SLF001 - the output string, unparsed
    except regopy.RegoError as e:
        return {"status": "query", "error": str(e)}
    try:
        output = rego_output_string(raw)
    finally:
        rego_free_output(raw)
    return {"status": "ok", "output": output}


def main() -> None:
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    scratch = tempfile.NamedTemporaryFile(prefix="itbench-rego-", suffix=".out", delete=True)  # noqa: SIM115
    os.dup2(scratch.fileno(), 1)
    sys.stdout = os.fdopen(os.dup(2), "w", encoding="utf-8", buffering=1)  # Python prints: stderr
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = handle(json.loads(line))
        except Exception as e:  # noqa: BLE001 - any failure is the request's, reported to the engine
            reply = {"status": "internal", "error": f"{type(e).__name__}: {e}"}
        reply["printed"] = _read_printed(scratch)
        proto.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()
