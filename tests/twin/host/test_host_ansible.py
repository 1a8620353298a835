"""Real ansible-core against the host twin: the modules CIS checks use, the Done-when line of issue 29
(a playbook collects sshd settings into collected_data.json, ``opa eval`` decides), and the walls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from itbench_agents.twin.addons.opa import opa_command
from itbench_agents.twin.addons.opa.server import make_opa_handler
from itbench_agents.twin.addons.opa.store import OpaStore
from itbench_agents.twin.host.ansible import ServedHost, ansible_env, inventory_text, playbook_argv
from itbench_agents.twin.host.host import HostTwin, host_sandbox_problem
from itbench_agents.twin.host.spec import HostFile, HostSpec
from itbench_agents.twin.httpserver import HttpEndpoint

pytestmark = [
    pytest.mark.skipif(host_sandbox_problem() is not None, reason=str(host_sandbox_problem())),
    pytest.mark.slow,  # each playbook is a few seconds of ansible-playbook
]

COLLECT = """\
- name: collect SSH X11 forwarding evidence
  hosts: rhel9_servers
  become: true
  gather_facts: false
  tasks:
    - name: read the effective sshd configuration
      ansible.builtin.command: sshd -T
      register: sshd
      changed_when: false
    - name: save it on the controller
      ansible.builtin.copy:
        content: "{{ {'file': '/etc/ssh/sshd_config', 'x11_forwarding': sshd.stdout_lines | select('match', '^x11forwarding') | first} | to_json }}"
        dest: "{{ playbook_dir }}/collected_data.json"
      delegate_to: localhost
      become: false
"""

POLICY = """package check
import rego.v1

default result := false

result if input.x11_forwarding == "x11forwarding no"
"""

COMPLIANT = HostSpec(
    files={
        "/etc/ssh/sshd_config.d/50-redhat.conf": HostFile(
            content="UsePAM yes\nX11Forwarding no\n", mode="0600"
        )
    }
)


def play(served: ServedHost, workdir: Path, playbook: str) -> subprocess.CompletedProcess[str]:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "inventory.ini").write_text(inventory_text([served]))
    (workdir / "playbook.yml").write_text(playbook)
    return subprocess.run(
        playbook_argv("playbook.yml", "inventory.ini"),
        cwd=workdir, env=ansible_env(dict(os.environ), workdir), capture_output=True, text=True, timeout=240,
    )  # fmt: skip


@pytest.fixture(scope="module")
def opa_url() -> Iterator[str]:
    endpoint = HttpEndpoint(make_opa_handler(OpaStore())).start()
    yield endpoint.url
    endpoint.stop()


def opa_eval(opa_url: str, workdir: Path) -> str:
    (workdir / "policy.rego").write_text(POLICY)
    line = [
        "eval",
        "--data",
        "policy.rego",
        "--input",
        "collected_data.json",
        "data.check.result",
        "--format",
        "raw",
    ]
    r = subprocess.run(
        [sys.executable, "-I", "-S", opa_command.__file__, *line],
        cwd=workdir, env={"PATH": "/usr/bin:/bin", "OPA_URL": opa_url}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.parametrize(("spec", "decision"), [(None, "false"), (COMPLIANT, "true")])
def test_a_playbook_collects_sshd_settings_and_opa_decides(
    tmp_path: Path, opa_url: str, spec: HostSpec | None, decision: str
) -> None:
    with ServedHost(HostTwin.create(tmp_path / "host", spec)) as served:
        r = play(served, tmp_path / "work", COLLECT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    data = json.loads((tmp_path / "work/collected_data.json").read_text())
    expected = "x11forwarding no" if spec else "x11forwarding yes"
    assert data == {"file": "/etc/ssh/sshd_config", "x11_forwarding": expected}
    assert opa_eval(opa_url, tmp_path / "work") == decision


MODULES = """\
- hosts: rhel9_servers
  become: true
  gather_facts: true
  tasks:
    - ansible.builtin.stat: {path: /etc/ssh/sshd_config}
      register: st
    - ansible.builtin.slurp: {src: /etc/login.defs}
      register: defs
    - ansible.builtin.service_facts:
    - ansible.builtin.package_facts: {manager: auto}
    - ansible.builtin.lineinfile:
        path: /etc/ssh/sshd_config
        regexp: '^#?PermitRootLogin'
        line: PermitRootLogin no
    - ansible.builtin.copy: {content: "Authorized use only\\n", dest: /etc/issue.net, mode: "0644"}
    - ansible.builtin.file: {path: /etc/crontab, mode: "0600"}
    - ansible.builtin.systemd: {name: kdump, enabled: true, state: started}
    - ansible.builtin.shell: sshd -T | grep -E '^permitrootlogin'; sysctl -n kernel.randomize_va_space
      register: sh
      changed_when: false
    - ansible.builtin.copy:
        dest: "{{ playbook_dir }}/facts.json"
        content: "{{ {'distribution': ansible_distribution, 'version': ansible_distribution_major_version,
                      'os_family': ansible_os_family, 'mode': st.stat.mode, 'owner': st.stat.pw_name,
                      'defs': (defs.content | b64decode | regex_search('PASS_MAX_DAYS\\\\s+\\\\d+')),
                      'sshd': ansible_facts.services['sshd.service'].state,
                      'audit': ansible_facts.packages['audit'][0].version, 'shell': sh.stdout_lines} | to_json }}"
      delegate_to: localhost
      become: false
