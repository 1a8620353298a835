"""OpenCost's filter language (v2) as the allocation and asset APIs read it."""

from __future__ import annotations

from typing import Any

import pytest

from itbench_agents.twin.addons.opencost.filters import FilterError, parse_filter

ALLOC: dict[str, Any] = {
    "namespace": "otel-demo",
    "pod": "cart-7d9f-abcde",
    "controllerKind": "deployment",
    "services": ["cart", "cart-headless"],
    "labels": {"app": "cart"},
}


def get(field: str, key: str) -> Any:
    if field == "label":
        return ALLOC["labels"].get(key)
    if field == "controllerName":
        return "cart"
    return ALLOC.get(field)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('namespace:"otel-demo"', True),
        ('namespace:"kube-system","otel-demo"', True),
        ('namespace!:"otel-demo"', False),
        ('pod<~:"cart-"', True),
        ('pod~>:"abcde"', True),
        ('pod~:"7d9f"', True),
        ('pod!~:"7d9f"', False),
        ('label[app]:"cart"', True),
        ('label[tier]:"web"', False),
        ('services:"cart-headless"', True),
        ('namespace:"otel-demo"+controllerName:"ad"', False),
        ('namespace:"otel-demo"|controllerName:"ad"', True),
        ('(namespace:"x"|pod<~:"cart")+controllerKind:"deployment"', True),
        ("", True),
    ],
)
def test_filter_semantics(text: str, want: bool) -> None:
    assert parse_filter(text)(get) is want


@pytest.mark.parametrize(
    ("text", "err"),
    [
        ('namespace:"a"+pod:"b"|pod:"c"', "cannot mix"),
        ('nmspace:"a"', "unknown filter field 'nmspace'"),
        ("namespace:otel", "expected str"),
        ('namespace:"a', "unexpected character"),
        ('label:"a"', "label needs a key"),
        ('(namespace:"a"', "expected rp"),
        ('namespace:"a" pod:"b"', "unexpected 'pod'"),
    ],
)
def test_malformed_filters_are_errors(text: str, err: str) -> None:
    with pytest.raises(FilterError, match=err.replace("(", r"\(").replace("|", r"\|")):
        parse_filter(text)
