"""The published JSON Schemas of what itbench-agents reads and writes (``docs/schemas/``).

Regenerate with ``python -m itbench_agents.commands.schemas [FOLDER]``; a test fails when the
published files are out of date.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from ..core.events import TrajectoryEvent
from ..core.output import Diagnosis
from ..harness.records import EpisodeRecord, RunManifest
from ..personas.ciso.spec import CisoScenario
from ..personas.finops.anomaly_spec import AnomalyScenario
from ..scenario.spec import Scenario
from ..snapshots.layout import SnapshotMeta


def schemas() -> dict[str, dict[str, Any]]:
    return {
        "run.schema.json": RunManifest.model_json_schema(),
        "episode.schema.json": EpisodeRecord.model_json_schema(),
        "trajectory-event.schema.json": TypeAdapter(TrajectoryEvent).json_schema(),
        "agent-output.schema.json": Diagnosis.model_json_schema(),
        "scenario.schema.json": Scenario.model_json_schema(),
        "ciso-scenario.schema.json": CisoScenario.model_json_schema(by_alias=True),
        "finops-anomaly-scenario.schema.json": AnomalyScenario.model_json_schema(),
        "snapshot.schema.json": SnapshotMeta.model_json_schema(),
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write_schemas(folder: str | Path) -> list[Path]:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in schemas().items():
        p = out / name
        p.write_text(render(schema))
        written.append(p)
    return written


if __name__ == "__main__":  # pragma: no cover
    target = (
        sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parents[2] / "docs" / "schemas")
    )
    for p in write_schemas(target):
        print(p)
