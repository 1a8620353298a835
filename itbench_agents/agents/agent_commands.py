"""Commands the harness puts on an external agent's PATH for the systems its scenario runs.

``opa`` where the scenario runs the twin's OPA (``Endpoints.opa_url``) — the standard-library
script ``twin/addons/opa/opa_command.py``, which evaluates on that server, so it works inside the
sandbox, where nothing of this project is visible; ``ansible-playbook`` where the scenario has hosts
(``Endpoints.ansible_inventory``) — ansible-core on the base Python, with only its distributions and
the ``itbench_host`` connection bound into the sandbox (``twin/host/controller.py``).
"""

from __future__ import annotations

from pathlib import Path

from ..core.endpoints import Endpoints


def install_commands(endpoints: Endpoints, folder: Path) -> list[str]:
    """Write the scenario's commands into ``folder`` (made executable); returns their names."""
    names: list[str] = []
    if endpoints.opa_url:
        from ..twin.addons.opa import opa_command

        target = folder / "opa"
        target.write_text(Path(opa_command.__file__).read_text(encoding="utf-8"), encoding="utf-8")
        target.chmod(0o755)
        names.append("opa")
    if endpoints.ansible_inventory:
        from ..twin.host.controller import wrapper_script

        target = folder / "ansible-playbook"
        target.write_text(wrapper_script(), encoding="utf-8")
        target.chmod(0o755)
        names.append("ansible-playbook")
    return names


def command_mounts(endpoints: Endpoints) -> list[tuple[str, str]]:
    """(source, destination) binds the scenario's commands need inside the sandbox."""
    if not endpoints.ansible_inventory:
        return []
    from ..twin.host.controller import controller_mounts

    return controller_mounts()


def command_env(endpoints: Endpoints, env: dict[str, str], workdir: Path) -> dict[str, str]:
    """``env`` plus the variables the scenario's commands read."""
    out = dict(env)
    if endpoints.opa_url:  # only where the scenario runs an OPA
        out["OPA_URL"] = endpoints.opa_url
    if endpoints.opencost_url:  # FinOps on the twin: OpenCost's API
        out["OPENCOST_URL"] = endpoints.opencost_url
    if endpoints.ansible_inventory:
        from ..twin.host.controller import controller_env

        out = controller_env(out, workdir)
    return out
