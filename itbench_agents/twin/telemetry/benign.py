"""Benign log noise: the lines a healthy service writes that mean nothing (issue 12, part 3).

A real healthy cluster is not silent: services log GC pauses, cache refreshes, connection-pool
churn, retried exports, slow-but-fine queries, and now and then a WARN or ERROR line that is part
of normal operation (an idle connection reset by the peer, a client that went away). With
``twin.benign_noise`` set (the twin's past turns it on: ``history.py``), every app container's log
gets such lines at a low seeded rate, on top of the lines its health implies.

They are pure functions of (seed, pod, container, restart, bucket time) like every other log line,
never name another service, and never claim a request failed (so no line contradicts the span
metrics, and there is no log-based alert rule for them to fire).
"""

from __future__ import annotations

from collections.abc import Sequence

from .noise import Draws

RATE_PER_S = 1.0 / 150.0
"""Benign lines per second per app container (about one every 2.5 minutes)."""

_COMMON: tuple[tuple[str, str, float], ...] = (
    ("info", "cache refreshed: {n} entries in {ms} ms", 3.0),
    ("info", "connection pool stats: active={a} idle={i} max=10", 2.0),
    ("info", "health check: ok", 2.0),
    ("info", "config reloaded: no changes", 1.0),
    ("warn", "slow operation detected: took {ms} ms (threshold 250 ms), completed", 1.0),
    ("warn", "exporter: retrying batch after transient error (attempt 1/5): context deadline exceeded", 0.6),
    ("warn", "client disconnected before response was written", 0.6),
    ("error", "error closing idle connection: read: connection reset by peer", 0.3),
    ("error", "failed to write access log entry, will retry: resource temporarily unavailable", 0.15),
)
_BY_LANG: dict[str, tuple[tuple[str, str, float], ...]] = {
    "go": (("info", "gc {n} @{s}s 0%: 0.018+1.2+0.004 ms clock, {a}->{i}->{a} MB, 8 P", 2.0),),
    "java": (
        ("info", "[gc] GC({n}) Pause Young (Normal) (G1 Evacuation Pause) {a}M->{i}M(256M) {ms}.{n}ms", 2.0),
    ),
    "kotlin": (
        ("info", "[gc] GC({n}) Pause Young (Normal) (G1 Evacuation Pause) {a}M->{i}M(256M) {ms}.{n}ms", 2.0),
    ),
    "dotnet": (("info", "GC: gen0 collections={n}, heap size {a} MB", 1.5),),
    "node": (("info", "event loop delay p99={ms}ms", 1.5),),
    "python": (("info", "worker heartbeat: {n} tasks processed", 1.5),),
}
_NONE: tuple[tuple[str, str, float], ...] = ()
SKIP_LANGS = frozenset({"postgres", "valkey", "kafka", "memcached", "mongodb", "flagd", "envoy", "nginx"})
"""Datastores, brokers and proxies keep their own housekeeping lines."""


def benign_lines(
    lang: str, a: float, width: float, key: int, epoch: float = 0.0
) -> list[tuple[float, str, str, Sequence[str]]]:
    """Benign lines in [a, a + width): (time, level, message, continuation lines), drawn at ``a``
    counted from ``epoch`` (the twin's birth, ``noise.ms_since``)."""
    if lang in SKIP_LANGS or width <= 0:
        return []
    r = Draws(key, a - epoch, "benign")
    n = int(width * RATE_PER_S + r())
    if not n:
        return []
    pool = (*_COMMON, *_BY_LANG.get(lang, _NONE))
    total = sum(w for _, _, w in pool)
    out: list[tuple[float, str, str, Sequence[str]]] = []
    for _ in range(n):
        x = r() * total
        level, tpl, _w = pool[-1]
        for item in pool:
            x -= item[2]
            if x <= 0:
                level, tpl, _w = item
                break
        t = a + r() * width
        msg = tpl.format(
            n=1 + int(r() * 400),
            ms=12 + int(r() * 300),
            a=2 + int(r() * 8),
            i=1 + int(r() * 4),
            s=int(t) % 100000,
        )
        out.append((t, level, msg, ()))
    return out
