"""The Ray executor (issue 18): a batch's units as Ray tasks on a local Ray, episode folders shipped
back to the calling process. It leaves the same run folder as worker processes; a worker killed
mid-episode has its episode rerun once, and the batch still records exactly one record per
episode; killed twice, the episode is a harness error; fail-fast stops it; bad choices fail before
the first episode."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.run_folders import episode_files, fake_batch

from itbench_agents.harness.batch import run_batch
from itbench_agents.harness.episode import EpisodeSpec
from itbench_agents.harness.executors import ProcessExecutor, staging_folder
from itbench_agents.harness.ray_executor import RayExecutor
from itbench_agents.harness.runfolder import check_episodes, read_episodes

FLAG = "sre/ad-failure-flag-v1"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One local Ray for the module (its workers inherit this environment: the fakes' import path
    and the folder where the dying agent leaves its markers)."""
    ray = pytest.importorskip("ray", reason="the [ray] extra is part of the dev group; uv sync installs it")
    markers = tmp_path_factory.mktemp("markers")
    os.environ["FAKE_DYING_MARKERS"] = str(markers)
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    ray.init(num_cpus=2, include_dashboard=False, namespace="itbench-tests")
    try:
        yield markers
    finally:
        ray.shutdown()


def _staged(specs: list[EpisodeSpec]) -> list[Path]:
    """The staging folders of these episodes (one unit each) still on disk."""
    return [p for p in (staging_folder([s]) for s in specs) if p.exists()]


def test_ray_leaves_the_same_run_folder_as_worker_processes(local_ray: Path, tmp_path: Path) -> None:
    direct, on_ray = tmp_path / "direct", tmp_path / "ray"
    run_batch(direct, fake_batch(direct), executor=ProcessExecutor(2))
    summary = run_batch(on_ray, fake_batch(on_ray), executor=RayExecutor(2))
    a, b = read_episodes(direct), read_episodes(on_ray)
    assert summary.ran == len(b) == len(a) == 4
    assert sorted((r.key, r.termination) for r in a) == sorted((r.key, r.termination) for r in b)
    assert all(
        r.termination == "submitted" and r.mitigation and r.mitigation.passed for r in b if not r.control
    )
    assert episode_files(direct) == episode_files(on_ray)
    assert not check_episodes(on_ray).foreign


def test_a_killed_worker_reruns_its_episode_once_and_the_count_stays_exact(
    local_ray: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    specs = fake_batch(run_dir, agent="itbench_fakes:dying_once")
    summary = run_batch(run_dir, specs, executor=RayExecutor(2))
    recs = read_episodes(run_dir)
    assert summary.ran == len(recs) == len(specs) == 4
    assert sorted(r.key for r in recs) == sorted(s.key for s in specs)  # one record each, none twice
    assert all(r.termination == "submitted" for r in recs), [(r.episode_id, r.error) for r in recs]
    died = sorted(p.name for p in local_ray.iterdir())
    assert died == sorted(s.episode_id for s in specs if s.scenario.id == FLAG)  # the kill happened
    assert set(episode_files(run_dir)) == {s.episode_id for s in specs}
    assert not _staged(specs)  # the killed attempts' staging folders were removed


def test_a_worker_killed_twice_is_a_harness_error_and_the_rest_run(local_ray: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    specs = fake_batch(run_dir, agent="itbench_fakes:dying")
    summary = run_batch(run_dir, specs, executor=RayExecutor(2))
    recs = {r.episode_id: r for r in read_episodes(run_dir)}
    assert summary.ran == len(recs) == 4
    for s in specs:
        rec = recs[s.episode_id]
        if s.scenario.id == FLAG:
            assert rec.termination == "harness_error"
            assert rec.error and rec.error.startswith("ray task failed: WorkerCrashedError"), rec.error
        else:
            assert rec.termination == "submitted", rec.error
    assert not _staged(specs)  # what the dead workers staged was removed


def test_fail_fast_stops_the_ray_batch(local_ray: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    summary = run_batch(
        run_dir, fake_batch(run_dir, agent="itbench_fakes:crash"), executor=RayExecutor(1), fail_fast=True
    )
    assert summary.stopped_early and summary.ran == 1
