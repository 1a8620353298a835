"""Run Debian's real ``prometheus`` on backfilled data (differential test, benchmark).

``RealPrometheus.start(source, workdir)`` writes the source's samples as OpenMetrics, backfills them
with ``promtool tsdb create-blocks-from openmetrics`` and starts ``prometheus`` on a free loopback
port with a minimal config. ``None`` when the binaries are absent.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from itbench_agents.twin.prometheus.memstore import MemorySeriesSource

from .synthetic import write_openmetrics


def binaries() -> tuple[str, str] | None:
    prom, tool = shutil.which("prometheus"), shutil.which("promtool")
    if prom is None or tool is None:
        return None
    return prom, tool


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RealPrometheus:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.proc = proc
        self.url = url
        self.log = log

    @classmethod
    def start(
        cls, source: MemorySeriesSource, workdir: Path, timeout_s: float = 60.0
    ) -> RealPrometheus | None:
        bins = binaries()
        if bins is None:
            return None
        prom, tool = bins
        workdir.mkdir(parents=True, exist_ok=True)
        om = workdir / "data.om"
        write_openmetrics(source, om)
        data = workdir / "tsdb"
        subprocess.run(
            [tool, "tsdb", "create-blocks-from", "openmetrics", str(om), str(data)],
            check=True,
            capture_output=True,
            timeout=timeout_s,
        )
        cfg = workdir / "prometheus.yml"
        cfg.write_text("global:\n  scrape_interval: 15s\n")
        port = _free_port()
        log = workdir / "prometheus.log"
        proc = subprocess.Popen(
            [
                prom,
                f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{port}",
                f"--config.file={cfg}",
                "--storage.tsdb.retention.time=100y",
                "--query.lookback-delta=5m",
            ],
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        rp = cls(proc, url, log)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return rp
            except OSError:
                time.sleep(0.2)
        rp.stop()
        raise RuntimeError("prometheus did not become ready")

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        q = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}{path}?{q}", timeout=30) as r:
                return dict(json.loads(r.read()))
        except urllib.error.HTTPError as exc:
            return dict(json.loads(exc.read()))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
