"""TypedDicts for the raw payloads tidal reads (only the fields it uses; all optional)."""

from __future__ import annotations

from typing import Any, TypedDict

# A Kubernetes object as the API sends it (JSON): the one raw alias; typed views wrap it.
Obj = dict[str, Any]


class ObjectMeta(TypedDict, total=False):
    name: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]


class TargetCluster(TypedDict, total=False):
    name: str
    replicas: int


class ObjectReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    namespace: str
    name: str
    uid: str
    resourceVersion: str


class BindingSpec(TypedDict, total=False):
    resource: ObjectReference
    replicas: int
    replicaRequirements: dict[str, Any]
    placement: dict[str, Any]
    clusters: list[TargetCluster]
    rescheduleTriggeredAt: str


class Condition(TypedDict, total=False):
    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str


class AggregatedStatusItem(TypedDict, total=False):
    clusterName: str
    applied: bool
    health: str
    status: dict[str, Any]


class BindingStatus(TypedDict, total=False):
    schedulerObservedGeneration: int
    lastScheduledTime: str
    conditions: list[Condition]
    aggregatedStatus: list[AggregatedStatusItem]


class ResourceBinding(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: BindingSpec
    status: BindingStatus


class Policy(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: dict[str, Any]


class RebalancerWorkload(TypedDict, total=False):
    apiVersion: str
    kind: str
    namespace: str
    name: str


class ObservedWorkload(TypedDict, total=False):
    workload: RebalancerWorkload
    result: str
    reason: str


class RebalancerStatus(TypedDict, total=False):
    observedWorkloads: list[ObservedWorkload]
    observedGeneration: int
    finishTime: str


class WorkloadRebalancer(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: dict[str, Any]
    status: RebalancerStatus


class Cluster(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: dict[str, Any]
    status: dict[str, Any]
