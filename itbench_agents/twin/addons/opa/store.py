"""What an OPA server holds: policy modules by id and base documents (``data``), as its storage does.

Writes are validated the way OPA validates them: a policy is accepted only when it compiles with
every other module already loaded (``RegoEngine.check``); base documents are JSON values at a path
of ``data``. Reads return copies, so a caller cannot change the store behind its lock.
"""

from __future__ import annotations

import copy
import re
import threading
from dataclasses import dataclass
from typing import Any

from .engine import PACKAGE, QueryResult, RegoEngine, RegoError, RegoProblem, shared_engine

_RULE_HEAD = re.compile(r"^(?:default\s+)?([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\.)", re.M)
_KEYWORDS = {"package", "import", "default", "not", "some", "every", "with", "as", "if", "contains", "else"}


class NotFound(KeyError):
    """No policy with that id, or no document at that path (OPA's ``storage_not_found_error``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def package_of(raw: str) -> str:
    m = PACKAGE.search(raw)
    return m.group(1) if m else ""


def module_ast(raw: str) -> dict[str, Any]:
    """The parts of OPA's module AST that clients read (``opa-python-client``'s ``get_policies_info``):
    the package path and each rule's head name. regorus's AST is not OPA's, so these come from the text
    (top-level lines only); the rest of OPA's AST is not reproduced."""
    pkg = package_of(raw)
    path = [{"type": "var", "value": "data"}] + [{"type": "string", "value": p} for p in pkg.split(".") if p]
    names: list[str] = []
    for line in raw.splitlines():
        m = _RULE_HEAD.match(line)
        if m and m.group(1) not in _KEYWORDS and m.group(1) not in names:
            names.append(m.group(1))
    return {"package": {"path": path}, "rules": [{"head": {"name": n}} for n in names]}


@dataclass
class Policy:
    id: str
    raw: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "raw": self.raw, "ast": module_ast(self.raw)}


class OpaStore:
    """Policies and base documents of one OPA, evaluated with one engine."""

    def __init__(self, engine: RegoEngine | None = None) -> None:
        self.engine = engine or shared_engine()
        self._lock = threading.RLock()
        self._policies: dict[str, Policy] = {}
        self._data: dict[str, Any] = {}

    # -- policies ---------------------------------------------------------------------------------

    def modules(self) -> dict[str, str]:
        """Module texts by id (the ids are the module names errors point at)."""
        with self._lock:
            return {p.id: p.raw for p in self._policies.values()}

    def policies(self) -> list[Policy]:
        with self._lock:
            return list(self._policies.values())

    def policy(self, policy_id: str) -> Policy:
        with self._lock:
            if policy_id not in self._policies:
                raise NotFound(f'storage_not_found_error: policy id "{policy_id}"')
            return self._policies[policy_id]

    def put_policy(self, policy_id: str, raw: str) -> None:
        """Add or replace a module; ``RegoError`` (nothing stored) when the set would not compile."""
        if not package_of(raw):
            raise RegoError([RegoProblem("rego_parse_error", "package expected", policy_id, 1, 1)])
        with self._lock:
            modules = {**self.modules(), policy_id: raw}
            problems = self.engine.check(modules)
            if problems:
                raise RegoError(problems)
            self._policies[policy_id] = Policy(policy_id, raw)

    def delete_policy(self, policy_id: str) -> None:
        with self._lock:
            self.policy(policy_id)
            del self._policies[policy_id]

    # -- base documents ---------------------------------------------------------------------------

    def read_data(self, path: list[str]) -> Any:
        with self._lock:
            node: Any = self._data
            for seg in path:
                if not isinstance(node, dict) or seg not in node:
                    raise NotFound(f"storage_not_found_error: /{'/'.join(path)}: document does not exist")
                node = node[seg]
            return copy.deepcopy(node)

    def write_data(self, path: list[str], value: Any) -> None:
        """Create or replace the document at ``path`` (parents are created, as OPA's PUT does)."""
        with self._lock:
            if not path:
                if not isinstance(value, dict):
                    raise ValueError("root document must be an object")
                self._data = copy.deepcopy(value)
                return
            node = self._data
            for seg in path[:-1]:
                nxt = node.get(seg)
                if not isinstance(nxt, dict):
                    nxt = node[seg] = {}
                node = nxt
            node[path[-1]] = copy.deepcopy(value)

    def delete_data(self, path: list[str]) -> None:
        with self._lock:
            if not path:
                self._data = {}
                return
            self.read_data(path)
            node = self._data
            for seg in path[:-1]:
                node = node[seg]
            del node[path[-1]]

    def data(self) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self._data)

    # -- decisions --------------------------------------------------------------------------------

    def query(self, query: str, input: Any = None, *, has_input: bool = False) -> QueryResult:  # noqa: A002
        """Evaluate ``query`` over the loaded modules and base documents."""
        modules, data = self.modules(), self.data()
        if has_input:
            return self.engine.evaluate(modules, query, input=input, data=data)
        return self.engine.evaluate(modules, query, data=data)


def data_query(path: list[str]) -> str:
    """The reference to ``data`` at a URL path (``/v1/data/a/b`` → ``data.a.b``)."""
    out = "data"
    for seg in path:
        out += f".{seg}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", seg) else "[" + _quote(seg) + "]"
    return out


def _quote(seg: str) -> str:
    import json

    return json.dumps(seg)
