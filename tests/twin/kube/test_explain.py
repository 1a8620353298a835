"""`kubectl explain` against the twin shows what it shows against a real cluster (issue 11):
IntOrString and Quantity by name, descriptions of referenced definitions, enum values."""

from __future__ import annotations

import json

import pytest
from kube_helpers import SHARED, Cluster, needs_kubectl

from itbench_agents.twin.kube.models import ENUMS, model_fields
from itbench_agents.twin.kube.openapi import definition_name

V3_TESTDATA = SHARED / "conformance" / "kubernetes" / "openapi-v3" / "kubectl-testdata"


@needs_kubectl
@pytest.mark.kubectl
def test_explain_int_or_string(cluster: Cluster) -> None:
    out = cluster.kubectl("explain", "deployment.spec.strategy.rollingUpdate.maxSurge").stdout
    assert "FIELD: maxSurge <IntOrString>" in out
    flat = " ".join(out.split())
    assert "The maximum number of pods that can be scheduled above the desired number of pods." in flat
    assert (
        "IntOrString is a type that can hold an int32 or a string. When used in JSON or YAML marshalling and "
        "unmarshalling, it produces or consumes the inner type. This allows you to have, for example, a JSON "
        "field that can accept a name or number." in flat.replace(".  ", ". ")
    )
    fields = cluster.kubectl("explain", "deployment.spec.strategy.rollingUpdate").stdout
    assert "maxSurge\t<IntOrString>" in fields and "maxUnavailable\t<IntOrString>" in fields
    svc = cluster.kubectl("explain", "service.spec.ports.targetPort").stdout
    assert "FIELD: targetPort <IntOrString>" in svc
    limits = cluster.kubectl("explain", "pod.spec.containers.resources.limits").stdout
    assert "FIELD: limits <map[string]Quantity>" in limits
    # the v2 document (kubectl's fallback, protobuf) keeps them strings, as upstream's does
    v2 = cluster.kubectl(
        "explain", "deployment.spec.strategy.rollingUpdate.maxSurge", "--output=plaintext-openapiv2"
    )
    assert "FIELD:    maxSurge <string>" in v2.stdout


@needs_kubectl
@pytest.mark.kubectl
def test_explain_enum(cluster: Cluster) -> None:
    out = cluster.kubectl("explain", "pod.spec.restartPolicy").stdout
    lines = out.splitlines()
    assert "FIELD: restartPolicy <string>" in lines
    at = lines.index("ENUM:")
    assert [x.strip() for x in lines[at + 1 : at + 4]] == ["Always", "Never", "OnFailure"]
    assert "Possible enum values:" in out and '- `"OnFailure"`' in out
    assert "Restart policy for all containers within the pod." in " ".join(out.split())
    svc = cluster.kubectl("explain", "service.spec.type").stdout
    assert "ENUM:" in svc and "LoadBalancer" in svc


@pytest.mark.skipif(
    not V3_TESTDATA.exists(), reason="../shared/conformance/kubernetes/openapi-v3 not present"
)
def test_enum_table_matches_upstream() -> None:
    """Every enum the table knows has upstream's values, and every core/v1 enum field upstream lists (in
    the kubectl v3 test data, a 1.27-era document) that the python client still has is in the table."""
    schemas = json.loads((V3_TESTDATA / "api" / "v1.json").read_text())["components"]["schemas"]
    checked = 0
    for (model, field), values in ENUMS.items():
        assert field in model_fields(model), (model, field)
        prop = (schemas.get(definition_name(model)) or {}).get("properties", {}).get(field)
        if prop is None:
            continue  # not in that older document
        # (that document lists externalTrafficPolicy's values twice, deprecated aliases included)
        assert tuple(dict.fromkeys(prop.get("enum") or ())) == values, (model, field, prop.get("enum"))
        checked += 1
    assert checked >= 35
    ours = {(definition_name(m), f) for m, f in ENUMS}
    from kubernetes.client import models

    by_def = {definition_name(n): n for n in dir(models) if n[:1].isupper()}
    for name, s in schemas.items():
        for field, prop in (s.get("properties") or {}).items():
            if "enum" in prop and name in by_def and field in model_fields(by_def[name]):
                assert (name, field) in ours, (name, field)
