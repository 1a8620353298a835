#!/usr/bin/python3
"""RHEL 9 commands the host twin lacks, run *inside* the host's sandbox by the host's own Python.

One stdlib-only script, reached through links named after the commands (``/usr/sbin/sshd``,
``/usr/bin/systemctl``, ``/usr/bin/rpm``, ``/usr/sbin/sysctl``, ``/usr/sbin/modprobe``,
``/usr/sbin/lsmod``, ``/usr/bin/findmnt``, ``/usr/sbin/getenforce``, ``/usr/sbin/setenforce``,
``/usr/sbin/sestatus``,
``/usr/bin/update-crypto-policies``, ``/usr/bin/sudo``); it dispatches on the name it was called by. Each reads the
host's files (``/etc/ssh/sshd_config``, ``/etc/modprobe.d``, ``/etc/sysctl.d``...) as the real
command would and the host's runtime state (``/run/itbench-host/state.json``: packages, services,
loaded modules, mounts, SELinux) for what a real host keeps in its kernel or databases. Kernel
parameters are files under ``/proc/sys``, as on Linux. Output and exit codes follow the RHEL 9
commands (openssh 8.7, systemd 252, rpm 4.16, procps-ng 3.3.17, kmod 28, util-linux 2.37).
"""

from __future__ import annotations

import fnmatch
import glob
import json
import os
import re
import sys
from typing import Any

STATE = "/run/itbench-host/state.json"
KERNEL_RELEASE = "5.14.0-427.13.1.el9_4.x86_64"


def load_state() -> dict:
    with open(STATE) as f:
        return json.load(f)


def save_state(state: dict) -> None:
    tmp = STATE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1, sort_keys=True)
    os.replace(tmp, STATE)


def err(msg: str) -> None:
    sys.stderr.write(msg + "\n")


