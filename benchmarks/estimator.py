"""The team estimator under karmada-scheduler's load: answer latency with 200 requests in
flight, and what the answers cost the members.

    python -m benchmarks --out DIR --only estimator

An emulator serves two members through the cluster proxy (a 200-node GPU pool with pods on
cluster-b, a team quota on cluster-a); `tidal estimator` reads them every 15 s (the default).
Rounds of 200 concurrent MaxAvailableReplicas calls (as the scheduler sends them for a pass
over many bindings) go over one gRPC channel; each call's latency is from send to answer.
- estimator.p99_ms: the 99th percentile of those latencies;
- estimator.service_ms: the mean time one answer takes inside the server;
- estimator.requests_to_members_per_answer: requests sent through the cluster proxy while the
  rounds ran (the refreshes), divided by the answers given (0: answers never reach a member).
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Any

import grpc

from benchmarks.harness import RunConfig, Section
from tidal.domain.teams import ClusterRule, TeamRule, Teams
from tidal.estimator.app import EstimatorApp
from tidal.estimator.wire import OBJECT_KEY, SERVICE, messages
from tidal.karmada.client import KarmadaClient
from tidal.karmada.members import Proxied
from tidal.settings import EstimatorSettings
from tidal_sim.emulator import Emulator

NS = "team-2001"
GPU = "nvidia.com/gpu"
POOL = {"pool": "team-2001"}
IN_FLIGHT = 200


def _cluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"syncMode": "Push"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def _put(
    client: KarmadaClient,
    member: str,
    plural: str,
    kind: str,
    body: dict[str, Any],
    namespace: str | None = None,
) -> None:
    res = Proxied("", "v1", plural, kind, namespace is not None, member)
    made = client.request("create", res, "POST", res.path(namespace), body=body)
    if "status" in body:
        made["status"] = body["status"]
        client.request(
            "update", res, "PUT", res.path(namespace, body["metadata"]["name"], "status"), body=made
        )


def _populate(client: KarmadaClient, nodes: int) -> None:
    for member in ("cluster-a", "cluster-b"):
        _put(
            client,
            member,
            "namespaces",
            "Namespace",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        )
    _put(
        client,
        "cluster-a",
        "resourcequotas",
        "ResourceQuota",
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q", "namespace": NS},
            "spec": {"hard": {"requests.nvidia.com/gpu": "64"}},
            "status": {
                "hard": {"requests.nvidia.com/gpu": "64"},
                "used": {"requests.nvidia.com/gpu": "20"},
            },
        },
        NS,
    )
    for i in range(nodes):
        _put(
            client,
            "cluster-b",
            "nodes",
            "Node",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"gpu-{i}", "labels": POOL},
                "status": {
                    "allocatable": {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            },
        )
        _put(
            client,
            "cluster-b",
            "pods",
            "Pod",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p-{i}", "namespace": NS},
                "spec": {
                    "nodeName": f"gpu-{i}",
                    "containers": [{"name": "c", "resources": {"requests": {GPU: str(i % 8)}}}],
                },
                "status": {"phase": "Running"},
            },
            NS,
        )


def _round(call: Any, requests: list[Any]) -> list[float]:
    """IN_FLIGHT calls at once; the latency of each, in ms."""
    latencies: list[float] = []
    lock = threading.Lock()
    done = threading.Event()

    def finished(started: float) -> Any:
        def on_done(future: Any) -> None:
            future.result()
            with lock:
                latencies.append((time.perf_counter() - started) * 1000)
                if len(latencies) == len(requests):
                    done.set()

        return on_done

    for i, request in enumerate(requests):
        started = time.perf_counter()
        future = call.future(
            request, timeout=30, metadata=((OBJECT_KEY, f"kind=Deployment, name={NS}/w-{i}"),)
        )
        future.add_done_callback(finished(started))
    done.wait(60)
    return latencies


def measure(rounds: int, nodes: int, tmp: Path) -> dict[str, float]:
    emu = Emulator([_cluster("cluster-a"), _cluster("cluster-b")]).start()
    try:
        kubeconfig = emu.write_kubeconfig(tmp / "estimator-bench.kubeconfig")
        client = KarmadaClient.from_kubeconfig(kubeconfig)
        _populate(client, nodes)
        teams = Teams(
            (
                TeamRule(
                    "team-2001",
                    frozenset({NS}),
                    {
                        "cluster-a": ClusterRule(quota=True),
                        "cluster-b": ClusterRule(pool={"matchLabels": POOL}),
                    },
                ),
            )
        )
        settings = EstimatorSettings(
            address="127.0.0.1", grpc_port=0, refresh_seconds=15.0, workers=16
        )
        app = EstimatorApp(settings, client, teams, http_port=0).start()
        try:
            while app.cache.snapshot.read_at is None:
                time.sleep(0.05)
            pb = messages()
            requests = []
            for i in range(IN_FLIGHT):
                req = pb.ReplicaRequirements()
                req.resourceRequestBytes[GPU] = pb.Quantity(
                    string=str(1 + i % 4)
                ).SerializeToString()
                requests.append(
                    pb.MaxAvailableReplicasRequest(
                        cluster=("cluster-a", "cluster-b")[i % 2], replicaRequirements=req
                    )
                )
            with grpc.insecure_channel(f"127.0.0.1:{app.grpc_port}") as channel:
                call = channel.unary_unary(
                    f"/{SERVICE}/MaxAvailableReplicas",
                    request_serializer=pb.MaxAvailableReplicasRequest.SerializeToString,
                    response_deserializer=pb.MaxAvailableReplicasResponse.FromString,
                )
                _round(call, requests)  # warm-up: connections, threads
                before = app.cache.member_requests
                latencies: list[float] = []
                for _ in range(rounds):
                    latencies += _round(call, requests)
                sent = app.cache.member_requests - before
            samples = {x.name: x.value for m in app.metrics.seconds.collect() for x in m.samples}
            service_ms = (
                1000
                * samples["tidal_estimator_answer_seconds_sum"]
                / max(1.0, samples["tidal_estimator_answer_seconds_count"])
            )
        finally:
            app.stop(0)
    finally:
        emu.stop()
    latencies.sort()
    return {
        "p99_ms": latencies[int(0.99 * (len(latencies) - 1))],
        "p50_ms": statistics.median(latencies),
        "answers": float(len(latencies)),
        "service_ms": service_ms,
        "requests_to_members_per_answer": sent / max(1, len(latencies)),
    }


def run(cfg: RunConfig) -> Section:
    section = Section("estimator", "tidal estimator: answer latency and member cost")
    rounds, nodes = (2, 10) if cfg.tiny else (10, 200) if cfg.quick else (50, 200)
    got = measure(rounds, nodes, cfg.out)
    for name, value in got.items():
        section.put(name, value)
    section.say(
        f"{int(got['answers'])} MaxAvailableReplicas answers in rounds of {IN_FLIGHT} concurrent "
        f"calls over one channel (16 handler threads), members re-read every 15 s (the default) "
        f"({nodes}-node GPU pool with pods, one quota): p50 {got['p50_ms']:.2f} ms, "
        f"p99 {got['p99_ms']:.2f} ms (queueing behind the GIL: the work of one answer, "
        f"request decoded to reply built, takes {got['service_ms']:.3f} ms on average); "
        f"{got['requests_to_members_per_answer']:.4f} member requests per answer "
        "(the refreshes only: an answer reads the cached snapshot)."
    )
    return section
