"""A twin driven by the real ``kubectl`` through a kubeconfig: the helper the addon tests share."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


class KubectlCluster:
    def __init__(self, twin: Any, kubeconfig: Path) -> None:
        self.twin, self.kubeconfig = twin, kubeconfig

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {res.stderr}{res.stdout}")
        return res

    def apply(self, text: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.kubectl("apply", "-f", "-", stdin=text, check=check)
