#!/usr/bin/env python3
"""The ``opa`` command an agent finds on its PATH where the scenario runs the twin's OPA.

Standard library only: the agent's sandbox holds no copy of this project, so the harness copies
this file as ``opa`` into a folder on the agent's PATH; it reads the files named on its command line
and asks the twin's OPA (``$OPA_URL``) to evaluate them (``POST /v1/itbench/eval``), leaving the
server's own policies alone.

Subcommands and flags, as OPA's:

- ``opa eval [-d/--data PATH]... [-i/--input FILE | -I/--stdin-input] [-f/--format
  json|raw|pretty|values|bindings] [--fail | --fail-defined] [--timeout DURATION] QUERY``: ``-d``
  takes ``.rego`` modules and ``.json``/``.yaml`` base documents, or folders of them (a document in
  ``a/b/data.json`` under a folder lands at ``data.a.b``, as OPA loads folders);
- ``opa check [--format pretty|json] PATH...``: parse and compile;
- ``opa version``.

Not served: ``opa fmt`` (regorus has no formatter: the command says so and exits 1), ``opa run``,
``opa test``, ``opa build`` and bundles.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

VERSION = "itbench twin (Rego on regorus; OPA's CLI, a subset)"


def _die(message: str, code: int = 1) -> int:
    print(message, file=sys.stderr)
    return code


def _post(path: str, body: dict[str, Any], timeout: float) -> tuple[int, dict[str, Any]]:
    base = os.environ.get("OPA_URL", "").rstrip("/")
    if not base:
        raise OSError("OPA_URL is not set: this opa command evaluates on the scenario's OPA server")
    req = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _load_document(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError as e:  # the system's python3 may lack PyYAML
            raise ValueError(f"{path}: YAML documents need PyYAML; give JSON instead") from e
        return yaml.safe_load(text)
    return json.loads(text)


def _merge(into: dict[str, Any], prefix: list[str], doc: Any, source: Path) -> None:
    node = into
    for seg in prefix:
        node = node.setdefault(seg, {})
    if not prefix and not isinstance(doc, dict):
        raise ValueError(f"{source}: a data file at the root must hold an object")
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k in node and isinstance(node[k], dict) and isinstance(v, dict):
                _merge(node, [k], v, source)
            elif k in node:
                raise ValueError(f"{source}: merge error: {'/'.join([*prefix, k])} is defined twice")
            else:
                node[k] = v
    elif prefix:
        parent = into
        for seg in prefix[:-1]:
            parent = parent[seg]
        parent[prefix[-1]] = doc


def load_paths(paths: list[str]) -> tuple[dict[str, str], dict[str, Any]]:
    """Modules (file name → text) and base documents from ``-d`` paths, as OPA's loader reads them."""
    modules: dict[str, str] = {}
    data: dict[str, Any] = {}
    for raw in paths:
        root = Path(raw)
        if not root.exists():
            raise ValueError(f"{raw}: no such file or directory")
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for f in files:
            if f.suffix == ".rego":
                modules[str(f)] = f.read_text(encoding="utf-8")
            elif f.suffix in (".json", ".yaml", ".yml"):
                prefix = list(f.parent.relative_to(root).parts) if root.is_dir() else []
                try:
                    doc = _load_document(f)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{f}: {e}") from e
                _merge(data, prefix, doc, f)
            elif not root.is_dir():
                raise ValueError(f"{f}: unsupported file type (want .rego, .json, .yaml)")
    return modules, data


def _seconds(duration: str) -> float:
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    total, rest = 0.0, duration.strip()
    for num, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", rest):
        total += float(num) * units[unit]
    if not total:
        raise ValueError(f"invalid duration {duration!r} (e.g. 10s, 1m)")
    return total


def _errors_text(errors: list[dict[str, Any]]) -> str:
    lines = []
    for e in errors:
        loc = e.get("location") or {}
        where = f"{loc.get('file')}:{loc.get('row')}: " if loc.get("file") else ""
        lines.append(f"{where}{e.get('code')}: {e.get('message')}")
    head = "1 error occurred: " if len(lines) == 1 else f"{len(lines)} errors occurred:\n"
    return head + "\n".join(lines)


