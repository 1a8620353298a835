"""Commands the harness puts on an external agent's PATH for the systems its scenario runs.

Today one: ``opa`` where the scenario runs the twin's OPA (``Endpoints.opa_url``) — the standard-
library script ``twin/addons/opa/opa_command.py``, which evaluates on that server, so it works inside
the sandbox, where nothing of this project is visible.
"""

from __future__ import annotations

from pathlib import Path

from ..twin.endpoints import Endpoints


def install_commands(endpoints: Endpoints, folder: Path) -> list[str]:
    """Write the scenario's commands into ``folder`` (made executable); returns their names."""
    names: list[str] = []
    if endpoints.opa_url:
        from ..twin.addons.opa import opa_command

        target = folder / "opa"
        target.write_text(Path(opa_command.__file__).read_text(encoding="utf-8"), encoding="utf-8")
        target.chmod(0o755)
        names.append("opa")
    return names
