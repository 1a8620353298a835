"""How each runtime prints a log line (formats of the otel demo's and hotel-reservation's services).

:func:`format_line` renders one record (time, level, message, logger) in the style of the
service's language; :func:`stack_trace` gives the continuation lines a JVM / .NET / Python
exception adds. Default messages per symptom kind are used when the behaviour model gave none.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

LANG_BY_SERVICE: dict[str, str] = {
    # OpenTelemetry Astronomy Shop (otel-demo.md §1)
    "accounting": "dotnet",
    "ad": "java",
    "cart": "dotnet",
    "checkout": "go",
    "currency": "cpp",
    "email": "ruby",
    "fraud-detection": "kotlin",
    "frontend": "node",
    "frontend-proxy": "envoy",
    "image-provider": "nginx",
    "load-generator": "python",
    "payment": "node",
    "product-catalog": "go",
    "product-reviews": "python",
    "quote": "php",
    "recommendation": "python",
    "shipping": "rust",
    "llm": "python",
    "flagd": "flagd",
    "flagd-ui": "elixir",
    "kafka": "kafka",
    "postgresql": "postgres",
    "valkey-cart": "valkey",
    "otel-collector": "go",
    # DeathStarBench hotel reservation: Go services with memcached / MongoDB
    "memcached-profile": "memcached",
    "memcached-rate": "memcached",
    "memcached-reserve": "memcached",
}


INFRA = {"envoy", "nginx", "flagd", "kafka", "postgres", "valkey", "memcached", "mongodb"}


def language_for(service: str, declared: str | None = None) -> str:
    """The log style of a service: known infrastructure first (Envoy, Kafka, Postgres... whatever
    language the app model declares for them), then the declared language, then name hints."""
    if LANG_BY_SERVICE.get(service) in INFRA:
        return LANG_BY_SERVICE[service]
    if declared:
        d = declared.lower()
        for key, lang in (
            ("envoy", "envoy"),
            ("nginx", "nginx"),
            ("kotlin", "kotlin"),
            ("java", "java"),
            ("c#", "dotnet"),
            (".net", "dotnet"),
            ("dotnet", "dotnet"),
            ("typescript", "node"),
            ("javascript", "node"),
            ("node", "node"),
            ("python", "python"),
            ("rust", "rust"),
            ("ruby", "ruby"),
            ("php", "php"),
            ("c++", "cpp"),
            ("cpp", "cpp"),
            ("envoy", "envoy"),
            ("nginx", "nginx"),
            ("go", "go"),
        ):
            if key in d:
                return lang
    if service in LANG_BY_SERVICE:
        return LANG_BY_SERVICE[service]
    s = service.lower()
    if "mongo" in s:
        return "mongodb"
    if "memcached" in s:
        return "memcached"
    if "redis" in s or "valkey" in s:
        return "valkey"
    if "postgres" in s:
        return "postgres"
    return "go"


DEFAULT_MESSAGES: dict[str, str] = {
    "connection_refused": 'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp {target}: connect: connection refused"',
    "deadline_exceeded": "rpc error: code = DeadlineExceeded desc = context deadline exceeded",
    "dns_no_such_host": "dial tcp: lookup {target} on 10.96.0.10:53: no such host",
    "auth_failed": "authentication failed for {target}: WRONGPASS invalid username-password pair or user is disabled",
    "flag_error": "error evaluating flag: FLAG_NOT_FOUND",
    "feature_flag_failure": "feature flag failure injected",
    "http_abort": "upstream request failed: 503 Service Unavailable",
    "kafka_produce_error": "failed to send message to kafka topic orders: kafka: client has run out of available brokers to talk to",
    "kafka_consumer_lag": "consumer group is lagging behind on topic orders",
    "gc_pause": "The artificially triggered GCs took: 3100 ms",
    "high_cpu": "High CPU-Load problempattern enabled",
    "slow_image": "slow image load",
    "oom": "out of memory",
    "crash": "fatal error",
    "unready": "readiness check failed",
}

LEVEL_WORDS = {"debug": "DEBUG", "info": "INFO", "warn": "WARN", "error": "ERROR"}


def _split(t: float) -> tuple[datetime, int]:
    """(whole second as UTC datetime, microseconds) without float noise in the digits."""
    sec, us = divmod(round(t * 1e6), 1_000_000)
    return datetime.fromtimestamp(sec, tz=UTC), us


def _iso(t: float, digits: int = 3) -> str:
    dt, us = _split(t)
    frac = f"{us:06d}"[:digits]
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if digits else "") + "Z"


def _plain(t: float, sep: str = ".") -> str:
    dt, us = _split(t)
    return dt.strftime("%Y-%m-%d %H:%M:%S") + f"{sep}{us // 1000:03d}"


def format_line(
    lang: str, t: float, level: str, msg: str, *, service: str, pod: str, logger: str = ""
) -> list[str]:
    """One log record as the runtime prints it (a list: .NET's console logger prints two lines)."""
    lw = LEVEL_WORDS.get(level, "INFO")
    lg = logger or service
    if lang == "go":
        return [f"time={_iso(t)} level={lw} msg={json.dumps(msg)} service.name={service}"]
    if lang in ("java", "kotlin"):
        return [f"{_plain(t)} - {lg} - {msg}"]
    if lang == "dotnet":
        short = {"info": "info", "warn": "warn", "error": "fail", "debug": "dbug"}.get(level, "info")
        return [f"{short}: {lg}[0]", f"      {msg}"]
    if lang == "node":
        num = {"debug": 20, "info": 30, "warn": 40, "error": 50}.get(level, 30)
        return [
            json.dumps(
                {
                    "level": num,
                    "time": round(t * 1000),
                    "pid": 1,
                    "hostname": pod,
                    "service.name": service,
                    "msg": msg,
                }
            )
        ]
    if lang == "python":
        return [f"{_plain(t, ',')} {lw} [{lg}] - {msg}"]
    if lang == "rust":
        return [f"{_iso(t, 6)} {lw:>5} {lg.replace('-', '_')}: {msg}"]
    if lang == "ruby":
        return [f"{lw[0]}, [{_iso(t, 6)[:-1]} #1] {lw:>5} -- : {msg}"]
    if lang == "php":
        return [f"[{_iso(t, 6)[:-1]}+00:00] {service}.{lw}: {msg} [] []"]
    if lang == "cpp":
        return [f"[{_plain(t)}] [{level}] {msg}"]
    if lang == "envoy":
        return [msg if msg.startswith("[") else f"[{_iso(t)}] {msg}"]
    if lang == "nginx":
        return [msg]
    if lang == "flagd":
        return [json.dumps({"level": level, "ts": _iso(t), "caller": "flagd/main.go", "msg": msg})]
    if lang == "kafka":
        return [f"[{_plain(t, ',')}] {lw} {msg} ({lg})"]
    if lang == "postgres":
        pg = {"error": "ERROR", "warn": "WARNING"}.get(level, "LOG")
        return [f"{_plain(t)} UTC [1] {pg}:  {msg}"]
    if lang in ("valkey", "memcached"):
        dt, us = _split(t)
        mark = "#" if level in ("warn", "error") else "*"
        return [f"1:M {dt.strftime('%d %b %Y %H:%M:%S')}.{us // 1000:03d} {mark} {msg}"]
    if lang == "mongodb":
        sev = {"error": "E", "warn": "W"}.get(level, "I")
        return [json.dumps({"t": {"$date": _iso(t)}, "s": sev, "c": "NETWORK", "ctx": "conn", "msg": msg})]
    return [f"{_iso(t)} {lw} {msg}"]


def stack_trace(lang: str, exc: str, service: str) -> list[str]:
    """Continuation lines an exception adds after its first line."""
    if lang in ("java", "kotlin"):
        pkg = "oteldemo" if lang == "java" else "frauddetection"
        return [
            exc,
            f"\tat {pkg}.{_camel(service)}.handle({_camel(service)}.java:142)",
            "\tat io.grpc.stub.ServerCalls$UnaryServerCallHandler$UnaryServerCallListener.onHalfClose(ServerCalls.java:182)",
            "\tat io.grpc.internal.ServerImpl$JumpToApplicationThreadServerStreamListener$1HalfClosed.runInContext(ServerImpl.java:356)",
            "\tat java.base/java.lang.Thread.run(Thread.java:1583)",
        ]
    if lang == "dotnet":
        return [
            f"      {exc}",
            f"         at {_camel(service)}.Services.{_camel(service)}Service.HandleAsync() in /app/src/services/{_camel(service)}Service.cs:line 73",
        ]
    if lang == "python":
        return [
            "Traceback (most recent call last):",
            f'  File "/app/{service.replace("-", "_")}_server.py", line 86, in handle',
            exc,
        ]
    return []


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.replace("_", "-").split("-"))