"""


def test_the_modules_cis_checks_use_behave_as_on_rhel(tmp_path: Path) -> None:
    real_motd = Path("/etc/issue.net").read_bytes() if Path("/etc/issue.net").exists() else None
    real_sshd = Path("/etc/ssh/sshd_config").read_bytes() if Path("/etc/ssh/sshd_config").exists() else None
    host = HostTwin.create(tmp_path / "host")
    with ServedHost(host) as served:
        r = play(served, tmp_path / "work", MODULES)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    facts = json.loads((tmp_path / "work/facts.json").read_text())
    assert facts == {
        "distribution": "RedHat", "version": "9", "os_family": "RedHat", "mode": "0600", "owner": "root",
        "defs": "PASS_MAX_DAYS\t99999", "sshd": "running", "audit": "3.1.2",
        "shell": ["permitrootlogin no", "2"],
    }  # fmt: skip
    root = host.folder / "root"
    assert "PermitRootLogin no" in (root / "etc/ssh/sshd_config").read_text()
    assert (root / "etc/issue.net").read_text() == "Authorized use only\n"
    assert oct((root / "etc/crontab").stat().st_mode & 0o777) == "0o600"
    assert host.state()["services"]["kdump"] == {
        "enabled": "enabled",
        "active": True,
        "description": "Crash recovery kernel arming",
    }
    # this machine's own files are untouched
    assert (Path("/etc/issue.net").read_bytes() if Path("/etc/issue.net").exists() else None) == real_motd
    assert (
        Path("/etc/ssh/sshd_config").read_bytes() if Path("/etc/ssh/sshd_config").exists() else None
    ) == real_sshd


OUTSIDE = """\
- hosts: rhel9_servers
  gather_facts: false
  tasks:
    - ansible.builtin.command: hostname
      delegate_to: build-server.example.com
"""


def test_a_host_outside_the_inventory_is_refused(tmp_path: Path) -> None:
    with ServedHost(HostTwin.create(tmp_path / "host")) as served:
        r = play(served, tmp_path / "work", OUTSIDE)
        also = play(
            served,
            tmp_path / "work2",
            OUTSIDE.replace("rhel9_servers", "prod-db-01").replace(
                "      delegate_to: build-server.example.com\n", ""
            ),
        )
    assert r.returncode != 0
    assert "host 'build-server.example.com' is not a host of this scenario's inventory" in r.stdout + r.stderr
    assert "skipping: no hosts matched" in also.stdout + also.stderr


PEEK = """\
- hosts: rhel9_servers
  gather_facts: false
  tasks:
    - ansible.builtin.command: sshd -T
      register: sshd
      changed_when: false
    - ansible.builtin.shell: "cat {secret} || true; ls {library} 2>&1 || true"
      delegate_to: localhost
      register: peek
    - ansible.builtin.copy:
        content: "{{{{ {{'x11': sshd.stdout_lines | select('match', '^x11forwarding') | first,
                        'peek': peek.stdout}} | to_json }}}}"
        dest: "{{{{ playbook_dir }}}}/collected_data.json"
      delegate_to: localhost
"""


def test_the_controller_runs_sandboxed_and_sees_no_answers(tmp_path: Path) -> None:
    from itbench_agents.twin.host.controller import run_playbook

    secret = tmp_path / "outside" / "answer.txt"
    secret.parent.mkdir()
    secret.write_text("the reference answer")
    library = Path(__file__).resolve().parents[3] / "scenarios"
    work = tmp_path / "work"
    work.mkdir()
    (work / "playbook.yml").write_text(PEEK.format(secret=secret, library=library))
    with ServedHost(HostTwin.create(tmp_path / "host")) as served:
        (work / "inventory.ini").write_text(inventory_text([served]))
        rc, out = run_playbook(work)
    assert rc == 0, out
    data = json.loads((work / "collected_data.json").read_text())
    assert data["x11"] == "x11forwarding yes"
    assert "the reference answer" not in data["peek"] and "No such file or directory" in data["peek"]


@pytest.mark.slow
def test_itbench_twin_host_serves_a_scenario_host_for_ansible_by_hand(tmp_path: Path) -> None:
    import signal
    import time

    cmd = [
        sys.executable,
        "-m",
        "itbench_agents.cli",
        "twin",
        "host",
        "-s",
        "ciso/rhel-opa-ssh-root-login-v1",
    ]
    proc = subprocess.Popen(
        [*cmd, "--workdir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]
        assert lines[-1].startswith("Ctrl-C to stop"), lines
        (tmp_path / "playbook.yml").write_text(COLLECT.replace("^x11forwarding", "^permitrootlogin"))
        r = subprocess.run(
            playbook_argv("playbook.yml", "inventory.ini"),
            cwd=tmp_path, env=ansible_env(dict(os.environ), tmp_path), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert r.returncode == 0, r.stdout[-2000:]
        assert (
            json.loads((tmp_path / "collected_data.json").read_text())["x11_forwarding"]
            == "permitrootlogin yes"
        )
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        assert proc.wait(timeout=20) == 0 and time.monotonic() - t0 < 20
    finally:
        proc.kill()
