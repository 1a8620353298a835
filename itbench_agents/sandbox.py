"""How an external agent program runs: a scrubbed environment, a bubblewrap sandbox, one process tree.

``bwrap`` (bubblewrap, Debian/Ubuntu package ``bubblewrap``) gives the program

- a read-only view of the system (``/usr``, ``/etc``, the ``/bin``/``/lib`` links), its work folder
  read-write, ``/tmp`` as an empty tmpfs and nothing else of the host's filesystem: not the run
  folder, not the scenario library, not the harness's virtual environment, not ``$HOME``;
- its own PID namespace (``/proc`` shows only its processes, not the harness's command line) and
  ``--die-with-parent``; when the program exits, every process it started — daemons included —
  is killed with the namespace;
- the host's network, so it reaches the endpoints on 127.0.0.1.

Files named on the command line (``python3 /path/agent.py``) are bound read-only one by one;
``--sandbox-bind DIR`` binds more (e.g. the agent's package). Paths the harness asks to hide are
covered by an empty tmpfs even when they lie under a bound folder.

``--sandbox require`` (or its older name ``bwrap``) refuses to run without the sandbox. Without
bubblewrap (``--sandbox none``, or ``auto`` where ``bwrap`` is missing or cannot create
namespaces; the run's output and each episode's trajectory then carry :data:`NO_SANDBOX_WARNING`)
the program still gets the scrubbed environment and a work folder outside the run
folder, and its whole process tree is killed at the end (process group, plus every process that
carries the episode's marker variable, which catches programs that ``setsid`` away); but it can
read whatever the harness's user can read. Runs record which mode they used.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args

SandboxMode = Literal["auto", "require", "bwrap", "none"]
"""``require`` and ``bwrap`` are one mode: the sandbox or no run."""
SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)
NO_SANDBOX_WARNING = (
    "command agents run WITHOUT a sandbox: bubblewrap is missing or cannot create namespaces here, so "
    "the agent program can read whatever this user can read, the scenario library and the harness's "
    "command line included; its scores are not protected from a program that looks (install the "
    "`bubblewrap` package, or choose --sandbox require to refuse such runs)"
)
"""What ``auto`` says when it falls back to no sandbox."""
MARKER = "ITBENCH_AGENT_RUN"
"""Variable set to a per-episode value in the agent's environment; used to find its processes."""
SYSTEM_RO = ("/usr", "/etc", "/opt")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
LOCALE_VARS = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")


class SandboxUnavailable(RuntimeError):
    """``--sandbox bwrap`` was asked for but cannot work on this machine."""


