"""A surging run's overrides, grouped: one OverridePolicy (a ClusterOverridePolicy for
cluster-scoped templates) per distinct override the run holds at a time, selecting every
workload of any of its waves that needs exactly it, rather than one per workload or per wave.

Why this shape: an override rule has no selector of its own (`overrideRules[]` is only
`targetCluster` + `overriders`), so every template a policy's `resourceSelectors` select gets
the same plaintext `replace /spec/replicas` value per cluster. Workloads can therefore share a
policy exactly when they share namespace (an OverridePolicy acts in its own namespace only),
replica paths and the replicas to set per cluster: that triple is the group's key. Karmada
matches each selector independently (kind, namespace, name), so a policy naming a hundred
templates applies to each as a policy naming it alone would, and a create, change or delete of
the policy re-syncs exactly the bindings it selects.

The groups are the run's, not a wave's (owner wave 0): what they select is worked out from
every surge record of the run in one direction that holds its overrides (`HOLDING`). Waves
raised ahead together join the same groups in one write each, and a wave whose overrides only
restate the split Karmada now assigns (parked, tidal.engine.surging) stays in them at no cost
until the run ends, when one deletecollection by the owner labels removes them all. So a
run costs about one write per distinct split it ever holds, not one per split per wave.

Each group is named after its key (a digest) and carries the run's owner marks (schedule, run,
direction, purpose) like any override, so issue 25's sweeper and a next run find a leftover by
them. When membership changes (a fitted split moves a workload to another group; a lifted or
released one leaves its group), the groups gaining a member are written first and the ones
losing it after, so a workload is never for a moment without its override; a group left
empty, or named by the journal from before (an older run's per-wave names too), is deleted
last. Every name is journalled, in the records whose workloads it selects, before it is
written.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from tidal.engine.journal import SurgeRecord
from tidal.engine.patience import patiently
from tidal.engine.resolve import Workload
from tidal.engine.states import Direction, SurgeStep
from tidal.karmada.client import CLUSTER_OVERRIDE_POLICIES, OVERRIDE_POLICIES
from tidal.karmada.errors import AlreadyExists, Forbidden, NotFound
from tidal.karmada.objects import Obj
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
from tidal.karmada.views import OverrideView

if TYPE_CHECKING:
    from tidal.engine.inflight import SwitchContext

Split = Mapping[str, int]
GroupKey = tuple[str, tuple[str, ...], tuple[tuple[str, int], ...]]  # namespace, paths, split

# the owner wave of a group: any wave of the run
RUN_WIDE: Final = 0

# records whose workloads the run's overrides select (RELEASING: being taken out)
HOLDING: Final = frozenset(
    {SurgeStep.RESERVED, SurgeStep.SURGED, SurgeStep.MOVING, SurgeStep.PARKED, SurgeStep.KEPT}
)


def group_key(w: Workload, split: Split) -> GroupKey:
    return (
        w.key.namespace,
        tuple(w.replica_paths or (REPLICAS_PATH,)),
        tuple(sorted(split.items())),
    )


def group_name(owner: Owner, key: GroupKey) -> str:
    """`tidal-<schedule>-<run>[-back]-g<digest of the key>` (lower case); a wave's own
    (owner wave above 0) has `-w<wave>` after the run."""
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:10]
    suffix = "-back" if owner.back else ""
    wave = f"-w{owner.wave}" if owner.wave != RUN_WIDE else ""
    return f"tidal-{owner.schedule}-{owner.run_id}{wave}{suffix}-g{digest}".lower()


def template_of(w: Workload) -> TemplateRef:
    return TemplateRef(w.key.api_version, w.key.kind, w.key.name, w.key.namespace)


def grouped(owner: Owner, members: Iterable[tuple[Workload, Split]]) -> dict[str, ReplicaOverride]:
    """One override per group key of `members` (workload, split), by reference text."""
    by_key: dict[GroupKey, list[TemplateRef]] = {}
    for w, split in members:
        if not split:  # nothing to set (a lifted workload)
            continue
        refs = by_key.setdefault(group_key(w, split), [])
        ref = template_of(w)
        if ref not in refs:
            refs.append(ref)
    out: dict[str, ReplicaOverride] = {}
    for group, refs in sorted(by_key.items()):
        _namespace, paths, replicas = group
        override = ReplicaOverride(
            group_name(owner, group),
            owner,
            _sorted(refs),
            dict(replicas),
            paths=paths,
        )
        out[str(override.ref)] = override
    return out


def _sorted(refs: Iterable[TemplateRef]) -> tuple[TemplateRef, ...]:
    return tuple(sorted(set(refs), key=lambda t: (t.kind, t.name, t.api_version)))


def run_owner(ctx: SwitchContext, direction: Direction) -> Owner:
    return Owner(ctx.schedule, ctx.run_id, RUN_WIDE, direction.rollback)


def records_of(ctx: SwitchContext, direction: Direction) -> list[SurgeRecord]:
    """The run's surge records in `direction` whose overrides may exist."""
    return [
        record
        for wave in ctx.state.waves
        for leg in wave.legs
        if leg.direction is direction and (record := leg.surge) is not None and record.active
    ]


def _members(
    by_name: Mapping[str, Workload], targets: Mapping[str, Split]
) -> list[tuple[Workload, Split]]:
    return [
        (by_name[name], split)
        for name, split in sorted(targets.items())
        if name in by_name and split
    ]


