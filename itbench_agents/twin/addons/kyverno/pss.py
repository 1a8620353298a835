"""Kubernetes Pod Security Standards, as Kyverno's ``validate.podSecurity`` applies them: the
``baseline`` and ``restricted`` controls checked on a Pod (or a controller's Pod template), minus
the violations an ``exclude`` entry (or a PolicyException's ``podSecurity``) forgives.

A violation names its control (``Privileged Containers``, ``Host Namespaces``...), the field
(``spec.containers[*].securityContext.privileged``), the value, and for container-level controls
the container's image, which is what ``exclude`` entries match on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .values import wildcard_match

BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}  # fmt: skip
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
RESTRICTED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
}  # fmt: skip
CONTAINER_FIELDS = ("containers", "initContainers", "ephemeralContainers")


@dataclass(frozen=True)
class Violation:
    control: str
    field: str
    value: Any
    image: str | None = None

    def __str__(self) -> str:
        where = f" (image {self.image})" if self.image else ""
        return f"{self.control}: {self.field}={self.value!r}{where}"


def _containers(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for kind in CONTAINER_FIELDS:
        for c in spec.get(kind) or []:
            if isinstance(c, dict):
                yield kind, c


def _sc(obj: dict[str, Any]) -> dict[str, Any]:
    sc = obj.get("securityContext")
    return sc if isinstance(sc, dict) else {}


def baseline(pod: dict[str, Any]) -> list[Violation]:
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    out: list[Violation] = []
    psc = _sc(spec)
    for ns in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(ns) is True:
            out.append(Violation("Host Namespaces", f"spec.{ns}", True))
    if (psc.get("windowsOptions") or {}).get("hostProcess") is True:
        out.append(Violation("HostProcess", "spec.securityContext.windowsOptions.hostProcess", True))
    for v in spec.get("volumes") or []:
        if isinstance(v, dict) and "hostPath" in v:
            out.append(
                Violation(
                    "HostPath Volumes", "spec.volumes[*].hostPath", (v.get("hostPath") or {}).get("path")
                )
            )
    for s in psc.get("sysctls") or []:
        if isinstance(s, dict) and s.get("name") not in SAFE_SYSCTLS:
            out.append(Violation("Sysctls", "spec.securityContext.sysctls[*].name", s.get("name")))
    out += _selinux(psc, "spec.securityContext.seLinuxOptions", None)
    if (psc.get("seccompProfile") or {}).get("type") == "Unconfined":
        out.append(Violation("Seccomp", "spec.securityContext.seccompProfile.type", "Unconfined"))
    if (psc.get("appArmorProfile") or {}).get("type") not in (None, "RuntimeDefault", "Localhost"):
        out.append(
            Violation("AppArmor", "spec.securityContext.appArmorProfile.type", psc["appArmorProfile"]["type"])
        )
    for key, value in (meta.get("annotations") or {}).items():
        if key.startswith("container.apparmor.security.beta.kubernetes.io/") and not (
            value == "runtime/default" or str(value).startswith("localhost/")
        ):
            out.append(Violation("AppArmor", f"metadata.annotations[{key}]", value))
    for kind, c in _containers(spec):
        image = str(c.get("image", ""))
        sc = _sc(c)
        base = f"spec.{kind}[*]"
        if sc.get("privileged") is True:
            out.append(Violation("Privileged Containers", f"{base}.securityContext.privileged", True, image))
        if (sc.get("windowsOptions") or {}).get("hostProcess") is True:
            out.append(
                Violation("HostProcess", f"{base}.securityContext.windowsOptions.hostProcess", True, image)
            )
        for cap in (sc.get("capabilities") or {}).get("add") or []:
            if cap not in BASELINE_CAPABILITIES:
                out.append(Violation("Capabilities", f"{base}.securityContext.capabilities.add", cap, image))
        for port in c.get("ports") or []:
            if isinstance(port, dict) and port.get("hostPort") not in (None, 0):
                out.append(Violation("Host Ports", f"{base}.ports[*].hostPort", port.get("hostPort"), image))
        out += _selinux(sc, f"{base}.securityContext.seLinuxOptions", image)
        if sc.get("procMount") not in (None, "Default"):
            out.append(
                Violation("/proc Mount Type", f"{base}.securityContext.procMount", sc.get("procMount"), image)
            )
        if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
            out.append(
                Violation("Seccomp", f"{base}.securityContext.seccompProfile.type", "Unconfined", image)
            )
        if (sc.get("appArmorProfile") or {}).get("type") not in (None, "RuntimeDefault", "Localhost"):
            out.append(
                Violation(
                    "AppArmor",
                    f"{base}.securityContext.appArmorProfile.type",
                    sc["appArmorProfile"]["type"],
                    image,
                )
            )
    return out


def _selinux(sc: dict[str, Any], field: str, image: str | None) -> list[Violation]:
    opts = sc.get("seLinuxOptions")
    if not isinstance(opts, dict):
        return []
    out = []
    if opts.get("type", "") not in SELINUX_TYPES:
        out.append(Violation("SELinux", f"{field}.type", opts.get("type"), image))
    for key in ("user", "role"):
        if opts.get(key):
            out.append(Violation("SELinux", f"{field}.{key}", opts.get(key), image))
    return out


def restricted(pod: dict[str, Any]) -> list[Violation]:
    spec = pod.get("spec") or {}
    out = baseline(pod)
    psc = _sc(spec)
    for v in spec.get("volumes") or []:
        if isinstance(v, dict):
            kinds = [k for k in v if k != "name"]
            bad = [k for k in kinds if k not in RESTRICTED_VOLUMES]
            if bad:
                out.append(Violation("Volume Types", f"spec.volumes[*].{bad[0]}", v.get("name")))
    pod_non_root = psc.get("runAsNonRoot")
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
    if psc.get("runAsUser") == 0:
        out.append(Violation("Running as Non-root user", "spec.securityContext.runAsUser", 0))
    if pod_non_root is False:
        out.append(Violation("Running as Non-root", "spec.securityContext.runAsNonRoot", False))
    for kind, c in _containers(spec):
        image = str(c.get("image", ""))
        sc = _sc(c)
        base = f"spec.{kind}[*]"
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(
                Violation(
                    "Privilege Escalation",
                    f"{base}.securityContext.allowPrivilegeEscalation",
                    sc.get("allowPrivilegeEscalation"),
                    image,
                )
            )
        non_root = sc.get("runAsNonRoot")
        if non_root is False or (non_root is None and pod_non_root is not True):
            out.append(
                Violation("Running as Non-root", f"{base}.securityContext.runAsNonRoot", non_root, image)
            )
        if sc.get("runAsUser") == 0:
            out.append(Violation("Running as Non-root user", f"{base}.securityContext.runAsUser", 0, image))
        seccomp = (sc.get("seccompProfile") or {}).get("type")
        if seccomp is None and pod_seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(Violation("Seccomp", f"{base}.securityContext.seccompProfile.type", None, image))
        elif seccomp not in (None, "RuntimeDefault", "Localhost", "Unconfined"):  # Unconfined: baseline's
            out.append(Violation("Seccomp", f"{base}.securityContext.seccompProfile.type", seccomp, image))
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []) and kind != "ephemeralContainers":
            out.append(
                Violation(
                    "Capabilities", f"{base}.securityContext.capabilities.drop", caps.get("drop"), image
                )
            )
        for cap in caps.get("add") or []:
            if cap != "NET_BIND_SERVICE" and cap in BASELINE_CAPABILITIES:
                out.append(Violation("Capabilities", f"{base}.securityContext.capabilities.add", cap, image))
    return out


def check(pod: dict[str, Any], level: str) -> list[Violation]:
    if level == "privileged":
        return []
    return restricted(pod) if level == "restricted" else baseline(pod)


def excused(v: Violation, excludes: list[dict[str, Any]]) -> bool:
    """Whether an ``exclude`` entry forgives ``v``: same control; for container-level violations an
    image pattern that matches; when the entry names a field and values, the same field and a listed
    value."""
    for e in excludes:
        if e.get("controlName") != v.control:
            continue
        images = e.get("images") or []
        if images and not (v.image and any(wildcard_match(str(p), v.image) for p in images)):
            continue
        if v.image and not images and not e.get("restrictedField"):
            continue  # a container-level violation needs its image (or field) named
        field = e.get("restrictedField")
        if field and field != v.field:
            continue
        values = e.get("values")
        if values and str(v.value) not in [str(x) for x in values]:
            continue
        return True
    return False


def evaluate(
    pod: dict[str, Any], spec: dict[str, Any], extra_excludes: list[dict[str, Any]] | None = None
) -> tuple[str, str]:
    """``validate.podSecurity`` on one Pod (view): ``(status, message)``."""
    level = str(spec.get("level", "baseline"))
    version = str(spec.get("version", "latest"))
    excludes = list(spec.get("exclude") or []) + list(extra_excludes or [])
    left = [v for v in check(pod, level) if not excused(v, excludes)]
    if not left:
        return "pass", ""
    controls = sorted({v.control for v in left})
    return (
        "fail",
        f'violates PodSecurity "{level}:{version}": {", ".join(controls)} ({"; ".join(map(str, left[:5]))})',
    )
