"""Decoding YAML request bodies with the limits of the apiserver's YAML decoder.

kube-apiserver turns a YAML body into JSON with go-yaml, which refuses documents whose alias
expansion dominates the decoded nodes ("yaml: document contains excessive aliasing") and anchors
that contain themselves. PyYAML shares aliased nodes instead of expanding them, so a 300-byte
"billion laughs" document would load cheaply here and then expand to gigabytes when the object is
serialised. :func:`load_yaml` counts nodes as go-yaml's decoder would (every node once, every alias
as one node plus the expanded size of its target) and applies the same ratio rule while composing,
without ever expanding anything.
"""

from __future__ import annotations

from typing import Any

import yaml

# go-yaml v2's decoder (decode.go): alias_ratio_range_low / _high
_RATIO_LOW = 400_000
_RATIO_HIGH = 4_000_000


def allowed_alias_ratio(decode_count: int) -> float:
    """The share of decoded nodes that may come from alias expansion (99% for small documents,
    scaling down to 10% for very large ones)."""
    if decode_count <= _RATIO_LOW:
        return 0.99
    if decode_count >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decode_count - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)


class YamlLimitError(yaml.YAMLError):
    """A document the apiserver's YAML decoder refuses; ``str()`` is go-yaml's message."""


class _CountingLoader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._sizes: dict[int, int] = {}  # id(node) → decoded size of the node, aliases expanded
        self._stack: list[list[int]] = [[0]]
        self._decoded = 0
        self._aliased = 0

    def _check(self) -> None:
        d, a = self._decoded, self._aliased
        if a > 100 and d > 1000 and a / d > allowed_alias_ratio(d):
            raise YamlLimitError("yaml: document contains excessive aliasing")

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            anchor = self.peek_event().anchor
            node = super().compose_node(parent, index)
            size = self._sizes.get(id(node))
            if size is None:  # the anchor is still being composed: it refers to itself
                raise YamlLimitError(f"yaml: anchor '{anchor}' value contains itself")
            self._stack[-1][0] += 1 + size
            self._decoded += 1 + size
            self._aliased += size
            self._check()
            return node
        self._stack.append([0])
        node = super().compose_node(parent, index)
        children = self._stack.pop()[0]
        size = 1 + children
        self._sizes[id(node)] = size
        self._stack[-1][0] += size
        self._decoded += 1
        self._check()
        return node


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` with go-yaml's alias limits (raises :class:`YamlLimitError`)."""
    loader = _CountingLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def summarize(body: bytes, max_length: int = 30) -> str:
    """How the apiserver quotes a body it cannot decode: JSON-looking text as is, else hex."""
    if not body:
        return "<empty>"
    head = body[:max_length]
    more = " ..." if len(body) > max_length else ""
    if body[:1] == b"{":
        return head.decode("utf-8", "replace") + more
    return head.hex() + more
