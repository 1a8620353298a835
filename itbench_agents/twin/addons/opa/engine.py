"""Rego evaluation on a real engine (regorus, Microsoft's Rust Rego interpreter), with OPA's results
and errors.

``RegoEngine().evaluate(modules, "data.check.result", input=...)`` answers what ``opa eval`` would:
a :class:`QueryResult` (``defined`` / ``value``), or :class:`RegoError` carrying OPA-style errors
(``code``, ``message``, ``file:row:col``). The engine runs in a worker process (``worker.py``) with a
time limit and a memory limit: a policy that never terminates, or exhausts memory, or crashes the
native engine is the policy's error (``eval_cancel_error`` / ``eval_internal_error``), never a hang
or a crash of the caller.

Why regorus: on the corpus of ``tests/twin/addons/opa/agreement`` it answers as OPA does on all but the cases
the README lists, where rego-cpp (``regopy`` 1.5.2), measured first, differed on 17 of 103
comparisons — among them ITBench's own host-network check (``not`` inside ``every``).
"""

from __future__ import annotations

import functools
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TIMEOUT_S = 10.0
"""The time limit of one evaluation (OPA has none by default; ``opa eval --timeout`` sets one)."""
DEFAULT_MEMORY_BYTES = 2 * 1024**3
"""The most resident memory the worker may hold while it evaluates (checked every 50 ms; the native
allocator may reserve address space up front, so an address-space rlimit is not used)."""
_POLL_S = 0.05
_NO_INPUT = object()


@dataclass(frozen=True)
class RegoProblem:
    """One error as OPA reports it: ``code`` (``rego_parse_error``, ``rego_type_error``, ``eval_*``),
    ``message``, and the position in ``file`` when the engine gave one."""

    code: str
    message: str
    file: str = ""
    row: int = 0
    col: int = 0

    def __str__(self) -> str:
        where = (
            f"{self.file}:{self.row}: " if self.file and self.row else (f"{self.file}: " if self.file else "")
        )
        return f"{where}{self.code}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """The shape of an entry of OPA's ``errors`` list (REST API and ``--format json``)."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.file or self.row:
            out["location"] = {"file": self.file, "row": self.row, "col": self.col}
        return out


class RegoError(Exception):
    """A policy or query the engine refused or could not evaluate; ``str()`` is OPA's text
    (``1 error occurred: policy.rego:3: rego_parse_error: ...``)."""

    def __init__(self, problems: list[RegoProblem]) -> None:
        self.problems = problems or [RegoProblem("eval_internal_error", "unknown error")]
        super().__init__(format_problems(self.problems))

    @property
    def compile_time(self) -> bool:
        """True for errors OPA reports before evaluating (parse, type, safety, recursion)."""
        return all(p.code.startswith("rego_") for p in self.problems)


def format_problems(problems: list[RegoProblem]) -> str:
    if len(problems) == 1:
        return f"1 error occurred: {problems[0]}"
    return f"{len(problems)} errors occurred:\n" + "\n".join(str(p) for p in problems)


@dataclass(frozen=True)
class QueryResult:
    """What a query produced: ``results`` as OPA's ``result`` list (``expressions`` values and
    ``bindings``); empty when the query is undefined."""

    query: str
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def defined(self) -> bool:
        return bool(self.results)

    @property
    def value(self) -> Any:
        """The first expression's value (what ``opa eval --format raw`` prints); None when undefined."""
        if not self.results or not self.results[0].get("expressions"):
            return None
        return self.results[0]["expressions"][0]


# regorus's messages, and the code OPA gives the same failure
_CODES = (
    ("is unsafe", "rego_unsafe_var_error"),
    ("could not find function", "rego_type_error"),
    ("recursi", "rego_recursion_error"),
    ("rule conflicts with rule", "eval_conflict_error"),
    ("conflict", "eval_conflict_error"),
    ("divide by zero", "eval_builtin_error"),
    ("could not parse", "eval_builtin_error"),
    ("expects", "eval_type_error"),
)
_LOCATION = re.compile(r"-->\s*(.*?):(\d+):(\d+)")
_MESSAGE = re.compile(r"^error:\s*(.*)$", re.M)


def _regorus_problem(text: str, code: str | None, default_file: str = "") -> RegoProblem:
    """One error from regorus's text (``--> file:row:col``, the source line, ``error: message``)."""
    text = text.split("Stack backtrace:")[0]
    loc = _LOCATION.search(text)
    msg_m = _MESSAGE.search(text)
    message = msg_m.group(1).strip() if msg_m else text.strip().splitlines()[-1] if text.strip() else "error"
    if code is None:
        code = next((c for needle, c in _CODES if needle in message), "eval_error")
    if loc and loc.group(1).startswith("<query"):  # the query itself does not parse
        return RegoProblem("rego_parse_error", message, "", int(loc.group(2)), int(loc.group(3)))
    if loc:
        return RegoProblem(code, message, loc.group(1), int(loc.group(2)), int(loc.group(3)))
    return RegoProblem(code, message, default_file)