# --------------------------------------------------------------------------------------- sshd
SSHD_DEFAULTS = [
    ("port", "22"),
    ("addressfamily", "any"),
    ("listenaddress", "[::]:22\nlistenaddress 0.0.0.0:22"),
    ("usepam", "no"),
    ("logingracetime", "120"),
    ("x11displayoffset", "10"),
    ("maxauthtries", "6"),
    ("maxsessions", "10"),
    ("clientaliveinterval", "0"),
    ("clientalivecountmax", "3"),
    ("requiredrsasize", "1024"),
    ("permitrootlogin", "without-password"),
    ("ignorerhosts", "yes"),
    ("ignoreuserknownhosts", "no"),
    ("hostbasedauthentication", "no"),
    ("hostbasedusesnamefrompacketonly", "no"),
    ("pubkeyauthentication", "yes"),
    ("kerberosauthentication", "no"),
    ("kerberosorlocalpasswd", "yes"),
    ("kerberosticketcleanup", "yes"),
    ("gssapiauthentication", "no"),
    ("gssapicleanupcredentials", "yes"),
    ("gssapikeyexchange", "no"),
    ("gssapistrictacceptorcheck", "yes"),
    ("passwordauthentication", "yes"),
    ("kbdinteractiveauthentication", "yes"),
    ("printmotd", "yes"),
    ("printlastlog", "yes"),
    ("x11forwarding", "no"),
    ("x11uselocalhost", "yes"),
    ("permittty", "yes"),
    ("permituserrc", "yes"),
    ("strictmodes", "yes"),
    ("tcpkeepalive", "yes"),
    ("permitemptypasswords", "no"),
    ("compression", "yes"),
    ("gatewayports", "no"),
    ("usedns", "no"),
    ("allowtcpforwarding", "yes"),
    ("allowagentforwarding", "yes"),
    ("disableforwarding", "no"),
    ("allowstreamlocalforwarding", "yes"),
    ("streamlocalbindunlink", "no"),
    ("fingerprinthash", "SHA256"),
    ("exposeauthinfo", "no"),
    ("pidfile", "/var/run/sshd.pid"),
    ("modulifile", "/etc/ssh/moduli"),
    ("xauthlocation", "/usr/bin/xauth"),
    (
        "ciphers",
        "aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes256-ctr,aes128-gcm@openssh.com,aes128-ctr",
    ),
    (
        "macs",
        "hmac-sha2-256-etm@openssh.com,hmac-sha1-etm@openssh.com,umac-128-etm@openssh.com,hmac-sha2-512-etm@openssh.com,hmac-sha2-256,hmac-sha1,umac-128@openssh.com,hmac-sha2-512",
    ),
    ("banner", "none"),
    ("forcecommand", "none"),
    ("chrootdirectory", "none"),
    ("trustedusercakeys", "none"),
    ("revokedkeys", "none"),
    ("securitykeyprovider", "internal"),
    ("authorizedprincipalsfile", "none"),
    ("versionaddendum", "none"),
    ("authorizedkeyscommand", "none"),
    ("authorizedkeyscommanduser", "none"),
    ("authorizedprincipalscommand", "none"),
    ("authorizedprincipalscommanduser", "none"),
    ("hostkeyagent", "none"),
    (
        "kexalgorithms",
        "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521,diffie-hellman-group-exchange-sha256,diffie-hellman-group14-sha256,diffie-hellman-group16-sha512,diffie-hellman-group18-sha512",
    ),
    (
        "casignaturealgorithms",
        "ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521,sk-ecdsa-sha2-nistp256@openssh.com,ssh-ed25519,sk-ssh-ed25519@openssh.com,rsa-sha2-512,rsa-sha2-256",
    ),
    ("loglevel", "INFO"),
    ("syslogfacility", "AUTH"),
    ("authorizedkeysfile", ".ssh/authorized_keys .ssh/authorized_keys2"),
    ("hostkey", ""),
    ("maxstartups", "10:30:100"),
    ("persourcemaxstartups", "none"),
    ("persourcenetblocksize", "32:128"),
    ("permittunnel", "no"),
    ("ipqos", "lowdelay throughput"),
    ("rekeylimit", "0 0"),
    ("permitopen", "any"),
    ("permitlisten", "any"),
    ("permituserenvironment", "no"),
    ("pubkeyauthoptions", "none"),
    ("subsystem", ""),
    ("acceptenv", ""),
]
SSHD_MULTI = {
    "hostkey",
    "subsystem",
    "acceptenv",
    "listenaddress",
    "port",
    "allowusers",
    "denyusers",
    "allowgroups",
    "denygroups",
    "setenv",
    "permitopen",
    "permitlisten",
    "authorizedkeysfile",
}
SSHD_OTHER_KEYWORDS = {
    "allowusers",
    "denyusers",
    "allowgroups",
    "denygroups",
    "match",
    "include",
    "setenv",
    "hostcertificate",
    "challengeresponseauthentication",
    "protocol",
    "useprivilegeseparation",
    "rsaauthentication",
    "rhostsrsaauthentication",
    "keyregenerationinterval",
    "serverkeybits",
    "hostkeyalgorithms",
    "pubkeyacceptedkeytypes",
    "pubkeyacceptedalgorithms",
    "hostbasedacceptedalgorithms",
    "authenticationmethods",
    "kerberosgetafstoken",
    "gssapienablek5users",
    "channeltimeout",
    "unusedconnectiontimeout",
    "logverbose",
    "ignoreuserknownhosts",
    "sshdsessionpath",
}
SSHD_ALIASES = {
    "challengeresponseauthentication": "kbdinteractiveauthentication",
    "pubkeyacceptedkeytypes": "pubkeyacceptedalgorithms",
}
SSHD_YESNO = {
    "usepam",
    "ignorerhosts",
    "hostbasedauthentication",
    "pubkeyauthentication",
    "passwordauthentication",
    "kbdinteractiveauthentication",
    "printmotd",
    "printlastlog",
    "x11forwarding",
    "x11uselocalhost",
    "permittty",
    "permituserrc",
    "strictmodes",
    "tcpkeepalive",
    "permitemptypasswords",
    "usedns",
    "disableforwarding",
    "gssapiauthentication",
    "gssapicleanupcredentials",
    "kerberosauthentication",
    "permituserenvironment",
    "exposeauthinfo",
    "ignoreuserknownhosts",
    "streamlocalbindunlink",
    "hostbasedusesnamefrompacketonly",
    "gssapistrictacceptorcheck",
    "gssapikeyexchange",
}
SSHD_TIMES = {"logingracetime", "clientaliveinterval"}
SSHD_INTS = {"maxauthtries", "maxsessions", "clientalivecountmax", "x11displayoffset", "requiredrsasize"}
LOGLEVELS = ("QUIET", "FATAL", "ERROR", "INFO", "VERBOSE", "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3")
PERMIT_ROOT = {
    "yes": "yes",
    "no": "no",
    "prohibit-password": "without-password",
    "without-password": "without-password",
    "forced-commands-only": "forced-commands-only",
}


