"""The real ``kubectl`` against a twin through a kubeconfig: :func:`run_kubectl`, which every test that
shells out to kubectl uses, and :class:`KubectlCluster`, the helper the addon tests share."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


def run_kubectl(
    kubeconfig: str | Path, *args: str, input: str | None = None, check: bool = False, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``kubectl --kubeconfig KUBECONFIG ARGS...``, text in and out; with ``check`` a failure raises
    an AssertionError that shows the command and what kubectl printed."""
    res = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and res.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}): {res.stderr}{res.stdout}")
    return res


class KubectlCluster:
    def __init__(self, twin: Any, kubeconfig: Path) -> None:
        self.twin, self.kubeconfig = twin, kubeconfig

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return run_kubectl(self.kubeconfig, *args, input=stdin, check=check)

    def apply(self, text: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.kubectl("apply", "-f", "-", stdin=text, check=check)
