"""The twin's Rego engine against real OPA (the Go library of opa-golib-python-bindings, which
``.ci/run`` fetches into ~/.cache/itbench/opa-bindings) on ``tests/twin/addons/opa/agreement``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from itbench_agents.cli import app
from itbench_agents.twin.addons.opa import agreement
from itbench_agents.twin.addons.opa.agreement import (
    AgreementCase,
    Outcome,
    compare,
    find_reference,
    load_corpus,
    stale_cases,
    summary,
)

CORPUS = Path(__file__).parent / "agreement"


def test_the_corpus_loads_and_covers_both_tracks() -> None:
    cases = load_corpus(CORPUS)
    names = {c.name for c in cases}
    assert len(cases) >= 50
    assert sum(n.startswith("k8s-") for n in names) >= 12 and sum(n.startswith("rhel-") for n in names) >= 12
    assert all(c.inputs for c in cases)
    documented = [c for c in cases if c.known_difference]
    assert all(len(c.known_difference or "") > 40 for c in documented)  # a reason, not a flag


@pytest.mark.skipif(
    find_reference() is None,
    reason="no reference OPA: .ci/run puts opa-golib-python-bindings in ~/.cache/itbench/opa-bindings "
    "(or set ITBENCH_OPA_BINDINGS); its wheel declares Python >= 3.14, so it cannot be a dependency",
)
def test_the_twin_answers_as_opa_except_where_documented() -> None:
    from itbench_agents.twin.addons.opa.agreement import TwinEngine

    reference = find_reference()
    assert reference is not None
    ours = TwinEngine()
    try:
        rows = compare(load_corpus(CORPUS), ours, reference)
    finally:
        ours.engine.close()
    unexpected = [
        f"{r.case.name}[{r.input_label}]: twin {r.ours} vs OPA {r.theirs}"
        for r in rows
        if r.verdict == "UNEXPECTED"
    ]
    assert not unexpected, "\n".join(unexpected)
    assert not stale_cases(rows), "documented differences that no longer happen: update the corpus and README"
    assert summary(rows)["agree"] >= 0.95 * len(rows)


class Fixed:
    """An evaluator answering from a table (case name → outcome)."""

    def __init__(self, name: str, answers: dict[str, Outcome]) -> None:
        self.name = name
        self.answers = answers

    def outcome(self, case: AgreementCase, input: Any) -> Outcome:  # noqa: A002
        return self.answers[case.name]


def test_verdicts_unexpected_documented_and_stale() -> None:
    cases = [
        AgreementCase(name="same", modules={}),
        AgreementCase(name="differs", modules={}),
        AgreementCase(name="explained", modules={}, known_difference="a documented reason of some length"),
        AgreementCase(name="stale", modules={}, known_difference="a documented reason of some length"),
    ]
    ours = Fixed("ours", {
        "same": Outcome("value", True), "differs": Outcome("value", True),
        "explained": Outcome("error", "eval"), "stale": Outcome("undefined"),
    })  # fmt: skip
    theirs = Fixed("theirs", {
        "same": Outcome("value", True), "differs": Outcome("value", False),
        "explained": Outcome("error", "compile"), "stale": Outcome("undefined"),
    })  # fmt: skip
    rows = compare(cases, ours, theirs)
    assert [r.verdict for r in rows] == ["agree", "UNEXPECTED", "documented", "agree"]
    assert stale_cases(rows) == ["stale"]
    assert summary(rows) == {
        "comparisons": 4, "agree": 2, "documented": 1, "UNEXPECTED": 1, "cases": 4, "STALE": 1
    }  # fmt: skip


def test_the_command_fails_on_an_unexpected_difference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "c.yaml").write_text(
        'cases:\n  - name: c\n    modules: {p.rego: "package check\\nimport rego.v1\\nresult := true\\n"}\n'
    )
    monkeypatch.setattr(
        agreement, "find_reference", lambda folder=None: Fixed("liar", {"c": Outcome("value", False)})
    )
    r = CliRunner().invoke(app, ["opa", "agreement", str(tmp_path)])
    assert r.exit_code == 1, r.output
    assert "0/1 comparisons identical" in r.output and "1 unexpected" in r.output
    monkeypatch.setattr(
        agreement, "find_reference", lambda folder=None: Fixed("honest", {"c": Outcome("value", True)})
    )
    r = CliRunner().invoke(app, ["opa", "agreement", str(tmp_path)])
    assert r.exit_code == 0 and "1/1 comparisons identical" in r.output


def test_the_command_explains_a_missing_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "c.yaml").write_text("cases: []\n")
    monkeypatch.setattr(agreement, "find_reference", lambda folder=None: None)
    r = CliRunner().invoke(app, ["opa", "agreement", str(tmp_path)])
    assert r.exit_code == 2 and "no reference OPA" in r.output


def test_a_bad_corpus_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("cases:\n  - name: x\n    modul: {}\n")
    with pytest.raises(ValueError, match="bad.yaml"):
        load_corpus(tmp_path)