PRODUCT_IDS = (
    "OLJCESPC7Z", "66VCHSJNUP", "1YMWWN1N4O", "L9ECAV7KIM", "2ZYFJ3GM2N",
    "0PUK6V6EV0", "LS4PSXUNUM", "9SIQT8TOJO", "6E92ZMYYFZ", "HQTGWGPNH4",
)  # fmt: skip


def concrete_path(path: str, u: float) -> str:
    """A route template as a request path: ``/api/products/{productId}`` → ``/api/products/L9ECAV7KIM``."""
    if "{" not in path:
        return path
    out, rest = [], path
    while "{" in rest:
        pre, _, tail = rest.partition("{")
        name, _, rest = tail.partition("}")
        out.append(pre)
        pid = PRODUCT_IDS[int(u * len(PRODUCT_IDS)) % len(PRODUCT_IDS)]
        out.append(f"{pid.lower()}.jpg" if name in ("file", "image") else pid)
    out.append(rest)
    return "".join(out)


HOUSEKEEPING: dict[str, tuple[str, ...]] = {
    "postgres": (
        "checkpoint starting: time",
        "checkpoint complete: wrote 42 buffers (0.3%); 0 WAL file(s) added, 0 removed, 0 recycled; write=4.103 s, sync=0.002 s, total=4.121 s",
    ),
    "valkey": (
        "100 changes in 300 seconds. Saving...",
        "Background saving started by pid 187",
        "DB saved on disk",
        "Background saving terminated with success",
    ),
    "kafka": (
        "[LocalLog partition=orders-0, dir=/tmp/kafka-logs] Rolled new log segment at offset 18342 in 2 ms.",
        "[ProducerStateManager partition=orders-0] Wrote producer snapshot at offset 18342 with 0 producer ids in 1 ms.",
    ),
    "memcached": ("slab class 12: chunk size 1184 perslab 885",),
    "mongodb": ("Connection accepted", "Connection ended"),
    "flagd": ("flag configuration synced",),
}
