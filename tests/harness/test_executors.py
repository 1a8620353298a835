"""Executors (issue 30, step 3): the batch runs its units on any ``Executor``; worker processes that
ship their episodes' folders back (no access to the run folder needed) leave the same run folder as
workers that write it, through an artifact sink; fail-fast stops any executor."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.run_folders import episode_files, fake_batch

from itbench_agents.harness.batch import run_batch
from itbench_agents.harness.episode import EpisodeSpec
from itbench_agents.harness.executor_registry import ExecutorRequest, make_executor
from itbench_agents.harness.executors import (
    MAX_SHIPPED_BYTES,
    Finish,
    InProcessExecutor,
    ProcessExecutor,
    RunFolderSink,
    _read_folder,
)
from itbench_agents.harness.runfolder import check_episodes, read_episodes
from itbench_agents.plugins import PluginError


def test_shipped_artifacts_leave_the_same_run_folder(tmp_path: Path) -> None:
    direct, shipped = tmp_path / "direct", tmp_path / "shipped"
    run_batch(direct, fake_batch(direct), executor=ProcessExecutor(2))
    run_batch(shipped, fake_batch(shipped), executor=ProcessExecutor(2, ship_artifacts=True))
    a, b = read_episodes(direct), read_episodes(shipped)
    assert len(a) == len(b) == 4
    assert sorted((r.key, r.termination) for r in a) == sorted((r.key, r.termination) for r in b)
    assert all(r.termination == "submitted" for r in b)
    assert episode_files(direct) == episode_files(shipped)
    assert "trajectory.jsonl" in next(iter(episode_files(shipped).values()))
    assert not check_episodes(shipped).foreign


class Recording:
    """A custom executor: runs in this process and remembers what it ran."""

    name = "recording"

    def __init__(self) -> None:
        self.ran: list[list[str]] = []

    def run(self, units: list[list[EpisodeSpec]], finish: Finish) -> bool:
        self.ran += [[s.episode_id for s in u] for u in units]
        return InProcessExecutor().run(units, finish)


def test_a_custom_executor_runs_the_batch_and_fail_fast_stops_it(tmp_path: Path) -> None:
    ex = Recording()
    summary = run_batch(tmp_path / "run", fake_batch(tmp_path / "run", trials=1), executor=ex)
    assert summary.ran == 2 and len(ex.ran) == 2 and not summary.stopped_early

    bad = tmp_path / "bad"
    summary = run_batch(
        bad, fake_batch(bad, agent="itbench_fakes:crash"), executor=InProcessExecutor(), fail_fast=True
    )
    assert summary.stopped_early and summary.ran == 1
    summary = run_batch(
        tmp_path / "bad2",
        fake_batch(tmp_path / "bad2", agent="itbench_fakes:crash"),
        executor=ProcessExecutor(1),
        fail_fast=True,
    )
    assert summary.stopped_early and summary.ran == 1


def test_the_sink_keeps_files_inside_the_episode_folder(tmp_path: Path) -> None:
    sink = RunFolderSink(tmp_path)
    (tmp_path / "episodes" / "e1").mkdir(parents=True)
    (tmp_path / "episodes" / "e1" / "stale.txt").write_text("from a crashed attempt")
    sink.put("e1", {"trajectory.jsonl": b"{}\n", "work/notes.md": b"hi", "../../escape.txt": b"no"})
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == [
        "episodes/e1/trajectory.jsonl",
        "episodes/e1/work/notes.md",
    ]


def test_a_folder_too_big_to_ship_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import itbench_agents.harness.executors as ex

    (tmp_path / "a.txt").write_bytes(b"x" * 10)
    (tmp_path / "b.txt").write_bytes(b"y" * 10)
    monkeypatch.setattr(ex, "MAX_SHIPPED_BYTES", 15)
    files = _read_folder(tmp_path)
    assert files["a.txt"] == b"x" * 10 and "b.txt" not in files
    assert b'"first_left_out": "b.txt"' in files["artifacts.json"]
    assert MAX_SHIPPED_BYTES >= 1 << 20


def test_bad_ray_choices_fail_before_the_first_episode(tmp_path: Path) -> None:
    with pytest.raises(PluginError, match="--ray-address is for --executor ray"):
        make_executor(
            "processes", ExecutorRequest(concurrency=2, run_dir=tmp_path, address="ray://nowhere:1")
        )
    with pytest.raises(PluginError, match="--ray-address is for --executor ray"):
        make_executor(None, ExecutorRequest(concurrency=1, run_dir=tmp_path, address="auto"))
    with pytest.raises(PluginError, match=r"could not start or reach the Ray cluster at 127\.0\.0\.1:9"):
        make_executor("ray", ExecutorRequest(concurrency=1, run_dir=tmp_path, address="127.0.0.1:9"))


class _SignalInsideRay:
    """A stand-in for the ``ray`` module whose compiled ``wait`` or ``get`` gets a signal: the
    handler's exception comes out as a SystemError, as Ray's Cython calls return it."""

    def __init__(self, where: str) -> None:
        self.where, self.cancelled, self.hit = where, [], False

    def remote(self, **options: object):  # type: ignore[no-untyped-def]
        return lambda fn: type("Task", (), {"remote": staticmethod(lambda unit: ("ref", unit[0].episode_id))})

    def _signal(self) -> None:
        import itbench_agents.harness.units as units

        self.hit = True
        units._RECEIVED.name = "SIGINT"
        raise SystemError("<cyfunction CoreWorker.wait> returned a result with an exception set")

    def wait(self, refs: list[object], num_returns: int = 1, timeout: float | None = None):  # type: ignore[no-untyped-def]
        if self.where == "wait" and not self.hit:
            self._signal()
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: object) -> object:
        self._signal()
        return None

    def cancel(self, ref: object, force: bool = False) -> None:
        self.cancelled.append(ref)


@pytest.mark.parametrize("where", ["wait", "get"])
def test_a_signal_inside_a_ray_call_stops_the_batch_and_records_nothing(tmp_path: Path, where: str) -> None:
    from itbench_agents.harness.ray_executor import RayExecutor
    from itbench_agents.harness.units import Interrupted, interrupt_on_signals

    specs = fake_batch(tmp_path / "run", trials=1)
    fake = _SignalInsideRay(where)
    ex = RayExecutor(2)
    ex._ray = fake  # connected
    recorded: list[object] = []
    restore = interrupt_on_signals()
    try:
        with pytest.raises(Interrupted):
            ex.run([[s] for s in specs], lambda rec: bool(recorded.append(rec)))
    finally:
        restore()
    assert recorded == []  # not a crash record of the unit in flight
    assert fake.hit and not fake.cancelled  # never ray.cancel: it races with a finishing task


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--executor", "ray", "--ray-address", "127.0.0.1:9"],
            "could not start or reach the Ray cluster at 127.0.0.1:9",
        ),
        (["--ray-address", "ray://head:10001"], "--ray-address is for --executor ray"),
    ],
)
def test_itbench_run_refuses_a_bad_ray_choice_before_any_episode(
    tmp_path: Path, args: list[str], said: str
) -> None:
    from typer.testing import CliRunner

    from itbench_agents.cli import app

    run_dir = tmp_path / "run"
    res = CliRunner().invoke(
        app, ["run", "-s", "sre/ad-scaled-to-zero-v1", "--agent", "noop", *args, "--run-dir", str(run_dir)]
    )
    assert res.exit_code != 0 and said in " ".join(res.output.split()), res.output
    assert not (run_dir / "episodes.jsonl").exists()