class SshdConfigError(Exception):
    pass


def sshd_seconds(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    total, pos = 0, 0
    for m in re.finditer(r"(\d+)([sSmMhHdDwW]?)", text):
        if m.start() != pos:
            return None
        total += (
            int(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2).lower()]
        )
        pos = m.end()
    return total if pos == len(text) and text else None


def sshd_value(key: str, raw: str, where: str) -> str:
    value = raw.strip()
    if value.startswith('"') and value.endswith('"') and len(value) > 1:
        value = value[1:-1]
    if key in SSHD_YESNO:
        if value.lower() not in ("yes", "no"):
            raise SshdConfigError(f'{where}: unsupported option "{value}".')
        return value.lower()
    if key == "permitrootlogin":
        if value.lower() not in PERMIT_ROOT:
            raise SshdConfigError(f'{where}: unsupported option "{value}".')
        return PERMIT_ROOT[value.lower()]
    if key == "loglevel":
        if value.upper() not in LOGLEVELS:
            raise SshdConfigError(f"{where}: unsupported log level '{value}'")
        return value.upper()
    if key in SSHD_TIMES:
        seconds = sshd_seconds(value)
        if seconds is None:
            raise SshdConfigError(f"{where}: invalid time value.")
        return str(seconds)
    if key in SSHD_INTS:
        if not re.fullmatch(r"-?\d+", value):
            raise SshdConfigError(f"{where}: invalid integer value.")
        return str(int(value))
    if key == "maxstartups":
        parts = value.split(":")
        if not all(p.isdigit() for p in parts) or len(parts) not in (1, 3):
            raise SshdConfigError(f"{where}: Illegal MaxStartups spec.")
        return f"{parts[0]}:100:{parts[0]}" if len(parts) == 1 else value
    return value


def sshd_read(path: str, settings: dict[str, list[str]], depth: int = 0) -> None:
    if depth > 16:
        raise SshdConfigError(f"{path}: Include recursion too deep")
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise SshdConfigError(f"{path}: {e.strerror}") from e
    in_match = False
    bad = 0
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        m = re.match(r"(\S+?)(?:\s*=\s*|\s+)(.*)$", text)
        keyword, arg = (m.group(1), m.group(2)) if m else (text, "")
        key = keyword.lower()
        where = f"{path} line {number}"
        if key not in dict(SSHD_DEFAULTS) and key not in SSHD_OTHER_KEYWORDS:
            err(f"{path}: line {number}: Bad configuration option: {keyword}")
            bad += 1
            continue
        if key == "match":
            in_match = True
            continue
        if key == "include":
            for pattern in arg.split():
                full = pattern if pattern.startswith("/") else os.path.join("/etc/ssh", pattern)
                for included in sorted(glob.glob(full)):
                    sshd_read(included, settings, depth + 1)
            continue
        if in_match or not arg.strip():
            if not arg.strip():
                raise SshdConfigError(f"{where}: missing argument.")
            continue
        key = SSHD_ALIASES.get(key, key)
        value = sshd_value(key, arg, where)
        if key in SSHD_MULTI:
            settings.setdefault(key, []).append(value)
        elif key not in settings:  # sshd keeps the first value it reads
            settings[key] = [value]
    if bad:
        raise SshdConfigError(f"{path}: terminating, {bad} bad configuration options")


