"""What happens to one container under the current cluster state (the runtime's verdict).

Checks in the order the kubelet meets them: image pull (registry catalogue, platform), config
(env / envFrom / volume sources), start (command exists in the image, required env present), then
while running: memory against the limit (baseline + leaks + stress → OOMKilled), chaos kills,
readiness / liveness probes against the ports and paths the process really serves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

import yaml

from ...k8s.quantity import parse_quantity, quantity
from ...paths import scenarios_dir
from ..runtime import ContainerVerdict, started_at
from .shell import Program, container_program, has_executable, image_argv, mounted_paths

if TYPE_CHECKING:
    from ..app.cluster import ClusterView
    from ..app.model import Image, Service
    from ..app.propagation import ServiceLoad

Obj = dict[str, Any]
MIB = 2**20
EXIT_AFTER_OUTPUT_S = 0.01


@cache
def common_images() -> tuple[Image, ...]:
    from ..app.model import Image

    path = scenarios_dir() / "apps" / "images.yaml"
    if not path.is_file():
        return ()
    data = yaml.safe_load(path.read_text()) or {}
    return tuple(Image.model_validate(i) for i in data.get("images", []))


@lru_cache(maxsize=4096)
def split_image(image: str) -> tuple[str, str]:
    """'valkey/valkey:8' → ('docker.io/valkey/valkey', '8'); digests count as tag '@sha256:...'."""
    ref = image.strip()
    if "@" in ref:
        repo, tag = ref.split("@", 1)
        tag = "@" + tag
    else:
        last = ref.rsplit("/", 1)[-1]
        if ":" in last:
            repo, tag = ref.rsplit(":", 1)
        else:
            repo, tag = ref, "latest"
    first = repo.split("/", 1)[0]
    if "/" not in repo:
        repo = f"docker.io/library/{repo}"
    elif "." not in first and ":" not in first and first != "localhost":
        repo = f"docker.io/{repo}"
    return repo, tag


@cache
def _normalized_repo(repo: str) -> str:
    return split_image(repo + ":x")[0]


class ImageCatalogue:
    """The images a registry holds, indexed by repository (the first match in the given order wins).

    A reference resolves only if its repository holds that exact tag, as on a real registry (a
    typo'd or made-up tag fails to pull); a digest (``repo@sha256:...``) resolves in any repository
    the registry holds."""

    def __init__(self, images: Iterable[Image] = ()) -> None:
        self._by_repo: dict[str, list[Image]] = {}
        for img in images:
            self.append(img)

    def append(self, img: Image) -> None:
        self._by_repo.setdefault(_normalized_repo(img.repo), []).append(img)

    def find(self, image: str) -> Image | None:
        repo, tag = split_image(image)
        for img in self._by_repo.get(repo, ()):
            if tag.startswith("@") or tag in img.tags:
                return img
        return None


def pull_error(image: str) -> str:
    repo, tag = split_image(image)
    ref = f"{repo}{tag}" if tag.startswith("@") else f"{repo}:{tag}"
    return (
        f'Failed to pull image "{image}": rpc error: code = NotFound desc = failed to pull and unpack image '
        f'"{ref}": failed to resolve reference "{ref}": {ref}: not found'
    )


def node_arch(node: Obj | None) -> str:
    if not node:
        return "amd64"
    labels = node.get("metadata", {}).get("labels") or {}
    return str(
        labels.get("kubernetes.io/arch")
        or (node.get("status", {}).get("nodeInfo") or {}).get("architecture")
        or "amd64"
    )


@dataclass
class VerdictInputs:
    view: ClusterView
    service: str | None
    spec: Service | None
    load: ServiceLoad | None
    catalogue: ImageCatalogue
    flag_not_serving: str | None
    leaked_now: float | None = None
    """Bytes a leak has already added to this running container (None: unknown, assume since start)."""


def is_running(pod: Obj, name: str, init: bool) -> bool:
    key = "initContainerStatuses" if init else "containerStatuses"
    return any(
        cs.get("name") == name and "running" in (cs.get("state") or {})
        for cs in pod.get("status", {}).get(key) or []
    )


def decide(
    inp: VerdictInputs,
    pod: Obj,
    container: Obj,
    *,
    init: bool,
    node: Obj | None,
    now: float,
    started_env: dict[str, str] | None = None,
) -> ContainerVerdict:
    """``started_env``: the environment a running process started with (env vars are read once)."""
    from ..app.cluster import EnvResult, resolve_env

    view = inp.view
    image = str(container.get("image", ""))
    img = inp.catalogue.find(image)
    if img is None:
        return ContainerVerdict(pull_error=pull_error(image))
    env = (
        EnvResult(started_env)
        if started_env is not None
        else resolve_env(container, pod_namespace(pod, view), view.store, pod)
    )
    problems = env.errors + _volume_errors(pod, container, view)
    if problems:
        return ContainerVerdict(config_error=problems[0])
    cmd = [str(x) for x in (container.get("command") or [])]
    # what the runtime execs: for utility images also `args` alone (no ENTRYPOINT: args[0] runs)
    exe = image_argv(img, container)[:1] if img.shell else cmd[:1]
    if exe and not (has_executable(img, exe[0]) if img.shell else _has_binary(img, exe[0])):
        return ContainerVerdict(
            start_error=(
                "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create "
                f'failed: unable to start container process: exec: "{exe[0]}": executable file not found in $PATH: unknown'
            )
        )
    arch = node_arch(node)
    if arch not in img.arch and img.platform_index:
        repo, tag = split_image(image)
        return ContainerVerdict(
            pull_error=f'Failed to pull image "{image}": rpc error: code = NotFound desc = failed to pull and unpack '
            f'image "{repo}:{tag}": no match for platform in manifest: not found'
        )
    if arch not in img.arch:
        return ContainerVerdict(
            exit_after_s=0.1,
            exit_code=255,
            exit_reason="Error",
            exit_message=f"exec /{_entry(img, cmd)}: exec format error",
        )
    if init:
        return _init_verdict(view, pod, container, cmd)
    if img.crash_after_s is not None:
        return ContainerVerdict(exit_after_s=img.crash_after_s, exit_code=2, exit_message=img.crash_message)
    start = started_at(pod, container.get("name", ""), False, now)
    spec = inp.spec
    program = None
    if img.shell and not (
        spec is not None and inp.service is not None and _is_service_container(inp, container)
    ):
        files = mounted_paths(pod, container, view.store, pod_namespace(pod, view))
        program = container_program(img, pod, container, env.env, files)
        if program is not None and program.exit_code is not None:
            return program_verdict(program)
    if spec is not None and inp.service is not None and _is_service_container(inp, container):
        for dep in spec.dependencies.values():
            if dep.required and dep.addr_env and dep.addr_env not in env.env:
                return ContainerVerdict(
                    exit_after_s=0.5,
                    exit_code=1,
                    exit_message=f'environment variable "{dep.addr_env}" not set',
                )
        fatal = _fatal_dependency(inp, pod, container, env.env)
        if fatal is not None:
            return fatal
    oom = _memory_verdict(inp, pod, container, start, now, node)
    if oom is not None:
        return oom
    kill = _chaos_kill(inp, pod, container, start)
    if kill is not None:
        return kill
    return _probe_verdict(inp, pod, container, env.env, img, serves=program is None)


def program_verdict(program: Program) -> ContainerVerdict:
    """A utility program that ends: it exits right after its last output (0 → Completed)."""
    assert program.exit_code is not None
    return ContainerVerdict(
        exit_after_s=program.runtime_s + EXIT_AFTER_OUTPUT_S,
        exit_code=program.exit_code,
        exit_reason="Completed" if program.exit_code == 0 else "Error",
    )


def _fatal_dependency(
    inp: VerdictInputs, pod: Obj, container: Obj, env: dict[str, str]
) -> ContainerVerdict | None:
    """A process that exits when a dependency it needs cannot be reached (ping at start, nil client...)."""
    from ..app.cluster import Instance
    from ..app.network import connect

    assert inp.spec is not None and inp.service is not None
    me = Instance(pod, container, env, True, inp.service)
    for callee, dep in inp.spec.dependencies.items():
        if dep.fatal is None:
            continue
        conn = connect(inp.view, me, callee, dep, env)
        if conn.refused + conn.timeout >= 0.99:
            why = conn.symptoms[0][1] if conn.symptoms else "unreachable"
            return ContainerVerdict(exit_after_s=10.0, exit_code=2, exit_message=f"{dep.fatal}: {why}")
    return None


def _entry(img: Image, cmd: list[str]) -> str:
    return (cmd[0] if cmd else (img.binaries[0] if img.binaries else "app")).lstrip("/")


def _has_binary(img: Image, binary: str) -> bool:
    if "*" in img.binaries:
        return True
    base = binary.rsplit("/", 1)[-1]
    return binary in img.binaries or base in img.binaries


def _is_service_container(inp: VerdictInputs, container: Obj) -> bool:
    assert inp.spec is not None and inp.service is not None
    return container.get("name") == (inp.spec.container or inp.service)


def pod_namespace(pod: Obj, view: ClusterView) -> str:
    """Where the pod's ConfigMaps and Secrets live (its own namespace)."""
    return str(pod.get("metadata", {}).get("namespace") or view.ns)


def _volume_errors(pod: Obj, container: Obj, view: ClusterView) -> list[str]:
    from ..app.cluster import CONFIGMAPS, SECRETS

    mounted = {m.get("name") for m in container.get("volumeMounts") or []}
    out = []
    for vol in pod.get("spec", {}).get("volumes") or []:
        if vol.get("name") not in mounted:
            continue
        for kind, gr, key, word in (
            ("configMap", CONFIGMAPS, "name", "configmap"),
            ("secret", SECRETS, "secretName", "secret"),
        ):
            src = vol.get(kind)
            if (
                src
                and not src.get("optional")
                and view.store.get(gr, pod_namespace(pod, view), src.get(key, "")) is None
            ):
                out.append(
                    f'MountVolume.SetUp failed for volume "{vol["name"]}" : {word} "{src.get(key)}" not found'
                )
    return out


def mounted_files(pod: Obj, container: Obj, view: ClusterView) -> dict[str, str]:
    """Contents of ConfigMap volumes mounted into the container: key → text."""
    from ..app.cluster import CONFIGMAPS

    mounted = {m.get("name") for m in container.get("volumeMounts") or []}
    out: dict[str, str] = {}
    for vol in pod.get("spec", {}).get("volumes") or []:
        cm = vol.get("configMap")
        if cm and vol.get("name") in mounted:
            obj = view.store.get(CONFIGMAPS, pod_namespace(pod, view), cm.get("name", ""))
            for k, v in ((obj or {}).get("data") or {}).items():
                out[k] = str(v)
    return out


_NC = re.compile(r"nc\s+(?:-\w+\s+)*([A-Za-z0-9.-]+)\s+(\d+)")


def _init_verdict(view: ClusterView, pod: Obj, container: Obj, cmd: list[str]) -> ContainerVerdict:
    words = [*cmd, *[str(a) for a in container.get("args") or []]]
    script = " ".join(words)
    if re.search(r"\bsleep\s+(infinity|inf)\b", script) or "tail -f /dev/null" in script:
        return ContainerVerdict(hang=True, ready=False)
    m = _NC.search(script)
    if m and re.search(r"\b(until|while)\b", script):
        host, port = m.group(1), int(m.group(2))
        if _reachable(view, host, port):
            return ContainerVerdict(exit_after_s=1.0, exit_code=0, exit_reason="Completed")
        return ContainerVerdict(hang=True, ready=False)
    m2 = re.search(r"\bexit\s+(\d+)", script)
    if re.fullmatch(r"\s*(/bin/)?false\s*", script) or (m2 and m2.group(1) != "0"):
        return ContainerVerdict(exit_after_s=0.2, exit_code=int(m2.group(1)) if m2 else 1)
    if re.search(r"\b(python[0-9.]*|jq|node)\b", script):
        for key, text in mounted_files(pod, container, view).items():
            if re.search(r"config|\.json$", key, re.I) and not key.endswith((".py", ".sh")):
                try:
                    json.loads(text)
                except json.JSONDecodeError as e:
                    return ContainerVerdict(
                        exit_after_s=0.5,
                        exit_code=1,
                        exit_message=f"FATAL: Failed to parse configuration file: {e.msg}: line {e.lineno} column {e.colno} (char {e.pos})",
                    )
    return ContainerVerdict(exit_after_s=1.0, exit_code=0, exit_reason="Completed")


def _reachable(view: ClusterView, host: str, port: int) -> bool:
    from ...k8s.readiness import serving
    from ..app.cluster import SERVICES

    name = host.split(".")[0]
    svc = view.store.get(SERVICES, view.ns, name)
    if svc is None or not any(p.get("port") == port for p in svc.get("spec", {}).get("ports") or []):
        return False
    sel = svc.get("spec", {}).get("selector") or {}
    return any(serving(p) for p in view.select(sel))


NODE_SYSTEM_SHARE = 0.1
"""What a node's own processes (OS, kubelet, container runtime) use of its memory, as its
``node_memory_MemAvailable_bytes`` shows it."""


def _node_memory(node: Obj | None) -> float:
    cap = ((node or {}).get("status") or {}).get("capacity") or {}
    return parse_quantity(cap.get("memory") or "16Gi")


def _node_memory_used_by_others(view: ClusterView, pod: Obj, node: Obj | None) -> float:
    """The node's own share plus the memory the other pods bound to it request (a container
    without a memory limit can take what is left, and the kernel's OOM killer ends it there)."""
    name = ((node or {}).get("metadata") or {}).get("name") or (pod.get("spec") or {}).get("nodeName")
    from ..app.cluster import PODS

    uid = pod.get("metadata", {}).get("uid")
    others = 0.0
    for other in view.store.list(PODS):
        spec = other.get("spec") or {}
        if spec.get("nodeName") != name or other["metadata"].get("uid") == uid:
            continue
        if (other.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for c in spec.get("containers") or []:
            others += quantity(((c.get("resources") or {}).get("requests") or {}).get("memory")) or 0.0
    return NODE_SYSTEM_SHARE * _node_memory(node) + others


def _memory_verdict(
    inp: VerdictInputs, pod: Obj, container: Obj, start: float, now: float, node: Obj | None = None
) -> ContainerVerdict | None:
    lim = (container.get("resources") or {}).get("limits") or {}
    limit = quantity(lim.get("memory"))
    service_container = inp.spec is not None and _is_service_container(inp, container)
    base = inp.spec.resources.memory if (service_container and inp.spec) else 8 * MIB
    extra = inp.load.extra_memory if (inp.load and service_container) else 0.0
    chaos_start = min((ch.start for ch in inp.view.chaos_on(pod, "StressChaos")), default=start)
    growth = inp.load.leak_bytes_per_s_per_pod if (inp.load and service_container) else 0.0
    delay = 0.0
    script_growth, script_delay = _fill_script(pod, container, inp.view)
    if script_growth:
        growth, delay = growth + script_growth, script_delay
    if limit is None:
        node_mem = _node_memory(node)
        # the rest of the node is only counted where this container alone could come close
        if (
            base + extra > 0.5 * node_mem
            and base + extra + _node_memory_used_by_others(inp.view, pod, node) > node_mem
        ):
            return ContainerVerdict(
                exit_after_s=max(1.0, chaos_start - start + 5.0),
                exit_code=137,
                exit_reason="OOMKilled",
                exit_message="System OOM encountered: node memory exhausted",
            )
        return None
    if base > limit:
        return ContainerVerdict(exit_after_s=0.5, exit_code=137, exit_reason="OOMKilled")
    if base + extra > limit:
        return ContainerVerdict(
            exit_after_s=max(0.5, chaos_start - start + 2.0), exit_code=137, exit_reason="OOMKilled"
        )
    if script_growth:
        return ContainerVerdict(
            exit_after_s=delay + (limit - base - extra) / growth, exit_code=137, exit_reason="OOMKilled"
        )
    if service_container and inp.leaked_now is not None:
        headroom = limit - base - extra - inp.leaked_now
        if headroom <= 0:
            return ContainerVerdict(
                exit_after_s=max(0.0, now - start), exit_code=137, exit_reason="OOMKilled"
            )
        if growth > 0:
            return ContainerVerdict(
                exit_after_s=max(0.0, now - start) + headroom / growth, exit_code=137, exit_reason="OOMKilled"
            )
        return None
    if growth > 0:
        return ContainerVerdict(
            exit_after_s=(limit - base - extra) / growth, exit_code=137, exit_reason="OOMKilled"
        )
    return None


def _fill_script(pod: Obj, container: Obj, view: ClusterView) -> tuple[float, float]:
    """A mounted script that keeps writing values into an in-memory store (valkey/redis OOM fault):
    (bytes per second, seconds before it starts)."""
    words = " ".join(str(x) for x in [*(container.get("command") or []), *(container.get("args") or [])])
    if not words:
        return 0.0, 0.0
    for text in mounted_files(pod, container, view).values():
        if (
            re.search(r"(valkey|redis)-cli", text)
            and re.search(r"\bset\b", text, re.I)
            and re.search(r"\b(while|for|seq)\b", text)
        ):
            size = MIB
            m = re.search(r"head\s+-c\s+(\d+)([kKmM]?)", text) or re.search(r"bs=(\d+)([kKmM]?)", text)
            if m:
                size = int(m.group(1)) * {"": 1, "k": 1024, "K": 1024, "m": MIB, "M": MIB}[m.group(2)]
            sleeps = [float(x) for x in re.findall(r"sleep\s+(\d+(?:\.\d+)?)", text)]
            delay = sleeps[0] if len(sleeps) > 1 else 0.0
            period = sleeps[-1] if sleeps else 1.0
            return size / max(period, 0.01), delay
    return 0.0, 0.0


def _chaos_kill(inp: VerdictInputs, pod: Obj, container: Obj, start: float) -> ContainerVerdict | None:
    for ch in inp.view.chaos_on(pod, "PodChaos"):
        names = ch.spec.get("containerNames") or []
        if ch.action == "container-kill" and container.get("name") in names and start <= ch.start:
            return ContainerVerdict(
                exit_after_s=max(0.0, ch.start - start),
                exit_code=137,
                exit_reason="Error",
                exit_message="killed",
            )
    return None


def _probe_verdict(
    inp: VerdictInputs,
    pod: Obj,
    container: Obj,
    env: dict[str, str],
    img: Image | None = None,
    serves: bool = True,
) -> ContainerVerdict:
    """``serves=False``: a utility program (``sleep infinity``...) that listens on no port."""
    ip = pod.get("status", {}).get("podIP") or "10.244.0.1"
    spec = inp.spec if (inp.spec is not None and _is_service_container(inp, container)) else None
    protocols: dict[int, str]
    if not serves:
        ports, protocols, paths = set(), {}, set()
    elif spec is not None:
        ports = {int(env[x.env]) if x.env and env.get(x.env, "").isdigit() else x.port for x in spec.listens}
        protocols = {
            (int(env[x.env]) if x.env and env.get(x.env, "").isdigit() else x.port): x.protocol
            for x in spec.listens
        }
        paths = set(spec.health_paths)
    elif img is not None and img.listens:
        ports = {x.port for x in img.listens}
        protocols = {x.port: x.protocol for x in img.listens}
        paths = {p for x in img.listens if x.protocol == "http" for p in x.paths}
    else:
        ports = {int(p.get("containerPort", 0)) for p in container.get("ports") or []}
        protocols = {p: "http" for p in ports}
        paths = {"/"}
    startup = spec.startup_s if spec else 1.0
    ready, unready_msg = True, None
    rp = container.get("readinessProbe")
    if rp:
        msg = _probe_failure(rp, container, ip, ports, protocols, paths, spec, inp.flag_not_serving)
        if msg:
            ready, unready_msg = False, f"Readiness probe failed: {msg}"
        startup += float(rp.get("initialDelaySeconds", 0))
    kill_after, kill_msg = None, None
    lp = container.get("livenessProbe")
    if lp:
        msg = _probe_failure(lp, container, ip, ports, protocols, paths, spec, inp.flag_not_serving)
        if msg:
            kill_after = float(lp.get("initialDelaySeconds", 0)) + float(lp.get("periodSeconds", 10)) * float(
                lp.get("failureThreshold", 3)
            )
            kill_msg = f"Liveness probe failed: {msg}"
    return ContainerVerdict(
        ready=ready,
        ready_delay_s=startup,
        unready_message=unready_msg,
        liveness_kill_after_s=kill_after,
        liveness_message=kill_msg,
    )


def _port_of(probe_part: Obj, container: Obj) -> int | None:
    port = probe_part.get("port")
    if isinstance(port, int):
        return port
    if isinstance(port, str) and port.isdigit():
        return int(port)
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return int(p.get("containerPort", 0))
    return None


def _probe_failure(
    probe: Obj,
    container: Obj,
    ip: str,
    ports: set[int],
    protocols: Mapping[int, str],
    paths: set[str],
    spec: Service | None,
    not_serving: str | None,
) -> str | None:
    if "httpGet" in probe:
        hg = probe["httpGet"]
        port = _port_of(hg, container)
        path = hg.get("path", "/")
        if port is None:
            return f"strconv.Atoi: parsing {hg.get('port')!r}: invalid syntax"
        if port not in ports:
            return f'Get "http://{ip}:{port}{path}": dial tcp {ip}:{port}: connect: connection refused'
        if protocols.get(port) not in ("http",):
            return f'Get "http://{ip}:{port}{path}": net/http: HTTP/1.x transport connection broken: malformed HTTP response'
        if path.split("?")[0] not in paths:
            return "HTTP probe failed with statuscode: 404"
        return None
    if "tcpSocket" in probe:
        port = _port_of(probe["tcpSocket"], container)
        if port is None or port not in ports:
            return f"dial tcp {ip}:{port}: connect: connection refused"
        return None
    if "grpc" in probe:
        port = _port_of(probe["grpc"], container)
        if port is None or port not in ports:
            return f'failed to connect service "{ip}:{port}" within 1s: context deadline exceeded'
        if spec is None or not spec.grpc_health or protocols.get(port) != "grpc":
            return 'service unhealthy (responded with "UNKNOWN")' if spec else None
        if not_serving:
            return 'service unhealthy (responded with "NOT_SERVING")'
        return None
    if "exec" in probe:
        cmd = " ".join(str(x) for x in (probe["exec"].get("command") or []))
        if re.fullmatch(r"\s*(/bin/)?false\s*", cmd) or re.search(r"\bexit\s+[1-9]", cmd):
            return "command failed with exit code 1"
    return None
