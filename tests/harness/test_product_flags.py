"""The baseline's product flags (harness/product_flags.py): seeded, never a failure flag, set
over the API where the app has a flag file and nowhere else."""

from __future__ import annotations

import json
from typing import Any

import yaml

from itbench_agents.harness import product_flags
from itbench_agents.harness.churn_lookalikes import NEW_FLAGS
from itbench_agents.paths import scenarios_dir
from itbench_agents.scenario.kubeapi import KubeApiError


def test_the_choice_is_seeded_and_varies() -> None:
    a = product_flags.choose(0, "sre/ad-failure-flag-v1")
    assert a == product_flags.choose(0, "sre/ad-failure-flag-v1")
    assert product_flags.MIN_ON <= len(a) <= product_flags.MAX_ON and set(a) <= set(
        product_flags.PRODUCT_FLAGS
    )
    choices = {tuple(product_flags.choose(seed, "sre/ad-failure-flag-v1")) for seed in range(20)}
    assert len(choices) > 5  # an agent cannot learn one list of names to leave alone


def test_no_product_flag_is_a_flag_the_app_or_the_lookalikes_use() -> None:
    app = scenarios_dir() / "apps/otel-demo"
    effects = set(yaml.safe_load((app / "behaviour.yaml").read_text())["flags"]["effects"])
    config = next(
        d for d in yaml.safe_load_all((app / "manifests/10-config.yaml").read_text())
        if d and d["metadata"]["name"] == "flagd-config"
    )  # fmt: skip
    shipped = set(json.loads(config["data"]["demo.flagd.json"])["flags"])
    assert effects and shipped
    assert not set(product_flags.PRODUCT_FLAGS) & (effects | shipped | set(NEW_FLAGS))


class _Api:
    def __init__(self, cm: dict[str, Any] | None) -> None:
        self.cm = cm
        self.patches: list[Any] = []

    def get(self, api_version: str, kind: str, ns: str, name: str) -> dict[str, Any]:
        if self.cm is None:
            raise KubeApiError(f'configmaps "{name}" not found', 404)
        return self.cm

    def patch(self, api_version: str, kind: str, ns: str, name: str, body: Any, patch_type: str) -> None:
        self.patches.append((name, body, patch_type))


def test_enable_turns_the_flags_on_in_one_merge_patch() -> None:
    doc = {"$schema": "s", "flags": {"adFailure": {"defaultVariant": "off"}, "searchTypeahead": {}}}
    api = _Api({"data": {"demo.flagd.json": json.dumps(doc)}})
    got = product_flags.enable(api, "otel-demo", ["cartSaveForLater", "searchTypeahead"])  # type: ignore[arg-type]
    assert got == ["cartSaveForLater"]  # a flag the file defines already is left as it is
    [(name, body, kind)] = api.patches
    written = json.loads(body["data"]["demo.flagd.json"])
    assert (name, kind) == ("flagd-config", "merge")
    assert written["flags"]["cartSaveForLater"]["defaultVariant"] == "on"
    assert written["flags"]["adFailure"] == {"defaultVariant": "off"} and written["$schema"] == "s"


def test_an_app_without_a_flag_file_gets_none() -> None:
    files: list[dict[str, Any] | None] = [
        None,
        {"data": {}},
        {"data": {"demo.flagd.json": "{not json"}},
        {"data": {"demo.flagd.json": "[]"}},
    ]
    for cm in files:
        api = _Api(cm)
        assert product_flags.enable(api, "hotel-reservation", ["cartSaveForLater"]) == []  # type: ignore[arg-type]
        assert api.patches == []
