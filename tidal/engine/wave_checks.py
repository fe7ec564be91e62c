"""What is checked before each forward wave, after the previous one converged:

- the run's policies are still what this run wrote (a hand edit since is drift: the run halts,
  whatever onFailure says, and nothing overwrites the edit);
- every cluster the wave moves replicas into is Ready (Karmada would place replicas there
  that never start; the wave fails with its own reason before anything is triggered).

The policies are read afresh (one GET per policy the run wrote): an informer's cache cannot
prove it holds a hand edit made a moment ago (its watch may be slow, stuck or reconnecting),
and a drift missed is a hand edit overwritten. The Clusters come from the run's informer,
which lists afresh itself whenever its watch is not open (see SharedReads.list_clusters).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from tidal.domain.plan import PlannedWorkload
from tidal.domain.prediction import ClusterFacts
from tidal.engine.journal import PolicyRecord, content_hash
from tidal.engine.outcome import WaveOutcome
from tidal.engine.states import ChangeKind, FailureReason
from tidal.karmada import policies as policies_api
from tidal.karmada.client import KarmadaClient, Obj
from tidal.karmada.clusters import list_clusters
from tidal.karmada.views import PolicyView, cluster_ready_reason

POLICY_DRIFT = FailureReason.POLICY_DRIFT
CLUSTER_NOT_READY = FailureReason.CLUSTER_NOT_READY


def edited_policies(
    client: KarmadaClient, records: Iterable[PolicyRecord], *, also_ours: bool = False
) -> list[tuple[str, str]]:
    """(policy, how) for each written policy whose spec no longer hashes to what the run
    wrote. With `also_ours`, the spec from before the run (a rollback already restored it)
    counts as the run's own too. Each is read afresh (a GET), never from an informer: a
    watch may be slow, stuck or between two connections, and its cache would then show the
    run's own write while a hand edit is already there."""
    out: list[tuple[str, str]] = []
    for record in records:
        if record.restored or not record.post_hash:  # a post-hash: the run wrote it
            continue
        found = policies_api.find_policy(client, record.kind, record.name, record.namespace)
        how = _edit(record, found, also_ours)
        if how is not None:
            out.append((record.key, how))
    return out


def _edit(record: PolicyRecord, obj: Obj | None, also_ours: bool) -> str | None:
    """How `obj` differs from what the run wrote (None: it does not)."""
    if obj is None:
        return "deleted"
    now = content_hash(PolicyView(obj).spec_without_activation())
    allowed = {record.post_hash}
    if also_ours and record.action is ChangeKind.PATCH and record.pre_image is not None:
        allowed.add(content_hash(PolicyView({"spec": record.pre_image}).spec_without_activation()))
    return None if now in allowed else "spec edited"


def drift_reason(edited: Sequence[tuple[str, str]]) -> str:
    what = ", ".join(f"{key} ({how})" for key, how in edited)
    return (
        f"{what} since this run wrote it: halted without overwriting the edit; put the "
        "change into the schedule file or run the window again"
    )


def destinations(planned: Iterable[PlannedWorkload]) -> set[str]:
    """Clusters the planned moves add replicas to."""
    return {
        cluster for w in planned for cluster, n in w.after.items() if n > w.before.get(cluster, 0)
    }


def not_ready(
    client: KarmadaClient, clusters: set[str], listed: Callable[[], list[Obj]] | None = None
) -> list[str]:
    """`cluster (reason)` for each of `clusters` whose Ready condition is not True (from
    `listed`, e.g. a shared cache, else a listing)."""
    out = []
    for obj in listed() if listed is not None else list_clusters(client):
        facts = ClusterFacts.from_cluster(obj)
        if facts.name in clusters and not facts.ready:
            out.append(f"{facts.name} ({cluster_ready_reason(obj)})")
    return sorted(out)


def before_wave(
    client: KarmadaClient,
    records: Sequence[PolicyRecord],
    planned: Sequence[PlannedWorkload],
    clusters: Callable[[], list[Obj]] | None = None,
) -> WaveOutcome | None:
    """None when the wave may start; else the failed outcome with its own reason. The
    policies the run wrote are read afresh (one GET each); the Clusters from `clusters` (the
    run's informer, which lists afresh itself while its watch is not open) when given."""
    edited = edited_policies(client, records)
    if edited:
        return WaveOutcome(False, POLICY_DRIFT, drift_reason(edited))
    down = not_ready(client, destinations(planned), clusters)
    if down:
        return WaveOutcome(
            False,
            CLUSTER_NOT_READY,
            f"destination cluster NotReady: {', '.join(down)}; nothing of this wave was moved",
        )
    return None