def sshd(argv: list[str]) -> int:
    config = "/etc/ssh/sshd_config"
    mode = None
    args = iter(argv)
    for a in args:
        if a in ("-T", "-t"):
            mode = a
        elif a == "-f":
            config = next(args, config)
        elif a == "-C":
            next(args, None)  # connection parameters select Match blocks; the global config is printed
        elif a.startswith("-C") or a in ("-G", "-D", "-d", "-e", "-q"):
            continue
        else:
            err(f"sshd: illegal option -- {a.lstrip('-')}")
            return 1
    if mode is None:
        err("sshd re-exec requires execution with an absolute path")
        return 1
    settings: dict[str, list[str]] = {}
    try:
        sshd_read(config, settings)
    except SshdConfigError as e:
        err(str(e))
        return 255
    if mode == "-t":
        return 0
    out = []
    for key, default in SSHD_DEFAULTS:
        values = settings.get(key)
        if values is None:
            if default:
                out.append(f"{key} {default}")
            continue
        if key in SSHD_MULTI and key not in ("authorizedkeysfile",):
            out.extend(f"{key} {v}" for v in values)
        else:
            out.append(f"{key} {values[0]}")
    for key in sorted(settings):
        if key not in dict(SSHD_DEFAULTS):
            out.extend(f"{key} {v}" for v in settings[key])
    print("\n".join(out))
    return 0


# ---------------------------------------------------------------------------------- systemctl
SYSTEMCTL_VALUE_OPTIONS = {
    "-t",
    "--type",
    "--state",
    "-p",
    "--property",
    "-H",
    "--host",
    "-M",
    "--machine",
    "--root",
    "-n",
    "--lines",
    "-o",
    "--output",
    "--job-mode",
    "-s",
    "--signal",
}


def unit_name(name: str) -> str:
    return name if "." in name else f"{name}.service"


def systemctl(argv: list[str]) -> int:
    opts, args = [], []
    rest = iter(argv)
    for a in rest:
        if a in SYSTEMCTL_VALUE_OPTIONS:
            opts.append(f"{a}={next(rest, '')}")
        elif a.startswith("-"):
            opts.append(a)
        else:
            args.append(a)
    if "--version" in opts:
        print("systemd 252 (252-32.el9_4)")
        return 0
    state = load_state()
    services: dict[str, dict] = state["services"]
    verb = args[0] if args else "list-units"
    units = [unit_name(u) for u in args[1:]]

    def known(unit: str) -> dict | None:
        return services.get(unit.removesuffix(".service"))

    if verb in ("is-enabled", "is-active", "is-failed"):
        rc = 1 if verb != "is-active" else 3
        for unit in units:
            svc = known(unit)
            if verb == "is-enabled":
                if svc is None:
                    err(f"Failed to get unit file state for {unit}: No such file or directory")
                    continue
                print(svc["enabled"])
                if svc["enabled"] in ("enabled", "static"):
                    rc = 0  # at least one unit enabled
            elif verb == "is-active":
                active = bool(svc and svc["active"])
                print("active" if active else "inactive")
                if active:
                    rc = 0
            else:
                print("active" if svc and svc["active"] else "inactive")
        return rc
    if verb == "show":
        for i, unit in enumerate(units):
            svc = known(unit)
            fields = {
                "Id": unit,
                "Names": unit,
                "LoadState": "not-found"
                if svc is None
                else ("masked" if svc["enabled"] == "masked" else "loaded"),
                "ActiveState": "active" if svc and svc["active"] else "inactive",
                "SubState": "running" if svc and svc["active"] else "dead",
                "UnitFileState": "" if svc is None else svc["enabled"],
                "Description": unit if svc is None else (svc.get("description") or unit),
                "FragmentPath": "" if svc is None else f"/usr/lib/systemd/system/{unit}",
            }
            props = [o.split("=", 1)[1] for o in opts if o.startswith(("--property=", "-p="))]
            wanted = [p for ps in props for p in ps.split(",")]
            if i:
                print()
            for k, v in fields.items():
                if not wanted or k in wanted:
                    print(f"{k}={v}")
        return 0
    if verb == "status":
        rc = 0
        for unit in units:
            svc = known(unit)
            if svc is None:
                err(f"Unit {unit} could not be found.")
                return 4
            active = svc["active"]
            print(f"{'●' if active else '○'} {unit} - {svc.get('description') or unit}")
            print(f"     Loaded: loaded (/usr/lib/systemd/system/{unit}; {svc['enabled']}; preset: enabled)")
            print(f"     Active: {'active (running)' if active else 'inactive (dead)'}")
            rc = rc or (0 if active else 3)
        return rc
    if verb in ("list-units", "list-unit-files"):
        pattern = args[1] if len(args) > 1 else "*"
        rows = []
        for name, svc in sorted(services.items()):
            unit = f"{name}.service"
            if not fnmatch.fnmatch(unit, pattern) and not fnmatch.fnmatch(name, pattern):
                continue
            if verb == "list-units":
                if not svc["active"] and "--all" not in opts and "-a" not in opts:
                    continue
                load = "masked" if svc["enabled"] == "masked" else "loaded"
                state_text = "active running" if svc["active"] else "inactive dead"
                rows.append(f"{unit} {load} {state_text} {svc.get('description') or unit}")
            else:
                rows.append(f"{unit} {svc['enabled']} {'enabled' if svc['enabled'] != 'static' else '-'}")
        header = (
            "UNIT LOAD ACTIVE SUB DESCRIPTION" if verb == "list-units" else "UNIT FILE STATE VENDOR PRESET"
        )
        legend = "--no-legend" not in opts and "--legend=false" not in opts
        if legend:
            print(header)
        print("\n".join(rows))
        if legend:
            print(f"\n{len(rows)} {'loaded units' if verb == 'list-units' else 'unit files'} listed.")
        return 0 if rows or verb == "list-units" else 1
    if verb in ("daemon-reload", "daemon-reexec"):
        return 0
    changes: dict[str, dict[str, Any]] = {
        "start": {"active": True},
        "stop": {"active": False},
        "restart": {"active": True},
        "reload": {},
        "try-restart": {},
        "reload-or-restart": {"active": True},
        "condrestart": {},
        "enable": {"enabled": "enabled"},
        "disable": {"enabled": "disabled"},
        "mask": {"enabled": "masked"},
        "unmask": {"enabled": "disabled"},
    }
    if verb not in changes:
        err(f"Unknown command verb {verb}.")
        return 1
    if not units:
        err("Too few arguments.")
        return 1
    for unit in units:
        svc = known(unit)
        if svc is None:
            if verb in ("enable", "disable", "mask", "unmask"):
                err(f"Failed to {verb} unit: Unit file {unit} does not exist.")
            else:
                err(f"Failed to {verb} {unit}: Unit {unit} not found.")
            return 5 if verb not in ("enable", "disable", "mask", "unmask") else 1
        if verb in ("start", "restart", "reload-or-restart", "reload") and svc["enabled"] == "masked":
            err(f"Failed to {verb} {unit}: Unit {unit} is masked.")
            return 1
        if verb == "reload" and not svc["active"]:
            err(f"Job for {unit} failed.")
            return 1
        if verb == "unmask" and svc["enabled"] != "masked":
            continue
        if verb in ("enable", "disable") and svc["enabled"] == "static":
            err(f"The unit files have no installation config (WantedBy=, RequiredBy=, ...) for {unit}.")
            continue
        svc.update(changes[verb])
        if "--now" in opts and verb in ("enable", "disable", "mask"):
            svc["active"] = verb == "enable"
    save_state(state)
    return 0


