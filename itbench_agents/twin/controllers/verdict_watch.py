"""Which containers the kubelet must ask the runtime about again after the cluster changed.

A :class:`~itbench_agents.twin.runtime.TracedRuntime` reports what each verdict read
(:class:`~itbench_agents.twin.runtime.VerdictReads`). :class:`VerdictWatch` indexes those reads so
that a change finds the containers that read it without walking every container of the cluster:

- objects read by name → the containers that read them;
- containers whose verdict read the runtime's derived state (re-checked when it changes);
- containers that must be asked on every change (``always``), and those not traced yet.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..runtime import VerdictReads

Token = tuple[Any, str, str]
"""(GroupResource, namespace, name) of an API object."""
Slot = tuple[str, int]
"""(pod uid, index of the container in the pod's init + main containers)."""


class VerdictWatch:
    def __init__(self) -> None:
        self._readers: dict[Token, set[Slot]] = defaultdict(set)
        self._reads: dict[Slot, VerdictReads] = {}
        self.always: set[Slot] = set()
        """Containers asked on every refresh (their verdict reads more than names pin down)."""
        self.derived: set[Slot] = set()
        """Containers whose verdict read the runtime's derived state."""
        self.untraced: set[Slot] = set()
        """Containers whose current verdict was not traced (new, restarted, just created)."""

    def record(self, slot: Slot, reads: VerdictReads | None) -> None:
        """``slot``'s verdict is now the one computed from ``reads`` (None: untraced)."""
        self.forget(slot)
        if reads is None:
            self.untraced.add(slot)
            return
        self._reads[slot] = reads
        for tok in reads.objects:
            self._readers[tok].add(slot)
        if reads.always:
            self.always.add(slot)
        if reads.derived is not None:
            self.derived.add(slot)

    def forget(self, slot: Slot) -> None:
        """Drop everything known about ``slot`` (its pod is gone, or it is asked again)."""
        self.untraced.discard(slot)
        self.always.discard(slot)
        self.derived.discard(slot)
        old = self._reads.pop(slot, None)
        if old is None:
            return
        for tok in old.objects:
            readers = self._readers.get(tok)
            if readers is not None:
                readers.discard(slot)
                if not readers:
                    del self._readers[tok]

    def readers(self, token: Token) -> set[Slot]:
        """Containers whose last traced verdict read ``token``."""
        return self._readers.get(token, set())

    def due(self, touched: set[Token], derived_changed: bool) -> set[Slot]:
        """Containers to look at after the objects in ``touched`` changed (and, when
        ``derived_changed``, the runtime's derived state)."""
        out = set(self.untraced) | self.always
        for tok in touched:
            out |= self._readers.get(tok, set())
        if derived_changed:
            out |= self.derived
        return out
