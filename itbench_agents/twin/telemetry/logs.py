"""Container logs as a pure function of (health timeline, container history, time, seed).

One Loki stream per pod container (labels ``namespace, pod, container, app, service_name, job``).
A container instance prints start-up lines when it starts, then, per 10-second bucket, a
deterministic number of lines from its service's health at that moment: sampled request lines
(proportional to its share of the request rate), one error line per two failed requests (capped)
carrying the symptom messages of the failing operation / its failing calls, and a line now and
then for service-wide symptoms (GC pauses, high CPU, flags...). A crashing instance prints its
last words before it ends. ``pod_log`` answers ``kubectl logs`` with the kubelet's rules for
current / previous instances and its error wording.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

import numpy as np

from ...k8s.kinds import GroupResource
from ...k8s.times import parse_rfc3339
from ..faults.containers import ImageCatalogue, common_images
from ..faults.shell import Program, container_program, mounted_paths
from ..health import Symptom
from .context import TelemetryContext
from .history import Instance, ObjRecord
from .logformats import DEFAULT_MESSAGES, HOUSEKEEPING, concrete_path, format_line, language_for, stack_trace
from .noise import Draws, key64
from .sources import LogStream, Matcher, match_all

PODS = GroupResource("", "pods")
BUCKET_S = 10.0
INFO_SAMPLE = 0.05  # one request line per 20 successful requests
INFO_CAP = 4
ERROR_SAMPLE = 0.5  # one error line per 2 failed requests
ERROR_CAP = 6
FOLLOW_POLL_S = 0.25
"""How often (wall seconds) ``kubectl logs -f`` looks for new lines."""
STREAM_LABELS = ("app", "container", "job", "namespace", "pod", "service_name")


@dataclass
class _Stream:
    labels: dict[str, str]
    rec: ObjRecord
    container: str
    init: bool
    main: bool
    service: str
    lang: str
    port: str
    program: Program | None = None
    """What a utility-image container runs (``faults/shell.py``): its log is that program's output."""


