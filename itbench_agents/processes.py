"""Waiting for a child process with a deadline, woken by its exit rather than by polling.

``Popen.wait(timeout=...)`` polls: it sleeps 0.5 ms, 1 ms, 2 ms... up to 50 ms between looks, so a
command that takes 30 ms is seen to end at 31.5 or 63.5 ms and one of 170 ms at 213.5 ms. Where
the harness runs many short commands (each task of an agent's Ansible playbook is one command in
the RHEL host twin's sandbox) that is a quarter of their time. On Linux a pidfd becomes readable
when the process ends, so :func:`wait_for_exit` sleeps in ``select`` until the exit or the
deadline; elsewhere it falls back to ``Popen.wait``.
"""

from __future__ import annotations

import os
import select
import subprocess


def wait_for_exit(proc: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float | None) -> int | None:
    """``proc``'s exit status once it ends, or None if it is still running after ``timeout``
    seconds (None: no deadline). The process is reaped when it ended, as ``Popen.wait`` does."""
    if timeout is None:
        return proc.wait()
    pidfd_open = getattr(os, "pidfd_open", None)
    fd = None
    if pidfd_open is not None and proc.returncode is None:
        try:
            fd = pidfd_open(proc.pid)
        except OSError:  # kernel older than 5.3, or a seccomp filter: poll as Popen does
            fd = None
    if fd is None:
        try:
            return proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None
    try:
        ready, _, _ = select.select([fd], [], [], max(0.0, timeout))
    finally:
        os.close(fd)
    return proc.wait() if ready else None
