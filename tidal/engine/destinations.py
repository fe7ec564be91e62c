"""Health to the end of a wave: the clusters it moves replicas into are checked for Ready not
only before it starts (tidal.engine.wave_checks) but while it settles (every wait of the wave,
at most once a second) and once more before its surge is released and before it is counted
`succeeded`. Karmada keeps a NotReady member's last status, so its replicas still read as
ready: only the Cluster's condition tells. A destination that turns NotReady fails the wave
(cluster_not_ready, naming the cluster); the run halts or rolls back as onFailure says."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from tidal.domain.clock import Clock
from tidal.engine.outcome import WaveOutcome
from tidal.engine.states import FailureReason
from tidal.engine.wave_checks import not_ready
from tidal.karmada.client import KarmadaClient, Obj
from tidal.karmada.errors import KarmadaError


class SwitchContext(Protocol):
    """What a health check needs of the run (tidal.engine.inflight.SwitchContext)."""

    client: KarmadaClient
    clock: Clock

    def list_clusters(self) -> list[Obj]: ...


CHECK_SECONDS = 1.0


class DestinationHealth:
    """Readiness of one wave's destination clusters."""

    def __init__(self, ctx: SwitchContext, wave: int, clusters: Collection[str]) -> None:
        self.ctx, self.wave, self.clusters = ctx, wave, set(clusters)
        self._last = float("-inf")

    def check(self, *, now: bool = False) -> WaveOutcome | None:
        """None while every destination is Ready (or not looked at: less than a second since
        the last look, unless `now`); the failed outcome otherwise."""
        if not self.clusters:
            return None
        clock = self.ctx.clock.monotonic()
        if not now and clock - self._last < CHECK_SECONDS:
            return None
        self._last = clock
        try:
            down = not_ready(self.ctx.client, self.clusters, self.ctx.list_clusters)
        except KarmadaError:
            return None  # unknown is not NotReady: the next look decides
        if not down:
            return None
        return WaveOutcome(
            False,
            FailureReason.CLUSTER_NOT_READY,
            f"destination cluster turned NotReady during wave {self.wave}: {', '.join(down)}",
        )