def _print_result(body: dict[str, Any], fmt: str) -> None:
    rows = body.get("result") or []
    if fmt == "json":
        print(json.dumps(body, indent=2))
    elif fmt == "raw":
        for row in rows:
            for ex in row.get("expressions", []):
                v = ex.get("value")
                print(v if isinstance(v, str) else json.dumps(v))
    elif fmt in ("pretty", "values"):
        if not rows:
            print("undefined" if fmt == "pretty" else "[]")
        elif fmt == "values":
            print(
                json.dumps([ex.get("value") for row in rows for ex in row.get("expressions", [])], indent=2)
            )
        else:
            for row in rows:
                for ex in row.get("expressions", []):
                    print(json.dumps(ex.get("value"), indent=2))
    elif fmt == "bindings":
        print(json.dumps([row.get("bindings", {}) for row in rows], indent=2))


def cmd_eval(args: argparse.Namespace) -> int:
    try:
        modules, data = load_paths(args.data or [])
        body: dict[str, Any] = {"modules": modules, "data": data, "query": args.query}
        if args.v0_compatible:
            body["v0_compatible"] = True
        if args.timeout:
            body["timeout_s"] = min(_seconds(args.timeout), 60.0)
        if args.stdin_input:
            body["input"] = json.loads(sys.stdin.read())
        elif args.input:
            body["input"] = _load_document(Path(args.input))
        timeout = _seconds(args.timeout) if args.timeout else 30.0
    except (OSError, ValueError) as e:
        return _die(f"error: {e}")
    try:
        status, reply = _post("/v1/itbench/eval", body, timeout + 5)
    except OSError as e:
        return _die(f"error: {e}")
    if status != 200:
        errors = reply.get("errors") or [{"code": reply.get("code"), "message": reply.get("message")}]
        if args.format == "json":
            print(json.dumps({"errors": errors}, indent=2))
        else:
            print(_errors_text(errors), file=sys.stderr)
        return 1
    _print_result(reply, args.format)
    defined = bool(reply.get("result"))
    if (args.fail and not defined) or (args.fail_defined and defined):
        return 1
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    try:
        modules, _ = load_paths(args.paths)
        status, reply = _post("/v1/itbench/check", {"modules": modules}, 60)
    except (OSError, ValueError) as e:
        return _die(f"error: {e}")
    errors = reply.get("errors") or (
        [] if status == 200 else [{"code": reply.get("code"), "message": reply.get("message")}]
    )
    if not errors:
        return 0
    if args.format == "json":
        print(json.dumps({"errors": errors}, indent=2))
    else:
        print(_errors_text(errors), file=sys.stderr)
    return 1


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="opa", description="OPA (the itbench twin's: evaluates on $OPA_URL)")
    sub = p.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("eval", help="Evaluate a Rego query")
    ev.add_argument("query")
    ev.add_argument("-d", "--data", action="append", help="policy or data files or folders")
    ev.add_argument("-i", "--input", help="input file")
    ev.add_argument("-I", "--stdin-input", action="store_true", help="read input from stdin")
    ev.add_argument("-f", "--format", default="json", choices=["json", "raw", "pretty", "values", "bindings"])
    ev.add_argument("--fail", action="store_true", help="exit 1 when the result is undefined")
    ev.add_argument("--fail-defined", action="store_true", help="exit 1 when the result is defined")
    ev.add_argument("--timeout", help="evaluation time limit (e.g. 10s)")
    ev.add_argument(
        "--v0-compatible", action="store_true", help="read Rego v0 syntax (rules without if/contains)"
    )
    ev.add_argument("--v1-compatible", action="store_true", help="accepted; the default")
    ch = sub.add_parser("check", help="Check Rego source files")
    ch.add_argument("paths", nargs="+")
    ch.add_argument("-f", "--format", default="pretty", choices=["pretty", "json"])
    ch.add_argument("--v0-compatible", action="store_true")
    ch.add_argument("--strict", "-S", action="store_true", help="accepted; strict checks are not applied")
    sub.add_parser("fmt", help="Format Rego source files (not available here)").add_argument(
        "paths", nargs="*"
    )
    sub.add_parser("version", help="Print the version")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "eval":
        return cmd_eval(args)
    if args.command == "check":
        return cmd_check(args)
    if args.command == "version":
        print(f"Version: {VERSION}")
        return 0
    return _die(
        "opa fmt: not available in this environment (the twin's Rego engine, regorus, has no formatter)"
    )


if __name__ == "__main__":
    sys.exit(main())
