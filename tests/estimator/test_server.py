"""tidal estimator over real gRPC on loopback, reading members through the emulator's cluster
proxy: team answers from quotas and node pools, "cannot tell" cases, answers from the cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from structlog.testing import capture_logs

from tests.e2e.switch_helpers import cluster
from tidal.domain.teams import ClusterRule, TeamRule, Teams
from tidal.estimator.app import EstimatorApp
from tidal.estimator.check import ask
from tidal.estimator.wire import OBJECT_KEY, SERVICE, messages
from tidal.karmada.client import KarmadaClient, RetryPolicy
from tidal.karmada.members import Proxied
from tidal.settings import EstimatorSettings
from tidal_sim.emulator import Emulator
from tidal_sim.testing.plugin import MakeEmulator

pytestmark = pytest.mark.e2e
NS = "team-2001"
GPU = "nvidia.com/gpu"
POOL = {"matchLabels": {"pool": "team-2001"}}
TEAMS = Teams(
    (
        TeamRule(
            "team-2001",
            frozenset({NS}),
            {
                "cluster-a": ClusterRule(quota=True),
                "cluster-b": ClusterRule(pool=POOL),
            },
        ),
    )
)


def _create(
    client: KarmadaClient,
    member: str,
    plural: str,
    kind: str,
    body: dict[str, Any],
    namespace: str | None = None,
) -> None:
    """Create through the proxy, then write its status (which a create leaves out)."""
    res = Proxied("", "v1", plural, kind, namespace is not None, member)
    made = client.request("create", res, "POST", res.path(namespace), body=body)
    if "status" in body:
        made["status"] = body["status"]
        client.request(
            "update", res, "PUT", res.path(namespace, body["metadata"]["name"], "status"), body=made
        )


def _node(name: str, gpus: int, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {"cpu": "64", "memory": "512Gi", GPU: str(gpus), "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, node: str, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {GPU: str(gpus), "cpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }


@pytest.fixture
def emu(make_emulator: MakeEmulator) -> Emulator:
    """cluster-a with a team quota (8 GPUs, 3 used); cluster-b with a pool of two 8-GPU nodes,
    one with 7 GPUs taken, and a node outside the pool."""
    emu = make_emulator([cluster("cluster-a"), cluster("cluster-b")])
    client = _client(emu)
    for member in ("cluster-a", "cluster-b"):
        _create(
            client,
            member,
            "namespaces",
            "Namespace",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        )
    _create(
        client,
        "cluster-a",
        "resourcequotas",
        "ResourceQuota",
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "gpus", "namespace": NS},
            "spec": {"hard": {"requests.nvidia.com/gpu": "8", "pods": "20"}},
            "status": {
                "hard": {"requests.nvidia.com/gpu": "8", "pods": "20"},
                "used": {"requests.nvidia.com/gpu": "3", "pods": "3"},
            },
        },
        NS,
    )
    _create(client, "cluster-b", "nodes", "Node", _node("gpu-1", 8, POOL["matchLabels"]))
    _create(client, "cluster-b", "nodes", "Node", _node("gpu-2", 8, POOL["matchLabels"]))
    _create(client, "cluster-b", "nodes", "Node", _node("other", 8, {}))
    _create(client, "cluster-b", "pods", "Pod", _pod("p1", "gpu-2", 7), NS)
    return emu


def _client(emu: Emulator) -> KarmadaClient:
    path = emu.write_kubeconfig(Path(emu.url.replace(":", "_").replace("/", "_")))
    try:
        return KarmadaClient.from_kubeconfig(path, retry=RetryPolicy(attempts=1))
    finally:
        path.unlink()


@pytest.fixture
def app(emu: Emulator) -> Iterator[EstimatorApp]:
    settings = EstimatorSettings(
        address="127.0.0.1", grpc_port=0, refresh_seconds=3600, stale_seconds=7200
    )
    app = EstimatorApp(settings, _client(emu), TEAMS, http_port=0).start()
    app.cache.refresh()
    yield app
    app.stop(0)


def _addr(app: EstimatorApp) -> str:
    return f"127.0.0.1:{app.grpc_port}"


def _workload(name: str = "scorer") -> str:
    return f"kind=Deployment, name={NS}/{name}"


def test_quota_answer_with_namespace_in_metadata(app: EstimatorApp) -> None:
    """The namespace from the `object` metadata: 8 - 3 GPUs of quota leave 5 one-GPU replicas."""
    assert ask(_addr(app), "cluster-a", request={GPU: "1"}, workload=_workload()) == 5
    assert ask(_addr(app), "cluster-a", request={GPU: "2"}, workload=_workload()) == 2


def test_quota_answer_with_namespace_in_field(app: EstimatorApp) -> None:
    """The namespace in replicaRequirements (ResourceQuotaEstimate on) is read too."""
    assert ask(_addr(app), "cluster-a", NS, request={GPU: "1"}) == 5


def test_pool_answer_packs_per_node(app: EstimatorApp) -> None:
    """Pool: 8 free GPUs on gpu-1 and 1 on gpu-2 hold 4 two-GPU replicas, not 4.5; the node
    outside the pool counts for nothing."""
    assert ask(_addr(app), "cluster-b", request={GPU: "2"}, workload=_workload()) == 4
    assert ask(_addr(app), "cluster-b", request={GPU: "1"}, workload=_workload()) == 9


@pytest.mark.parametrize(
    ("member", "namespace", "workload", "why"),
    [
        ("cluster-z", NS, None, "unknown cluster"),
        ("cluster-a", "", None, "no namespace anywhere"),
        ("cluster-a", "someone-else", None, "namespace of no team"),
    ],
)
def test_cannot_tell_cases(
    app: EstimatorApp, member: str, namespace: str, workload: str | None, why: str
) -> None:
    """Questions without a team answer -1, never an error."""
    assert ask(_addr(app), member, namespace, request={GPU: "1"}, workload=workload) == -1, why


def test_unreachable_member_answers_cannot_tell(app: EstimatorApp, emu: Emulator) -> None:
    """A member the proxy cannot reach: -1 once its view is older than the staleness bound,
    its readable metric 0, a log event; the other member still answers."""
    emu.server.members.unreachable.add("cluster-a")
    with capture_logs() as logs:
        app.cache.refresh()
    assert {"event": "estimator_member_unreadable", "cluster": "cluster-a"}.items() <= next(
        e for e in logs if e["event"] == "estimator_member_unreadable"
    ).items()
    assert app.metrics.readable.labels("cluster-a")._value.get() == 0
    assert ask(_addr(app), "cluster-a", NS, request={GPU: "1"}) == 5  # last view, still fresh
    app.estimator._bound = app.estimator._bound * 0  # every view is now too old
    assert ask(_addr(app), "cluster-a", NS, request={GPU: "1"}) == -1
    assert app.metrics.answers.labels("cluster-a", "stale", "none")._value.get() == 1


def test_member_never_read_answers_cannot_tell(emu: Emulator) -> None:
    """A member unreachable from the start has no view: -1 (member_unreadable)."""
    emu.server.members.unreachable.add("cluster-a")
    settings = EstimatorSettings(
        address="127.0.0.1", grpc_port=0, refresh_seconds=3600, stale_seconds=7200
    )
    app = EstimatorApp(settings, _client(emu), TEAMS, http_port=0).start()
    try:
        app.cache.refresh()
        assert ask(_addr(app), "cluster-a", NS, request={GPU: "1"}) == -1
        assert (
            app.metrics.answers.labels("cluster-a", "member_unreadable", "none")._value.get() == 1
        )
    finally:
        app.stop(0)


def test_answers_send_no_member_requests(app: EstimatorApp, emu: Emulator) -> None:
    """Answers come from the cache: 50 questions, no request through the cluster proxy."""
    before = sum(1 for r in emu.accounting.log() if r.resource == "clusters/proxy")
    for _ in range(50):
        ask(_addr(app), "cluster-b", request={GPU: "1"}, workload=_workload())
    after = sum(1 for r in emu.accounting.log() if r.resource == "clusters/proxy")
    assert after == before


def _call(app: EstimatorApp, method: str, request: Any, reply: Any) -> Any:
    with grpc.insecure_channel(_addr(app)) as channel:
        return channel.unary_unary(
            f"/{SERVICE}/{method}",
            request_serializer=type(request).SerializeToString,
            response_deserializer=reply.FromString,
        )(request, timeout=3, metadata=((OBJECT_KEY, _workload()),))


def test_deprecated_request_map_and_malformed_bytes(app: EstimatorApp) -> None:
    """An older scheduler's resourceRequest map is read; undecodable bytes answer -1."""
    pb = messages()
    old = pb.ReplicaRequirements()
    old.resourceRequest[GPU].string = "1"
    req = pb.MaxAvailableReplicasRequest(cluster="cluster-a", replicaRequirements=old)
    assert _call(app, "MaxAvailableReplicas", req, pb.MaxAvailableReplicasResponse).maxReplicas == 5
    bad = pb.ReplicaRequirements()
    bad.resourceRequestBytes[GPU] = b"\xff\xff"
    req = pb.MaxAvailableReplicasRequest(cluster="cluster-a", replicaRequirements=bad)
    assert (
        _call(app, "MaxAvailableReplicas", req, pb.MaxAvailableReplicasResponse).maxReplicas == -1
    )


