"""ciso-catalogue's RHEL answers (``rhel-opa``): the control's sentence → the entry of ``rhel.yaml``
with the most keyword phrases in it → a ``playbook.yml`` that collects that kind of evidence into
``collected_data.json`` and a ``policy.rego`` that decides on it. Never reads a scenario."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import yaml

from .wording import holds, words

Entry = dict[str, Any]
SAVE = """    - name: save collected_data.json on the controller
      ansible.builtin.copy:
        content: "{{{{ {content} | to_json }}}}"
        dest: "{{{{ playbook_dir }}}}/collected_data.json"
      delegate_to: localhost
      become: false
"""
HEAD = """- name: collect evidence for CIS RHEL 9 {cis}
  hosts: rhel9_servers
  become: true
  gather_facts: false
  tasks:
"""
REGO_HEAD = "package check\nimport rego.v1\n\ndefault result := false\n\n"


@cache
def rhel_catalogue() -> tuple[Entry, ...]:
    return tuple(yaml.safe_load(resources.files(__package__).joinpath("rhel.yaml").read_text()))


def best_rhel_entry(control: str) -> Entry | None:
    said = words(control)
    scored = []
    for i, e in enumerate(rhel_catalogue()):
        found = [k for k in e["keywords"] if holds(said, k)]
        if found:
            scored.append((len(found), sum(len(words(k)) for k in found), -i, e))
    return max(scored, key=lambda s: s[:3])[3] if scored else None


def _shell(command: str) -> tuple[str, str]:
    task = f"""    - name: run {command}
      ansible.builtin.shell: {json.dumps(command)}
      register: out
      changed_when: false
      failed_when: false
"""
    return task, "{'rc': out.rc, 'stdout': out.stdout_lines}"


def _number_checks(expr: str, spec: dict[str, Any]) -> list[str]:
    checks = []
    if "min" in spec:
        checks.append(f"to_number({expr}) >= {spec['min']}")
    if "max" in spec:
        checks.append(f"to_number({expr}) <= {spec['max']}")
    return checks


def _allowed(expr: str, values: list[str]) -> str:
    return f"{expr} in {{{', '.join(json.dumps(str(v)) for v in values)}}}"


def rhel_answer(entry: Entry) -> tuple[str, str]:
    """(playbook.yml, policy.rego) for an entry."""
    checks: list[str]
    prelude = ""
    if "sshd" in entry:
        spec = entry["sshd"]
        task = """    - name: read the effective sshd configuration
      ansible.builtin.command: sshd -T
      register: sshd
      changed_when: false
"""
        content = "{'sshd': dict(sshd.stdout_lines | map('split', ' ', 1))}"
        value = f'input.sshd["{spec["key"]}"]'
        checks = _number_checks(value, spec)
        if "allowed" in spec:
            checks.append(_allowed(value, spec["allowed"]))
        if "not" in spec:
            checks.append(f'{value} != "{spec["not"]}"')
    elif "sysctl" in entry:
        keys = list(entry["sysctl"])
        task = f"""    - name: read the kernel parameters
      ansible.builtin.command: sysctl {" ".join(keys)}
      register: params
      changed_when: false
"""
        content = "{'sysctl': dict(params.stdout_lines | map('split', ' = ', 1))}"
        checks = [f'input.sysctl["{k}"] == "{v}"' for k, v in entry["sysctl"].items()]
    elif "stat" in entry:
        spec = entry["stat"]
        task = f"""    - name: stat {spec["path"]}
      ansible.builtin.stat:
        path: {spec["path"]}
      register: st
