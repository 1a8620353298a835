"""GroupResource constants for the resource types the controllers read and write."""

from __future__ import annotations

from ...k8s.kinds import GroupResource

PODS = GroupResource("", "pods")
NODES = GroupResource("", "nodes")
NAMESPACES = GroupResource("", "namespaces")
SERVICES = GroupResource("", "services")
ENDPOINTS = GroupResource("", "endpoints")
EVENTS = GroupResource("", "events")
CONFIGMAPS = GroupResource("", "configmaps")
SECRETS = GroupResource("", "secrets")
SERVICEACCOUNTS = GroupResource("", "serviceaccounts")
PVCS = GroupResource("", "persistentvolumeclaims")
LIMITRANGES = GroupResource("", "limitranges")
RESOURCEQUOTAS = GroupResource("", "resourcequotas")
REPLICATIONCONTROLLERS = GroupResource("", "replicationcontrollers")
DEPLOYMENTS = GroupResource("apps", "deployments")
REPLICASETS = GroupResource("apps", "replicasets")
STATEFULSETS = GroupResource("apps", "statefulsets")
DAEMONSETS = GroupResource("apps", "daemonsets")
CONTROLLERREVISIONS = GroupResource("apps", "controllerrevisions")
JOBS = GroupResource("batch", "jobs")
CRONJOBS = GroupResource("batch", "cronjobs")
HPAS = GroupResource("autoscaling", "horizontalpodautoscalers")
ENDPOINTSLICES = GroupResource("discovery.k8s.io", "endpointslices")
STORAGECLASSES = GroupResource("storage.k8s.io", "storageclasses")
PERSISTENTVOLUMES = GroupResource("", "persistentvolumes")
PRIORITYCLASSES = GroupResource("scheduling.k8s.io", "priorityclasses")
LEASES = GroupResource("coordination.k8s.io", "leases")
NETPOLS = GroupResource("networking.k8s.io", "networkpolicies")
CRDS = GroupResource("apiextensions.k8s.io", "customresourcedefinitions")
