"""Protobuf field tables for the kinds kubectl's typed clients send to the auth and RBAC APIs
(``kubectl auth can-i`` / ``whoami``, ``kubectl create token|role|rolebinding|clusterrole|clusterrolebinding``).

Field numbers are those of upstream's ``k8s.io/api/{authorization,authentication,rbac}/v1/generated.proto``;
they are registered into the REST layer's protobuf decoder (``kube/protobuf.py``) on import.
"""

from __future__ import annotations

from ..protobuf import SCHEMAS

F = tuple[str, str, str]

AUTH_SCHEMAS: dict[str, dict[int, F]] = {
    # authorization.k8s.io/v1
    "ResourceAttributes": {
        1: ("namespace", "str", ""),
        2: ("verb", "str", ""),
        3: ("group", "str", ""),
        4: ("version", "str", ""),
        5: ("resource", "str", ""),
        6: ("subresource", "str", ""),
        7: ("name", "str", ""),
    },
    "NonResourceAttributes": {1: ("path", "str", ""), 2: ("verb", "str", "")},
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "msg", "ResourceAttributes"),
        2: ("nonResourceAttributes", "msg", "NonResourceAttributes"),
    },
    "SelfSubjectAccessReview": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("spec", "msg", "SelfSubjectAccessReviewSpec"),
    },
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "str", "")},
    "SelfSubjectRulesReview": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("spec", "msg", "SelfSubjectRulesReviewSpec"),
    },
    "SubjectAccessReviewSpec": {
        1: ("resourceAttributes", "msg", "ResourceAttributes"),
        2: ("nonResourceAttributes", "msg", "NonResourceAttributes"),
        3: ("user", "str", ""),
        4: ("groups", "rstr", ""),
        6: ("uid", "str", ""),
    },
    "SubjectAccessReview": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("spec", "msg", "SubjectAccessReviewSpec"),
    },
    "LocalSubjectAccessReview": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("spec", "msg", "SubjectAccessReviewSpec"),
    },
    # authentication.k8s.io/v1
    "SelfSubjectReview": {1: ("metadata", "msg", "ObjectMeta")},
    "BoundObjectReference": {
        1: ("kind", "str", ""),
        2: ("apiVersion", "str", ""),
        3: ("name", "str", ""),
        4: ("uid", "str", ""),
    },
    "TokenRequestSpec": {
        1: ("audiences", "rstr", ""),
        3: ("boundObjectRef", "msg", "BoundObjectReference"),
        4: ("expirationSeconds", "int", ""),
    },
    "TokenRequest": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "TokenRequestSpec")},
    "TokenReviewSpec": {1: ("token", "str", ""), 2: ("audiences", "rstr", "")},
    "TokenReview": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "TokenReviewSpec")},
    # rbac.authorization.k8s.io/v1
    "PolicyRule": {
        1: ("verbs", "rstr", ""),
        2: ("apiGroups", "rstr", ""),
        3: ("resources", "rstr", ""),
        4: ("resourceNames", "rstr", ""),
        5: ("nonResourceURLs", "rstr", ""),
    },
    "AggregationRule": {1: ("clusterRoleSelectors", "rmsg", "LabelSelector")},
    "Role": {1: ("metadata", "msg", "ObjectMeta"), 2: ("rules", "rmsg", "PolicyRule")},
    "ClusterRole": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("rules", "rmsg", "PolicyRule"),
        3: ("aggregationRule", "msg", "AggregationRule"),
    },
    "Subject": {
        1: ("kind", "str", ""),
        2: ("apiGroup", "str", ""),
        3: ("name", "str", ""),
        4: ("namespace", "str", ""),
    },
    "RoleRef": {1: ("apiGroup", "str", ""), 2: ("kind", "str", ""), 3: ("name", "str", "")},
    "RoleBinding": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("subjects", "rmsg", "Subject"),
        3: ("roleRef", "msg", "RoleRef"),
    },
    "ClusterRoleBinding": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("subjects", "rmsg", "Subject"),
        3: ("roleRef", "msg", "RoleRef"),
    },
}


def register() -> None:
    """Teach the protobuf decoder these kinds (kinds it already knows are left alone)."""
    for kind, fields in AUTH_SCHEMAS.items():
        SCHEMAS.setdefault(kind, fields)


register()