# ---------------------------------------------------------------------------------------- rpm
def rpm(argv: list[str]) -> int:
    state = load_state()
    packages: dict[str, str] = state["packages"]
    query = any(a in ("-q", "--query") or re.fullmatch(r"-q[a-z]*", a) for a in argv)
    if not query:
        if any(a in ("--version",) for a in argv):
            print("RPM version 4.16.1.3")
            return 0
        err("rpm: this host twin answers queries only (-q, -qa, --qf)")
        return 1
    fmt = None
    names = []
    args = iter(argv)
    everything = False
    for a in args:
        if a in ("--qf", "--queryformat"):
            fmt = next(args, "")
        elif a.startswith("--queryformat=") or a.startswith("--qf="):
            fmt = a.split("=", 1)[1]
        elif (re.fullmatch(r"-q[a-z]*", a) and "a" in a[2:]) or a in ("-a", "--all"):
            everything = True
        elif a.startswith("-"):
            continue
        else:
            names.append(a)

    def show(name: str, evr: str) -> str:
        version, _, rest = evr.partition("-")
        release, _, arch = rest.rpartition(".")
        if fmt is None:
            return f"{name}-{evr}\n"
        fields = {"NAME": name, "VERSION": version, "RELEASE": release, "ARCH": arch, "EPOCH": "(none)"}
        text = re.sub(r"%\{(\w+)\}", lambda m: fields.get(m.group(1).upper(), "(none)"), fmt)
        return text.encode().decode("unicode_escape")

    if everything:
        sys.stdout.write("".join(show(n, v) for n, v in sorted(packages.items())))
        return 0
    if not names:
        err("rpm: no arguments given for query")
        return 1
    missing = 0
    for name in names:
        if name in packages:
            sys.stdout.write(show(name, packages[name]))
        else:
            print(f"package {name} is not installed")
            missing += 1
    return missing


