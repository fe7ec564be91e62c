"""`tidal estimator`'s servers: Karmada's Estimator gRPC service, and HTTP probes and metrics.

One process answers for every member: each request names its cluster, and karmada-scheduler
dials the address its Service `<prefix>-<cluster>` resolves to, so every member's Service may
resolve to this one process (see docs/deploying.md).

- MaxAvailableReplicas: the team answer (tidal.estimator.answer), always a number.
- MaxAvailableComponentSets (multi-template workloads): -1, "cannot tell".
- GetUnschedulableReplicas (asked by karmada-descheduler): -1, "cannot tell": the estimator
  does not follow members' pods per workload, and a 0 would claim that none is stuck.
HTTP: /healthz (alive), /readyz (a first snapshot is in), /metrics, /status (JSON: per cluster
the requests seen and the members' read state; `tidal estimator check` reads it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
import orjson
import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from tidal.domain.team_capacity import CANNOT_TELL
from tidal.domain.teams import Teams
from tidal.estimator.answer import Answer, Reason, answer
from tidal.estimator.cache import MemberCache
from tidal.estimator.wire import SERVICE, WireError, claim_of, messages, namespace_of, workload_of

log = structlog.get_logger("tidal.estimator")
UNKNOWN = "(unknown)"  # the cluster label of a request naming no Karmada cluster


class EstimatorMetrics:
    """The estimator's metrics, on a registry of their own (labels: cluster, reason, limit)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.answers = Counter(
            "tidal_estimator_answers_total",
            "MaxAvailableReplicas answers by cluster, reason and limit",
            ["cluster", "reason", "limit"],
            registry=self.registry,
        )
        self.seconds = Histogram(
            "tidal_estimator_answer_seconds",
            "Time to answer one MaxAvailableReplicas request",
            buckets=(1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1),
            registry=self.registry,
        )
        self.readable = Gauge(
            "tidal_estimator_member_readable",
            "1 when the last read of the member through the proxy succeeded",
            ["cluster"],
            registry=self.registry,
        )
        self.member_requests = Counter(
            "tidal_estimator_member_requests_total",
            "Requests sent to members (refreshes, never answers)",
            ["cluster"],
            registry=self.registry,
        )
        self.age = Gauge(
            "tidal_estimator_snapshot_age_seconds",
            "Age of the snapshot answers come from",
            registry=self.registry,
        )

    def on_member(self, cluster: str, readable: bool, sent: int) -> None:
        self.readable.labels(cluster).set(1 if readable else 0)
        self.member_requests.labels(cluster).inc(sent)


class Estimator:
    """Answers questions from the cache's snapshot; keeps what was asked per cluster."""

    def __init__(
        self,
        teams: Teams,
        cache: MemberCache,
        metrics: EstimatorMetrics,
        *,
        now: Callable[[], datetime],
        stale_seconds: float,
    ) -> None:
        self.teams, self.cache, self.metrics = teams, cache, metrics
        self._now = now
        self._bound = timedelta(seconds=stale_seconds)
        self.asked: dict[str, dict[str, Any]] = {}  # cluster -> {count, last}
        self.teams_loaded_at = now()  # when the teams answered with were (re)loaded
        self._lock = threading.Lock()

    def now(self) -> datetime:
        return self._now()

    def max_available(self, request: Any, metadata: Any) -> int:
        started = time.perf_counter()
        workload = workload_of(metadata or ())
        requirements = request.replicaRequirements
        namespace = namespace_of(requirements, workload)
        try:
            claim = claim_of(requirements)
        except WireError as exc:
            log.warning("estimator_bad_request", cluster=request.cluster, error=str(exc))
            claim = None
        now = self._now()
        result = answer(
            self.cache.snapshot,
            self.teams,
            request.cluster,
            claim,
            namespace,
            workload,
            now,
            self._bound,
        )
        self._record(request.cluster, result, namespace, workload, now)
        self.metrics.seconds.observe(time.perf_counter() - started)
        return result.replicas

    def _record(
        self, cluster: str, result: Answer, namespace: str, workload: Any, now: datetime
    ) -> None:
        known = result.reason is not Reason.UNKNOWN_CLUSTER
        label = cluster if known else UNKNOWN
        self.metrics.answers.labels(label, result.reason.value, result.limit.value).inc()
        if workload is not None:  # karmada-scheduler names the workload; `check` does not
            with self._lock:
                seen = self.asked.setdefault(label, {"requests": 0, "last": None})
                seen["requests"] += 1
                seen["last"] = now.isoformat()
        if result.reason not in (Reason.ANSWERED, Reason.NO_TEAM):
            log.info(
                "estimator_cannot_tell",
                cluster=cluster,
                reason=result.reason.value,
                namespace=namespace,
                team=result.team,
                workload=workload.name if workload else "",
            )
        else:
            log.debug(
                "estimator_answer",
                cluster=cluster,
                replicas=result.replicas,
                limit=result.limit.value,
                team=result.team,
                namespace=namespace,
            )

    def status(self) -> dict[str, Any]:
        snap = self.cache.snapshot
        with self._lock:
            asked = {k: dict(v) for k, v in self.asked.items()}
        return {
            "ready": snap.read_at is not None,
            "readAt": snap.read_at.isoformat() if snap.read_at else None,
            "clusters": sorted(snap.clusters),
            "teams": [t.name for t in self.teams.teams],
            "teamsLoadedAt": self.teams_loaded_at.isoformat(),
            "asked": asked,
            "members": {
                name: {
                    "readable": not m.error,
                    "error": m.error,
                    "readAt": m.read_at.isoformat() if m.read_at else None,
                }
                for name, m in snap.members.items()
            },
            "karmadaError": snap.error,
        }