def test_node_claim_filters_the_pool(app: EstimatorApp) -> None:
    """A node selector the pool's nodes lack leaves nothing."""
    pb = messages()
    requirements = pb.ReplicaRequirements(namespace=NS)
    requirements.resourceRequestBytes[GPU] = pb.Quantity(string="1").SerializeToString()
    requirements.nodeClaim.nodeSelector["zone"] = "nowhere"
    req = pb.MaxAvailableReplicasRequest(cluster="cluster-b", replicaRequirements=requirements)
    assert _call(app, "MaxAvailableReplicas", req, pb.MaxAvailableReplicasResponse).maxReplicas == 0


def test_other_methods_cannot_tell(app: EstimatorApp) -> None:
    """GetUnschedulableReplicas and MaxAvailableComponentSets answer -1."""
    pb = messages()
    assert (
        _call(
            app,
            "GetUnschedulableReplicas",
            pb.UnschedulableReplicasRequest(cluster="cluster-a"),
            pb.UnschedulableReplicasResponse,
        ).unschedulableReplicas
        == -1
    )
    assert (
        _call(
            app,
            "MaxAvailableComponentSets",
            pb.MaxAvailableComponentSetsRequest(cluster="cluster-a"),
            pb.MaxAvailableComponentSetsResponse,
        ).maxSets
        == -1
    )
