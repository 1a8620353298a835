"""The simulated registry resolves exact tags only, as a real registry does.

A tag one character off a real one (``1.37`` → ``1.37.9``, ``2.2.0-checkout`` → ``2.2.0-checkuot``)
fails to pull with the registry's "not found"; the tags the catalogue lists resolve.
"""

from __future__ import annotations

import pytest
from faultkit import Cluster

from itbench_agents.twin.app.model import Image
from itbench_agents.twin.faults.containers import ImageCatalogue, common_images


@pytest.mark.parametrize(
    ("image", "found"),
    [
        ("busybox:1.37", True),
        ("docker.io/library/busybox:1.36.1", True),
        ("busybox", True),  # no tag: latest
        ("busybox:1.37.9", False),
        ("busybox:1.3", False),
        ("busybox:*", False),
        ("alpine:3.20", True),
        ("alpine:3.20-typo", False),
        ("curlimages/curl:8.15.0", True),
        ("curlimages/curl:8.15", False),
    ],
)
def test_common_images_resolve_exact_tags_only(image: str, found: bool) -> None:
    cat = ImageCatalogue(common_images())
    assert (cat.find(image) is not None) is found, image


def test_no_catalogue_tag_is_a_pattern() -> None:
    from itbench_agents.twin.app.loader import load_app

    images = list(common_images())
    for app in ("otel-demo", "hotel-reservation", "chain"):
        images += load_app(app).behaviour.images
    for img in images:
        assert not any(ch in t for t in img.tags for ch in "*?["), (img.repo, img.tags)


def test_catalogue_matches_exact_tag_not_prefix() -> None:
    cat = ImageCatalogue([Image.model_validate({"repo": "registry.local/x", "tags": ["1.0"]})])
    assert cat.find("registry.local/x:1.0") is not None
    assert cat.find("registry.local/x:1.0.1") is None
    assert cat.find("registry.local/x:1") is None
    assert cat.find("registry.local/y:1.0") is None


def test_typod_demo_tag_fails_to_pull(chain: Cluster) -> None:
    """On the Astronomy Shop catalogue a service tag with a typo is not found; the real one is."""
    from itbench_agents.twin.app.loader import load_app

    cat = ImageCatalogue([*load_app("otel-demo").behaviour.images, *common_images()])
    assert cat.find("ghcr.io/open-telemetry/demo:2.2.0-checkout") is not None
    assert cat.find("ghcr.io/open-telemetry/demo:2.1.3-checkout") is not None
    assert cat.find("ghcr.io/open-telemetry/demo:2.2.0-checkuot") is None
    assert cat.find("ghcr.io/open-telemetry/demo:2.2-checkout") is None
    assert cat.find("ghcr.io/open-feature/flagd:v0.12.99") is None
    # through the kubelet: the typo'd tag is an ErrImagePull / ImagePullBackOff with "not found"
    chain.container("b", lambda ct: ct.__setitem__("image", "registry.local/chain/b:1.0.0"))
    chain.advance(60)
    assert {"ErrImagePull", "ImagePullBackOff"} & set(chain.statuses("b"))
    assert any("not found" in m and "registry.local/chain/b:1.0.0" in m for m in chain.events("Failed"))