def _handlers(estimator: Estimator) -> grpc.GenericRpcHandler:
    pb = messages()

    def max_replicas(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            replicas = estimator.max_available(request, context.invocation_metadata())
        except Exception:  # never an error answer (#6815): "cannot tell" instead
            log.exception("estimator_failed", cluster=request.cluster)
            replicas = CANNOT_TELL
        return pb.MaxAvailableReplicasResponse(maxReplicas=replicas)

    def component_sets(request: Any, context: grpc.ServicerContext) -> Any:
        return pb.MaxAvailableComponentSetsResponse(maxSets=CANNOT_TELL)

    def unschedulable(request: Any, context: grpc.ServicerContext) -> Any:
        return pb.UnschedulableReplicasResponse(unschedulableReplicas=CANNOT_TELL)

    def unary(fn: Any, req: Any, resp: Any) -> grpc.RpcMethodHandler[Any, Any]:
        return grpc.unary_unary_rpc_method_handler(
            fn, request_deserializer=req.FromString, response_serializer=resp.SerializeToString
        )

    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "MaxAvailableReplicas": unary(
                max_replicas, pb.MaxAvailableReplicasRequest, pb.MaxAvailableReplicasResponse
            ),
            "MaxAvailableComponentSets": unary(
                component_sets,
                pb.MaxAvailableComponentSetsRequest,
                pb.MaxAvailableComponentSetsResponse,
            ),
            "GetUnschedulableReplicas": unary(
                unschedulable, pb.UnschedulableReplicasRequest, pb.UnschedulableReplicasResponse
            ),
        },
    )


def serve_grpc(
    estimator: Estimator, address: str, port: int, workers: int
) -> tuple[grpc.Server, int]:
    """The gRPC server, started; and the port it listens on (0 picks one). OSError when the
    address cannot be bound."""
    server = grpc.server(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="estimator"))
    server.add_generic_rpc_handlers((_handlers(estimator),))
    bound = server.add_insecure_port(f"{address}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen on {address}:{port}")
    server.start()
    return server, bound


class _Http(BaseHTTPRequestHandler):
    server: HttpServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        est = self.server.estimator
        path = self.path.split("?", 1)[0]
        snap = est.cache.snapshot
        if snap.read_at is not None:
            est.metrics.age.set((est._now() - snap.read_at).total_seconds())
        if path == "/metrics":
            self._send(200, generate_latest(est.metrics.registry), CONTENT_TYPE_LATEST)
        elif path in ("/healthz", "/livez"):
            self._send(200, b"ok", "text/plain")
        elif path == "/readyz":
            ready = snap.read_at is not None
            self._send(200 if ready else 503, b"ok" if ready else b"no snapshot yet", "text/plain")
        elif path == "/status":
            self._send(200, orjson.dumps(est.status()), "application/json")
        else:
            self._send(404, b"not found", "text/plain")

    def _send(self, code: int, body: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    estimator: Estimator


def serve_http(estimator: Estimator, address: str, port: int) -> HttpServer:
    """Probes, metrics and /status on a thread of its own; OSError when it cannot bind."""
    httpd = HttpServer((address, port), _Http)
    httpd.estimator = estimator
    threading.Thread(target=httpd.serve_forever, name="estimator-http", daemon=True).start()
    return httpd
