"""The run folder: ``run.json`` (atomic), ``episodes.jsonl`` (append-only, fsync'd), resume.

Resume rule: an episode is done when its record is in ``episodes.jsonl``. A record is appended
only after the episode finished, with ``flush`` + ``fsync``; a line torn by ``kill -9`` is cut off on
the next open. So rerunning the same command after a crash runs exactly the missing episodes.

Only the harness writes records: each line carries an HMAC-SHA256 ``signature`` under the run's
key (``.harness-key``, mode 0600, created with the folder; agents never see the run folder). A line
that is unsigned, wrongly signed or for an episode the run does not plan is *foreign*: readers
(``report``, ``score``, resume) skip it and say so (:func:`check_episodes`).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.metadata
import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from .records import SCHEMA_VERSION, EpisodeRecord, RunManifest


class RunFolderError(RuntimeError):
    """A run folder that cannot be used as asked (older schema, different config, corrupt file)."""


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # pragma: no cover - some filesystems refuse directory fsync
        pass


def package_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in ("itbench-agents", "pydantic", "kubernetes", "litellm", "langgraph"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def git_revision() -> str | None:
    here = Path(__file__).resolve().parents[2]
    try:
        r = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def _check_version(found: object, where: str) -> None:
    if found != SCHEMA_VERSION:
        if isinstance(found, int) and found < SCHEMA_VERSION:
            raise RunFolderError(
                f"{where} was written with run-folder schema version {found}; this itbench-agents reads "
                f"version {SCHEMA_VERSION}. Re-run it, or score it with the itbench-agents release that wrote it."
            )
        raise RunFolderError(
            f"{where} has schema version {found!r}, newer or unknown to this itbench-agents "
            f"(reads {SCHEMA_VERSION}); upgrade itbench-agents."
        )


def read_manifest(run_dir: str | Path) -> RunManifest:
    p = Path(run_dir) / "run.json"
    if not p.exists():
        raise RunFolderError(f"{run_dir} is not a run folder (no run.json)")
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise RunFolderError(f"{p}: not JSON: {e}") from e
    _check_version(data.get("schema_version"), str(p))
    try:
        return RunManifest.model_validate(data)
    except ValidationError as e:
        raise RunFolderError(f"{p}: {e}") from e


def open_run(run_dir: str | Path, manifest: RunManifest) -> tuple[RunManifest, bool]:
    """Create the run folder, or reopen it for a resume. Returns (manifest, resumed)."""
    d = Path(run_dir)
    if (d / "run.json").exists():
        old = read_manifest(d)
        if old.config.identity() != manifest.config.identity():
            raise RunFolderError(
                f"{d} already holds a different run (its run.json config differs from this command's); "
                "use another --run-dir, or `itbench run --resume` to continue it with its own config"
            )
        return old, True
    d.mkdir(parents=True, exist_ok=True)
    (d / "episodes").mkdir(exist_ok=True)
    run_key(d, create=True)
    write_atomic(d / "run.json", manifest.model_dump_json(indent=2) + "\n")
    return manifest, False


KEY_FILE = ".harness-key"


def run_key(run_dir: str | Path, create: bool = False) -> bytes | None:
    """The run's record-signing key (created with ``create`` when missing)."""
    p = Path(run_dir) / KEY_FILE
    if p.exists():
        return bytes.fromhex(p.read_text().strip())
    if not create:
        return None
    key = secrets.token_bytes(32)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key.hex() + "\n")
    return key


def _payload(rec: EpisodeRecord, written: set[str] | None = None) -> bytes:
    """The signed bytes: the record without its signature and, when checking a line, without the
    fields the line does not hold — a record written before a field was added to the schema
    verifies as it was signed."""
    absent = set(EpisodeRecord.model_fields) - written if written is not None else set()
    return rec.model_dump_json(exclude={"signature", *absent}).encode()


def sign(rec: EpisodeRecord, key: bytes) -> EpisodeRecord:
    return rec.model_copy(update={"signature": hmac.new(key, _payload(rec), hashlib.sha256).hexdigest()})


def _verified(rec: EpisodeRecord, key: bytes, written: set[str]) -> bool:
    if not rec.signature:
        return False
    want = hmac.new(key, _payload(rec, written), hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, rec.signature)


@dataclass
class EpisodeCheck:
    """What ``episodes.jsonl`` holds: the trusted records and the lines that were skipped."""

    records: list[EpisodeRecord] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    """One line per skipped record: ``episodes.jsonl:LINE: why``."""
    unverified: bool = False
    """True for a run folder without a key (written before records were signed): nothing could be
    checked."""


def check_episodes(run_dir: str | Path, planned: set[tuple[str, str, int]] | None = None) -> EpisodeCheck:
    """Read ``episodes.jsonl``, keeping only the harness's own records (a torn last line is
    ignored; of several harness records of one episode — a retried error — the last wins)."""
    p = Path(run_dir) / "episodes.jsonl"
    out = EpisodeCheck()
    if not p.exists():
        return out
    key = run_key(run_dir)
    out.unverified = key is None
    if planned is None:
        with_manifest = (Path(run_dir) / "run.json").exists()
        planned = planned_keys(read_manifest(run_dir)) if with_manifest else None
    by_key: dict[tuple[str, str, int], EpisodeRecord] = {}
    lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines):
                break  # torn by a crash mid-write
            out.foreign.append(f"{p.name}:{i}: not JSON")
            continue
        if not isinstance(data, dict):
            out.foreign.append(f"{p.name}:{i}: not a record")
            continue
        _check_version(data.get("schema_version"), f"{p}:{i}")
        try:
            rec = EpisodeRecord.model_validate(data)
        except ValidationError as e:
            out.foreign.append(f"{p.name}:{i}: not a valid record ({e.error_count()} errors)")
            continue
        if key is not None and not _verified(rec, key, set(data)):
            out.foreign.append(f"{p.name}:{i}: {rec.episode_id}: not signed by this run's harness")
            continue
        if planned is not None and rec.key not in planned:
            out.foreign.append(f"{p.name}:{i}: {rec.episode_id}: not an episode of this run")
            continue
        by_key[rec.key] = rec
    out.records = list(by_key.values())
    return out


def planned_keys(manifest: RunManifest) -> set[tuple[str, str, int]]:
    c = manifest.config
    return {(s, a.display, t) for a in c.agents for s in c.scenarios for t in range(c.trials)}


def read_episodes(run_dir: str | Path) -> list[EpisodeRecord]:
    """The harness's records in ``episodes.jsonl`` (see :func:`check_episodes`)."""
    return check_episodes(run_dir).records


class EpisodeLog:
    """Appends signed records to ``episodes.jsonl``; each append is flushed and fsync'd."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / "episodes.jsonl"
        self.key = run_key(run_dir, create=True)
        self._repair()
        self._fh = self.path.open("a", encoding="utf-8")

    def _repair(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with self.path.open("r+b") as fh:
                fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())

    def append(self, rec: EpisodeRecord) -> None:
        assert self.key is not None
        self._fh.write(sign(rec, self.key).model_dump_json() + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


def rewrite_episodes(run_dir: str | Path, records: list[EpisodeRecord]) -> None:
    key = run_key(run_dir, create=True)
    assert key is not None
    text = "".join(sign(r, key).model_dump_json() + "\n" for r in records)
    write_atomic(Path(run_dir) / "episodes.jsonl", text)