"""
        content = "{'exists': st.stat.exists, 'mode': st.stat.mode | default(''), 'owner': st.stat.pw_name | default(''), 'group': st.stat.gr_name | default('')}"
        checks = ["input.exists", 'input.owner == "root"', 'input.group == "root"']
        if "mode" in spec:
            checks.append(f'input.mode == "{spec["mode"]}"')
        else:  # no permission bit beyond the limit's, digit by digit
            limit = spec["at_most"][-3:]
            prelude = 'digits := split(input.mode, "")\n\n'
            for i, d in enumerate(limit):
                allowed = [str(x) for x in range(8) if x & ~int(d) == 0]
                checks.append(_allowed(f"digits[count(digits) - {3 - i}]", allowed))
    elif "setting" in entry:
        spec = entry["setting"]
        task, content = _shell(f"grep -E '^\\s*{spec['key']}' {spec['file']}")
        sep = spec["sep"]
        prelude = (
            "value := v if {\n  count(input.stdout) > 0\n"
            "  line := trim_space(input.stdout[count(input.stdout) - 1])\n"
            + (
                '  v := trim_space(split(line, "=")[1])\n'
                if sep == "="
                else '  v := split(regex.replace(line, `\\s+`, " "), " ")[1]\n'
            )
            + "}\n\n"
        )
        checks = _number_checks("value", spec)
        if "allowed" in spec:
            checks.append(_allowed("upper(value)", spec["allowed"]))
    else:
        command, checks = {
            "package": (f"rpm -q {entry.get('package')}", ["input.rc == 0"]),
            "enabled": (f"systemctl is-enabled {entry.get('enabled')}", ['input.stdout == ["enabled"]']),
            "selinux": ("getenforce", [f'input.stdout == ["{entry.get("selinux")}"]']),
            "module": (
                f"modprobe -n -v {entry.get('module')}",
                [
                    "count(input.stdout) > 0",
                    "regex.match(`^install /(usr/)?bin/(true|false)`, input.stdout[0])",
                ],
            ),
            "crypto": (
                "update-crypto-policies --show",
                ["count(input.stdout) == 1", 'not startswith(input.stdout[0], "LEGACY")'],
            ),
        }[next(k for k in ("package", "enabled", "selinux", "module", "crypto") if k in entry)]
        task, content = _shell(command)
    playbook = HEAD.format(cis=entry["cis"]) + task + SAVE.format(content=content)
    body = "\n".join(f"  {c}" for c in checks)
    return playbook, REGO_HEAD + prelude + f"result if {{\n{body}\n}}\n"


def remediation_tasks(entry: Entry) -> str:
    """Tasks that would make a host comply with the entry's control (a remediating playbook's part:
    the audit's ``rhel-remediate`` strategy fixes the host before collecting, instead of assessing)."""
    if "sshd" in entry:
        spec = entry["sshd"]
        value = spec["allowed"][0] if "allowed" in spec else spec.get("max", "/etc/issue.net")
        return f"""    - ansible.builtin.copy: {{content: "{spec["key"]} {value}\\n", dest: /etc/ssh/sshd_config.d/00-cis.conf}}
"""
    if "sysctl" in entry:
        pairs = " ".join(f"{k}={v}" for k, v in entry["sysctl"].items())
        return f"    - ansible.builtin.command: sysctl -w {pairs}\n"
    if "stat" in entry:
        spec = entry["stat"]
        mode = spec.get("mode") or spec["at_most"]
        return f'    - ansible.builtin.file: {{path: {spec["path"]}, mode: "{mode}", owner: root, group: root}}\n'
    if "setting" in entry:
        spec = entry["setting"]
        value = spec["allowed"][0].lower() if "allowed" in spec else spec.get("max", spec.get("min"))
        sep = " = " if spec["sep"] == "=" else " "
        return (
            f"    - ansible.builtin.lineinfile: {{path: {spec['file']}, regexp: '^\\s*{spec['key']}', "
            f"line: '{spec['key']}{sep}{value}'}}\n"
        )
    if "enabled" in entry:
        return f"    - ansible.builtin.systemd: {{name: {entry['enabled']}, enabled: true, state: started}}\n"
    if "module" in entry:
        name = entry["module"]
        return f'    - ansible.builtin.copy: {{content: "install {name} /bin/false\\n", dest: /etc/modprobe.d/{name}.conf}}\n'
    if "crypto" in entry:
        return "    - ansible.builtin.command: update-crypto-policies --set DEFAULT\n"
    if "package" in entry:
        return f"    - ansible.builtin.dnf: {{name: {entry['package']}, state: present}}\n"
    return "    - ansible.builtin.command: setenforce 1\n"  # selinux


def remediating_answer(entry: Entry) -> tuple[str, str]:
    """The entry's playbook with the remediation first, and its policy."""
    playbook, policy = rhel_answer(entry)
    head, tasks = playbook.split("  tasks:\n", 1)
    return f"{head}  tasks:\n{remediation_tasks(entry)}{tasks}", policy