# ------------------------------------------------------------------------------------- sysctl
def sysctl_path(key: str) -> str:
    return "/proc/sys/" + key.replace(".", "/") if "/" not in key else "/proc/sys/" + key.lstrip("/")


def sysctl_key(path: str) -> str:
    return path.removeprefix("/proc/sys/").replace("/", ".")


def sysctl_read(key: str) -> str | None:
    try:
        with open(sysctl_path(key)) as f:
            return f.read().strip()
    except OSError:
        return None


def sysctl_write(key: str, value: str) -> bool:
    path = sysctl_path(key)
    if not os.path.isfile(path):
        return False
    with open(path, "w") as f:
        f.write(value.strip() + "\n")
    return True


def sysctl_load(path: str, quiet: bool, ignore: bool) -> int:
    rc = 0
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        err(f'sysctl: cannot open "{path}": {e.strerror}')
        return 255
    for line in lines:
        text = line.strip()
        if not text or text[0] in "#;":
            continue
        key, sep, value = text.partition("=")
        key = key.strip().lstrip("-")
        if not sep:
            continue
        if sysctl_write(key, value.strip()):
            if not quiet:
                print(f"{key} = {value.strip()}")
        elif not ignore:
            err(f"sysctl: cannot stat {sysctl_path(key)}: No such file or directory")
            rc = 255
    return rc


def sysctl(argv: list[str]) -> int:
    flags = {a for a in argv if a.startswith("-") and not a.startswith("--")}
    letters = {c for f in flags for c in f[1:]}
    values_only = "n" in letters or "--values" in argv
    quiet = "q" in letters or "--quiet" in argv
    ignore = "e" in letters or "--ignore" in argv
    names = [a for a in argv if not a.startswith("-")]
    if "--system" in argv:
        rc = 0
        confs: dict[str, str] = {}
        for d in ("/usr/lib/sysctl.d", "/run/sysctl.d", "/etc/sysctl.d"):
            for path in sorted(glob.glob(f"{d}/*.conf")):
                confs[os.path.basename(path)] = path
        for name in sorted(confs):
            if not quiet:
                print(f"* Applying {confs[name]} ...")
            rc |= sysctl_load(confs[name], quiet, ignore)
        if os.path.exists("/etc/sysctl.conf"):
            if not quiet:
                print("* Applying /etc/sysctl.conf ...")
            rc |= sysctl_load("/etc/sysctl.conf", quiet, ignore)
        return rc
    if "p" in letters or any(a.startswith("--load") for a in argv):
        files = names or ["/etc/sysctl.conf"]
        return max((sysctl_load(p, quiet, ignore) for p in files), default=0)
    if "a" in letters or "A" in letters or "--all" in argv:
        for root, _dirs, files in sorted(os.walk("/proc/sys")):
            for name in sorted(files):
                key = sysctl_key(os.path.join(root, name))
                value = sysctl_read(key)
                print(value if values_only else f"{key} = {value}")
        return 0
    if not names:
        err("sysctl: no variables specified\nTry `sysctl --help' for more information.")
        return 255
    rc = 0
    for name in names:
        if "=" in name:
            key, value = name.split("=", 1)
            if "w" not in letters and "--write" not in argv:
                err(f"sysctl: cannot stat {sysctl_path(name)}: No such file or directory")
                rc = 255
                continue
            if sysctl_write(key, value):
                if not quiet:
                    print(value.strip() if values_only else f"{key} = {value.strip()}")
            elif not ignore:
                err(f"sysctl: cannot stat {sysctl_path(key)}: No such file or directory")
                rc = 255
            continue
        value = sysctl_read(name)
        if value is None:
            if not ignore:
                err(f"sysctl: cannot stat {sysctl_path(name)}: No such file or directory")
                rc = 255
            continue
        print(value if values_only else f"{name} = {value}")
    return rc


