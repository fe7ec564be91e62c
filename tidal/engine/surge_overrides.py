"""A surging wave's overrides, grouped: one OverridePolicy (a ClusterOverridePolicy for
cluster-scoped templates) per distinct override the wave needs, selecting every workload of the
wave that needs exactly it, rather than one per workload.

Why this shape: an override rule has no selector of its own (`overrideRules[]` is only
`targetCluster` + `overriders`), so every template a policy's `resourceSelectors` select gets
the same plaintext `replace /spec/replicas` value per cluster. Workloads can therefore share a
policy exactly when they share namespace (an OverridePolicy acts in its own namespace only),
replica paths and the replicas to set per cluster: that triple is the group's key. Karmada
matches each selector independently (kind, namespace, name), so a policy naming a hundred
templates applies to each as a policy naming it alone would, and a create, change or delete of
the policy re-syncs exactly the bindings it selects. The number of groups is the number of
distinct splits in the wave (bounded by the replica counts of the fleet), not the number of
workloads, so a wave costs a few writes however large it is.

Each group is named after its key (a digest) and carries the run's owner marks (schedule, run,
wave, purpose) like any override, so issue 25's sweeper and a next run find a leftover by
them. When membership changes (a fitted split moves a workload to another group; a lifted one
leaves its group), the groups gaining a member are written first and the ones losing it after,
so a workload is never for a moment without its override; a group left empty, or named by the
journal from before (an older run's one-per-workload names too), is deleted last. Every name is
journalled before it is written.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from tidal.engine.journal import SurgeRecord
from tidal.engine.patience import patiently
from tidal.engine.resolve import Workload
from tidal.engine.states import Direction
from tidal.karmada.client import CLUSTER_OVERRIDE_POLICIES, OVERRIDE_POLICIES
from tidal.karmada.errors import AlreadyExists, Forbidden, NotFound
from tidal.karmada.overrides import (
    REPLICAS_PATH,
    OverrideRef,
    Owner,
    ReplicaOverride,
    TemplateRef,
    create_override,
    delete_override,
    delete_owned,
    replace_override,
)

if TYPE_CHECKING:
    from tidal.engine.inflight import SwitchContext

Split = Mapping[str, int]
GroupKey = tuple[str, tuple[str, ...], tuple[tuple[str, int], ...]]  # namespace, paths, split


def group_key(w: Workload, split: Split) -> GroupKey:
    return (
        w.key.namespace,
        tuple(w.replica_paths or (REPLICAS_PATH,)),
        tuple(sorted(split.items())),
    )


def group_name(owner: Owner, key: GroupKey) -> str:
    """`tidal-<schedule>-<run>-w<wave>[-back]-g<digest of the key>` (lower case)."""
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:10]
    suffix = "-back" if owner.back else ""
    return f"tidal-{owner.schedule}-{owner.run_id}-w{owner.wave}{suffix}-g{digest}".lower()


def grouped(owner: Owner, members: Iterable[tuple[Workload, Split]]) -> dict[str, ReplicaOverride]:
    """One override per group key of `members` (workload, split), by reference text."""
    by_key: dict[GroupKey, list[TemplateRef]] = {}
    for w, split in members:
        if not split:  # nothing to set (a lifted workload)
            continue
        refs = by_key.setdefault(group_key(w, split), [])
        ref = TemplateRef(w.key.api_version, w.key.kind, w.key.name, w.key.namespace)
        if ref not in refs:
            refs.append(ref)
    out: dict[str, ReplicaOverride] = {}
    for group, refs in sorted(by_key.items()):
        _namespace, paths, replicas = group
        override = ReplicaOverride(
            group_name(owner, group),
            owner,
            tuple(sorted(refs, key=lambda t: (t.kind, t.name))),
            dict(replicas),
            paths=paths,
        )
        out[str(override.ref)] = override
    return out


def _members(
    workloads: Mapping[str, Workload], targets: Mapping[str, Split]
) -> list[tuple[Workload, Split]]:
    return [
        (workloads[name], split)
        for name, split in sorted(targets.items())
        if name in workloads and split
    ]


def write_overrides(
    ctx: SwitchContext,
    wave: int,
    record: SurgeRecord,
    workloads: Mapping[str, Workload],
    *,
    direction: Direction,
    before: Mapping[str, Split] | None = None,
) -> None:
    """Make the wave's overrides those `record.targets` need; `before`: the targets they were
    written for (None: as the journal names them, every one written again), so that only the
    groups that change are written, and a workload moving to another group is held by its old
    one until its new one holds it."""
    owner = Owner(ctx.schedule, ctx.run_id, wave, direction.rollback)
    wanted = grouped(owner, _members(workloads, record.targets))
    written = set(record.overrides)
    stale = [ref for ref in record.overrides if ref not in wanted]
    record.overrides = [*wanted, *stale]  # journalled before any write
    ctx.save()
    first, previous = _first_pass(owner, wanted, record, workloads, before)
    for ref, override in first.items():
        if ref in previous and ref in written and previous[ref].templates == override.templates:
            continue  # as written already
        _put(ctx, override, exists=ref in written)
    for ref, override in wanted.items():
        if first[ref].templates != override.templates:  # it held movers: let them go
            _put(ctx, override, exists=True)
    for ref in stale:
        _delete(ctx, OverrideRef.parse(ref))
        record.overrides.remove(ref)
        ctx.save()


def _first_pass(
    owner: Owner,
    wanted: dict[str, ReplicaOverride],
    record: SurgeRecord,
    workloads: Mapping[str, Workload],
    before: Mapping[str, Split] | None,
) -> tuple[dict[str, ReplicaOverride], dict[str, ReplicaOverride]]:
    """The groups of the first writing pass (movers still held by their old group, where it
    stays) and the groups as they were written for `before` (empty: unknown)."""
    if before is None:
        return wanted, {}
    previous = grouped(owner, _members(workloads, before))
    moving = [
        (workloads[n], dict(s))
        for n, s in sorted(before.items())
        if n in workloads and s and record.targets.get(n) and dict(record.targets[n]) != dict(s)
    ]
    held = grouped(owner, [*_members(workloads, record.targets), *moving])
    return {ref: held[ref] for ref in wanted}, previous


def _put(ctx: SwitchContext, override: ReplicaOverride, *, exists: bool) -> None:
    """Create it, or replace the one there (replaced with the verbs tidal's RBAC has always
    granted: read, then update; the read is skipped when this run wrote it last, its answer
    kept in ctx.overrides_written), trying first what `exists` guesses."""
    ref = str(override.ref)
    written = ctx.overrides_written
    if exists:
        try:
            written[ref] = dict(replace_override(ctx.client, override, known=written.get(ref)).raw)
            return
        except NotFound:
            pass
    try:
        written[ref] = dict(create_override(ctx.client, override).raw)
    except AlreadyExists:
        written[ref] = dict(replace_override(ctx.client, override).raw)


def _delete(ctx: SwitchContext, ref: OverrideRef) -> None:
    ctx.overrides_written.pop(str(ref), None)
    patiently(
        ctx.client, ctx.clock, ctx.wave_timeout, functools.partial(delete_override, ctx.client, ref)
    )


def remove_overrides(
    ctx: SwitchContext, wave: int, record: SurgeRecord, *, direction: Direction, deadline: float
) -> None:
    """Delete every override `record` names: one deletecollection by the owner labels per
    namespace (and one for the cluster-scoped ones), then one by one whatever is still named
    (one from before the direction label, or everything where deletecollection is not
    granted); each one gone leaves the journalled list. Retried on 429/5xx/timeouts until
    `deadline` (the clock's monotonic seconds)."""
    owner = Owner(ctx.schedule, ctx.run_id, wave, direction.rollback)
    for text in record.overrides:
        ctx.overrides_written.pop(text, None)
    scopes = sorted({OverrideRef.parse(text).namespace for text in record.overrides})
    for namespace in scopes:
        plural = (OVERRIDE_POLICIES if namespace else CLUSTER_OVERRIDE_POLICIES).plural
        if plural in ctx.collection_refused:
            continue
        try:
            gone = patiently(
                ctx.client,
                ctx.clock,
                deadline - ctx.clock.monotonic(),
                functools.partial(delete_owned, ctx.client, owner, namespace or None),
            )
        except Forbidden:
            ctx.collection_refused.add(plural)  # an RBAC from before: one by one from now on
            continue
        left = [text for text in record.overrides if OverrideRef.parse(text) not in gone]
        if left != record.overrides:
            record.overrides = left
            ctx.save()
    for text in list(record.overrides):
        ref = OverrideRef.parse(text)
        patiently(
            ctx.client,
            ctx.clock,
            deadline - ctx.clock.monotonic(),
            functools.partial(delete_override, ctx.client, ref),
        )
        record.overrides.remove(text)
        ctx.save()
