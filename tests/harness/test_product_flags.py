"""The baseline's product flags (harness/product_flags.py): never a failure flag, added to the
app's flag file where there is one and nowhere else."""

from __future__ import annotations

import json
import random
from typing import Any

import yaml

from itbench_agents.harness import product_flags
from itbench_agents.harness.churn_lookalikes import NEW_FLAGS
from itbench_agents.paths import scenarios_dir


def test_two_or_three_are_chosen() -> None:
    for seed in range(20):
        got = product_flags.choose(random.Random(seed))
        assert product_flags.MIN_ON <= len(got) <= product_flags.MAX_ON
        assert set(got) <= set(product_flags.PRODUCT_FLAGS) and got == sorted(got)


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


def _cm(name: str, text: str) -> dict[str, Any]:
    return {"kind": "ConfigMap", "metadata": {"name": name}, "data": {"demo.flagd.json": text}}


def test_the_flags_are_added_on_to_the_flag_file() -> None:
    doc = {"$schema": "s", "flags": {"adFailure": {"defaultVariant": "off"}, "searchTypeahead": {}}}
    manifests = [_cm("other", "{}"), _cm("flagd-config", json.dumps(doc))]
    got = product_flags.add_to(manifests, ["cartSaveForLater", "searchTypeahead"])
    assert got == ["cartSaveForLater"]  # a flag the file defines already is left as it is
    written = json.loads(manifests[1]["data"]["demo.flagd.json"])
    assert written["flags"]["cartSaveForLater"]["defaultVariant"] == "on"
    assert written["flags"]["adFailure"] == {"defaultVariant": "off"} and written["$schema"] == "s"
    assert written["flags"]["searchTypeahead"] == {} and manifests[0]["data"]["demo.flagd.json"] == "{}"


def test_an_app_without_a_flag_file_gets_none() -> None:
    for text in ("{not json", "[]", '{"flags": []}'):
        manifests = [_cm("flagd-config", text)]
        assert product_flags.add_to(manifests, ["cartSaveForLater"]) == []
        assert manifests[0]["data"]["demo.flagd.json"] == text
    assert product_flags.add_to([{"kind": "Service", "metadata": {"name": "flagd-config"}}], ["x"]) == []
