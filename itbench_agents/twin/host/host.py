"""A RHEL 9 host twin: a folder that holds the host's state, and commands run inside it.

:meth:`HostTwin.create` lays a :class:`~.spec.HostSpec` out in a folder::

    root/        the host's own tree: etc, var, root, home, tmp, run, opt, srv, ... (read-write)
    proc-sys/    kernel parameters, one file per key, bound over /proc/sys
    commands.py  a copy of ``inside/commands.py``, executable, linked at the RHEL commands' paths

:meth:`HostTwin.exec` runs a shell command *inside* the host with bubblewrap: ``root/``'s folders
at ``/``, this machine's ``/usr`` read-only (the host's programs and its Python), the commands RHEL
has and this machine lacks (``inside/commands.py``: ``sshd``, ``systemctl``, ``rpm``, ``sysctl``,
``modprobe``, ``findmnt``, ...) linked at their RHEL paths, ``/proc/sys`` from ``proc-sys/``, no
network, its own hostname, uid 0. Nothing of this machine's ``/etc``, ``/home``, ``/root``,
``/var`` or ``/tmp`` is visible or writable inside; files are read and written only by commands
that run inside (``put``/``get`` too), so a link an agent leaves in the host cannot reach out.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import BinaryIO

from ...processes import wait_for_exit
from .spec import HostSpec, rhel9_base

INSIDE = Path(__file__).with_name("inside")
STATE_PATH = "/run/itbench-host/state.json"
TOP_DIRS = ("etc", "var", "root", "home", "tmp", "run", "opt", "srv", "mnt", "media", "boot", "afs")
USR_SHADOWED = ("bin", "sbin", "local")
HOST_COMMANDS = {
    "sshd": "sbin",
    "sysctl": "sbin",
    "modprobe": "sbin",
    "lsmod": "sbin",
    "getenforce": "sbin",
    "sestatus": "sbin",
    "setenforce": "sbin",
    "systemctl": "bin",
    "rpm": "bin",
    "findmnt": "bin",
    "update-crypto-policies": "bin",
    "sudo": "bin",
}
"""Commands of ``inside/commands.py`` and the ``/usr`` folder RHEL 9 keeps them in."""
NOT_ON_RHEL = frozenset(
    {
        "apt",
        "apt-get",
        "apt-cache",
        "apt-config",
        "apt-key",
        "apt-mark",
        "aptitude",
        "dpkg",
        "dpkg-query",
        "dpkg-deb",
        "dpkg-divert",
        "dpkg-split",
        "dpkg-trigger",
        "dpkg-statoverride",
        "dpkg-reconfigure",
        "update-alternatives",
        "debconf",
        "run-parts",
    }
)
"""Debian's package tools: Ansible would take the host for Debian if it found them."""
MASKED_USR = ("lib/sysctl.d", "lib/modprobe.d", "lib/os-release")
"""This machine's own defaults that would otherwise leak into the host."""
ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/root/bin",
    "HOME": "/root",
    "USER": "root",
    "LOGNAME": "root",
    "SHELL": "/bin/bash",
    "LANG": "C.UTF-8",
    "PYTHONPATH": "/.itbench/python",
}
DEFAULT_TIMEOUT_S = 60.0
OUTPUT_LIMIT = 16 * 1024 * 1024
"""The most of a command's standard output (and of its standard error) returned."""
FILE_LIMIT = 64 * 1024 * 1024
"""The largest file a command in the host may write (its output included)."""


def file_limited(argv: list[str]) -> list[str]:
    """``argv`` run with no file it writes, its output included, larger than :data:`FILE_LIMIT`:
    the limit is set in the process that execs it (util-linux ``prlimit``, or Python where that is
    missing), so every process it starts inherits it. (Setting it from outside after the start
    races with bwrap's fork: a child forked first ran unbounded.)"""
    tool = shutil.which("prlimit")
    if tool:
        return [tool, f"--fsize={FILE_LIMIT}", "--", *argv]
    import sys

    code = (
        "import os, resource, sys; "
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({FILE_LIMIT}, {FILE_LIMIT})); "
        "os.execvp(sys.argv[1], sys.argv[1:])"
    )
    return [sys.executable, "-c", code, *argv]