@cache
def bwrap_works() -> bool:
    """True when ``bwrap`` exists and can create the namespaces the sandbox uses."""
    exe = shutil.which("bwrap")
    if not exe:
        return False
    try:
        r = subprocess.run(
            [exe, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0


def resolve_mode(mode: SandboxMode) -> Literal["bwrap", "none"]:
    if mode == "none":
        return "none"
    if bwrap_works():
        return "bwrap"
    if mode in ("bwrap", "require"):
        raise SandboxUnavailable(
            f"--sandbox {mode}: bubblewrap is not installed or cannot create namespaces here "
            "(install the `bubblewrap` package, or choose --sandbox none)"
        )
    return "none"


def fallback_warning(mode: SandboxMode) -> str | None:
    """:data:`NO_SANDBOX_WARNING` when ``mode`` is ``auto`` and resolves to no sandbox, else None
    (``none`` was chosen on purpose; ``require`` never runs without one)."""
    return NO_SANDBOX_WARNING if mode == "auto" and resolve_mode(mode) == "none" else None


def scrubbed_env(extra: dict[str, str], home: Path) -> dict[str, str]:
    """PATH (system folders only), HOME (the work folder), locale, and ``extra``; nothing else of
    the harness's environment (no VIRTUAL_ENV, PYTHONPATH, API keys or ITBENCH_* settings)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "TMPDIR": "/tmp"}
    for k in LOCALE_VARS:
        if k in os.environ:
            env[k] = os.environ[k]
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra)
    return env


def _file_args(command: list[str], cwd: Path) -> list[Path]:
    out = []
    for arg in command:
        if "/" not in arg:
            continue
        p = Path(arg) if arg.startswith("/") else cwd / arg
        try:
            if p.is_file():
                out.append(p.resolve())
        except OSError:
            continue
    return out


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def bwrap_argv(
    command: list[str],
    *,
    workdir: Path,
    env: dict[str, str],
    binds: Iterable[str] = (),
    hide: Iterable[str | Path] = (),
    mounts: Iterable[tuple[str, str]] = (),
) -> list[str]:
    """The ``bwrap`` command line that runs ``command`` as the module docstring describes.
    ``mounts``: (source, destination) pairs bound read-only where the source is not (e.g. a
    program's libraries under ``/tmp``)."""
    exe = shutil.which("bwrap") or "bwrap"
    argv = [exe, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--new-session"]
    bound: list[Path] = []
    for d in SYSTEM_RO:
        if Path(d).is_dir():
            argv += ["--ro-bind", d, d]
            bound.append(Path(d))
    for link in SYSTEM_LINKS:
        p = Path(link)
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), link]
        elif p.is_dir():
            argv += ["--ro-bind", link, link]
            bound.append(p)
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    work = workdir.resolve()
    extra = [Path(b).resolve() for b in binds] + [
        f for f in _file_args(command, work) if not _under(f, [*bound, work])
    ]
    for b in extra:
        argv += ["--ro-bind", str(b), str(b)]
    bound += extra
    argv += ["--bind", str(work), str(work)]
    for src, dst in mounts:
        argv += ["--ro-bind", src, dst]
    for h in hide:
        hp = Path(h).resolve()
        if hp.is_dir() and _under(hp, bound) and not _under(work, [hp]):
            argv += ["--tmpfs", str(hp)]
    argv += ["--chdir", str(work), "--clearenv"]
    for k, v in env.items():
        argv += ["--setenv", k, v]
    return [*argv, "--", *command]


def hidden_options(argv: list[str]) -> tuple[list[str], bytes]:
    """Move bwrap's options out of its command line (which the sandboxed program can read in
    ``/proc/1/cmdline``) into ``--args FD`` data: returns (the short command line with ``{fd}`` to
    fill in, the NUL-separated options to write to that descriptor)."""
    cut = argv.index("--")
    options = argv[1:cut]
    return [argv[0], "--args", "{fd}", *argv[cut:]], b"".join(o.encode() + b"\0" for o in options)


def start_process(argv: list[str], options: bytes, **kw: Any) -> subprocess.Popen[bytes]:
    """Start ``argv`` (a command, or ``hidden_options``' bwrap line) in a new session; ``options``
    (bwrap's ``--args`` data) go through a pipe."""
    if not options:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True, **kw)
    r, w = os.pipe()
    try:
        argv = [a.replace("{fd}", str(r)) for a in argv]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=(r,), **kw)
    finally:
        os.close(r)
    with os.fdopen(w, "wb") as fh:
        fh.write(options)
    return proc


def harness_paths() -> list[Path]:
    """Folders an agent must never see: this package, the scenario library, the harness's venv."""
    pkg = Path(__file__).resolve().parent  # itbench_agents/
    paths = [pkg, pkg.parent / "scenarios", pkg.parent / "prompts"]
    if sys.prefix != sys.base_prefix:
        paths.append(Path(sys.prefix))
    return paths


def kill_tree(proc: subprocess.Popen[bytes], marker: str) -> int:
    """Kill ``proc``'s process group and every process whose environment carries ``marker``;
    returns how many processes were signalled."""
    killed = 0
    try:
        os.killpg(proc.pid, signal.SIGKILL)
        killed += 1
    except (ProcessLookupError, PermissionError):
        pass
    needle = f"{MARKER}={marker}".encode()
    for _ in range(3):  # a fork may race the scan: look again until nothing is found
        found = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if needle in environ.split(b"\0"):
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                    found += 1
                except (ProcessLookupError, PermissionError):
                    continue
        killed += found
        if not found:
            break
        time.sleep(0.05)
    return killed
