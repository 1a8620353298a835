"""A :class:`LogSource` over fixed streams (tests, replays of recorded logs)."""

from __future__ import annotations

import bisect
import datetime as _dt
from collections.abc import Sequence

from ..telemetry.sources import LogStream, Matcher, match_all


class InMemoryLogSource:
    """Streams held in memory; labels ``namespace``/``pod``/``container`` serve :meth:`pod_log`."""

    def __init__(self, streams: Sequence[LogStream]) -> None:
        self._streams = [LogStream(dict(s.labels), sorted(s.entries, key=lambda e: e[0])) for s in streams]
        self._keys = [[ts for ts, _ in s.entries] for s in self._streams]

    def streams(self, matchers: Sequence[Matcher], start_ns: int, end_ns: int) -> list[LogStream]:
        out = []
        for s, keys in zip(self._streams, self._keys, strict=True):
            if not match_all(matchers, s.labels):
                continue
            lo = bisect.bisect_left(keys, start_ns)
            hi = bisect.bisect_left(keys, end_ns)
            if hi > lo:
                out.append(LogStream(dict(s.labels), s.entries[lo:hi]))
        return out

    def label_names(self, start_ns: int, end_ns: int) -> list[str]:
        return sorted({k for s in self.streams((), start_ns, end_ns) for k in s.labels})

    def label_values(self, name: str, start_ns: int, end_ns: int) -> list[str]:
        return sorted({s.labels[name] for s in self.streams((), start_ns, end_ns) if name in s.labels})

    def pod_log(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        previous: bool = False,
        since_time: float | None = None,
        tail_lines: int | None = None,
        timestamps: bool = False,
    ) -> str:
        if previous:
            raise LookupError(f'previous terminated container "{container}" in pod "{pod}" not found')
        want = {"namespace": namespace, "pod": pod, "container": container}
        entries = sorted(
            e
            for s in self._streams
            if all(s.labels.get(k) == v for k, v in want.items())
            for e in s.entries
            if since_time is None or e[0] >= since_time * 1e9
        )
        if tail_lines is not None:
            entries = entries[-tail_lines:] if tail_lines > 0 else []
        lines = []
        for ts, line in entries:
            if timestamps:
                stamp = _dt.datetime.fromtimestamp(ts / 1e9, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
                lines.append(f"{stamp} {line}\n")
            else:
                lines.append(line + "\n")
        return "".join(lines)