@dataclass(frozen=True)
class ExecResult:
    rc: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False


class HostUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create namespaces on this machine."""


@cache
def host_sandbox_problem() -> str | None:
    """Why the host twin cannot run here, or None."""
    if not shutil.which("bwrap"):
        return "the RHEL host twin needs bubblewrap (Debian package `bubblewrap`)"
    if not Path("/usr/bin/python3").exists():
        return "the RHEL host twin runs modules with /usr/bin/python3, which this machine lacks"
    probe = subprocess.run(
        [
            "bwrap",
            "--unshare-all",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--proc",
            "/proc",
            "true",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        return f"bubblewrap cannot create namespaces here: {probe.stderr.strip()[:300]}"
    return None


def _mode(text: str) -> int:
    return int(text, 8)


class HostTwin:
    """One host: its folder and a way to run commands in it."""

    def __init__(self, folder: Path, hostname: str = "rhel9-host") -> None:
        self.folder = folder
        self.hostname = hostname

    @classmethod
    def create(cls, folder: Path, spec: HostSpec | None = None, *, base: HostSpec | None = None) -> HostTwin:
        """Lay ``spec`` (over ``base``, by default :func:`rhel9_base`) out in ``folder`` (made empty first)."""
        full = (spec or HostSpec()).over(base if base is not None else rhel9_base())
        if folder.exists():
            shutil.rmtree(folder)
        root = folder / "root"
        for top in TOP_DIRS:
            (root / top).mkdir(parents=True, exist_ok=True)
        for sub in (
            "var/log/audit",
            "var/tmp",
            "var/spool/cron",
            "var/lib/chrony",
            "etc/cron.d",
            "run/systemd/system",
            "run/itbench-host",
            "home/cloud-user",
            "etc/sysctl.d",
            "etc/modprobe.d",
            "etc/profile.d",
        ):
            (root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(root / "tmp", 0o1777)
        os.chmod(root / "var/tmp", 0o1777)
        os.chmod(root / "root", 0o550)
        for path, file in sorted(full.files.items()):
            assert file is not None
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(file.content)
            os.chmod(target, _mode(file.mode))
        (root / "etc/hostname").write_text(full.hostname + "\n")
        state = {
            "hostname": full.hostname,
            "packages": full.packages,
            "services": {name: svc.model_dump() for name, svc in full.services.items() if svc is not None},
            "modules": list(full.modules),
            "mounts": {t: m.model_dump() for t, m in full.mounts.items() if m is not None},
            "selinux": full.selinux,
        }
        (root / STATE_PATH.lstrip("/")).write_text(json.dumps(state, indent=1, sort_keys=True))
        shutil.copyfile(INSIDE / "commands.py", folder / "commands.py")
        os.chmod(folder / "commands.py", 0o755)
        proc_sys = folder / "proc-sys"
        for key, value in sorted(full.kernel.items()):
            target = proc_sys / key.replace(".", "/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"{value}\n")
        return cls(folder, full.hostname)

    # ------------------------------------------------------------------------------ running
    def bwrap_argv(self) -> list[str]:
        root = self.folder / "root"
        argv = [
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--uid",
            "0",
            "--gid",
            "0",
            "--hostname",
            self.hostname,
            "--dir",
            "/usr",
        ]
        for entry in sorted(os.listdir("/usr")):
            if entry not in USR_SHADOWED:
                argv += ["--ro-bind", f"/usr/{entry}", f"/usr/{entry}"]
        for masked in MASKED_USR:
            if Path("/usr", masked).is_dir():
                argv += ["--tmpfs", f"/usr/{masked}"]
        for sub in ("local/bin", "local/sbin", "local/lib", "local/share"):
            argv += ["--dir", f"/usr/{sub}"]
        # /usr/bin and /usr/sbin: this machine's programs as links to a hidden copy, RHEL's commands over them
        argv += ["--ro-bind", "/usr/bin", "/.usr-bin", "--ro-bind", "/usr/sbin", "/.usr-sbin"]
        for folder in ("bin", "sbin"):
            argv += ["--dir", f"/usr/{folder}"]
            for name in sorted(os.listdir(f"/usr/{folder}")):
                if name not in HOST_COMMANDS and name not in NOT_ON_RHEL:
                    argv += ["--symlink", f"/.usr-{folder}/{name}", f"/usr/{folder}/{name}"]
        argv += ["--ro-bind", str(self.folder / "commands.py"), "/.itbench/commands.py"]
        for name, folder in HOST_COMMANDS.items():
            argv += ["--symlink", "/.itbench/commands.py", f"/usr/{folder}/{name}"]
        argv += ["--ro-bind", str(INSIDE / "pylib"), "/.itbench/python"]
        for link, target in (
            ("bin", "usr/bin"),
            ("sbin", "usr/sbin"),
            ("lib", "usr/lib"),
            ("lib64", "usr/lib64"),
        ):
            argv += ["--symlink", target, f"/{link}"]
        for top in sorted(os.listdir(root)):
            argv += ["--bind", str(root / top), f"/{top}"]
        argv += ["--proc", "/proc", "--dev", "/dev", "--bind", str(self.folder / "proc-sys"), "/proc/sys"]
        argv += ["--chdir", "/root", "--clearenv"]
        for key, value in ENV.items():
            argv += ["--setenv", key, value]
        return argv

    def exec(self, command: str, stdin: bytes = b"", timeout: float = DEFAULT_TIMEOUT_S) -> ExecResult:
        """``/bin/sh -c command`` inside the host, as root; the whole process tree ends with it. No
        file it writes — its output included — may grow past :data:`FILE_LIMIT` (the kernel stops
        the writer, as ``ulimit -f`` would), so a command that prints forever cannot fill memory."""
        problem = host_sandbox_problem()
        if problem:
            raise HostUnavailable(problem)
        (self.folder / "proc-sys").mkdir(exist_ok=True)
        with tempfile.TemporaryFile() as si, tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
            si.write(stdin)
            si.seek(0)
            proc = subprocess.Popen(
                file_limited([*self.bwrap_argv(), "/bin/sh", "-c", command]),
                stdin=si,
                stdout=so,
                stderr=se,
                start_new_session=True,
            )
            status = wait_for_exit(proc, timeout)
            timed_out, rc = status is None, 124 if status is None else status
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            out, errs = _head(so), _head(se)
            if os.fstat(so.fileno()).st_size >= FILE_LIMIT or os.fstat(se.fileno()).st_size >= FILE_LIMIT:
                errs += f"\noutput over {FILE_LIMIT // 2**20} MiB: cut off\n".encode()
        if timed_out:
            errs += f"\ntimed out after {timeout:g} s\n".encode()
        return ExecResult(rc, out, errs, timed_out)

    def put(self, path: str, data: bytes) -> ExecResult:
        """Write a file inside the host (as ``cat > path`` would there)."""
        return self.exec(f"cat > {_quote(path)}", stdin=data)

    def get(self, path: str) -> ExecResult:
        """Read a file inside the host (as ``cat path`` would there)."""
        return self.exec(f"cat {_quote(path)}")

    def state(self) -> dict:  # type: ignore[type-arg]
        """The host's runtime state (packages, services, modules, mounts, SELinux) as the host keeps it."""
        return json.loads((self.folder / "root" / STATE_PATH.lstrip("/")).read_text())


def _quote(path: str) -> str:
    return "'" + path.replace("'", "'\"'\"'") + "'"


def _head(f: BinaryIO) -> bytes:
    f.seek(0)
    return f.read(OUTPUT_LIMIT)
