"""Personas through the persona registry (issue 30): the built-ins found by name, a persona from an
installed package's ``itbench_agents.personas`` entry point run by ``itbench run`` with nothing edited
in itbench-agents, and clear reasons when one is broken. The package is the example plug-in's
``log-triage`` persona and ``error-grepper`` agent, installed as a fake distribution (see
``test_plugin_discovery.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_dist import install_fake
from typer.testing import CliRunner

from itbench_agents.cli import app
from itbench_agents.harness.catalogue import Catalogue
from itbench_agents.harness.personas import UnknownPersonaError, get_persona, persona_names
from itbench_agents.plugins import PluginError
from itbench_agents.scenario.registry import UnknownScenarioError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples/plugin/itbench_example_plugin"
ENTRY_POINTS = """
    [itbench_agents.personas]
    log-triage = fakeplug_persona:PERSONA
    sre = fakeplug_persona:PERSONA
    not-one = fakeplug_persona:LIBRARY
    as-class = fakeplug_persona:LogTriagePersona
    [itbench_agents.agents]
    error-grepper = fakeplug_triage:make_agent
    """


def install_example(root: Path) -> None:
    install_fake(
        root,
        ENTRY_POINTS,
        {
            "fakeplug_persona": (EXAMPLE / "persona.py").read_text(),
            "fakeplug_triage": (EXAMPLE / "triage_agent.py").read_text(),
        },
    )


def test_the_builtin_personas_are_found_by_name() -> None:
    assert persona_names()[:3] == ["sre", "ciso", "finops"]
    assert [get_persona(n).name for n in ("sre", "ciso", "finops")] == ["sre", "ciso", "finops"]
    assert not get_persona("sre").library() and get_persona("ciso").library()
    with pytest.raises(UnknownPersonaError, match=r"unknown persona 'cisco' \(known: sre, ciso, finops"):
        get_persona("cisco")
    with pytest.raises(UnknownScenarioError):
        Catalogue.default().select(suite="cisco")


def test_a_plugin_persona_runs_through_itbench_run(fresh: Path, tmp_path: Path) -> None:
    install_example(fresh)
    assert "log-triage" in persona_names()
    assert get_persona("sre").description.startswith("incident")  # a plug-in cannot take a built-in's name
    chosen = Catalogue.default().select(suite="log-triage")
    assert [s.id for s in chosen] == ["log-triage/cart-redis-down-v1", "log-triage/payment-timeout-v1"]
    assert Catalogue.default().get("payment-timeout-v1").id == "log-triage/payment-timeout-v1"

    listed = CliRunner().invoke(app, ["scenarios", "list", "--suite", "log-triage", "--json"])
    assert [(s["id"], s["bucket"]) for s in json.loads(listed.output)] == [
        ("log-triage/cart-redis-down-v1", "medium"),
        ("log-triage/payment-timeout-v1", "easy"),
    ]
    shown = CliRunner().invoke(app, ["scenarios", "show", "payment-timeout-v1"])
    assert json.loads(shown.output)["culprit"] == "payment"

    run = tmp_path / "run"
    args = [
        "run",
        "--suite",
        "log-triage",
        "--agent",
        "noop",
        "--agent",
        "error-grepper",
        "--run-dir",
        str(run),
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 4
    for r in records:
        assert r["persona"] == "log-triage" and r["category"] == "log-triage" and r["error"] is None, r
        want = 1.0 if r["agent"] == "error-grepper" else 0.0  # noop answers nothing
        assert r["scores"]["found"]["value"] == want, r["scores"]
        assert r["diagnosis"] is None and r["mitigation"] is None
    (traj,) = run.glob("episodes/payment-timeout-v1__error-grepper__t*/trajectory.jsonl")
    events = [json.loads(line) for line in traj.read_text().splitlines()]
    assert any(e["type"] == "tool_call" and e.get("tool") == "read_file" for e in events)
    res = CliRunner().invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    report = (run / "report.md").read_text()
    assert "## log-triage results" in report and "## SRE results" not in report
    assert (
        "| error-grepper | 1.000 ± 0.000 | 2 | 0 |" in report and "| noop | 0.000 ± 0.000 | 2 | 0 |" in report
    )
    assert "log-triage results" in (run / "report.html").read_text()


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ({"service": "payment"}, 1.0),
        ({"service": ["frontend", "cart", "checkout", "payment"]}, 0.0),  # every service
        ({"service": "frontend"}, 0.0),  # the busiest service
        ("payment", 0.0),  # not the answer's shape
        (None, 0.0),  # no answer at all
    ],
)
def test_the_toy_personas_blind_answers_score_zero(
    fresh: Path,
    tmp_path: Path,
    answer: object,
    found: float,
) -> None:
    install_example(fresh)
    from itbench_agents.core.persona import EnvironmentRequest

    persona = get_persona("log-triage")
    (scenario,) = [s for s in persona.library() if s.id == "log-triage/payment-timeout-v1"]
    env = persona.make_environment(EnvironmentRequest(scenario, seed=3, workdir=tmp_path))
    env.deploy()
    env.inject()
    log = (tmp_path / "app.log").read_text()
    busiest = max(("frontend", "cart", "checkout", "payment"), key=lambda s: log.count(f"service={s} "))
    assert busiest == "frontend" and log.count("ERROR") == 1
    if answer is not None:
        (tmp_path / "answer.json").write_text(json.dumps(answer))
    assert env.scores()["found"].value == found


def test_a_broken_persona_plugin_says_why(fresh: Path) -> None:
    install_example(fresh)
    with pytest.raises(
        PluginError, match=r"persona 'as-class' \(plug-in: fake-plugin 0.1\) calls itself 'log-triage'"
    ):
        get_persona("as-class")  # the persona's name must be the entry point's
    import fakeplug_persona  # type: ignore[import-not-found]

    from itbench_agents.harness.personas import _checked

    made = _checked("log-triage", fakeplug_persona.LogTriagePersona, "test")  # a class: instantiated
    assert not isinstance(made, type) and len(made.library()) == 2
    with pytest.raises(PluginError, match=r"persona 'not-one' \(plug-in: fake-plugin 0.1\) is not a Persona"):
        get_persona("not-one")
    assert "log-triage" in Catalogue.default().library  # the others still load
    res = CliRunner().invoke(app, ["run", "--suite", "not-one", "--agent", "noop"])
    assert res.exit_code == 2 and "is not a Persona" in res.output, res.output


def test_itbench_plugins_off_keeps_only_the_builtins(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_example(fresh)
    monkeypatch.setenv("ITBENCH_PLUGINS", "off")
    assert persona_names() == ["sre", "ciso", "finops"]
    with pytest.raises(UnknownPersonaError):
        get_persona("log-triage")
