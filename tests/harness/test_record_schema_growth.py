"""A record written before a field was added to ``EpisodeRecord`` (here ``persona`` and ``scores``,
added with the CISO persona) still verifies against its run's key; a field added to a signed line
afterwards does not."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

from itbench_agents.harness.records import EpisodeRecord
from itbench_agents.harness.runfolder import check_episodes, run_key

NEW_FIELDS = {"persona", "scores"}


def _old_line(key: bytes) -> dict[str, object]:
    rec = EpisodeRecord(
        episode_id="e__noop__t000", run_id="r", scenario_id="sre/x-v1", agent="noop", trial=0, seed=1,
        termination="submitted", started_at="t0", finished_at="t1", wall_s=1.0,
    )  # fmt: skip
    payload = rec.model_dump_json(exclude={"signature", *NEW_FIELDS})
    data: dict[str, object] = json.loads(payload)
    data["signature"] = hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()
    return data


def test_a_record_from_before_new_fields_still_verifies(tmp_path: Path) -> None:
    key = run_key(tmp_path, create=True)
    assert key is not None
    line = _old_line(key)
    assert not NEW_FIELDS & set(line)
    (tmp_path / "episodes.jsonl").write_text(json.dumps(line) + "\n")
    check = check_episodes(tmp_path)
    assert [r.episode_id for r in check.records] == ["e__noop__t000"] and not check.foreign
    assert check.records[0].persona == "sre" and check.records[0].scores == {}


def test_a_field_added_to_a_signed_line_is_caught(tmp_path: Path) -> None:
    key = run_key(tmp_path, create=True)
    assert key is not None
    line = {**_old_line(key), "scores": {"strict": {"value": 1.0}}}
    (tmp_path / "episodes.jsonl").write_text(json.dumps(line) + "\n")
    check = check_episodes(tmp_path)
    assert not check.records and "not signed by this run's harness" in check.foreign[0]
