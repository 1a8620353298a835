"""Kyverno policies the CISO tests hand to agents (scripted answers, command agents)."""

from __future__ import annotations

HOST_NETWORK_POLICY = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: no-host-network}
spec:
  validationFailureAction: Audit
  background: true
  rules:
  - name: host-network
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {message: "hostNetwork is not allowed", pattern: {spec: {"=(hostNetwork)": false}}}
"""
"""CIS 5.2.5 (no host network) for ``ciso/kyverno-host-network-v1``: detects, and passes the compliant variant."""
