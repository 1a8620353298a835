"""OPA in the twin (``twin.install_addon("opa")``, ``itbench twin serve --addon opa``): an OPA server
whose REST API the twin serves beside its others (``Endpoints.opa_url``), evaluating with the
Rego engine of ``engine.py`` (regorus).

A policy-only OPA, as ITBench's Rego track uses it (``opa eval`` on collected evidence, or the REST
API): nothing in the cluster calls it (no admission control through OPA, no kube-mgmt replication of
cluster objects into ``data``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .server import make_opa_handler
from .store import OpaStore

if TYPE_CHECKING:
    from ...core import TwinCore as Twin


class OpaAddon:
    name = "opa"
    endpoint_field = "opa_url"

    def __init__(self, store: OpaStore | None = None) -> None:
        self._store = store

    @property
    def store(self) -> OpaStore:
        if self._store is None:
            self._store = OpaStore()
        return self._store

    def install(self, twin: Twin) -> None:
        """Nothing to create in the cluster: the API is served by ``Twin.serve``."""

    def make_handler(self, twin: Twin) -> Any:
        return make_opa_handler(self.store)
