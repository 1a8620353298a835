"""Run a twin with its HTTP endpoints for the length of a ``with`` block.

with running_twin(app="otel-demo") as twin:
    subprocess.run(["kubectl", "--kubeconfig", twin.endpoints.kubeconfig, "get", "pods", "-A"])
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .instance import Twin


def load_manifest_dir(path: str | Path) -> list[dict[str, object]]:
    """Every object in the ``*.yaml``/``*.yml``/``*.json`` files of a folder (or one file), in file order.

    ``List`` kinds are flattened; empty documents are skipped. Raises ``ValueError`` naming the file
    for a document that is not a Kubernetes object."""
    import json

    import yaml

    p = Path(path)
    files = sorted(f for f in p.rglob("*") if f.suffix in (".yaml", ".yml", ".json")) if p.is_dir() else [p]
    if not files:
        raise ValueError(f"{p}: no .yaml, .yml or .json manifests found")
    objs: list[dict[str, object]] = []
    for f in files:
        text = f.read_text()
        try:
            docs = [json.loads(text)] if f.suffix == ".json" else list(yaml.safe_load_all(text))
        except (yaml.YAMLError, json.JSONDecodeError) as e:
            raise ValueError(f"{f}: not valid YAML/JSON: {e}") from e
        for n, doc in enumerate(docs):
            if doc is None:
                continue
            if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
                raise ValueError(
                    f"{f}: document {n + 1} is not a Kubernetes object (needs apiVersion and kind)"
                )
            if str(doc["kind"]).endswith("List") and isinstance(doc.get("items"), list):
                objs.extend(doc["items"])
            else:
                objs.append(doc)
    return objs


@contextmanager
def running_twin(
    app: str | None = None,
    manifests: Path | None = None,
    seed: int = 0,
    workdir: str | Path | None = None,
    history_s: float = 3600.0,
    kube_port: int = 0,
    addons: Iterable[str] = (),
    speed: float = 1.0,
) -> Iterator[Twin]:
    """Start a twin (an app from ``scenarios/apps``, a manifest folder, or a bare cluster) with the
    named addons (``kyverno``), serve its endpoints on 127.0.0.1 and yield it;
    ``twin.endpoints.kubeconfig`` is the kubeconfig path. ``speed``: how many cluster seconds pass
    per wall second while it serves (1: as a real cluster)."""
    from .addons.catalog import make_addon
    from .clock import DEFAULT_LEAD_S, VirtualClock, scaled_wall
    from .instance import Twin

    if app is not None and manifests is not None:
        raise ValueError("give either app or manifests, not both")
    chosen = [make_addon(a) for a in addons]  # ValueError for an unknown addon, before any work
    wall = scaled_wall(speed)
    if app is not None:
        # the history built on a paused clock from a whole minute, as an episode's (harness_clock):
        # the same seed serves the same data, shifted, whenever it is started and however long
        # building takes; then the cluster's time runs with the (scaled) wall clock
        start = math.floor((wall() - history_s - DEFAULT_LEAD_S) / 60.0) * 60.0
        clock = VirtualClock.paused_at(start, wall=wall)
        twin = Twin.for_app(app, seed=seed, history_s=history_s, addons=chosen, clock=clock)
        clock.resume()
    elif manifests is not None:
        twin = Twin.for_manifests(
            load_manifest_dir(manifests), seed=seed, addons=chosen, clock=VirtualClock(wall=wall)
        )
    else:
        twin = Twin(seed=seed, clock=VirtualClock(wall=wall))
        for a in chosen:
            twin.install_addon(a)
    tmp: tempfile.TemporaryDirectory[str] | None = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="itbench-twin-")
        workdir = tmp.name
    try:
        twin.serve(workdir, kube_port=kube_port)
        yield twin
    finally:
        twin.close()
        if tmp is not None:
            tmp.cleanup()


@contextmanager
def twin_kubeconfig(
    app: str | None = None,
    manifests: Path | None = None,
    seed: int = 0,
    workdir: str | Path | None = None,
    history_s: float = 3600.0,
) -> Iterator[Path]:
    """Like :func:`running_twin`, but yields only the kubeconfig path — for code that needs nothing
    but a cluster to point ``kubectl`` or the ``kubernetes`` client at::

        with twin_kubeconfig(app="otel-demo") as kubeconfig:
            kubernetes.config.load_kube_config(str(kubeconfig))
    """
    with running_twin(app=app, manifests=manifests, seed=seed, workdir=workdir, history_s=history_s) as twin:
        assert twin.endpoints is not None
        yield Path(twin.endpoints.kubeconfig)
