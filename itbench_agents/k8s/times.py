"""Kubernetes timestamps: RFC 3339 in UTC with second precision (``2026-01-01T00:00:00Z``), as
``metadata.creationTimestamp`` and every status time are written."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache


def rfc3339(t: float) -> str:
    """Kubernetes' timestamp format (second precision, UTC, ``Z``)."""
    return datetime.fromtimestamp(int(t), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@lru_cache(maxsize=8192)
def parse_rfc3339(s: str) -> float:
    # memoised: the same status times are read at every sync (a container's startedAt)
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
