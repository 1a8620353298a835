"""The RHEL 9 host twin from inside: its files, the RHEL commands it answers, what it cannot see."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from itbench_agents.twin.host.host import HostTwin, host_sandbox_problem
from itbench_agents.twin.host.spec import HostFile, HostSpec, Service

pytestmark = pytest.mark.skipif(host_sandbox_problem() is not None, reason=str(host_sandbox_problem()))


def run(host: HostTwin, command: str) -> tuple[int, str, str]:
    r = host.exec(command)
    return r.rc, r.stdout.decode(), r.stderr.decode()


@pytest.fixture
def host(tmp_path: Path) -> HostTwin:
    return HostTwin.create(tmp_path / "host")


def test_the_host_says_it_is_rhel9_and_runs_as_root(host: HostTwin) -> None:
    rc, out, _ = run(
        host, "id -u; hostname; cat /etc/redhat-release; . /etc/os-release; echo $ID $VERSION_ID"
    )
    assert rc == 0 and out.split("\n")[:4] == [
        "0",
        "rhel9-host",
        "Red Hat Enterprise Linux release 9.4 (Plow)",
        "rhel 9.4",
    ]


def test_sshd_T_prints_the_effective_config_first_value_wins(tmp_path: Path) -> None:
    host = HostTwin.create(tmp_path / "h")
    rc, out, _ = run(host, "sshd -T")
    settings = dict(line.split(" ", 1) for line in out.splitlines())
    # Red Hat's drop-in (included first) sets X11Forwarding yes and UsePAM yes; the rest are defaults
    assert rc == 0 and settings["x11forwarding"] == "yes" and settings["usepam"] == "yes"
    assert settings["permitrootlogin"] == "without-password" and settings["maxauthtries"] == "6"
    # a later line in the main file cannot beat the drop-in; an earlier drop-in can
    spec = HostSpec(
        files={
            "/etc/ssh/sshd_config.d/40-cis.conf": HostFile(
                content="x11forwarding No\nLoginGraceTime 1m\n", mode="0600"
            ),
        }
    )
    host = HostTwin.create(tmp_path / "h2", spec)
    run(
        host,
        "echo 'X11Forwarding yes' >> /etc/ssh/sshd_config; echo 'PermitRootLogin no' >> /etc/ssh/sshd_config",
    )
    rc, out, _ = run(host, "/usr/sbin/sshd -T")
    settings = dict(line.split(" ", 1) for line in out.splitlines())
    assert settings["x11forwarding"] == "no" and settings["logingracetime"] == "60"
    assert settings["permitrootlogin"] == "no"


def test_sshd_refuses_a_bad_config_as_sshd_does(host: HostTwin) -> None:
    run(host, "echo 'X11Forwardin no' >> /etc/ssh/sshd_config")
    rc, out, err = run(host, "sshd -T")
    assert rc == 255 and out == ""
    assert "/etc/ssh/sshd_config: line " in err and "Bad configuration option: X11Forwardin" in err
    assert "terminating, 1 bad configuration options" in err
    run(host, "sed -i '$d' /etc/ssh/sshd_config; echo 'PermitEmptyPasswords maybe' >> /etc/ssh/sshd_config")
    rc, _, err = run(host, "sshd -t")
    assert rc == 255 and 'unsupported option "maybe"' in err


def test_systemctl_keeps_service_state(tmp_path: Path) -> None:
    host = HostTwin.create(
        tmp_path / "h", HostSpec(services={"cups": Service(enabled="disabled", active=False)})
    )
    assert run(host, "systemctl is-enabled sshd")[:2] == (0, "enabled\n")
    assert run(host, "systemctl is-active cups")[:2] == (3, "inactive\n")
    assert run(host, "systemctl is-enabled nosuch")[0] == 1
    assert run(host, "systemctl enable --now cups && systemctl is-active cups.service")[:2] == (0, "active\n")
    assert run(host, "systemctl mask auditd && systemctl start auditd")[0] == 1
    assert host.state()["services"]["auditd"]["enabled"] == "masked"
    rc, out, _ = run(host, "systemctl list-units --no-pager --type service --all --plain")
    assert rc == 0 and any(
        line.split()[:4] == ["cups.service", "loaded", "active", "running"] for line in out.splitlines()
    )


def test_rpm_sysctl_modprobe_findmnt_answer_like_rhel(host: HostTwin) -> None:
    assert run(host, "rpm -q openssh-server aide") == (
        1, "openssh-server-8.7p1-38.el9.x86_64\npackage aide is not installed\n", "",
    )  # fmt: skip
    assert run(host, "rpm -q --qf '%{VERSION}\\n' audit")[1] == "3.1.2\n"
    assert (
        run(host, "sysctl net.ipv4.ip_forward; cat /proc/sys/net/ipv4/ip_forward")[1]
        == "net.ipv4.ip_forward = 0\n0\n"
    )
    rc, _, err = run(host, "sysctl no.such.key")
    assert rc == 255 and "cannot stat /proc/sys/no/such/key" in err
    # files in /etc/sysctl.d apply when `sysctl --system` runs, as on a host
    run(host, "echo 'net.ipv4.ip_forward = 1' > /etc/sysctl.d/60-fwd.conf")
    assert run(host, "sysctl -n net.ipv4.ip_forward")[1] == "0\n"
    rc, out, _ = run(host, "sysctl --system && sysctl -n net.ipv4.ip_forward")
    assert rc == 0 and "* Applying /etc/sysctl.d/60-fwd.conf ..." in out and out.endswith("1\n")
    assert run(host, "modprobe -n -v cramfs")[1].startswith("insmod /lib/modules/")
    run(host, "echo 'install cramfs /bin/false' > /etc/modprobe.d/cramfs.conf")
    assert run(host, "modprobe -n -v cramfs")[1] == "install /bin/false\n"
    assert run(host, "findmnt -kn /tmp")[1].split()[:3] == ["/tmp", "tmpfs", "tmpfs"]
    assert run(host, "findmnt -kn /var")[0] == 1
    assert (
        run(host, "stat -c '%a %U %G' /etc/shadow /etc/ssh/sshd_config")[1] == "0 root root\n600 root root\n"
    )


def test_the_host_sees_nothing_of_this_machine(host: HostTwin, tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("not for the host")
    rc, out, _ = run(host, f"cat {secret}; ls /work /home; command -v apt-get dpkg; echo end")
    assert "not for the host" not in out and out.endswith("cloud-user\nend\n")
    # writes land in the host's own tree, never in this machine's /etc
    run(host, "echo canary > /etc/itbench-canary")
    assert not Path("/etc/itbench-canary").exists()
    assert (host.folder / "root/etc/itbench-canary").read_text() == "canary\n"
    # a link left in the host points inside the host, also when read through the host
    run(host, "ln -s /etc/hostname /tmp/link")
    assert host.get("/tmp/link").stdout == b"rhel9-host\n"
    # no network
    rc, out, err = run(host, "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 22), 2)\"")
    assert rc != 0 and ("unreachable" in err or "refused" in err)


def test_a_command_that_never_ends_is_cut_off(host: HostTwin) -> None:
    r = host.exec("sleep 30", timeout=0.5)
    assert r.timed_out and r.rc == 124 and b"timed out after 0.5 s" in r.stderr


def test_the_rpm_binding_reads_the_package_table(host: HostTwin) -> None:
    rc, out, _ = run(
        host,
        "python3 -c 'import json, rpm; print(json.dumps(sorted(h[rpm.RPMTAG_NAME] for h in rpm.TransactionSet().dbMatch())))'",
    )
    assert rc == 0 and "openssh-server" in json.loads(out)


def test_a_command_that_prints_forever_is_cut_off_not_kept_in_memory(host: HostTwin) -> None:
    r = host.exec("yes; echo never", timeout=30)
    assert not r.timed_out and r.rc != 0
    assert len(r.stdout) == 16 * 2**20 and b"output over 64 MiB: cut off" in r.stderr
    # the same limit holds for files written in the host
    r = host.exec("head -c 100000000 /dev/zero > /tmp/big; echo rc=$?; stat -c %s /tmp/big")
    assert r.stdout.decode().split() == ["rc=153", str(64 * 2**20)]


def test_setenforce_changes_the_runtime_mode_only(tmp_path: Path) -> None:
    host = HostTwin.create(tmp_path / "h", HostSpec(selinux="Permissive"))
    assert run(host, "getenforce; setenforce 1; getenforce; grep ^SELINUX= /etc/selinux/config")[1] == (
        "Permissive\nEnforcing\nSELINUX=enforcing\n"
    )
    assert run(host, "setenforce maybe")[0] == 1
    off = HostTwin.create(tmp_path / "off", HostSpec(selinux="Disabled"))
    assert run(off, "setenforce 1") == (1, "", "setenforce: SELinux is disabled\n")