def problems_from_reply(reply: dict[str, Any]) -> list[RegoProblem]:
    """OPA-style errors from a worker reply that is not a result."""
    status = reply.get("status")
    error = str(reply.get("error") or "")
    if status == "parse":
        return [_regorus_problem(error, "rego_parse_error", str(reply.get("module") or ""))]
    if status == "eval":
        return [_regorus_problem(error, None)]
    if status in ("timeout", "memory"):
        return [RegoProblem("eval_cancel_error", error)]
    return [RegoProblem("eval_internal_error", error or "the Rego engine failed")]


def _parse_output(output: Any, query: str) -> QueryResult:
    """A result from OPA's result JSON (``{"result": [{"expressions": [{"value": ...}], "bindings"}]}``)."""
    rows = output.get("result") if isinstance(output, dict) else None
    results = []
    for row in rows or []:
        out: dict[str, Any] = {"expressions": [ex.get("value") for ex in row.get("expressions") or []]}
        if row.get("bindings"):
            out["bindings"] = row["bindings"]
        results.append(out)
    return QueryResult(query, results)


def _resident_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class RegoEngine:
    """One worker process, one request at a time (thread-safe); restarted after a timeout or crash,
    and in a forked child (a fork does not share the parent's worker)."""

    def __init__(
        self, timeout_s: float = DEFAULT_TIMEOUT_S, memory_bytes: int = DEFAULT_MEMORY_BYTES
    ) -> None:
        self.timeout_s = timeout_s
        self.memory_bytes = memory_bytes
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._pid = os.getpid()

    # -- public -----------------------------------------------------------------------------------

    def evaluate(
        self,
        modules: Mapping[str, str],
        query: str,
        *,
        input: Any = _NO_INPUT,  # noqa: A002 - OPA's name
        data: Mapping[str, Any] | None = None,
        timeout_s: float | None = None,
        v0_compatible: bool = False,
    ) -> QueryResult:
        """Evaluate ``query`` over ``modules`` (file name → Rego text), base ``data`` and ``input``
        (absent: ``input`` is undefined, as ``opa eval`` without ``--input``); ``v0_compatible``
        reads Rego v0 syntax, as ``opa eval --v0-compatible``."""
        request: dict[str, Any] = {
            "modules": dict(modules),
            "data": dict(data) if data is not None else None,
            "query": query,
        }
        if v0_compatible:
            request["v0"] = True
        if input is not _NO_INPUT:
            request["input"] = input
        reply = self._call(request, self.timeout_s if timeout_s is None else timeout_s)
        if reply.get("status") == "ok":
            return _parse_output(reply.get("output"), query)
        raise RegoError(problems_from_reply(reply))

    def check(self, modules: Mapping[str, str]) -> list[RegoProblem]:
        """Parse and compile ``modules`` (``opa check``): the errors found, empty when they compile.
        regorus checks some things (safety, functions) only when it evaluates, so every package
        document is evaluated once with no input; errors of evaluation itself (a builtin's failure,
        a conflict) are not reported, a crash of the engine is."""
        packages = sorted({m.group(1) for text in modules.values() for m in PACKAGE.finditer(text)})
        try:
            if packages:
                for pkg in packages:
                    self.evaluate(modules, f"data.{pkg}")
            else:
                self.evaluate(modules, "data")
        except RegoError as e:
            return [p for p in e.problems if p.code.startswith("rego_") or p.code == "eval_internal_error"]
        return []

    def close(self) -> None:
        with self._lock:
            self._stop()

    # -- worker -----------------------------------------------------------------------------------

    def _start(self) -> subprocess.Popen[str]:
        if self._pid != os.getpid():  # forked: the parent's worker is not ours to talk to
            self._proc, self._pid = None, os.getpid()
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "itbench_agents.twin.addons.opa.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
            )
        return self._proc

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and self._pid == os.getpid():
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()

    def _call(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        with self._lock:
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                self._stop()
                return {"status": "internal", "error": "the Rego engine's worker exited"}
            deadline = time.monotonic() + timeout_s
            while True:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([proc.stdout], [], [], min(_POLL_S, max(0.0, left)))
                if ready:
                    line = proc.stdout.readline()
                    if line:
                        return dict(json.loads(line))
                    code = proc.wait()
                    self._stop()
                    return {"status": "internal", "error": _crash_message(code)}
                if _resident_bytes(proc.pid) > self.memory_bytes:
                    self._stop()
                    return {
                        "status": "memory",
                        "error": f"evaluation exceeded the engine's memory limit of {self.memory_bytes / 2**30:g} GiB",
                    }
                if left <= 0:
                    self._stop()
                    return {
                        "status": "timeout",
                        "error": f"evaluation exceeded the engine's time limit of {timeout_s:g} s",
                    }


def _crash_message(code: int) -> str:
    if code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the Rego engine (regorus) crashed ({name}); a recursive rule or exhausted memory does this"
    return f"the Rego engine (regorus) exited with code {code}"


PACKAGE = re.compile(r"^\s*package\s+([A-Za-z_][\w.]*)", re.M)
"""A module's ``package`` line (its path in group 1)."""


@functools.cache
def shared_engine() -> RegoEngine:
    """The process's engine (one worker), for callers that need no limits of their own."""
    return RegoEngine()
