"""What a RHEL 9 host twin is made of, as a scenario states it: files, packages, services, kernel.

A :class:`HostSpec` lists only what differs from :func:`rhel9_base` (a minimal RHEL 9.4 server as
installed: ``/etc/os-release``, ``sshd_config`` with its ``Include`` and Red Hat's drop-in,
``login.defs``, ``sysctl`` defaults, the packages and services a CIS check asks about).
:meth:`HostSpec.over` lays one spec over another: a file or table entry of the upper spec wins, a
file set to ``null`` is removed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

UnitFileState = Literal["enabled", "disabled", "masked", "static"]


class HostFile(BaseModel):
    """One regular file of the host. Owners other than root cannot be made without privilege, so
    every file belongs to ``root:root`` (CIS checks the mode of files root owns)."""

    model_config = ConfigDict(extra="forbid")
    content: str = ""
    mode: str = Field("0644", pattern=r"^0?[0-7]{3,4}$", description="octal, as `chmod` takes it")


class Service(BaseModel):
    """A systemd service unit: ``systemctl is-enabled`` prints ``enabled``, ``is-active`` the state."""

    model_config = ConfigDict(extra="forbid")
    enabled: UnitFileState = "enabled"
    active: bool = True
    description: str = ""


class Mount(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str
    fstype: str
    options: str = "rw,relatime"


class HostSpec(BaseModel):
    """A host's state. ``packages`` maps a name to ``version-release.arch`` (what ``rpm -q`` prints
    after the name); ``kernel`` holds runtime ``sysctl`` values (files in ``/etc/sysctl.d`` apply
    when ``sysctl --system`` runs, as on a real host); ``modules`` the loaded kernel modules."""

    model_config = ConfigDict(extra="forbid")
    hostname: str = "rhel9-host"
    files: dict[str, HostFile | None] = Field(default_factory=dict)
    packages: dict[str, str | None] = Field(default_factory=dict)
    services: dict[str, Service | None] = Field(default_factory=dict)
    kernel: dict[str, str] = Field(default_factory=dict)
    modules: list[str] = Field(default_factory=list)
    mounts: dict[str, Mount | None] = Field(default_factory=dict)
    selinux: Literal["Enforcing", "Permissive", "Disabled"] | None = None

    @field_validator("files", "mounts")
    @classmethod
    def _absolute(cls, value: dict[str, object], info: ValidationInfo) -> dict[str, object]:
        for path in value:
            if (
                not path.startswith("/")
                or "/../" in f"{path}/"
                or (info.field_name == "files" and path == "/")
            ):
                raise ValueError(f"{path!r}: a host path must be absolute and must not climb with '..'")
        return value

    def over(self, base: HostSpec) -> HostSpec:
        """This spec laid over ``base``."""

        def merge(lower: dict, upper: dict) -> dict:  # type: ignore[type-arg]
            merged = {**lower, **upper}
            return {k: v for k, v in merged.items() if v is not None}

        return HostSpec(
            hostname=self.hostname if "hostname" in self.model_fields_set else base.hostname,
            files=merge(base.files, self.files),
            packages=merge(base.packages, self.packages),
            services=merge(base.services, self.services),
            kernel={**base.kernel, **self.kernel},
            modules=sorted({*base.modules, *self.modules}),
            mounts=merge(base.mounts, self.mounts),
            selinux=self.selinux or base.selinux,
        )


def _f(content: str, mode: str = "0644") -> HostFile:
    return HostFile(content=content, mode=mode)


_SSHD_CONFIG = """\
#\t$OpenBSD: sshd_config,v 1.104 2021/07/02 05:11:21 dtucker Exp $