def _written(ctx: SwitchContext) -> dict[str, frozenset[TemplateRef]]:
    """What each override this process wrote last selects (from the answers it kept)."""
    return {ref: _selected(raw) for ref, raw in ctx.overrides_written.items()}


def _selected(raw: Obj) -> frozenset[TemplateRef]:
    return frozenset(
        TemplateRef(api, kind, name, namespace)
        for api, kind, namespace, name in OverrideView.of(raw).templates()
    )


@dataclass(frozen=True)
class _Changes:
    """What a sync writes: the groups wanted, those of the first pass (movers still held by
    their old group), the ones to write in it, the stale ones to delete last, and the ones
    the run knows to be there."""

    wanted: dict[str, ReplicaOverride]
    first: dict[str, ReplicaOverride]
    writes: list[str]
    stale: list[str]
    known: frozenset[str]


def _changes(
    ctx: SwitchContext, owner: Owner, records: list[SurgeRecord], by_name: Mapping[str, Workload]
) -> _Changes:
    holding = [r for r in records if r.step in HOLDING]
    wanted = grouped(owner, [m for r in holding for m in _members(by_name, r.targets)])
    named = {ref for r in records for ref in r.overrides}
    written = _written(ctx)
    first = _first_pass(wanted, written, _group_of(wanted))
    return _Changes(
        wanted,
        first,
        [ref for ref, o in first.items() if written.get(ref) != frozenset(o.templates)],
        sorted(named - set(wanted)),
        frozenset(named | set(written)),
    )


def _group_of(wanted: Mapping[str, ReplicaOverride]) -> dict[TemplateRef, str]:
    return {t: ref for ref, o in wanted.items() for t in o.templates}


def sync(ctx: SwitchContext, direction: Direction) -> None:
    """Make the run's overrides in `direction` select exactly what its records in `HOLDING`
    set (see the module's doc for the order of the writes); the names are journalled in the
    records first, and a record not holding any more keeps naming what is still to go."""
    owner = run_owner(ctx, direction)
    records = records_of(ctx, direction)
    by_name = {w.name: w for w in ctx.everyone}
    c = _changes(ctx, owner, records, by_name)
    renamed = _rename(records, by_name, _group_of(c.wanted), set(c.stale))
    if renamed or c.writes or c.stale:
        ctx.save()  # names (and whatever the caller changed) before any write
    if not c.wanted and c.stale:
        _remove_all(ctx, owner, records)
        return
    for ref in c.writes:
        _put(ctx, c.first[ref], exists=ref in c.known)
    for ref, override in c.wanted.items():
        if c.first[ref].templates != override.templates:  # it held movers: let them go
            _put(ctx, override, exists=True)
    for ref in c.stale:
        _delete(ctx, OverrideRef.parse(ref))
    _forget(ctx, records, c.stale)


def _forget(ctx: SwitchContext, records: list[SurgeRecord], gone: Iterable[str]) -> None:
    """Overrides `gone` leave every record that names them (journalled if one did)."""
    drop = set(gone)
    if any(ref in drop for r in records for ref in r.overrides):
        for r in records:
            r.overrides = [ref for ref in r.overrides if ref not in drop]
        ctx.save()


def _rename(
    records: Iterable[SurgeRecord],
    by_name: Mapping[str, Workload],
    group_of: Mapping[TemplateRef, str],
    stale: set[str],
) -> bool:
    """Name in each record the groups that select its workloads (none once it does not hold
    them), and the stale ones it named until they are gone; whether a name changed."""
    changed = False
    for r in records:
        mine: set[str] = set()
        if r.step in HOLDING:
            mine = {group_of[template_of(w)] for w, _split in _members(by_name, r.targets)}
        names = [*sorted(mine), *(ref for ref in r.overrides if ref in stale)]
        changed = changed or names != r.overrides
        r.overrides = names
    return changed


def _first_pass(
    wanted: Mapping[str, ReplicaOverride],
    written: Mapping[str, frozenset[TemplateRef]],
    group_of: Mapping[TemplateRef, str],
) -> dict[str, ReplicaOverride]:
    """The groups of the first writing pass: each as wanted, plus the members it selected
    before that another group now wants (held until that one is written)."""
    out: dict[str, ReplicaOverride] = {}
    for ref, override in wanted.items():
        movers = [t for t in written.get(ref, ()) if group_of.get(t, ref) != ref]
        out[ref] = (
            replace(override, templates=_sorted([*override.templates, *movers]))
            if movers
            else override
        )
    return out


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


def _remove_all(ctx: SwitchContext, owner: Owner, records: list[SurgeRecord]) -> None:
    """Nothing is held any more: delete every override the records name, with one
    deletecollection by the run's owner labels per namespace (and one for the cluster-scoped
    ones), then one by one whatever is still named (one from before the run-wide groups, or
    everything where deletecollection is not granted); each one gone leaves the journal.
    Retried on 429/5xx/timeouts within one waveTimeout for them all."""
    deadline = ctx.clock.monotonic() + ctx.wave_timeout
    named = sorted({ref for r in records for ref in r.overrides})
    for text in named:
        ctx.overrides_written.pop(text, None)

    for namespace in sorted({OverrideRef.parse(text).namespace for text in named}):
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
        _forget(ctx, records, (str(ref) for ref in gone))
    for text in sorted({ref for r in records for ref in r.overrides}):
        patiently(
            ctx.client,
            ctx.clock,
            deadline - ctx.clock.monotonic(),
            functools.partial(delete_override, ctx.client, OverrideRef.parse(text)),
        )
        _forget(ctx, records, [text])
