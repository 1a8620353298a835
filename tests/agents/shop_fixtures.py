"""A tiny broken shop (frontend → checkout → cart, cart scaled to zero) for the agent tests."""

from __future__ import annotations

from support.fakes import deployment, service


def broken_shop(ns: str = "shop") -> list[dict]:
    """frontend → checkout → cart, with cart scaled to zero (the fault)."""
    objs: list[dict] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
    for name in ("frontend", "checkout", "cart"):
        objs += [
            deployment(ns, name, f"registry.local/{name}:1.0", replicas=0 if name == "cart" else 1),
            service(ns, name),
        ]
    return objs
