"""Running real ``ansible-playbook`` against host twins: the inventory, the environment, the command.

:class:`ServedHost` serves a :class:`HostTwin` on 127.0.0.1 with a fresh token;
:func:`inventory_text` writes the INI inventory a scenario hands the agent (group ``rhel9_servers``
by default, as ITBench's RHEL goal names it); :func:`ansible_env` is the environment under which
``ansible-playbook`` finds the ``itbench_host`` connection plugin and refuses hosts outside the
inventory; :func:`playbook_argv` is the command line (``ansible-playbook -i INVENTORY PLAYBOOK``).
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..httpserver import HttpEndpoint
from .host import HostTwin
from .server import make_host_handler

PLUGINS = Path(__file__).with_name("ansible_plugins")
GROUP = "rhel9_servers"


@dataclass
class ServedHost:
    host: HostTwin
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    endpoint: HttpEndpoint | None = None

    def start(self) -> ServedHost:
        self.endpoint = HttpEndpoint(make_host_handler(self.host, self.token)).start()
        return self

    @property
    def url(self) -> str:
        assert self.endpoint is not None, "start() the host first"
        return self.endpoint.url

    def stop(self) -> None:
        if self.endpoint is not None:
            self.endpoint.stop()
            self.endpoint = None

    def __enter__(self) -> ServedHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def inventory_text(hosts: Iterable[ServedHost], group: str = GROUP) -> str:
    lines = [f"[{group}]"]
    for served in hosts:
        lines.append(
            f"{served.host.hostname} ansible_connection=itbench_host itbench_host_url={served.url} "
            f"itbench_host_token={served.token} ansible_python_interpreter=/usr/bin/python3"
        )
    return "\n".join(lines) + "\n"


def ansible_env(base: Mapping[str, str], workdir: Path) -> dict[str, str]:
    """``base`` plus what makes ``ansible-playbook`` use the host twins and keep its files in ``workdir``."""
    return {
        **base,
        "ANSIBLE_CONNECTION_PLUGINS": str(PLUGINS / "connection"),
        "ANSIBLE_TRANSPORT": "itbench_host",
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_HOME": str(workdir / ".ansible"),
        "ANSIBLE_LOCAL_TEMP": str(workdir / ".ansible" / "tmp"),
        "ANSIBLE_PYTHON_INTERPRETER": "auto_silent",
    }


def playbook_argv(playbook: Path | str, inventory: Path | str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "ansible.cli.playbook", "-i", str(inventory), str(playbook), *extra]
