"""The alert engine's subquery cache (twin/prometheus/subquery_cache.py) changes how fast rules are
evaluated, never what they answer: cached and uncached evaluations agree exactly, on a source that
grows as the clock moves (late samples inside the last minute included) and on a FinOps twin."""

from __future__ import annotations

import tempfile
from typing import Any

import numpy as np
import pytest

from itbench_agents.twin.prometheus.alerts import AlertEngine, RuleGroup, load_rule_file
from itbench_agents.twin.prometheus.engine import Engine
from itbench_agents.twin.prometheus.memstore import MemorySeriesSource
from itbench_agents.twin.prometheus.subquery_cache import SubqueryCache

T0 = 1_700_000_000  # seconds, a whole hour
MIN = 60

QUERIES = [
    "avg_over_time((sum by (ns) (cost))[1d:1h] offset 1h)",
    "avg_over_time((sum by (ns) (cost))[1h:5m])",
    "max_over_time(rate(calls_total[5m])[30m:5m])",
    "min_over_time((cost * on(ns) group_left() price)[20m:])",
    "sum_over_time((cost > 3)[2h:10m])",
    "count_over_time((cost @ end())[1h:5m])",  # `@`: never cached
    "last_over_time(vector(time())[10m:1m])",
]


def _grow(src: MemorySeriesSource, upto_s: int, done: dict[str, int]) -> None:
    """Samples every minute up to ``upto_s``: a cost gauge per namespace that steps up each hour,
    a counter, a price; the latest sample lands 10 s before ``upto_s`` (a late scrape)."""
    for ns, base in (("a", 2.0), ("b", 3.5)):
        for name in ("cost", "calls_total", "price"):
            key = f"{name}/{ns}"
            ts = list(range(done.get(key, T0 - 2 * 86400), upto_s - 9, MIN))
            if not ts:
                continue
            done[key] = ts[-1] + MIN
            if name == "cost":
                vals = [base + ((t // 3600) % 5) * 0.4 for t in ts]
            elif name == "calls_total":
                vals = [float((t - T0 + 2 * 86400) // 7) for t in ts]
            else:
                vals = [0.03 if ns == "a" else 0.05 for _ in ts]
            src.add({"__name__": name, "ns": ns}, [t * 1000 for t in ts], vals)


def _matrix(res: Any) -> dict[tuple[tuple[str, str], ...], tuple[list[int], list[float]]]:
    return {tuple(sorted(lb.items())): (ts.tolist(), vs.tolist()) for lb, ts, vs in res.matrix}


def test_cached_and_uncached_queries_agree_as_the_clock_moves() -> None:
    src = MemorySeriesSource()
    done: dict[str, int] = {}
    cache = SubqueryCache()
    now = T0
    for round_ in range(30):
        now += 7 * MIN if round_ % 3 else 61 * MIN  # small steps and jumps past an hour
        _grow(src, now, done)
        cache.new_round((now - 60) * 1000)
        cached = Engine(src, subquery_cache=cache)
        plain = Engine(src)
        for q in QUERIES:
            lo = (now - 5 * MIN) * 1000
            want = _matrix(plain.range(q, lo, now * 1000, MIN * 1000))
            got = _matrix(cached.range(q, lo, now * 1000, MIN * 1000))
            assert got == want, (round_, q)
            assert want, q  # the comparison is not vacuous
    assert cache.hits > cache.misses  # and it does keep work
    assert not any("@" in text for text in cache._points)


def test_sparse_steps_fetch_their_lookback_windows_and_answer_the_same() -> None:
    """At an hourly subquery grid the cached engine fetches each step's lookback window only: on a
    gauge scraped every 4 minutes off the hour, one that stops (its staleness marker) and one that
    starts late, the answers equal an uncached engine's, which fetches the whole day."""
    src = WindowedSource()
    day = list(range(T0 - 86400 + 90, T0, 240))
    src.add({"__name__": "g", "ns": "a"}, [t * 1000 for t in day], [float(t % 7) for t in day])
    stops = [t for t in day if t < T0 - 40000]
    src.add({"__name__": "g", "ns": "b"}, [t * 1000 for t in stops], [2.0] * len(stops))
    late = [t for t in day if t > T0 - 30000]
    src.add({"__name__": "g", "ns": "c"}, [t * 1000 for t in late], [3.0] * len(late))
    for q in (
        "avg_over_time((sum by (ns) (g))[1d:1h])",
        "count_over_time(g[1d:1h])",
        "max_over_time(g[6h:30m])",
    ):
        want = _matrix_or_vector(Engine(src).instant(q, T0 * 1000))
        before = src.windowed
        got = _matrix_or_vector(Engine(src, subquery_cache=SubqueryCache()).instant(q, T0 * 1000))
        assert got == want != [], q
        assert src.windowed > before, q


def test_an_empty_subquery_and_eviction_keep_answers() -> None:
    src = MemorySeriesSource()
    done: dict[str, int] = {}
    cache = SubqueryCache()
    _grow(src, T0, done)
    cache.new_round((T0 - 60) * 1000)
    q = "avg_over_time((sum by (ns) (missing_metric))[1h:5m])"
    assert Engine(src, subquery_cache=cache).range(q, T0 * 1000, T0 * 1000, 60_000).matrix == []
    q = "avg_over_time((sum by (ns) (cost))[1h:5m])"
    Engine(src, subquery_cache=cache).instant(q, T0 * 1000)
    # the next rounds ask only for later grids: what lies before them is dropped, answers unchanged
    for k in range(1, 4):
        now = T0 + k * 3600
        _grow(src, now, done)
        cache.new_round((now - 60) * 1000)
        cache.new_round((now - 60) * 1000)  # a round that asks nothing keeps what it has
        got = Engine(src, subquery_cache=cache).instant(q, now * 1000)
        want = Engine(src).instant(q, now * 1000)
        assert _matrix_or_vector(got) == _matrix_or_vector(want) != []
        kept = cache._points["(sum by (ns)(cost{}))"]
        assert min(kept) >= (now - 2 * 3600) * 1000
    assert "(sum by (ns)(missing_metric{}))" in cache._points
    cache.new_round((T0 + 30 * 3600) * 1000)  # an expression no query asked for in a day is dropped
    assert "(sum by (ns)(missing_metric{}))" not in cache._points


def _matrix_or_vector(res: Any) -> Any:
    return sorted((tuple(sorted(lb.items())), t, v) for lb, t, v in res.vector)


def _alerts(engine: AlertEngine) -> list[tuple[Any, ...]]:
    return sorted(
        (a.name, tuple(sorted(a.labels.items())), a.state, a.active_at, a.value, a.fired_at, a.resolved_at)
        for st in engine.states
        for a in st.alerts.values()
    )


class WindowedSource(MemorySeriesSource):
    """A source that can fetch several windows (as the twin's metrics can): ``select`` over their
    span cut to them; counts the calls."""

    windowed = 0

    def select_windows(self, matchers: Any, windows: list[tuple[int, int]]) -> list[Any]:
        self.windowed += 1
        out = []
        for s in self.select(matchers, windows[0][0], windows[-1][1]):
            inside = np.zeros(len(s.timestamps_ms), dtype=bool)
            for a, b in windows:
                inside |= (s.timestamps_ms >= a) & (s.timestamps_ms <= b)
            if inside.any():
                out.append(type(s)(s.labels, s.timestamps_ms[inside], s.values[inside]))
        return out


def spend_rules() -> RuleGroup:
    """A cost rule shaped like OpenCost's: the last hour's spend against the day before's."""
    return RuleGroup.model_validate(
        {
            "name": "spend",
            "interval": "1m",
            "rules": [
                {
                    "alert": "Spend",
                    "expr": "avg_over_time((sum by (ns) (cost))[1h:5m])"
                    " > 1.2 * avg_over_time((sum by (ns) (cost))[1d:1h] offset 1h)",
                    "for": "5m",
                    "annotations": {"v": "{{ $value }}"},
                }
            ],
        }
    )


def _history(engine: AlertEngine) -> list[tuple[Any, ...]]:
    """Every evaluation at which each alert was pending or firing, with its activeAt."""
    return sorted(
        ((k, h.labels.get("alertstate")), (h.ts_ms, h.active_at)) for k, h in engine.history.items()
    )


def test_rules_with_week_long_subqueries_agree_on_a_growing_source() -> None:
    rules = spend_rules()
    src = WindowedSource()
    done: dict[str, int] = {}
    _grow(src, T0, done)
    engines = [
        AlertEngine(lambda: src, [("spend.yaml", rules)], start=T0 - 3600, cache_subqueries=c)
        for c in (True, False)
    ]
    seen = set()
    for k in range(1, 200):
        now = T0 + k * 2 * MIN + (37 if k % 5 == 0 else 0)
        _grow(src, now, done)
        for e in engines:
            e.evaluate_until(now)
        assert _alerts(engines[0]) == _alerts(engines[1]), k
        seen |= {a[2] for a in _alerts(engines[0])}
    assert {"pending", "firing"} <= seen  # the rule does fire and resolve on this source
    assert engines[0].subquery_cache.hits > 0
    assert src.windowed > 0  # the cached engine fetched the hourly grid's lookback windows only


def test_an_engine_sharing_anothers_cache_answers_as_one_on_its_own() -> None:
    """The FinOps scorer's reference engine shares the twin engine's subquery cache: with its own
    rules, its own start and its own pace (it catches up in one jump, long after the twin's engine
    moved on), it answers exactly as an engine with no cache, and computes less than one alone."""
    rules = spend_rules()
    src = MemorySeriesSource()
    done: dict[str, int] = {}
    _grow(src, T0, done)
    owner = AlertEngine(lambda: src, [("team.yaml", rules)], start=T0 - 3600)
    sharing = AlertEngine(lambda: src, [("ref.yaml", rules)], start=T0 + 600, share_subqueries_with=owner)
    alone = AlertEngine(lambda: src, [("ref.yaml", rules)], start=T0 + 600)
    owner_alone = AlertEngine(lambda: src, [("team.yaml", rules)], start=T0 - 3600)
    plain = AlertEngine(lambda: src, [("ref.yaml", rules)], start=T0 + 600, cache_subqueries=False)
    for k in range(1, 150):
        now = T0 + k * 2 * MIN + (37 if k % 5 == 0 else 0)
        _grow(src, now, done)
        owner.evaluate_until(now)
        owner_alone.evaluate_until(now)
        if k % 50 == 0:  # the scorer's engine asks now and then, then every engine agrees
            for e in (sharing, alone, plain):
                e.evaluate_until(now)
            assert _alerts(sharing) == _alerts(plain) == _alerts(alone), k
            assert _history(sharing) == _history(plain) == _history(alone), k
    assert {state for (_, state), _ in _history(plain)} == {"pending", "firing"}  # every evaluation agreed
    assert sharing.subquery_cache is owner.subquery_cache
    # what the two engines computed, against an engine alone for each (here 141 against 138 + 74)
    assert owner.subquery_cache.misses < owner_alone.subquery_cache.misses + alone.subquery_cache.misses / 4


@pytest.mark.slow
def test_a_finops_episode_alerts_the_same_with_and_without_the_cache() -> None:
    """On a FinOps twin, from the fault through the reference fix: every alert of OpenCost's cost
    rules, state, activeAt and value included, identical with and without the cache."""
    from itbench_agents.harness.twin_env import TwinEnvironment
    from itbench_agents.personas.finops.alerts import rule_file
    from itbench_agents.scenario.inject import apply_operations
    from itbench_agents.scenario.registry import ScenarioRegistry

    scenario = ScenarioRegistry.default().get("finops/ad-idle-replicas-v1")
    groups = [(str(rule_file()), g) for g in load_rule_file(rule_file())]
    with tempfile.TemporaryDirectory() as work:
        env = TwinEnvironment(scenario, seed=0, workdir=work)
        try:
            env.deploy()
            twin = env.twin
            engines = [
                AlertEngine(
                    lambda: twin.metrics, groups, start=env.now() - 3600, lock=twin.lock, cache_subqueries=c
                )
                for c in (True, False)
            ]
            env.inject()
            states = set()
            for k in range(60):
                if k == 40:
                    assert env.api is not None
                    apply_operations(env.api, scenario.mitigation, env._now_dt)
                twin.advance(60 if k % 7 else 300, step=env.step_s)
                for e in engines:
                    e.evaluate_until(env.now())
                assert _alerts(engines[0]) == _alerts(engines[1]), k
                states |= {a[2] for a in _alerts(engines[0])}
            assert "firing" in states
            assert engines[0].subquery_cache.hits > 10 * engines[0].subquery_cache.misses
        finally:
            env.teardown()


def test_grid_points_the_cache_keeps_are_final_only() -> None:
    cache = SubqueryCache()
    cache.new_round(1_000_000)
    calls: list[list[int]] = []

    def compute(grid: np.ndarray) -> list[Any]:
        calls.append(grid.tolist())
        return []

    grid = np.array([940_000, 1_000_000, 1_060_000], dtype=np.int64)
    cache.series("x", grid, compute)
    cache.series("x", grid, compute)
    assert calls == [[940_000, 1_000_000, 1_060_000], [1_060_000]]  # the point past final_ms again
