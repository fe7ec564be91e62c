"""The estimator process: cache refresh loop, gRPC service and HTTP, started and stopped as one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

import grpc
import structlog

from tidal.domain.teams import Teams
from tidal.estimator.cache import MemberCache
from tidal.estimator.server import (
    Estimator,
    EstimatorMetrics,
    HttpServer,
    serve_grpc,
    serve_http,
)
from tidal.karmada.client import KarmadaClient
from tidal.settings import EstimatorSettings

log = structlog.get_logger("tidal.estimator")


def _utcnow() -> datetime:
    return datetime.now(UTC)


class EstimatorApp:
    """`start()` binds both ports (OSError when it cannot) and begins refreshing; answers are
    "cannot tell" (not_ready) until the first refresh is in."""

    def __init__(
        self,
        settings: EstimatorSettings,
        client: KarmadaClient,
        teams: Teams,
        *,
        http_port: int,
        now: Callable[[], datetime] = _utcnow,
        reload: Callable[[], Teams | None] | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = EstimatorMetrics()
        self.cache = MemberCache(client, teams, now=now, on_member=self.metrics.on_member)
        self.estimator = Estimator(
            teams, self.cache, self.metrics, now=now, stale_seconds=settings.stale_seconds
        )
        self._http_port = http_port
        self._reload = reload  # a changed teams file, read again (None: unchanged or invalid)
        self._stop = threading.Event()
        self._grpc: grpc.Server | None = None
        self._http: HttpServer | None = None
        self.grpc_port = self.http_port = 0

    def start(self) -> EstimatorApp:
        s = self.settings
        self._grpc, self.grpc_port = serve_grpc(self.estimator, s.address, s.grpc_port, s.workers)
        try:
            self._http = serve_http(self.estimator, s.address, self._http_port)
        except OSError:
            self._grpc.stop(0)
            raise
        self.http_port = int(self._http.server_address[1])
        threading.Thread(
            target=self._refresh_loop,
            args=(s.refresh_seconds,),
            name="estimator-refresh",
            daemon=True,
        ).start()
        log.info(
            "estimator_started",
            grpc_port=self.grpc_port,
            http_port=self.http_port,
            teams=len(self.cache.teams.teams),
        )
        return self

    def _refresh_loop(self, interval: float) -> None:
        while not self._stop.is_set():
            teams = self._reload() if self._reload is not None else None
            if teams is not None:
                self.cache.teams = teams
            self.cache.refresh()
            if teams is not None:  # answers take the new teams with a snapshot read for them
                self.estimator.teams = teams
                self.estimator.teams_loaded_at = self.estimator.now()
                log.info("estimator_teams_reloaded", teams=len(teams.teams))
            self._stop.wait(interval)

    def wait(self, seconds: float) -> bool:
        return self._stop.wait(seconds)

    def stop(self, grace: float = 1.0) -> None:
        self._stop.set()
        if self._grpc is not None:
            self._grpc.stop(grace).wait(grace + 1)
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
        log.info("estimator_stopped")
