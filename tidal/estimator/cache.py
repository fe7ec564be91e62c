"""What the team estimator answers from: the members and bindings, read on an interval.

One refresh lists the Clusters and the ResourceBindings from Karmada and reads every member a
team rule needs through the cluster proxy (its nodes and pods where a pool is configured, the
quotas of the teams' namespaces), the members side by side. The result is one immutable
`Snapshot`, swapped in whole: an answer reads the snapshot in force and sends no request, so
it takes microseconds and the scheduler's calls cost the members nothing. A member that cannot
be read keeps its last view with the error and the time of its last good read; answers from
a view older than the staleness bound are "cannot tell".
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

import structlog

from tidal.domain.teams import Teams
from tidal.karmada.bindings import list_bindings
from tidal.karmada.client import CLUSTERS, KarmadaClient, Obj
from tidal.karmada.errors import KarmadaError
from tidal.karmada.members import MemberView, read_member
from tidal.karmada.paging import list_paged

log = structlog.get_logger("tidal.estimator")


@dataclass(frozen=True)
class MemberState:
    view: MemberView | None = None
    read_at: datetime | None = None  # the last good read
    error: str = ""  # the last read's failure ("" when it succeeded)


@dataclass(frozen=True)
class Snapshot:
    """Everything an answer needs, as of `read_at` (None: nothing read yet)."""

    read_at: datetime | None = None
    clusters: frozenset[str] = frozenset()
    members: Mapping[str, MemberState] = field(default_factory=dict)
    # replicas the bindings hold: (cluster, team) -> sum; (namespace, binding) -> per cluster
    held: Mapping[tuple[str, str], int] = field(default_factory=dict)
    bindings: Mapping[tuple[str, str], Mapping[str, int]] = field(default_factory=dict)
    error: str = ""  # Karmada itself could not be read
    # the templates' labels, (namespace, kind, name) -> labels, where a team needs them
    labels: Mapping[tuple[str, str, str], Mapping[str, str]] = field(default_factory=dict)


def _placed(obj: Obj) -> tuple[str, str, dict[str, str], dict[str, int]]:
    """A binding's namespace, name, template reference and replicas per cluster."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    placed = {
        str(t.get("name")): int(t.get("replicas") or 0)
        for t in spec.get("clusters") or []
        if isinstance(t, dict)
    }
    return (
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        dict(spec.get("resource") or {}),
        placed,
    )


def _held(
    bindings: list[Obj], teams: Teams, labels: Mapping[tuple[str, str, str], Mapping[str, str]]
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], dict[str, int]]]:
    held: dict[tuple[str, str], int] = {}
    per_binding: dict[tuple[str, str], dict[str, int]] = {}
    for obj in bindings:
        namespace, name, ref, placed = _placed(obj)
        per_binding[(namespace, name)] = placed
        team = teams.team_of(
            namespace, labels.get((namespace, str(ref.get("kind")), str(ref.get("name"))))
        )
        if team is None:
            continue
        for cluster, replicas in placed.items():
            held[(cluster, team.name)] = held.get((cluster, team.name), 0) + replicas
    return held, per_binding


def template_labels(
    client: KarmadaClient, teams: Teams, bindings: list[Obj]
) -> dict[tuple[str, str, str], Mapping[str, str]]:
    """Labels of the bindings' templates in the namespaces of teams told apart by labels: one
    list per (kind, namespace)."""
    if not teams.by_labels:
        return {}
    wanted = [t for t in teams.teams if t.selector is not None]
    kinds: set[tuple[str, str, str]] = set()
    for obj in bindings:
        namespace, _, ref, _ = _placed(obj)
        if any(not t.namespaces or namespace in t.namespaces for t in wanted):
            kinds.add((str(ref.get("apiVersion")), str(ref.get("kind")), namespace))
    found: dict[tuple[str, str, str], Mapping[str, str]] = {}
    for api_version, kind, namespace in sorted(kinds):
        res = client.resource_for(api_version, kind)
        for item in list_paged(client, res, namespace)[0]:
            meta = item.get("metadata") or {}
            found[(namespace, kind, str(meta.get("name")))] = dict(meta.get("labels") or {})
    return found


class MemberCache:
    """Keeps the snapshot fresh; `snapshot` is safe to read from any thread."""

    def __init__(
        self,
        client: KarmadaClient,
        teams: Teams,
        *,
        now: Callable[[], datetime],
        on_member: Callable[[str, bool, int], None] | None = None,
        workers: int = 4,
    ) -> None:
        self.client = client
        self.teams = teams
        self._now = now
        self._on_member = on_member  # (cluster, readable, requests sent)
        self._workers = workers
        self.snapshot = Snapshot()
        self.member_requests = 0  # requests sent to members, all refreshes together
        self._lock = threading.Lock()

    def refresh(self) -> Snapshot:
        """One pass; never raises (failures are in the snapshot and in log events)."""
        with self._lock:
            previous = self.snapshot
            try:
                clusters = frozenset(
                    str((c.get("metadata") or {}).get("name"))
                    for c in list_paged(self.client, CLUSTERS)[0]
                )
                bindings = list_bindings(self.client)[0]
                labels = template_labels(self.client, self.teams, bindings)
                held, per_binding = _held(bindings, self.teams, labels)
            except KarmadaError as exc:
                log.warning("estimator_karmada_unreadable", error=str(exc))
                self.snapshot = Snapshot(
                    previous.read_at,
                    previous.clusters,
                    previous.members,
                    previous.held,
                    previous.bindings,
                    str(exc),
                    previous.labels,
                )
                return self.snapshot
            wanted = sorted(
                c for c in clusters if self.teams.pools(c) or self.teams.quota_namespaces(c)
            )
            with ThreadPoolExecutor(
                max_workers=max(1, min(self._workers, len(wanted) or 1))
            ) as pool:
                states = dict(
                    zip(
                        wanted,
                        pool.map(lambda c: self._read(c, previous.members.get(c)), wanted),
                        strict=True,
                    )
                )
            self.snapshot = Snapshot(
                self._now(), clusters, states, held, per_binding, labels=labels
            )
            return self.snapshot

    def _read(self, cluster: str, before: MemberState | None) -> MemberState:
        try:
            view = read_member(
                self.client,
                cluster,
                nodes=bool(self.teams.pools(cluster)),
                namespaces=self.teams.quota_namespaces(cluster),
            )
        except KarmadaError as exc:
            if before is None or not before.error:
                log.warning("estimator_member_unreadable", cluster=cluster, error=str(exc))
            self._report(cluster, False, 1)
            return MemberState(
                before.view if before else None,
                before.read_at if before else None,
                str(exc) or "unreadable",
            )
        if before is not None and before.error:
            log.info("estimator_member_readable", cluster=cluster)
        self._report(cluster, True, view.requests)
        return MemberState(view, self._now())

    def _report(self, cluster: str, readable: bool, sent: int) -> None:
        self.member_requests += sent
        if self._on_member is not None:
            self._on_member(cluster, readable, sent)

    def run(self, stop: threading.Event, interval: float) -> None:
        """Refresh every `interval` seconds until `stop` is set."""
        while not stop.is_set():
            self.refresh()
            stop.wait(interval)