# ------------------------------------------------------------------------------- kernel modules
MODULE_PATHS = {
    "cramfs": "kernel/fs/cramfs/cramfs.ko.xz",
    "freevxfs": "kernel/fs/freevxfs/freevxfs.ko.xz",
    "jffs2": "kernel/fs/jffs2/jffs2.ko.xz",
    "hfs": "kernel/fs/hfs/hfs.ko.xz",
    "hfsplus": "kernel/fs/hfsplus/hfsplus.ko.xz",
    "squashfs": "kernel/fs/squashfs/squashfs.ko.xz",
    "udf": "kernel/fs/udf/udf.ko.xz",
    "usb_storage": "kernel/drivers/usb/storage/usb-storage.ko.xz",
    "dccp": "kernel/net/dccp/dccp.ko.xz",
    "sctp": "kernel/net/sctp/sctp.ko.xz",
    "rds": "kernel/net/rds/rds.ko.xz",
    "tipc": "kernel/net/tipc/tipc.ko.xz",
    "xfs": "kernel/fs/xfs/xfs.ko.xz",
    "nf_tables": "kernel/net/netfilter/nf_tables.ko.xz",
    "virtio_net": "kernel/drivers/net/virtio_net.ko.xz",
    "nf_conntrack": "kernel/net/netfilter/nf_conntrack.ko.xz",
    "bluetooth": "kernel/net/bluetooth/bluetooth.ko.xz",
    "firewire_core": "kernel/drivers/firewire/firewire-core.ko.xz",
}


def modprobe_config() -> list[tuple[str, str, str]]:
    lines = []
    for d in ("/usr/lib/modprobe.d", "/run/modprobe.d", "/etc/modprobe.d"):
        for path in sorted(glob.glob(f"{d}/*.conf")):
            try:
                with open(path) as f:
                    text = f.read()
            except OSError:
                continue
            for line in text.splitlines():
                parts = line.strip().split(None, 2)
                if len(parts) >= 2 and not parts[0].startswith("#"):
                    lines.append((parts[0], parts[1].replace("-", "_"), parts[2] if len(parts) > 2 else ""))
    return lines


def modprobe(argv: list[str]) -> int:
    flags = {c for a in argv if a.startswith("-") and not a.startswith("--") for c in a[1:]}
    dry = "n" in flags or "--dry-run" in argv
    verbose = "v" in flags or "--verbose" in argv
    remove = "r" in flags or "--remove" in argv
    config = modprobe_config()
    if "c" in flags or "--showconfig" in argv:
        for kind, name, rest in config:
            print(f"{kind} {name} {rest}".rstrip())
        return 0
    names = [a.replace("-", "_") for a in argv if not a.startswith("-")]
    if not names:
        err("modprobe: ERROR: missing parameters. See -h.")
        return 1
    name = names[0]
    state = load_state()
    loaded: list[str] = state["modules"]
    if remove:
        if name in loaded:
            if not dry:
                loaded.remove(name)
                save_state(state)
            if verbose:
                print(f"rmmod {name}")
            return 0
        err(f"modprobe: FATAL: Module {name} is not in kernel.")
        return 1
    install = [rest for kind, mod, rest in config if kind == "install" and mod == name]
    if install:
        if verbose:
            print(f"install {install[-1]}")
        if dry:
            return 0
        if install[-1].split()[0] in ("/bin/false", "/usr/bin/false"):
            return 1
        if install[-1].split()[0] in ("/bin/true", "/usr/bin/true"):
            return 0
    if name not in MODULE_PATHS:
        err(f"modprobe: FATAL: Module {name} not found in directory /lib/modules/{KERNEL_RELEASE}")
        return 1
    if name in loaded:
        return 0
    if verbose:
        print(f"insmod /lib/modules/{KERNEL_RELEASE}/{MODULE_PATHS[name]} ")
    if not dry:
        loaded.append(name)
        save_state(state)
    return 0


def lsmod(argv: list[str]) -> int:
    print("Module                  Size  Used by")
    for name in load_state()["modules"]:
        print(f"{name:<24}{65536:>8}  0")
    return 0


