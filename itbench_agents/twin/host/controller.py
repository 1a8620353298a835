"""``ansible-playbook`` as an untrusted agent's playbook must run: inside the agents' sandbox.

A playbook is code for the *controller* too (``delegate_to: localhost``, lookups, ``local_action``),
so the controller runs where a command agent runs (``itbench_agents/sandbox.py``: bubblewrap, the work
folder read-write, this package, the scenario library and the harness's virtual environment
hidden). It gets the base Python (read-only) and, under ``/tmp/.itbench-ansible``, only the
distributions ansible-core needs (ansible-core, Jinja2, MarkupSafe, PyYAML, cryptography, cffi,
pycparser, packaging, resolvelib) — not the rest of the environment. The host twins it reaches are
on 127.0.0.1 through the ``itbench_host`` connection plugin, bound beside them.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import secrets
import shlex
import subprocess
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from ...processes import wait_for_exit
from ...sandbox import (
    MARKER,
    bwrap_argv,
    harness_paths,
    hidden_options,
    kill_tree,
    resolve_mode,
    scrubbed_env,
    start_process,
)
from .ansible import PLUGINS, ansible_env
from .host import file_limited

SITE = "/tmp/.itbench-ansible/site"
PLUGIN_DIR = "/tmp/.itbench-ansible/plugins"
LAUNCH = (
    "import os, sys; sys.path[:0] = [{site!r} if os.path.isdir({site!r}) else {fallback!r}]; "
    "sys.argv[0] = 'ansible-playbook'; from ansible.cli.playbook import main; sys.exit(main())"
)
"""ansible-core from :data:`SITE` inside the sandbox; from where it is installed without one."""
PLAYBOOK_TIMEOUT_S = 120.0
"""How long an agent's playbook may run in the evaluator (ITBench's harness wraps agents in 200 s)."""


@cache
def ansible_distributions() -> tuple[Path, ...]:
    """The installed top-level modules and packages of ansible-core and what it requires, with their
    ``.dist-info`` folders (Ansible reads its dependencies' versions)."""
    seen: set[str] = set()
    todo = ["ansible-core"]
    paths: list[Path] = []
    while todo:
        name = todo.pop()
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        dist = metadata.distribution(name)
        for f in dist.files or ():
            top = str(f).split("/")[0]
            if top.startswith("..") or top.endswith(".pth") or top in ("bin", "ansible_test"):
                continue
            path = Path(str(dist.locate_file(top)))
            if path not in paths and path.exists():
                paths.append(path)
        for req in dist.requires or ():
            if "extra ==" not in req:
                todo.append(re.split(r"[ ;<>=!~\[(]", req)[0])
    return tuple(paths)


def base_python() -> Path:
    """The interpreter behind this environment (a virtual environment's python is a link to it)."""
    return Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))


def controller_command(args: Iterable[str]) -> list[str]:
    import ansible

    fallback = str(Path(ansible.__file__).resolve().parents[1])
    return [str(base_python()), "-S", "-c", LAUNCH.format(site=SITE, fallback=fallback), *args]


def wrapper_script() -> str:
    """``ansible-playbook`` for a command agent's PATH inside the sandbox (with :func:`controller_mounts`
    and :func:`controller_env`)."""
    return "#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in controller_command([])) + ' "$@"\n'


def controller_env(env: dict[str, str], workdir: Path) -> dict[str, str]:
    """``env`` plus what ``ansible-playbook`` needs inside the sandbox: the ``itbench_host``
    connection where :func:`controller_mounts` binds it, its files in ``workdir``."""
    plugins = f"{PLUGIN_DIR}:{PLUGINS / 'connection'}"  # the second where there is no sandbox
    return {**ansible_env(env, workdir), "ANSIBLE_CONNECTION_PLUGINS": plugins}


def controller_mounts() -> list[tuple[str, str]]:
    """(source, destination) read-only binds the controller needs inside the sandbox."""
    mounts = [(str(Path(sys.base_prefix).resolve()), str(Path(sys.base_prefix).resolve()))]
    mounts += [(str(p), f"{SITE}/{p.name}") for p in ansible_distributions()]
    mounts.append((str(PLUGINS / "connection"), PLUGIN_DIR))
    return mounts


def run_playbook(
    workdir: Path,
    playbook: str = "playbook.yml",
    inventory: str = "inventory.ini",
    *,
    timeout_s: float = PLAYBOOK_TIMEOUT_S,
    sandbox: bool = True,
) -> tuple[int | None, str]:
    """``ansible-playbook -i inventory playbook`` in ``workdir`` as the agents' sandbox runs a command
    agent. Returns (exit status or None on time-out, the last lines of its output)."""
    marker = secrets.token_hex(8)
    env = ansible_env(scrubbed_env({MARKER: marker}, home=workdir), workdir)
    argv = controller_command(["-i", inventory, playbook])
    options = b""
    if sandbox and resolve_mode("auto") == "bwrap":
        env = controller_env(env, workdir)
        argv, options = hidden_options(
            bwrap_argv(
                argv,
                workdir=workdir,
                env=env,
                hide=[str(p) for p in harness_paths()],
                mounts=controller_mounts(),
            )
        )
    out_path = workdir / ".ansible-output"
    with out_path.open("wb") as out:
        # its output and files: bounded, as in the host (set before bwrap forks: host.file_limited)
        proc = start_process(
            file_limited(argv), options, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            rc = wait_for_exit(proc, timeout_s)
        finally:
            kill_tree(proc, marker)
            proc.wait()
    tail = out_path.read_text(errors="replace").strip().splitlines()[-40:]
    return rc, "\n".join(tail)
