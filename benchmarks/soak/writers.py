"""The single-writer check over the emulator's request log.

The promise (docs/reliability.md §3): every acting write, and every retry of one, is *sent* only
while the replica holds the leader Lease with time left. A write sent just before the replica
is deposed (a latency spike at the server, a SIGSTOP between the gate and the socket) is
still accepted by the API server and lands after the Lease passed on: the gate cannot recall
it. So a write by a replica that no longer holds the Lease is allowed only when it is the
first one, per worker, since that replica was deposed (a worker sends one request at a time,
and its next one meets the closed gate) and it overwrites nothing the new holder wrote since.
Anything else is a violation."""

from __future__ import annotations

import bisect
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchmarks.soak.scenario import NS, STATE_NS, TEAMS

# Writes that act on the control plane on a schedule's behalf (Events are best-effort,
# Leases are how replicas compete for the right to act: both excluded).
ACTING = {
    "clusterpropagationpolicies",
    "propagationpolicies",
    "deployments",
    "workloadrebalancers",
    "configmaps",
    "overridepolicies",
    "clusteroverridepolicies",
}
LEADER_SLACK_SECONDS = 1.0  # a delete (no resourceVersion) is judged by time, with this slack
# A write that changes its object gets a resourceVersion above every one committed before it
# was applied; the request log is in completion order, so allow this much reordering.
ORDER_SLACK_SECONDS = 1.0


def is_acting(r: Any) -> bool:
    return (
        r.verb not in ("get", "list", "watch")
        and r.code < 400
        and not r.dry_run
        and r.resource.split("/")[0] in ACTING
        and r.identity not in ("", "soak")
    )


def worker_of(r: Any) -> str:
    """The schedule a write acts for: its switches run on one worker at a time."""
    name = str(r.name or "")
    for team in TEAMS:
        if (
            name == team.policy
            or name in team.workload_names()
            or name in (f"tidal-run-{team.schedule}", f"tidal-sched-{team.schedule}")
            or name.startswith(f"tidal-{team.schedule}-")
        ):
            return team.schedule
    return f"{r.resource}/{r.namespace or ''}/{name}"


@dataclass
class LeaseHistory:
    """Every change of the leader Lease's holder, by resourceVersion and by time."""

    versions: list[tuple[int, str | None]] = field(default_factory=list)
    times: list[tuple[float, str | None]] = field(default_factory=list)

    def holder_at_version(self, version: int) -> str | None:
        index = bisect.bisect_left([v for v, _ in self.versions], version) - 1
        return self.versions[index][1] if index >= 0 else None

    def holders_near(self, t: float) -> set[str | None]:
        """Who held the Lease at any time in [t - slack, t]."""
        holders: set[str | None] = set()
        current: str | None = None
        for when, holder in self.times:
            if when <= t - LEADER_SLACK_SECONDS:
                current = holder
            elif when <= t + 0.2:
                holders.add(holder)
        holders.add(current)
        return holders

    @staticmethod
    def _deposal(
        changes: list[tuple[Any, str | None]], who: str, before: Callable[[Any], bool]
    ) -> Any | None:
        """Where `who` last stopped holding the Lease, among the changes before a point."""
        found = None
        for i in range(1, len(changes)):
            at, holder = changes[i]
            if not before(at):
                break
            if changes[i - 1][1] == who and holder != who:
                found = at
        return found

    def deposed_at_version(self, who: str, version: int) -> int | None:
        found = self._deposal(self.versions, who, lambda v: v < version)
        return int(found) if found is not None else None

    def deposed_at_time(self, who: str, t: float) -> float | None:
        found = self._deposal(self.times, who, lambda w: w <= t)
        return float(found) if found is not None else None


@dataclass
class WriterReport:
    writes: int = 0  # acting writes checked
    late: int = 0  # in-flight writes that landed after a deposal, allowed
    unchanged: int = 0  # writes that changed nothing (judged by time)
    by_holder: Counter[str] = field(default_factory=Counter)


def unchanged_writes(records: list[Any], seen_at: Mapping[int, float] | None = None) -> set[int]:
    """The seq of every write that changed nothing. The API server answers a write that
    leaves its object as it was (a resumed run saving the state it loaded) with the object's
    old resourceVersion: that number places the write where the object last changed, maybe
    under an earlier holder, not where the write happened. Such a write reports a
    resourceVersion an earlier request already reported (a create's record has no name, so
    versions alone are compared: each names one change of the store), one the store made
    well before the write (`seen_at`: when the checker saw each version), or one below a
    version committed well before it."""
    out: set[int] = set()
    reported: set[int] = set()
    ordered = sorted((r for r in records if r.resource_version is not None), key=lambda r: r.seq)
    by_time = sorted(ordered, key=lambda r: r.time)
    highest, j = 0, 0
    for r in ordered:
        while j < len(by_time) and by_time[j].time <= r.time - ORDER_SLACK_SECONDS:
            highest = max(highest, by_time[j].resource_version)
            j += 1
        version = r.resource_version
        made = (seen_at or {}).get(version)
        if (
            version in reported
            or version < highest
            or (made is not None and made < r.time - ORDER_SLACK_SECONDS)
        ):
            out.add(r.seq)
        reported.add(version)
    return out