# ------------------------------------------------------------------------------------ findmnt
def findmnt(argv: list[str]) -> int:
    mounts: dict[str, dict] = load_state()["mounts"]
    columns = ["TARGET", "SOURCE", "FSTYPE", "OPTIONS"]
    headings = True
    targets = []
    args = iter(argv)
    for a in args:
        if a in ("-o", "--output"):
            columns = [c.upper() for c in next(args, "").split(",")]
        elif a.startswith("--output="):
            columns = [c.upper() for c in a.split("=", 1)[1].split(",")]
        elif a in ("-n", "--noheadings"):
            headings = False
        elif a.startswith("-") and not a.startswith("--") and "n" in a:
            headings = False
            if "o" in a:
                columns = [c.upper() for c in next(args, "").split(",")]
        elif a in ("-T", "--target", "-M", "--mountpoint"):
            targets.append(next(args, ""))
        elif a.startswith("-"):
            continue
        else:
            targets.append(a)
    rows = [
        (t, m)
        for t, m in sorted(mounts.items())
        if not targets or t in [x.rstrip("/") or "/" for x in targets]
    ]
    if not rows:
        return 1
    table = [
        [
            {"TARGET": t, "SOURCE": m["source"], "FSTYPE": m["fstype"], "OPTIONS": m["options"]}.get(c, "")
            for c in columns
        ]
        for t, m in rows
    ]
    if headings:
        table.insert(0, columns)
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    for r in table:
        print(" ".join(v.ljust(widths[i]) if i < len(r) - 1 else v for i, v in enumerate(r)))
    return 0


# ------------------------------------------------------------------------------------ SELinux, crypto
def getenforce(argv: list[str]) -> int:
    print(load_state().get("selinux") or "Disabled")
    return 0


def setenforce(argv: list[str]) -> int:
    """``setenforce 1|0|Enforcing|Permissive``: the runtime mode (``/etc/selinux/config`` unchanged)."""
    modes = {"1": "Enforcing", "enforcing": "Enforcing", "0": "Permissive", "permissive": "Permissive"}
    if len(argv) != 1 or argv[0].lower() not in modes:
        err("usage:  setenforce [ Enforcing | Permissive | 1 | 0 ]")
        return 1
    state = load_state()
    if (state.get("selinux") or "Disabled") == "Disabled":
        err("setenforce: SELinux is disabled")
        return 1
    state["selinux"] = modes[argv[0].lower()]
    save_state(state)
    return 0


def sestatus(argv: list[str]) -> int:
    mode = load_state().get("selinux") or "Disabled"
    if mode == "Disabled":
        print("SELinux status:                 disabled")
        return 0
    print("SELinux status:                 enabled\nSELinuxfs mount:                /sys/fs/selinux")
    print(f"Current mode:                   {mode.lower()}\nLoaded policy name:             targeted")
    return 0


def update_crypto_policies(argv: list[str]) -> int:
    if "--show" in argv:
        with open("/etc/crypto-policies/config") as f:
            print(f.read().strip())
        return 0
    if "--set" in argv:
        i = argv.index("--set")
        with open("/etc/crypto-policies/config", "w") as f:
            f.write(argv[i + 1] + "\n")
        print(f"Setting system policy to {argv[i + 1]}")
        return 0
    err("update-crypto-policies: this host twin answers --show and --set")
    return 1


def sudo(argv: list[str]) -> int:
    """Everything runs as root in the host twin: sudo runs the command (Ansible's ``become``)."""
    args = list(argv)
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag == "--":
            break
        if flag in ("-u", "-g", "-p", "-C", "-D", "-h", "-r", "-t", "-U") and args:
            args.pop(0)
    if not args:
        err("usage: sudo -h | -K | -k | -V")
        return 1
    os.execvp(args[0], args)
    return 127


COMMANDS = {
    "sshd": sshd,
    "systemctl": systemctl,
    "rpm": rpm,
    "sysctl": sysctl,
    "modprobe": modprobe,
    "lsmod": lsmod,
    "findmnt": findmnt,
    "getenforce": getenforce,
    "sestatus": sestatus,
    "setenforce": setenforce,
    "update-crypto-policies": update_crypto_policies,
    "sudo": sudo,
}


def main() -> int:
    name = os.path.basename(sys.argv[0])
    command = COMMANDS.get(name)
    if command is None:
        err(f"{name}: not a command of the host twin")
        return 127
    try:
        return command(sys.argv[1:])
    except BrokenPipeError:
        return 141


if __name__ == "__main__":
    sys.exit(main())
