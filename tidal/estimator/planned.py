"""The team estimate for `tidal plan`: one read of the members, then the server's own answers.

The plan asks exactly what karmada-scheduler would ask the running estimator, through the same
`answer` over a snapshot read the same way, so plan = result holds with the estimator deployed
(within one refresh interval of the estimator's snapshot).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from tidal.domain.team_capacity import ReplicaClaim, TeamEstimate
from tidal.domain.teams import Teams
from tidal.estimator.answer import answer
from tidal.estimator.cache import MemberCache
from tidal.estimator.check import status
from tidal.estimator.wire import Workload
from tidal.karmada.client import KarmadaClient


def team_estimate(
    client: KarmadaClient, teams: Teams, now: Callable[[], datetime], stale_seconds: float
) -> TeamEstimate:
    """Reads the members once (now) and answers every question from that snapshot."""
    cache = MemberCache(client, teams, now=now)
    snapshot = cache.refresh()
    bound = timedelta(seconds=stale_seconds)

    def estimate(
        namespace: str, kind: str, name: str, request: Mapping[str, float], clusters: Sequence[str]
    ) -> Mapping[str, int]:
        claim = ReplicaClaim(dict(request))
        workload = Workload(kind, namespace, name)
        at = now()
        return {
            c: answer(snapshot, teams, c, claim, namespace, workload, at, bound).replicas
            for c in clusters
        }

    return estimate


def asked_warnings(status_url: str, clusters: Sequence[str]) -> list[str]:
    """Lines for the clusters karmada-scheduler has not asked the running estimator about."""
    seen = status(status_url)
    if seen is None:
        return [
            f"the team estimator's /status at {status_url} is unreadable: cannot tell "
            "whether karmada-scheduler asks it (tidal estimator check)"
        ]
    asked = seen.get("asked") or {}
    return [
        f"cluster {c}: karmada-scheduler has not asked the team estimator about it; the "
        "plan assumes it does (check --enable-scheduler-estimator and the Service "
        "karmada-scheduler-estimator-" + c + "; tidal estimator check)"
        for c in clusters
        if not (asked.get(c) or {}).get("requests")
    ]
