"""`tidal estimator check`: does karmada-scheduler reach the estimator, member by member?

Three looks per Karmada Cluster:
1. the Service karmada-scheduler resolves, `<prefix>-<cluster>` in `<namespace>` on the Karmada
   apiserver (pkg/estimator/client/service.go resolveCluster): absent, the scheduler dials
   `<prefix>-<cluster>.<namespace>.svc.cluster.local:<port>` on its own cluster's DNS (the
   chart's per-cluster Services); present, it must be ExternalName with `port` and an integer
   targetPort, dialled at externalName:targetPort (anything else fails the connection);
2. the estimator answers MaxAvailableReplicas for the cluster over gRPC (at --estimator);
3. the estimator's /status: how many requests karmada-scheduler sent for the cluster.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from tidal.estimator.wire import OBJECT_KEY, SERVICE, messages
from tidal.karmada.client import KarmadaClient, Resource
from tidal.karmada.errors import KarmadaError

SERVICES = Resource("", "v1", "services", "Service", True)


@dataclass(frozen=True)
class ClusterCheck:
    cluster: str
    service: str  # what the Service lookup says
    service_ok: bool
    answer: int | None  # the estimator's answer to an empty question; None: unreachable
    asked: int  # requests karmada-scheduler sent for the cluster (per /status)

    @property
    def ok(self) -> bool:
        return self.service_ok and self.answer is not None and self.asked > 0

    def line(self) -> str:
        reached = "unreachable" if self.answer is None else f"answers ({self.answer})"
        asked = (
            f"karmada-scheduler asked {self.asked} time(s)"
            if self.asked
            else "karmada-scheduler has not asked (check its --enable-scheduler-estimator flags)"
        )
        return f"{self.cluster}: service {self.service}; estimator {reached}; {asked}"


def ask(
    address: str,
    cluster: str,
    namespace: str = "",
    timeout: float = 3.0,
    request: Mapping[str, str] | None = None,
    workload: str | None = None,
) -> int | None:
    """One MaxAvailableReplicas question over gRPC (no answer: None)."""
    pb = messages()
    requirements = pb.ReplicaRequirements(namespace=namespace)
    for name, qty in (request or {}).items():
        requirements.resourceRequestBytes[name] = pb.Quantity(string=qty).SerializeToString()
    metadata = ((OBJECT_KEY, workload),) if workload else ()
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            f"/{SERVICE}/MaxAvailableReplicas",
            request_serializer=pb.MaxAvailableReplicasRequest.SerializeToString,
            response_deserializer=pb.MaxAvailableReplicasResponse.FromString,
        )
        try:
            reply = call(
                pb.MaxAvailableReplicasRequest(cluster=cluster, replicaRequirements=requirements),
                timeout=timeout,
                metadata=metadata,
            )
        except grpc.RpcError:
            return None
    return int(reply.maxReplicas)


def _service(client: KarmadaClient, namespace: str, name: str, port: int) -> tuple[str, bool]:
    try:
        svc = client.find(SERVICES, namespace, name)
    except KarmadaError as exc:
        return f"{namespace}/{name} unreadable ({exc})", False
    if svc is None:
        return (
            f"{namespace}/{name} not in Karmada's API: dialled as "
            f"{name}.{namespace}.svc.cluster.local:{port}",
            True,
        )
    spec = svc.get("spec") or {}
    if spec.get("type") != "ExternalName":
        return f"{namespace}/{name} is {spec.get('type')}, must be ExternalName", False
    match = next((p for p in spec.get("ports") or [] if p.get("port") == port), None)
    if match is None or not isinstance(match.get("targetPort"), int):
        return f"{namespace}/{name} lacks port {port} with an integer targetPort", False
    return f"{namespace}/{name} -> {spec.get('externalName')}:{match['targetPort']}", True


def status(url: str, timeout: float = 3.0) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/status", timeout=timeout) as reply:
            body: dict[str, Any] = json.loads(reply.read())
            return body
    except (OSError, ValueError):
        return None


def check(
    client: KarmadaClient,
    clusters: list[str],
    *,
    estimator: str,
    status_url: str,
    namespace: str,
    prefix: str,
    port: int,
) -> tuple[list[ClusterCheck], bool]:
    """A ClusterCheck per cluster, and whether the estimator's /status was readable."""
    seen = status(status_url)
    asked = (seen or {}).get("asked") or {}
    checks = []
    for cluster in clusters:
        text, ok = _service(client, namespace, f"{prefix}-{cluster}", port)
        checks.append(
            ClusterCheck(
                cluster,
                text,
                ok,
                ask(estimator, cluster),
                int((asked.get(cluster) or {}).get("requests") or 0),
            )
        )
    return checks, seen is not None