def check_writers(
    records: Iterable[Any],
    lease: LeaseHistory,
    violation: Callable[[str], None],
    seen_at: Mapping[int, float] | None = None,
) -> WriterReport:
    """Judge every acting write in the request log against the Lease holder when it landed:
    at its resourceVersion when the write changed the store (creates, updates, patches),
    else at its time (deletes, and writes that changed nothing)."""
    report = WriterReport()
    records = list(records)
    unchanged = unchanged_writes([r for r in records if r.code < 400 and not r.dry_run], seen_at)
    acting = [r for r in records if is_acting(r)]
    by_object: dict[tuple[str, str | None, str | None], list[tuple[int, str]]] = {}
    for r in acting:
        if r.resource_version is not None and r.seq not in unchanged:
            by_object.setdefault((r.resource, r.namespace, r.name), []).append(
                (r.resource_version, r.identity)
            )
    late: Counter[tuple[Any, str, str]] = Counter()
    for r in acting:
        report.writes += 1
        report.by_holder[r.identity] += 1
        version = None if r.seq in unchanged else r.resource_version
        report.unchanged += r.seq in unchanged
        if version is not None and lease.versions:
            if r.identity == lease.holder_at_version(version):
                continue
            deposed: float | None = lease.deposed_at_version(r.identity, version)
            where = f"at resourceVersion {version}"
            holder = lease.holder_at_version(version)
        else:
            if r.identity in lease.holders_near(r.time):
                continue
            deposed = lease.deposed_at_time(r.identity, r.time)
            where = f"at {time.strftime('%H:%M:%S', time.gmtime(r.time))}"
            holder = None
        what = f"{r.verb} {r.resource} {r.name} by {r.identity} {where}"
        held_by = f"the Lease was held by {holder}" if holder else "not the leader"
        if deposed is None:
            violation(f"{what}: {held_by}, and {r.identity} had never held it")
            continue
        key = (deposed, r.identity, worker_of(r))
        late[key] += 1
        if late[key] > 1:
            violation(
                f"{what}: {held_by}; write {late[key]} of worker {key[2]} since "
                f"{r.identity} lost the Lease (one in flight at most)"
            )
            continue
        overwritten = [
            who
            for v, who in by_object.get((r.resource, r.namespace, r.name), [])
            if version is not None and deposed < v < version and who != r.identity
        ]
        if overwritten:
            violation(
                f"{what}: {held_by}; a write in flight at the deposal that overwrote "
                f"{overwritten[-1]}'s later write of the same object"
            )
            continue
        report.late += 1
    return report


def check_scope(records: Iterable[Any], violation: Callable[[str], None]) -> int:
    """The daemons write only what the schedules name (plus their own state, Lease, run locks,
    Events and their surge waves' overrides); returns how many writes were checked."""
    policies = {t.policy for t in TEAMS}
    workloads = {w for t in TEAMS for w in t.workload_names()}
    checked = 0
    for r in records:
        if r.verb in ("get", "list", "watch") or r.code >= 400 or not r.identity:
            continue
        checked += 1
        plural = r.resource.split("/")[0]
        ok = (
            (plural == "clusterpropagationpolicies" and r.name in policies)
            or (plural == "deployments" and r.namespace == NS and r.name in workloads)
            or (plural == "workloadrebalancers" and str(r.name or "").startswith("tidal-"))
            or (plural == "workloadrebalancers" and r.verb == "create")
            # surge waves: the runs' own overrides (a POST carries no name)
            or (
                plural == "overridepolicies"
                and r.namespace == NS
                and (r.verb == "create" or str(r.name or "").startswith("tidal-"))
            )
            # a wave's overrides and a run's rebalancers are deleted by their owner labels, in
            # one request (a deletecollection carries no name; its selector names the run)
            or (plural == "overridepolicies" and r.namespace == NS and r.verb == "deletecollection")
            or (plural == "workloadrebalancers" and r.verb == "deletecollection")
            or (plural in ("configmaps", "leases") and r.namespace == STATE_NS)
            or (plural == "namespaces" and r.verb == "create")
            or plural == "events"
        )
        if not ok:
            violation(
                f"{r.identity} wrote outside the schedules: {r.verb} "
                f"{r.resource} {r.namespace or ''}/{r.name or ''}"
            )
    return checked