# To modify the system-wide sshd configuration, create a  *.conf  file under
#  /etc/ssh/sshd_config.d/  which will be automatically included below
Include /etc/ssh/sshd_config.d/*.conf

#Port 22
#AddressFamily any
#ListenAddress 0.0.0.0

HostKey /etc/ssh/ssh_host_rsa_key
HostKey /etc/ssh/ssh_host_ecdsa_key
HostKey /etc/ssh/ssh_host_ed25519_key

#LoginGraceTime 2m
#PermitRootLogin prohibit-password
#MaxAuthTries 6
#MaxSessions 10

AuthorizedKeysFile\t.ssh/authorized_keys

#HostbasedAuthentication no
#IgnoreRhosts yes
#PermitEmptyPasswords no

#AllowTcpForwarding yes
#X11Forwarding no
#PermitUserEnvironment no
#ClientAliveInterval 0
#ClientAliveCountMax 3
#MaxStartups 10:30:100

# no default banner path
#Banner none

# override default of no subsystems
Subsystem\tsftp\t/usr/libexec/openssh/sftp-server
"""

_SSHD_REDHAT = """\
# This system is following system-wide crypto policy. The changes to
# crypto properties (Ciphers, MACs, ...) will not have any effect in
# this or following included files. To override some configuration option,
# write it before this block or in the main config file.
Include /etc/crypto-policies/back-ends/opensshserver.config

SyslogFacility AUTHPRIV

ChallengeResponseAuthentication no

GSSAPIAuthentication yes
GSSAPICleanupCredentials no

UsePAM yes

X11Forwarding yes

# It is recommended to use pam_motd in /etc/pam.d/sshd instead of PrintMotd,
# as it is more configurable and versatile than the built-in version.
PrintMotd no
"""

_LOGIN_DEFS = """\
MAIL_DIR\t/var/spool/mail
UMASK\t\t022
HOME_MODE\t0700
PASS_MAX_DAYS\t99999
PASS_MIN_DAYS\t0
PASS_WARN_AGE\t7
UID_MIN                  1000
UID_MAX                 60000
SYS_UID_MIN               201
SYS_UID_MAX               999
GID_MIN                  1000
GID_MAX                 60000
CREATE_HOME\tyes
USERGROUPS_ENAB yes
ENCRYPT_METHOD SHA512
"""

_PASSWD = """\
root:x:0:0:root:/root:/bin/bash
bin:x:1:1:bin:/bin:/sbin/nologin
daemon:x:2:2:daemon:/sbin:/sbin/nologin
adm:x:3:4:adm:/var/adm:/sbin/nologin
nobody:x:65534:65534:Kernel Overflow User:/:/sbin/nologin
sshd:x:74:74:Privilege-separated SSH:/usr/share/empty.sshd:/sbin/nologin
chrony:x:990:987:chrony system user:/var/lib/chrony:/sbin/nologin
cloud-user:x:1000:1000:Cloud User:/home/cloud-user:/bin/bash
"""

_GROUP = """\
root:x:0:
bin:x:1:
daemon:x:2:
adm:x:4:
wheel:x:10:cloud-user
nobody:x:65534:
sshd:x:74:
chrony:x:987:
cloud-user:x:1000:
"""

_SHADOW = """\
root:!locked::0:99999:7:::
bin:*:19769:0:99999:7:::
daemon:*:19769:0:99999:7:::
adm:*:19769:0:99999:7:::
nobody:*:19769:0:99999:7:::
sshd:!!:19769::::::
chrony:!!:19769::::::
cloud-user:$6$rounds=5000$abcdefgh$0123456789abcdefghijABCDEFGHIJ:19769:0:99999:7:::
"""

_GSHADOW = "root:::\nbin:::\ndaemon:::\nadm:::\nwheel:::cloud-user\nnobody:::\nsshd:!::\nchrony:!::\ncloud-user:!::\n"

_CRONTAB = """\
SHELL=/bin/bash
PATH=/sbin:/bin:/usr/sbin:/usr/bin
MAILTO=root

# For details see man 4 crontabs
"""

_AUDITD_CONF = """\
local_events = yes
write_logs = yes
log_file = /var/log/audit/audit.log
log_group = root
log_format = ENRICHED
flush = INCREMENTAL_ASYNC
freq = 50
max_log_file = 8
num_logs = 5
priority_boost = 4
name_format = NONE
max_log_file_action = ROTATE
space_left = 75
space_left_action = SYSLOG
verify_email = yes
action_mail_acct = root
admin_space_left = 50
admin_space_left_action = SUSPEND
disk_full_action = SUSPEND
disk_error_action = SUSPEND
"""

_FSTAB = """\
UUID=5b3e2f4c-1d8a-4c7e-9f52-0c3f1a2b4d6e /                       xfs     defaults        0 0
UUID=7E1A-3C2B          /boot/efi               vfat    umask=0077,shortname=winnt 0 2
"""


def rhel9_base() -> HostSpec:
    """A minimal RHEL 9.4 server with its shipped defaults (the values CIS checks start from)."""
    files = {
        "/etc/os-release": _f(
            'NAME="Red Hat Enterprise Linux"\nVERSION="9.4 (Plow)"\nID="rhel"\nID_LIKE="fedora"\n'
            'VERSION_ID="9.4"\nPLATFORM_ID="platform:el9"\nPRETTY_NAME="Red Hat Enterprise Linux 9.4 (Plow)"\n'
            'ANSI_COLOR="0;31"\nCPE_NAME="cpe:/o:redhat:enterprise_linux:9::baseos"\n'
            'HOME_URL="https://www.redhat.com/"\n'
        ),
        "/etc/redhat-release": _f("Red Hat Enterprise Linux release 9.4 (Plow)\n"),
        "/etc/system-release": _f("Red Hat Enterprise Linux release 9.4 (Plow)\n"),
        "/etc/hostname": _f("rhel9-host\n"),
        "/etc/hosts": _f(
            "127.0.0.1   localhost localhost.localdomain\n::1         localhost localhost.localdomain\n"
        ),
        "/etc/passwd": _f(_PASSWD),
        "/etc/group": _f(_GROUP),
        "/etc/shadow": _f(_SHADOW, "0000"),
        "/etc/gshadow": _f(_GSHADOW, "0000"),
        "/etc/ssh/sshd_config": _f(_SSHD_CONFIG, "0600"),
        "/etc/ssh/sshd_config.d/50-redhat.conf": _f(_SSHD_REDHAT, "0600"),
        "/etc/crypto-policies/back-ends/opensshserver.config": _f(
            "Ciphers aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes256-ctr,aes128-gcm@openssh.com,aes128-ctr\n"
        ),
        "/etc/crypto-policies/config": _f("DEFAULT\n"),
        "/etc/login.defs": _f(_LOGIN_DEFS),
        "/etc/security/pwquality.conf": _f("# minlen = 8\n# minclass = 0\n"),
        "/etc/security/faillock.conf": _f("# deny = 3\n# unlock_time = 600\n"),
        "/etc/pam.d/system-auth": _f(
            "auth        required      pam_env.so\nauth        sufficient    pam_unix.so try_first_pass nullok\n"
            "auth        required      pam_deny.so\n\naccount     required      pam_unix.so\n\n"
            "password    requisite     pam_pwquality.so local_users_only\n"
            "password    sufficient    pam_unix.so sha512 shadow nullok use_authtok\n"
            "password    required      pam_deny.so\n\nsession     required      pam_unix.so\n"
        ),
        "/etc/sysctl.conf": _f(
            "# sysctl settings are defined through files in\n# /usr/lib/sysctl.d/, /run/sysctl.d/, and /etc/sysctl.d/.\n"
        ),
        "/etc/sysctl.d/99-sysctl.conf": _f(
            "# sysctl settings are defined through files in\n# /etc/sysctl.d/\n"
        ),
        "/etc/modprobe.d/firewalld-sysctls.conf": _f(
            "install nf_conntrack /usr/sbin/modprobe --ignore-install nf_conntrack $CMDLINE_OPTS && /usr/sbin/sysctl --quiet --pattern 'net[.]netfilter[.]nf_conntrack.*' --system\n"
        ),
        "/etc/fstab": _f(_FSTAB),
        "/etc/crontab": _f(_CRONTAB),
        "/etc/audit/auditd.conf": _f(_AUDITD_CONF, "0640"),
        "/etc/audit/rules.d/audit.rules": _f("-D\n-b 8192\n-f 1\n--backlog_wait_time 60000\n", "0600"),
        "/etc/selinux/config": _f("SELINUX=enforcing\nSELINUXTYPE=targeted\n"),
        "/etc/dnf/dnf.conf": _f(
            "[main]\ngpgcheck=1\ninstallonly_limit=3\nclean_requirements_on_remove=True\nbest=True\nskip_if_unavailable=False\n"
        ),
        "/etc/chrony.conf": _f(
            "pool 2.rhel.pool.ntp.org iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\nrtcsync\n"
        ),
        "/etc/sysconfig/chronyd": _f('# Command-line options for chronyd\nOPTIONS="-F 2"\n'),
        "/etc/profile": _f(
            "# /etc/profile\npathmunge () {\n    :\n}\nexport PATH USER LOGNAME MAIL HOSTNAME HISTSIZE HISTCONTROL\n"
        ),
        "/etc/bashrc": _f("# /etc/bashrc\n    umask 022\n"),
        "/etc/issue": _f("\\S\nKernel \\r on an \\m\n\n"),
        "/etc/issue.net": _f("\\S\nKernel \\r on an \\m\n"),
        "/etc/motd": _f(""),
    }
    rel = "el9"
    packages = {
        "kernel": f"5.14.0-427.13.1.{rel}_4.x86_64",
        "openssh-server": f"8.7p1-38.{rel}.x86_64",
        "openssh-clients": f"8.7p1-38.{rel}.x86_64",
        "audit": f"3.1.2-2.{rel}.x86_64",
        "chrony": f"4.5-1.{rel}.x86_64",
        "crypto-policies": f"20240304-1.git76a6b61.{rel}.noarch",
        "sudo": f"1.9.5p2-10.{rel}_3.x86_64",
        "firewalld": f"1.3.4-1.{rel}.noarch",
        "libselinux": f"3.6-1.{rel}.x86_64",
        "pam": f"1.5.1-19.{rel}.x86_64",
        "libpwquality": f"1.4.4-8.{rel}.x86_64",
        "cronie": f"1.5.7-11.{rel}.x86_64",
        "rsyslog": f"8.2310.0-4.{rel}.x86_64",
        "python3": f"3.9.18-3.{rel}.x86_64",
        "bash": f"5.1.8-9.{rel}.x86_64",
    }
    services = {
        "sshd": Service(description="OpenSSH server daemon"),
        "auditd": Service(description="Security Auditing Service"),
        "chronyd": Service(description="NTP client/server"),
        "crond": Service(description="Command Scheduler"),
        "firewalld": Service(description="firewalld - dynamic firewall daemon"),
        "rsyslog": Service(description="System Logging Service"),
        "systemd-journald": Service(enabled="static", description="Journal Service"),
        "kdump": Service(enabled="disabled", active=False, description="Crash recovery kernel arming"),
    }
    kernel = {
        "kernel.randomize_va_space": "2",
        "net.ipv4.ip_forward": "0",
        "net.ipv6.conf.all.forwarding": "0",
        "net.ipv4.conf.all.send_redirects": "1",
        "net.ipv4.conf.default.send_redirects": "1",
        "net.ipv4.conf.all.accept_source_route": "0",
        "net.ipv4.conf.default.accept_source_route": "0",
        "net.ipv4.conf.all.accept_redirects": "1",
        "net.ipv4.conf.default.accept_redirects": "1",
        "net.ipv4.conf.all.log_martians": "0",
        "net.ipv4.conf.default.log_martians": "0",
        "net.ipv4.icmp_echo_ignore_broadcasts": "1",
        "net.ipv4.conf.all.rp_filter": "1",
        "net.ipv4.conf.default.rp_filter": "1",
        "net.ipv4.tcp_syncookies": "1",
        "kernel.dmesg_restrict": "0",
        "fs.suid_dumpable": "0",
    }
    mounts = {
        "/": Mount(
            source="/dev/mapper/rhel-root",
            fstype="xfs",
            options="rw,relatime,seclabel,attr2,inode64,logbufs=8,logbsize=32k,noquota",
        ),
        "/boot/efi": Mount(source="/dev/vda2", fstype="vfat", options="rw,relatime,fmask=0077,dmask=0077"),
        "/dev/shm": Mount(source="tmpfs", fstype="tmpfs", options="rw,nosuid,nodev,seclabel,inode64"),
        "/tmp": Mount(source="tmpfs", fstype="tmpfs", options="rw,nosuid,nodev,seclabel,inode64"),
    }
    return HostSpec(
        files=files,  # type: ignore[arg-type]
        packages=packages,  # type: ignore[arg-type]
        services=services,  # type: ignore[arg-type]
        kernel=kernel,
        modules=["xfs", "nf_tables", "virtio_net"],
        mounts=mounts,  # type: ignore[arg-type]
        selinux="Enforcing",
    )
