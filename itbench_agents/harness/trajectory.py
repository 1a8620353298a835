"""The trajectory file of one episode (``trajectory.jsonl``): an append-only writer and a reader.

The events themselves are the contracts in ``core/events.py``: the harness validates each dict an
agent reports into one of them, stamps wall and twin time and appends one JSON line.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from pydantic import BaseModel

from ..core.events import Note, to_event


class TrajectoryWriter:
    """Appends events to ``trajectory.jsonl`` (thread-safe; one line per event)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self.count = 0

    def write(self, event: BaseModel) -> None:
        line = (
            event.model_dump_json(exclude_none=False, fallback=repr)
            if hasattr(event, "model_dump_json")
            else ""
        )
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()
            self.count += 1

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()


def read_trajectory(path: str | Path) -> list[BaseModel]:
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            out.append(to_event(json.loads(line)))
        except json.JSONDecodeError:
            out.append(Note(raw=line))
    return out