class PodLogSource:
    def __init__(self, ctx: TelemetryContext) -> None:
        self.ctx = ctx
        self._token = -1
        self._streams: list[_Stream] = []

    # ------------------------------------------------------------------ LogSource
    def streams(self, matchers: Sequence[Matcher], start_ns: int, end_ns: int) -> list[LogStream]:
        t0 = start_ns / 1e9
        t1 = min(end_ns / 1e9, self.ctx.now())
        out: list[LogStream] = []
        for st in self._index():
            if not match_all(matchers, st.labels):
                continue
            entries: list[tuple[int, str]] = []
            for inst in self._instances(st):
                if inst.start >= t1 or inst.end < t0:
                    continue
                for t, line in self._lines(st, inst, t0, t1):
                    entries.append((to_ns(t), line))
            if entries:
                # Loki receives logs through the telemetry pipeline (the collector): nothing
                # arrives while it is down (``kubectl logs`` reads the kubelet and still works)
                up = self.ctx.pipeline_up(np.asarray([e[0] / 1e9 for e in entries]))
                entries = [e for e, ok in zip(entries, up, strict=True) if ok]
            if entries:
                entries.sort(key=lambda e: e[0])
                out.append(LogStream(dict(st.labels), entries))
        return out

    def label_names(self, start_ns: int, end_ns: int) -> list[str]:
        return sorted(STREAM_LABELS) if self._alive(start_ns, end_ns) else []

    def label_values(self, name: str, start_ns: int, end_ns: int) -> list[str]:
        return sorted({st.labels[name] for st in self._alive(start_ns, end_ns) if st.labels.get(name)})

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
        rec = self.ctx.history.get(PODS, namespace, pod)
        obj = rec.objs[-1] if rec else None
        if rec is None or obj is None:
            raise LookupError(f'pods "{pod}" not found')
        names = [c.get("name", "") for c in (obj.get("spec") or {}).get("containers") or []]
        inits = [c.get("name", "") for c in (obj.get("spec") or {}).get("initContainers") or []]
        if not container:
            if len(names) != 1:
                raise LookupError(
                    f"a container name must be specified for pod {pod}, choose one of: [{' '.join(names)}]"
                    + (f" or one of the init containers: [{' '.join(inits)}]" if inits else "")
                )
            container = names[0]
        if container not in names and container not in inits:
            raise LookupError(f"container {container} is not valid for pod {pod}")
        if not (obj.get("spec") or {}).get("nodeName"):
            return ""
        inst = self._pick_instance(rec, obj, container, previous)
        st = next((s for s in self._index() if s.rec is rec and s.container == container), None)
        if st is None:
            return ""
        now = self.ctx.now()
        lo = inst.start if since_time is None else max(inst.start, since_time)
        lines = self._lines(st, inst, lo, min(inst.end + 1.0, now) + 1e-6)
        if tail_lines is not None:
            lines = lines[-tail_lines:] if tail_lines > 0 else []
        if timestamps:
            return "".join(f"{_rfc3339nano(t)} {line}\n" for t, line in lines)
        return "".join(f"{line}\n" for _, line in lines)

    def follow(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        after: float,
        timestamps: bool = False,
        poll_s: float = FOLLOW_POLL_S,
    ) -> Iterator[bytes]:
        """``kubectl logs -f`` after the first answer (which covered times up to ``after``): the
        new lines of the same container instance as the twin's clock moves on (the ticker follows
        wall time, ``advance`` jumps), until that instance ends or the pod is gone. Yields ``b""``
        while waiting, so that the server notices a client that went away."""
        twin = self.ctx.twin
        start: float | None = None
        while True:
            with twin.lock:
                twin.sync()
                now = self.ctx.now()
                rec = self.ctx.history.get(PODS, namespace, pod)
                obj = rec.objs[-1] if rec is not None and rec.objs else None
                if rec is None or obj is None:  # the pod is gone
                    return
                try:
                    inst = self._pick_instance(rec, obj, container, False)
                except LookupError:
                    inst = None
                if inst is not None and start is not None and abs(inst.start - start) > 1e-6:
                    inst = next((i for i in self._instances_of(rec, container) if i.start == start), None)
                if inst is None:
                    return
                start = inst.start
                st = next((s for s in self._index() if s.rec is rec and s.container == container), None)
                hi = min(inst.end + 1.0, now) + 1e-6
                rows = (
                    self._lines(st, inst, max(after, inst.start), hi) if st is not None and hi > after else []
                )
                after = max(after, hi)
                ended = inst.end <= now
            if rows:
                if timestamps:
                    yield "".join(f"{_rfc3339nano(t)} {line}\n" for t, line in rows).encode()
                else:
                    yield "".join(f"{line}\n" for _, line in rows).encode()
            if ended:
                return
            yield b""
            time.sleep(poll_s)

    def _instances_of(self, rec: ObjRecord, container: str) -> list[Instance]:
        return list(self.ctx.instances(rec).get(container, []))

    # ------------------------------------------------------------------ kubectl logs rules
    def _pick_instance(self, rec: ObjRecord, obj: dict[str, Any], container: str, previous: bool) -> Instance:
        st = obj.get("status") or {}
        all_cs = (st.get("containerStatuses") or []) + (st.get("initContainerStatuses") or [])
        cs = next((c for c in all_cs if c.get("name") == container), None)
        insts = self.ctx.instances(rec).get(container, [])
        where = f'container "{container}" in pod "{rec.name}"'
        if cs is None:
            raise LookupError(f"{where} is waiting to start - no logs yet")
        state = cs.get("state") or {}
        last = (cs.get("lastState") or {}).get("terminated")
        if previous:
            if not last:
                raise LookupError(
                    f'previous terminated container "{container}" in pod "{rec.name}" not found'
                )
            return _find(insts, last.get("startedAt"), fallback=-2)
        if "running" in state:
            return _find(insts, (state["running"] or {}).get("startedAt"), fallback=-1)
        if "terminated" in state:
            return _find(insts, (state["terminated"] or {}).get("startedAt"), fallback=-1)
        if last:
            return _find(insts, last.get("startedAt"), fallback=-1)
        reason = (state.get("waiting") or {}).get("reason", "")
        if reason == "ErrImagePull":
            raise LookupError(f"{where} is waiting to start: image can't be pulled")
        if reason == "ImagePullBackOff":
            raise LookupError(f"{where} is waiting to start: trying and failing to pull image")
        if reason:
            raise LookupError(f"{where} is waiting to start: {reason}")
        raise LookupError(f"{where} is waiting to start - no logs yet")

    # ------------------------------------------------------------------ streams
    def _index(self) -> list[_Stream]:
        tok = self.ctx.history.token
        if tok == self._token:
            return self._streams
        out: list[_Stream] = []
        for rec in self.ctx.history.of(PODS):
            last = rec.latest
            if last is None:
                continue
            spec = last.get("spec") or {}
            service = self.ctx.service_of(last)
            app_spec = self.ctx.app_service(service)
            lang = language_for(service, getattr(app_spec, "language", None))
            names = [c.get("name", "") for c in spec.get("containers") or []]
            main = self.ctx.main_container(service, names)
            for init, key in ((True, "initContainers"), (False, "containers")):
                for c in spec.get(key) or []:
                    cname = c.get("name", "")
                    ports = c.get("ports") or []
                    is_service = app_spec is not None and cname == main
                    program = None if (init or is_service) else self._program(last, c)
                    labels = {
                        "namespace": rec.namespace,
                        "pod": rec.name,
                        "container": cname,
                        "app": service,
                        "service_name": service,
                        "job": f"{rec.namespace}/{service}",
                    }
                    out.append(
                        _Stream(
                            labels,
                            rec,
                            cname,
                            init,
                            not init and cname == main,
                            service,
                            lang if cname == main else language_for(cname),
                            str(ports[0].get("containerPort", 8080)) if ports else "8080",
                            program,
                        )
                    )
        self._streams, self._token = out, tok
        return out

    def _program(self, pod: dict[str, Any], container: dict[str, Any]) -> Program | None:
        catalogue = getattr(getattr(self.ctx.twin, "behaviour", None), "catalogue", None)
        if catalogue is None:
            catalogue = _common_catalogue()
        img = catalogue.find(str(container.get("image", "")))
        if img is None or not img.shell:
            return None
        from ..app.cluster import resolve_env

        ns = str(pod.get("metadata", {}).get("namespace", ""))
        store = self.ctx.twin.store
        env = resolve_env(container, ns, store, pod).env
        return container_program(img, pod, container, env, mounted_paths(pod, container, store, ns))

    def _alive(self, start_ns: int, end_ns: int) -> list[_Stream]:
        t0, t1 = start_ns / 1e9, min(end_ns / 1e9, self.ctx.now())
        return [st for st in self._index() if any(i.start < t1 and i.end >= t0 for i in self._instances(st))]

    def _instances(self, st: _Stream) -> list[Instance]:
        return [i for i in self.ctx.instances(st.rec).get(st.container, []) if i.init == st.init]

    # ------------------------------------------------------------------ lines
    def _lines(self, st: _Stream, inst: Instance, t0: float, t1: float) -> list[tuple[float, str]]:
        """Lines of one instance with timestamps in [t0, t1)."""
        if st.program is not None:
            lo, hi = max(t0, inst.start), min(t1, inst.end + 1e-3)
            rows = st.program.lines_between(lo - inst.start, hi - inst.start)
            return [(inst.start + off + j * 1e-6, line) for j, (off, line) in enumerate(rows)]
        end = min(inst.end, t1)
        out: list[tuple[float, str]] = []
        key = key64(self.ctx.seed, "logs", st.rec.namespace, st.rec.name, st.container, inst.restart)

        def emit(t: float, level: str, msg: str, extra: Sequence[str] = ()) -> None:
            if t0 <= t < end or (t == inst.end and t0 <= t < t1):
                rows = format_line(st.lang, t, level, msg, service=st.service, pod=st.rec.name)
                rows += list(extra)
                for j, row in enumerate(rows):
                    out.append((t + j * 1e-6, row))

        crashed_at_start = inst.end - inst.start < 2.0 and inst.reason not in ("", "Completed")
        for i, (level, msg) in enumerate(self._startup(st)):
            if i and crashed_at_start:  # died before it could listen: only its first line
                break
            emit(inst.start + 0.05 + 0.15 * i, level, msg)
        ready_at = inst.start + 1.0
        k0 = math.floor(max(t0, ready_at) / BUCKET_S)
        k1 = math.floor((min(end, t1) - 1e-9) / BUCKET_S)
        for k in range(k0, k1 + 1):
            bt = k * BUCKET_S
            for t, level, msg, extra in self._bucket(st, bt, key):
                if t >= ready_at:
                    emit(t, level, msg, extra)
        if math.isfinite(inst.end) and inst.reason not in ("", "Completed", "OOMKilled"):
            for i, (level, msg) in enumerate(self._last_words(st, inst)):
                emit(inst.end - 0.01 + 0.001 * i, level, msg)
        elif inst.reason == "OOMKilled" and st.lang in ("java", "kotlin", "kafka"):
            emit(
                inst.end - 0.02,
                "error",
                'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space',
            )
        out.sort(key=lambda e: e[0])
        return out

    def _startup(self, st: _Stream) -> list[tuple[str, str]]:
        if st.init:
            return [("info", f"{st.container}: starting")]
        if not st.main:
            return [("info", f"{st.container} started")]
        port = st.port
        return {
            "go": [("info", f"starting {st.service} service"), ("info", f"listening on port {port}")],
            "java": [("info", f"{_title(st.service)} service started, listening on {port}")],
            "kotlin": [("info", "Consumer started, subscribed to topic orders")],
            "dotnet": [
                ("info", "Now listening on: http://[::]:" + port),
                ("info", "Application started. Press Ctrl+C to shut down."),
            ],
            "node": [("info", f"{st.service} gRPC server started on port {port}")],
            "python": [("info", f"{st.service} server started on port {port}")],
            "rust": [("info", f"Shipping service is running on 0.0.0.0:{port}")],
            "ruby": [("info", f"Sinatra has taken the stage on {port} for production")],
            "php": [("info", f"Quote service listening on 0.0.0.0:{port}")],
            "cpp": [("info", f"Currency Server listening on 0.0.0.0:{port}")],
            "envoy": [("info", "starting main dispatch loop")],
            "nginx": [("info", "start worker processes")],
            "flagd": [("info", f"Flag IResolver listening at [::]:{port}")],
            "kafka": [("info", "[KafkaRaftServer nodeId=1] Kafka Server started")],
            "postgres": [("info", "database system is ready to accept connections")],
            "valkey": [("info", f"Ready to accept connections tcp on port {port}")],
            "memcached": [("info", f"server listening (tcp) on port {port}")],
            "mongodb": [("info", "Waiting for connections")],
        }.get(st.lang, [("info", f"{st.service} started on port {port}")])

    def _last_words(self, st: _Stream, inst: Instance) -> list[tuple[str, str]]:
        msg = inst.message
        sh = self.ctx.service_at(st.service, inst.end - 0.5) if st.main else None
        if not msg and sh is not None:
            crash = next((s for s in sh.symptoms if s.kind in ("crash", "config_error", "start_error")), None)
            msg = crash.message if crash else ""
        msg = msg or f"{st.service} exited with code {inst.exit_code if inst.exit_code is not None else 1}"
        return [("error", msg)]

    def _bucket(self, st: _Stream, bt: float, key: int) -> list[tuple[float, str, str, Sequence[str]]]:
        """Lines in the bucket starting at ``bt``: (time, level, message, continuation lines).

        A bucket that a health change cuts in pieces gets each piece's share of lines, from the
        health in force during that piece, so no line ever contradicts the metrics of its moment.
        """
        if st.init:
            r = Draws(key, bt - self.ctx.epoch, "init")
            if r() < 0.5:
                dep = st.container.removeprefix("wait-for-")
                return [(bt + r() * BUCKET_S, "info", f"waiting for {dep}...", ())]
            return []
        if not st.main:
            return []
        cuts = self.ctx.cuts_between(bt, bt + BUCKET_S)
        edges = [bt, *cuts, bt + BUCKET_S]
        out: list[tuple[float, str, str, Sequence[str]]] = []
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            out.extend(self._piece(st, a, b - a, key))
        return out

    def _piece(
        self, st: _Stream, a: float, width: float, key: int
    ) -> list[tuple[float, str, str, Sequence[str]]]:
        sh = self.ctx.service_at(st.service, a)
        if sh is None:
            return []
        out: list[tuple[float, str, str, Sequence[str]]] = []
        r = Draws(key, a - self.ctx.epoch)  # time since the twin's birth (noise.ms_since)
        share = width / BUCKET_S
        pods = max(sh.ready_pods, 1)
        caller_syms = self._failing_calls(st.service, a)
        ops: list[Any] = list(sh.operations)
        if not ops:  # a pure client (the load generator) logs its outgoing requests
            snap = self.ctx.health_at(a)
            ops = [e for e in snap.edges if e.caller == st.service] if snap else []
        ok_total = sum(op.rate * (1 - op.error_ratio) for op in ops) / pods * width
        sample = (
            INFO_SAMPLE / 20 if st.lang in HOUSEKEEPING else INFO_SAMPLE
        )  # datastores log housekeeping only
        n_info = min(math.ceil(INFO_CAP * share), int(ok_total * sample + r()))
        for _ in range(n_info):
            op = _weighted(ops, [o.rate * (1 - o.error_ratio) for o in ops], r())
            t = a + r() * width
            out.append((t, "info", self._info_message(st, op, r, a), ()))
        for op in ops:
            errs = op.rate * op.error_ratio / pods * width
            n_err = min(math.ceil(ERROR_CAP * share), int(errs * ERROR_SAMPLE + r()))
            pool = [*op.symptoms, *caller_syms, *sh.symptoms]
            for _ in range(n_err):
                sym = _weighted(pool, [s.ratio or 1.0 for s in pool], r()) if pool else None
                msg = (
                    _symptom_text(sym)
                    if sym
                    else f"{op.operation} failed: rpc error: code = Internal desc = internal error"
                )
                t = a + r() * width
                level = (
                    "warn"
                    if st.lang == "node" and sym is not None and sym.kind == "feature_flag_failure"
                    else "error"
                )
                extra = (
                    stack_trace(st.lang, _exception(st.lang, msg), st.service)
                    if st.lang in ("java", "kotlin", "dotnet", "python")
                    else ()
                )
                out.append((t, level, self._error_message(st, op.operation, msg), extra))
        for sym in sh.symptoms:
            if r() < min(1.0, 0.5 * (sym.ratio or 1.0) + 0.2) * share:
                t = a + r() * width
                out.append((t, "warn", _symptom_text(sym), ()))
        if getattr(self.ctx.twin, "benign_noise", False):  # a healthy cluster is not silent (benign.py)
            from .benign import benign_lines

            out.extend(benign_lines(st.lang, a, width, key, self.ctx.epoch))
        return out

    def _failing_calls(self, service: str, t: float) -> list[Symptom]:
        snap = self.ctx.health_at(t)
        if snap is None:
            return []
        syms: list[Symptom] = []
        for e in snap.edges:
            if e.caller == service and e.error_ratio > 0:
                syms.extend(
                    e.symptoms
                    or (
                        Symptom(
                            "call_failed", f"call to {e.callee} {e.operation} failed", e.callee, e.error_ratio
                        ),
                    )
                )
        return syms

    def _info_message(self, st: _Stream, op: Any, r: Draws, bt: float) -> str:
        name = op.operation if op is not None else "request"
        lat = op.latency_ms * (0.6 + 0.8 * r()) if op is not None else 1.0
        if st.lang == "envoy":
            method, _, path = name.partition(" ")
            path = concrete_path(path or "/", r())
            return (
                f'"{method or "GET"} {path} HTTP/1.1" 200 - via_upstream - "-" 0 {int(500 + 4000 * r())} '
                f'{int(lat)} {max(int(lat) - 1, 0)} "-" "python-requests/2.31.0" "{_uuid(r)}" "{st.service}:8080"'
            )
        if st.lang == "nginx":
            method, _, path = name.partition(" ")
            path = concrete_path(path if path.startswith("/") else "/images/products/{file}", r())
            return f'10.244.0.{1 + int(250 * r())} - - [{_clf(bt)}] "{method or "GET"} {path} HTTP/1.1" 200 {int(20000 + 80000 * r())} "-" "python-requests/2.31.0"'
        if st.lang in HOUSEKEEPING:
            msgs = HOUSEKEEPING[st.lang]
            return msgs[int(r() * len(msgs)) % len(msgs)]
        if "/" in name and " " not in name:
            method = name.rsplit("/", 1)[-1]
            return f"{method} request completed in {lat:.1f} ms"
        return f"{name} completed in {lat:.1f} ms"

    def _error_message(self, st: _Stream, op: str, msg: str) -> str:
        if st.lang == "envoy":
            method, _, path = op.partition(" ")
            flags = "UF" if "refused" in msg or "no such host" in msg else "-"
            return f'"{method or "GET"} {path or "/"} HTTP/1.1" 503 {flags} upstream_reset_before_response_started{{connection_failure}} - "-" 0 0 0 - "-" "python-requests/2.31.0"'
        if st.lang == "go" and "/" in op and " " not in op:
            return f"failed to handle {op.rsplit('/', 1)[-1]}: {msg}"
        return msg


