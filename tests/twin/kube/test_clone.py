"""``store.clone`` copies what the store keeps and hands out: it must give exactly what a JSON round
trip gives (the store's contract since the start), only faster."""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import pytest

from itbench_agents.twin.kube.store import clone


def _round_trip(obj: Any) -> Any:
    return json.loads(json.dumps(obj))


class Level(enum.IntEnum):
    HIGH = 3


CASES: list[Any] = [
    {"metadata": {"name": "a", "labels": {"app": "x"}}, "spec": {"replicas": 3, "paused": False, "x": None}},
    {"ports": [{"port": 80, "weights": [0.5, -0.0, 1e300]}], "nested": [[1, [2, [3]]]]},
    {"tuple": (1, (2, 3)), "list": [(4,)]},  # tuples become lists
    {7: "int key", False: "bool key", None: "null key", 2.5: "float key"},  # keys become strings
    {"deep": {"int_enum": Level.HIGH}},  # an int subclass becomes a plain int
    {"big": 2**80, "neg": -(2**70), "s": "ünïcödé \\u0000"},
    [],
    {},
]


@pytest.mark.parametrize("obj", CASES, ids=[str(i) for i in range(len(CASES))])
def test_clone_is_a_json_round_trip(obj: Any) -> None:
    got = clone(obj)
    want = _round_trip(obj)
    assert got == want
    assert json.dumps(got) == json.dumps(want)  # same types too (1 vs 1.0 vs True compare equal)
    assert [type(v) for v in _leaves(got)] == [type(v) for v in _leaves(want)]


def test_nan_and_infinities_survive() -> None:
    got = clone({"v": [math.nan, math.inf, -math.inf]})
    assert math.isnan(got["v"][0]) and got["v"][1:] == [math.inf, -math.inf]


def test_the_copy_shares_nothing_mutable() -> None:
    obj = {"a": {"b": [1, {"c": 2}]}}
    got = clone(obj)
    got["a"]["b"][1]["c"] = 3
    got["a"]["b"].append(4)
    assert obj == {"a": {"b": [1, {"c": 2}]}}


def test_what_json_refuses_is_refused() -> None:
    with pytest.raises(TypeError):
        clone({"a": {1, 2}})
    with pytest.raises(TypeError):
        clone({"a": object()})


def test_nesting_deeper_than_python_recursion_gives_what_json_gives() -> None:
    obj: Any = []
    for _ in range(5000):
        obj = [obj]
    try:
        want: Any = _round_trip(obj)
    except RecursionError:
        with pytest.raises(RecursionError):
            clone(obj)
    else:
        assert clone(obj) == want


def _leaves(obj: Any) -> list[Any]:
    if isinstance(obj, dict):
        return [x for k in obj for x in [k, *_leaves(obj[k])]]
    if isinstance(obj, list):
        return [x for v in obj for x in _leaves(v)]
    return [obj]
