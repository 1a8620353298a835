"""The Rego engine: regorus in a worker process, with OPA's answers and errors."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from itbench_agents.twin.addons.opa.engine import RegoEngine, RegoError, RegoProblem

V1 = "package check\nimport rego.v1\n"


@pytest.fixture(scope="module")
def engine() -> Iterator[RegoEngine]:
    e = RegoEngine(timeout_s=5)
    yield e
    e.close()


def decide(engine: RegoEngine, body: str, input: object) -> object:  # noqa: A002
    r = engine.evaluate({"policy.rego": V1 + body}, "data.check.result", input=input)
    return r.value if r.defined else "undefined"


def test_true_false_and_undefined_as_opa_answers(engine: RegoEngine) -> None:
    body = "default result := false\nresult if input.a == 1\n"
    assert decide(engine, body, {"a": 1}) is True
    assert decide(engine, body, {"a": 2}) is False  # rego-cpp 1.5.2: undefined
    assert decide(engine, "result if input.a == 1\n", {"a": 2}) == "undefined"
    assert decide(engine, "deny contains 1 if input.a\nresult := count(deny) == 0\n", {"a": True}) is False
    assert decide(engine, "result := true if { input.a == 1 } else := false\n", {"a": 2}) is False


def test_without_input_the_input_is_undefined(engine: RegoEngine) -> None:
    r = engine.evaluate({"p.rego": V1 + "result := input\n"}, "data.check.result")
    assert not r.defined and r.value is None


def test_data_and_non_reference_queries(engine: RegoEngine) -> None:
    r = engine.evaluate({}, "x := data.limits.min + 1", data={"limits": {"min": 14}})
    assert r.results == [{"expressions": [True], "bindings": {"x": 15}}]
    assert engine.evaluate({}, 'data["limits"]["min"]', data={"limits": {"min": 14}}).value == 14


def test_a_syntax_error_names_file_row_and_column(engine: RegoEngine) -> None:
    with pytest.raises(RegoError) as e:
        engine.evaluate(
            {"policy.rego": "package check\nresult if {\n  input.a == \n}\n"}, "data.check.result"
        )
    # OPA: "policy.rego:4: rego_parse_error: unexpected } token" — the same place, in regorus's words
    assert e.value.problems == [RegoProblem("rego_parse_error", "expecting expression", "policy.rego", 4, 1)]
    assert str(e.value) == "1 error occurred: policy.rego:4: rego_parse_error: expecting expression"
    assert e.value.compile_time


def test_check_reports_compile_errors_only(engine: RegoEngine) -> None:
    assert engine.check({"ok.rego": V1 + "result if input.a == 1\n"}) == []
    assert [p.code for p in engine.check({"b.rego": V1 + "result := nope(1)\n"})] == ["rego_type_error"]
    unsafe = engine.check({"u.rego": V1 + "result := x if {\n  x := y + 1\n}\n"})
    assert [(p.code, p.row) for p in unsafe] == [("rego_unsafe_var_error", 4)]
    # evaluation errors are not compile errors: a conflict shows only when the inputs make it happen
    assert engine.check({"c.rego": V1 + "result := 1\nresult := 2 if input.two\n"}) == []


def test_a_recursive_rule_crashes_the_worker_not_the_caller(engine: RegoEngine) -> None:
    # OPA refuses it at compile time (rego_recursion_error); regorus overflows its stack
    found = engine.check({"bad.rego": V1 + "f(x) := f(x)\nresult := f(1)\n"})
    assert [p.code for p in found] == ["eval_internal_error"] and "crashed" in found[0].message
    assert decide(engine, "result := 5\n", {}) == 5


def test_a_query_that_does_not_parse(engine: RegoEngine) -> None:
    with pytest.raises(RegoError) as e:
        engine.evaluate({}, "data.check.result[")
    assert [p.code for p in e.value.problems] == ["rego_parse_error"]


def test_a_query_that_never_ends_is_cancelled_and_the_engine_recovers() -> None:
    engine = RegoEngine(timeout_s=0.5, memory_bytes=8 * 1024**3)
    try:
        loop = V1 + "result := count([x | some x in numbers.range(1, 1000000000)])\n"
        start = time.monotonic()
        with pytest.raises(RegoError) as e:
            engine.evaluate({"p.rego": loop}, "data.check.result")
        assert time.monotonic() - start < 30
        assert e.value.problems[0].code == "eval_cancel_error"
        assert "time limit of 0.5 s" in e.value.problems[0].message
        assert engine.evaluate({"p.rego": V1 + "result := 7\n"}, "data.check.result").value == 7
    finally:
        engine.close()


def test_memory_is_bounded() -> None:
    engine = RegoEngine(timeout_s=60, memory_bytes=256 * 1024**2)
    try:
        hog = V1 + "result := count([x | some x in numbers.range(1, 1000000000)])\n"
        with pytest.raises(RegoError, match="memory limit"):
            engine.evaluate({"p.rego": hog}, "data.check.result")
    finally:
        engine.close()


def test_a_forked_child_gets_its_own_worker(engine: RegoEngine) -> None:
    assert decide(engine, "result := 1\n", {}) == 1
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        try:
            ok = decide(engine, "result := 2\n", {}) == 2
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert decide(engine, "result := 3\n", {}) == 3
