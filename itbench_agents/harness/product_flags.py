"""A baseline worth protecting: product feature flags that a healthy app runs with turned on.

Issue 26: when every flag of the flag file is off except the fault's, "turn every flag off" is a
fix that needs no diagnosis. A real shop runs with product features switched on. So before the
baseline the harness turns on a seeded choice of product flags in the app's flagd file, through
the Kubernetes API (a merge patch of the ConfigMap, as a product team would; the same on a live
cluster). No service of the demo reads them: the healthy app behaves as before and no alert
fires. The end state compares the flag file flag by flag (``endstate.config_keys``) and the fault
covers only its own flag, so turning one of these off is collateral damage that fails mitigation
under the default policy.

An app without a flag file (hotel-reservation) gets none; the choice is recorded in the
trajectory's ``baseline`` event, never shown to the agent.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from ..scenario.kubeapi import KubeApi, KubeApiError
from .churn_lookalikes import FLAGD_CONFIGMAP, FLAGD_KEY

PRODUCT_FLAGS: dict[str, str] = {
    "cartSaveForLater": "Let shoppers move cart items to a saved-for-later list",
    "checkoutExpressShipping": "Offer express shipping at checkout",
    "currencyAutoDetect": "Preselect the shopper's currency from the browser locale",
    "productReviewSummaries": "Show the review summary block on product pages",
    "recommendationsPersonalized": "Personalise recommendations from the cart's contents",
    "searchTypeahead": "Suggest products while the shopper types a search",
    "frontendDarkMode": "Offer the dark theme in the storefront",
    "emailOrderTracking": "Add the tracking link to order confirmation emails",
}
"""Product features (names and descriptions) the shop may run with; none is a failure flag."""
MIN_ON, MAX_ON = 2, 3


def product_flag_seed(seed: int, scenario_id: str) -> int:
    h = hashlib.sha256(f"product-flags:{seed}:{scenario_id}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def choose(seed: int, scenario_id: str) -> list[str]:
    """The product flags an episode runs with (seeded: the same for every agent of a trial)."""
    rng = random.Random(product_flag_seed(seed, scenario_id))
    return sorted(rng.sample(sorted(PRODUCT_FLAGS), rng.randint(MIN_ON, MAX_ON)))


def _flag(name: str) -> dict[str, Any]:
    return {
        "description": PRODUCT_FLAGS[name],
        "state": "ENABLED",
        "variants": {"on": True, "off": False},
        "defaultVariant": "on",
    }


def enable(api: KubeApi, namespace: str, names: list[str]) -> list[str]:
    """Turn ``names`` on in the namespace's flag file; returns the flags turned on (none where the
    namespace has no flag file, or where the file already defines a flag of that name)."""
    try:
        cm = api.get("v1", "ConfigMap", namespace, FLAGD_CONFIGMAP)
    except KubeApiError:
        return []
    try:
        doc = json.loads((cm.get("data") or {})[FLAGD_KEY])
        flags = doc["flags"]
    except (KeyError, TypeError, ValueError):
        return []
    if not isinstance(flags, dict):
        return []
    added = [n for n in names if n not in flags]
    if not added:
        return []
    for n in added:
        flags[n] = _flag(n)
    api.patch(
        "v1",
        "ConfigMap",
        namespace,
        FLAGD_CONFIGMAP,
        {"data": {FLAGD_KEY: json.dumps(doc, indent=2)}},
        "merge",
    )
    return added
