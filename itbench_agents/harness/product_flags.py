"""Product feature flags that a healthy shop runs with turned on (part of :mod:`protected`).

Issue 26: when every flag of the flag file is off except the fault's, "turn every flag off" is a
fix that needs no diagnosis. A real shop runs with product features switched on. So each episode's
app is deployed with a seeded choice of product flags on in its flagd file. No service of the demo
reads them: the healthy app behaves as before and no alert fires. The end state compares the flag
file flag by flag (``endstate.config_keys``) and the fault covers only its own flag, so turning
one of these off is collateral damage that fails mitigation under the default policy.
"""

from __future__ import annotations

import json
import random
from typing import Any

from .churn_lookalikes import FLAGD_CONFIGMAP, FLAGD_KEY, flag_on_spec

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


def choose(rng: random.Random) -> list[str]:
    """The product flags an episode runs with."""
    return sorted(rng.sample(sorted(PRODUCT_FLAGS), rng.randint(MIN_ON, MAX_ON)))


def add_to(manifests: list[dict[str, Any]], names: list[str]) -> list[str]:
    """Turn ``names`` on in the flag file among ``manifests`` (in place); returns the flags added:
    none where there is no flag file, and none that the file already defines."""
    for obj in manifests:
        meta = obj.get("metadata") or {}
        if obj.get("kind") != "ConfigMap" or meta.get("name") != FLAGD_CONFIGMAP:
            continue
        try:
            doc = json.loads((obj.get("data") or {})[FLAGD_KEY])
            flags = doc["flags"]
        except (KeyError, TypeError, ValueError):
            return []
        if not isinstance(flags, dict):
            return []
        added = [n for n in names if n not in flags]
        for n in added:
            flags[n] = flag_on_spec(PRODUCT_FLAGS[n])
        if added:
            obj["data"][FLAGD_KEY] = json.dumps(doc, indent=2)
        return added
    return []
