"""The built-in addons by name, for ``Twin.install_addon("kyverno")`` and ``itbench twin serve
--addon NAME`` (apart from ``base.py``, which every addon imports)."""

from __future__ import annotations

from .base import Addon

ADDONS = ("kyverno", "opa", "opencost", "prometheus-operator")


def make_addon(name: str) -> Addon:
    """A built-in addon by name (``kyverno``, ``opa``, ``opencost``, ``prometheus-operator``); ``ValueError`` naming the known ones otherwise."""
    if name == "kyverno":
        from .kyverno.addon import KyvernoAddon

        return KyvernoAddon()
    if name == "opa":
        from .opa.addon import OpaAddon

        return OpaAddon()
    if name == "opencost":
        from .opencost.addon import OpenCostAddon

        return OpenCostAddon()
    if name == "prometheus-operator":
        from .promoperator.addon import PrometheusOperatorAddon

        return PrometheusOperatorAddon()
    raise ValueError(f"unknown addon {name!r}; known: {', '.join(ADDONS)}")
