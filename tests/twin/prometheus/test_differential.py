"""Differential test: the twin's PromQL engine vs. Debian's real Prometheus on the same backfilled data.

The synthetic SRE scenario (span metrics with an error burst, pod phases, restarts, cAdvisor, Kafka
lag) is written as OpenMetrics, backfilled with promtool and served by ``prometheus``; every corpus
query is compared at several instants and as a range query (relative tolerance 1e-6).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from itbench_agents.twin.prometheus.engine import Engine
from itbench_dev.prometheus.corpus import CORPUS, EDGE_CORPUS
from itbench_dev.prometheus.realprom import RealPrometheus, binaries
from itbench_dev.prometheus.synthetic import Scenario, generate

pytestmark = pytest.mark.prometheus

SC = Scenario()
T_END = SC.start_s + SC.duration_s - 60.0
INSTANTS = [SC.start_s + 1500.0, SC.start_s + 2650.5, T_END]


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if binaries() is None:
        pytest.skip(
            "Debian's prometheus/promtool not installed (apt-get install prometheus); CI installs them"
        )
    src = generate(SC)
    rp = RealPrometheus.start(src, Path(tmp_path_factory.mktemp("prom")))
    assert rp is not None
    yield src, rp
    rp.stop()


def _close(a: float, b: float) -> bool:
    if math.isnan(a) and math.isnan(b):
        return True
    if a == b:
        return True
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b))


def _norm_vector(result: list[dict[str, Any]]) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(r["metric"].items())): float(r["value"][1]) for r in result}


def _norm_matrix(
    result: list[dict[str, Any]],
) -> dict[tuple[tuple[str, str], ...], list[tuple[float, float]]]:
    return {
        tuple(sorted(r["metric"].items())): [(float(t), float(v)) for t, v in r["values"]] for r in result
    }


ALL = CORPUS + EDGE_CORPUS


@pytest.mark.parametrize("q", ALL, ids=[q.name for q in ALL])
@pytest.mark.slow
def test_instant_queries_match_prometheus(real: Any, q: Any) -> None:
    src, rp = real
    engine = Engine(src)
    for t in INSTANTS:
        want = rp.get("/api/v1/query", query=q.expr, time=f"{t:.3f}")
        assert want["status"] == "success", want
        if want["data"]["resultType"] in ("scalar", "string"):
            got_s = engine.instant(q.expr, int(round(t * 1000))).to_json()
            assert got_s["resultType"] == want["data"]["resultType"]
            assert _close(float(got_s["result"][1]), float(want["data"]["result"][1]))  # type: ignore[index]
            continue
        got = engine.instant(q.expr, int(round(t * 1000))).to_json()
        assert got["resultType"] == want["data"]["resultType"]
        w, g = _norm_vector(want["data"]["result"]), _norm_vector(got["result"])  # type: ignore[arg-type]
        assert set(g) == set(w), (
            f"{q.name} @ {t}: series differ: only twin {set(g) - set(w)}, only prom {set(w) - set(g)}"
        )
        for k in w:
            assert _close(g[k], w[k]), f"{q.name} @ {t} {dict(k)}: twin {g[k]} != prometheus {w[k]}"


@pytest.mark.parametrize("q", ALL, ids=[q.name for q in ALL])
def test_range_queries_match_prometheus(real: Any, q: Any) -> None:
    src, rp = real
    engine = Engine(src)
    start, end, step = SC.start_s + 1200.25, T_END, 60.0
    want = rp.get("/api/v1/query_range", query=q.expr, start=f"{start:.3f}", end=f"{end:.3f}", step=f"{step}")
    assert want["status"] == "success", want
    got = engine.range(q.expr, int(start * 1000), int(end * 1000), int(step * 1000)).to_json()
    w, g = _norm_matrix(want["data"]["result"]), _norm_matrix(got["result"])  # type: ignore[arg-type]
    assert set(g) == set(w), (
        f"{q.name}: series differ: only twin {set(g) - set(w)}, only prom {set(w) - set(g)}"
    )
    for k in w:
        assert [t for t, _ in g[k]] == [t for t, _ in w[k]], f"{q.name} {dict(k)}: timestamps differ"
        for (t, gv), (_, wv) in zip(g[k], w[k], strict=True):
            assert _close(gv, wv), f"{q.name} {dict(k)} @ {t}: twin {gv} != prometheus {wv}"
