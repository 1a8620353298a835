"""``--record DIR`` / ``--replay DIR``: every LLM exchange as one JSON file per call.

Layout: ``DIR/<role>/0000.json`` = ``{"request": {"messages": [...], "tools": [...]}, "response": {...}}``
(LangChain message dicts). Replay returns the stored responses in order with no network; a
request that differs from the recorded one is reported (``replay_mismatch``) but still answered,
so a replay shows exactly where a changed prompt or tool diverged.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, message_to_dict, messages_from_dict


def _request(messages: list[BaseMessage], tools: list[str]) -> dict[str, Any]:
    return {"messages": [message_to_dict(m) for m in messages], "tools": tools}


def request_digest(req: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(req, sort_keys=True, default=str).encode()).hexdigest()[:16]


class Recorder:
    def __init__(self, root: str | Path, role: str) -> None:
        self.dir = Path(root) / role
        self.dir.mkdir(parents=True, exist_ok=True)
        self._n = len(list(self.dir.glob("*.json")))
        self._lock = threading.Lock()

    def save(self, messages: list[BaseMessage], tools: list[str], response: AIMessage) -> Path:
        with self._lock:
            path = self.dir / f"{self._n:04d}.json"
            self._n += 1
        req = _request(messages, tools)
        body = {"request": req, "request_digest": request_digest(req), "response": message_to_dict(response)}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(body, indent=1, default=str))
        tmp.replace(path)
        return path


class ReplayExhausted(RuntimeError):
    pass


class Replayer:
    def __init__(self, root: str | Path, role: str) -> None:
        self.dir = Path(root) / role
        if not self.dir.is_dir():
            from .errors import ModelConfigError

            raise ModelConfigError(
                f"--replay {root}: no recorded exchanges for the {role} model ({self.dir} missing)"
            )
        self.files = sorted(self.dir.glob("*.json"))
        self._n = 0
        self._lock = threading.Lock()

    def next(self, messages: list[BaseMessage], tools: list[str]) -> tuple[AIMessage, bool]:
        """(recorded response, whether the request matches the recording)."""
        with self._lock:
            if self._n >= len(self.files):
                raise ReplayExhausted(f"replay of {self.dir} has only {len(self.files)} exchanges")
            path = self.files[self._n]
            self._n += 1
        body = json.loads(path.read_text())
        (msg,) = messages_from_dict([body["response"]])
        matches = body.get("request_digest") == request_digest(_request(messages, tools))
        if not isinstance(msg, AIMessage):
            msg = AIMessage(content=msg.content)
        return msg, matches
