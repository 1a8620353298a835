"""The folder through which `itbench problem start | submit | stop` talk to the process that holds
the problem (``server.py``): one problem at a time per folder (``$ITBENCH_PROBLEM_DIR``, default
``~/.itbench/problem``). Only the harness's processes write here; the run folder keeps the record."""

from __future__ import annotations

import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, Field

from ..core.endpoints import Endpoints

M = TypeVar("M", bound=BaseModel)


class ProblemRequest(BaseModel):
    """What `problem start` asked for; the server reads it."""

    scenario: str
    seed: int = 0
    run_dir: str
    wall_time_s: float = 3600.0
    history_s: float = 3600.0
    masked: list[str] = Field(default_factory=list)
    churn: str = "default"
    scenario_dirs: list[str] = Field(default_factory=list)


class ProblemTask(BaseModel):
    """What the person (or their agent) is given once the fault is in place: the agent's task."""

    scenario: str
    seed: int
    run_dir: str
    goal: str
    kind: str
    persona: str
    namespaces: list[str]
    workdir: str
    endpoints: Endpoints
    deadline_unix: float
    """Wall-clock time at which the episode ends as a timeout if nothing was submitted."""
    env_file: str
    endpoints_file: str


class Submission(BaseModel):
    """`problem submit`: score now; the diagnosis, if any, is already in the work folder."""

    submitted_unix: float


class ProblemResult(BaseModel):
    """The episode is recorded (scored, or an environment failure) and the server is done."""

    run_dir: str
    episode_id: str | None = None
    failure: str | None = None
    """Why no episode was recorded (the batch was stopped, or crashed)."""


def _write(path: Path, model: BaseModel) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(model.model_dump_json(indent=2) + "\n")
    tmp.replace(path)


def _read(path: Path, cls: type[M]) -> M | None:
    try:
        return cls.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie does not (reaped here when it is this process's child, as
    when `problem start` ran in this process)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:  # not our child: its parent reaps it
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@dataclass(frozen=True)
class ProblemDir:
    root: Path

    @classmethod
    def default(cls) -> ProblemDir:
        env = os.environ.get("ITBENCH_PROBLEM_DIR")
        return cls(Path(env).expanduser() if env else Path.home() / ".itbench" / "problem")

    @property
    def request_file(self) -> Path:
        return self.root / "request.json"

    @property
    def pid_file(self) -> Path:
        return self.root / "server.pid"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    @property
    def task_file(self) -> Path:
        return self.root / "task.json"

    @property
    def submission_file(self) -> Path:
        return self.root / "submission.json"

    @property
    def result_file(self) -> Path:
        return self.root / "result.json"

    @property
    def env_file(self) -> Path:
        return self.root / "env.sh"

    @property
    def endpoints_file(self) -> Path:
        return self.root / "endpoints.json"

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    def write(self, path: Path, model: BaseModel) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        _write(path, model)

    def request(self) -> ProblemRequest | None:
        return _read(self.request_file, ProblemRequest)

    def task(self) -> ProblemTask | None:
        return _read(self.task_file, ProblemTask)

    def result(self) -> ProblemResult | None:
        return _read(self.result_file, ProblemResult)

    def submitted(self) -> bool:
        return self.submission_file.is_file()

    def server_pid(self) -> int | None:
        """The server's pid while it runs; None when there is none (never started, or gone)."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if pid_alive(pid) else None

    def signal_server(self, sig: signal.Signals) -> bool:
        pid = self.server_pid()
        if pid is None:
            return False
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return False
        return True

    def clear(self) -> None:
        """Forget the problem (the run folder is kept)."""
        for f in (
            self.request_file,
            self.pid_file,
            self.task_file,
            self.submission_file,
            self.result_file,
            self.env_file,
            self.endpoints_file,
        ):
            f.unlink(missing_ok=True)
        shutil.rmtree(self.bin_dir, ignore_errors=True)
