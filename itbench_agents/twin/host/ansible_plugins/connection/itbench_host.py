"""Ansible connection plugin ``itbench_host``: runs a play's tasks on an itbench-agents RHEL host twin.

A twin host's inventory line names this connection and the host's endpoint and token, e.g.::

    [rhel9_servers]
    rhel9-host ansible_connection=itbench_host itbench_host_url=http://127.0.0.1:40123 itbench_host_token=...

Everything else about a play is Ansible's own: modules are transferred and run by the host's
Python exactly as over ``ssh`` (this plugin only carries commands and files), so a playbook written
for the twin runs unchanged against a real RHEL 9 host with an ``ssh`` inventory. A host without
``itbench_host_url`` is refused: when ``ANSIBLE_TRANSPORT=itbench_host`` (the harness sets it), a
play cannot reach a host the scenario's inventory does not name.
"""

from __future__ import annotations

import base64
import json
import shlex
import urllib.error
import urllib.request

from ansible.errors import AnsibleConnectionFailure, AnsibleError, AnsibleFileNotFound
from ansible.plugins.connection import ConnectionBase

DOCUMENTATION = """
name: itbench_host
short_description: run tasks on an itbench-agents RHEL host twin
description:
  - Carries Ansible's commands and files to a RHEL 9 host twin's endpoint (POST /v1/exec).
author: itbench-agents
version_added: historical
options:
  url:
    description: The host twin's endpoint, e.g. http://127.0.0.1:40123.
    vars:
      - name: itbench_host_url
    env:
      - name: ITBENCH_HOST_URL
  token:
    description: The bearer token the scenario's inventory gives.
    vars:
      - name: itbench_host_token
    env:
      - name: ITBENCH_HOST_TOKEN
  command_timeout:
    description: The longest one command may run on the host, in seconds.
    default: 300
    type: int
    vars:
      - name: itbench_host_command_timeout
  pipelining:
    description: Send module code on the command's standard input.
    default: true
    type: boolean
    vars:
      - name: ansible_pipelining
      - name: ansible_itbench_host_pipelining
    env:
      - name: ANSIBLE_PIPELINING
"""


class Connection(ConnectionBase):
    transport = "itbench_host"
    has_pipelining = True

    def _connect(self):
        if not self._connected:  # type: ignore[has-type]
            if not self.get_option("url"):
                raise AnsibleConnectionFailure(
                    f"host {self._play_context.remote_addr!r} is not a host of this scenario's inventory "
                    "(no itbench_host_url): refused"
                )
            self._connected = True
        return self

    def _call(self, command, stdin=b""):
        url = self.get_option("url").rstrip("/") + "/v1/exec"
        timeout = int(self.get_option("command_timeout"))
        body = json.dumps(
            {"command": command, "stdin": base64.b64encode(stdin).decode(), "timeout_s": timeout}
        )
        request = urllib.request.Request(
            url,
            data=body.encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {self.get_option('token') or ''}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout + 30) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:500]
            raise AnsibleConnectionFailure(f"host twin at {url} answered {e.code}: {detail}") from e
        except (urllib.error.URLError, OSError) as e:
            raise AnsibleConnectionFailure(f"cannot reach the host twin at {url}: {e}") from e
        return answer["rc"], base64.b64decode(answer["stdout"]), base64.b64decode(answer["stderr"])

    def exec_command(self, cmd, in_data=None, sudoable=True):
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        self._connect()
        self._display.vvv(f"EXEC {cmd}", host=self._play_context.remote_addr)
        command = cmd if isinstance(cmd, str) else " ".join(shlex.quote(c) for c in cmd)
        return self._call(command, in_data or b"")

    def put_file(self, in_path, out_path):
        super().put_file(in_path, out_path)
        self._connect()
        self._display.vvv(f"PUT {in_path} TO {out_path}", host=self._play_context.remote_addr)
        try:
            with open(in_path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise AnsibleFileNotFound(f"file or module does not exist: {in_path}") from e
        rc, _out, err = self._call(f"cat > {shlex.quote(out_path)}", data)
        if rc != 0:
            raise AnsibleError(f"failed to transfer file to {out_path}: {err.decode('utf-8', 'replace')}")

    def fetch_file(self, in_path, out_path):
        super().fetch_file(in_path, out_path)
        self._connect()
        self._display.vvv(f"FETCH {in_path} TO {out_path}", host=self._play_context.remote_addr)
        rc, out, err = self._call(f"cat {shlex.quote(in_path)}")
        if rc != 0:
            raise AnsibleError(f"failed to transfer file from {in_path}: {err.decode('utf-8', 'replace')}")
        with open(out_path, "wb") as f:
            f.write(out)

    def reset(self):
        pass

    def close(self):
        self._connected = False
