"""`itbench`: the command line (typer + rich).

Each area registers its own commands from its own module, so this file only assembles them:

- ``itbench twin ...``                    itbench_agents/twin/cli.py (``twin host``: personas/ciso/host_cli.py)
- ``itbench scenarios ...``               itbench_agents/commands/scenarios.py
- ``itbench backends|executors ...``      itbench_agents/commands/backends.py
- ``itbench run|score|report|agents ...`` itbench_agents/commands/run.py (``export``: commands/export.py)
- ``itbench mcp ...``, ``itbench tools ...`` itbench_agents/tools/cli.py
- ``itbench llm ...``                     itbench_agents/llm/cli.py
- ``itbench problem ...``                 itbench_agents/problem/cli.py
- ``itbench snapshot ...``                itbench_agents/snapshots/cli.py
- ``itbench kyverno ...``                 itbench_agents/twin/addons/kyverno/cli.py
- ``itbench opa ...``                     itbench_agents/twin/addons/opa/cli.py

Importing this module builds nothing: the ``app`` is assembled on first use (``make_app``, through
the module's ``__getattr__``), and heavy imports (litellm, langgraph) happen inside commands.
Developer tooling (the PromQL conformance runner) is ``python -m itbench_dev`` in a checkout.
"""

from __future__ import annotations

import functools
from typing import Any

import typer


@functools.cache
def make_app() -> typer.Typer:
    """The ``itbench`` command with every area's commands added (once per process)."""
    app = typer.Typer(
        name="itbench",
        help="Benchmark AI agents on IT automation (SRE, CISO, FinOps) against an embedded Kubernetes twin.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_show_locals=False,
    )
    _assemble(app)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # ``from itbench_agents.cli import app``
        return make_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _assemble(app: typer.Typer) -> None:
    from .commands.backends import backends_app, executors_app
    from .commands.run import register as register_harness
    from .commands.scenarios import scenarios_app
    from .llm.cli import llm_app
    from .personas.ciso.host_cli import serve_host
    from .problem.cli import problem_app
    from .snapshots.cli import snapshot_app
    from .tools.cli import mcp_app, tools_app
    from .twin.addons.kyverno.cli import kyverno_app
    from .twin.addons.opa.cli import opa_app
    from .twin.cli import twin_app

    twin_app.command("host")(serve_host)
    app.add_typer(twin_app, name="twin")
    app.add_typer(scenarios_app, name="scenarios")
    app.add_typer(backends_app, name="backends")
    app.add_typer(executors_app, name="executors")
    app.add_typer(mcp_app, name="mcp")
    app.add_typer(tools_app, name="tools")
    app.add_typer(kyverno_app, name="kyverno")
    app.add_typer(opa_app, name="opa")
    app.add_typer(llm_app, name="llm")
    app.add_typer(problem_app, name="problem")
    app.add_typer(snapshot_app, name="snapshot")
    register_harness(app)


def main() -> None:
    make_app()()


if __name__ == "__main__":
    main()