@cache
def _common_catalogue() -> ImageCatalogue:
    return ImageCatalogue(common_images())


def _find(insts: list[Instance], started: Any, fallback: int) -> Instance:
    if started:
        try:
            t = parse_rfc3339(str(started))
            for i in insts:
                if abs(i.start - t) < 1.0:
                    return i
        except ValueError:
            pass
    if not insts:
        raise LookupError("container has no logs yet")
    return insts[fallback] if len(insts) >= -fallback else insts[0]


def _weighted(items: Sequence[Any], weights: Sequence[float], u: float) -> Any:
    if not items:
        return None
    total = sum(weights)
    if total <= 0:
        return items[int(u * len(items)) % len(items)]
    acc = 0.0
    for it, w in zip(items, weights, strict=True):
        acc += w / total
        if u < acc:
            return it
    return items[-1]


def _symptom_text(sym: Symptom) -> str:
    if sym.message:
        return sym.message
    tmpl = DEFAULT_MESSAGES.get(sym.kind, sym.kind.replace("_", " "))
    return tmpl.format(target=sym.target or "unknown")


def _exception(lang: str, msg: str) -> str:
    if lang in ("java", "kotlin"):
        return f"io.grpc.StatusRuntimeException: UNAVAILABLE: {msg}"
    if lang == "dotnet":
        return f"System.ApplicationException: {msg}"
    return f"Exception: {msg}"


def _title(s: str) -> str:
    return " ".join(p.capitalize() for p in s.split("-"))


def _uuid(r: Draws) -> str:
    h = "".join(f"{int(r() * 2**32):08x}" for _ in range(4))
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def _clf(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%d/%b/%Y:%H:%M:%S +0000")


def to_ns(t: float) -> int:
    """Seconds → integer nanoseconds at microsecond precision (no float noise in the digits)."""
    return round(t * 1e6) * 1000


def _rfc3339nano(t: float) -> str:
    ns_total = to_ns(t)
    sec, ns = divmod(ns_total, 1_000_000_000)
    return datetime.fromtimestamp(sec, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{ns:09d}Z"
