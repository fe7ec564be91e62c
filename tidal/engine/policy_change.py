"""Change a window's policies: merge patch (with resourceVersion, retried on 409) or swap
(delete `from`, create `to`); add activationPreference Lazy with a placement change so the
waves control activation; restore it at the end; undo everything on rollback.

Every write is preceded by a journal save of what it is about to do (the pre-image first),
and every policy written carries tidal.io/window + tidal.io/run, so a repeat is a no-op.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import json_merge_patch

from tidal.domain.schedule import TidalSchedule
from tidal.engine.journal import PolicyRecord, content_hash
from tidal.engine.resolve import PolicyTarget, strip_server_fields
from tidal.engine.states import ChangeKind, LazyMark, PolicyAction, PolicyStage
from tidal.karmada import policies as api
from tidal.karmada.client import KarmadaClient, Obj
from tidal.karmada.errors import AlreadyExists, Conflict
from tidal.karmada.names import (
    ACTIVATION_BEFORE_LAZY,
    LAZY_ADDED_BY,
    POLICY_RUN,
    POLICY_WINDOW,
    claim_labels,
)
from tidal.karmada.patches import MergePatch
from tidal.karmada.policies import PolicyLookup
from tidal.karmada.views import COMPLETED_RUN, LAZY, PolicyView, comparable

__all__ = [
    "COMPLETED_RUN",
    "LAZY",
    "RunWrite",
    "apply",
    "comparable",
    "finish",
    "is_done",
    "original_activation",
    "record_for",
    "restore_activation_after_rollback",
    "rollback",
    "run_under_way",
    "temporary_lazy",
]
CONFLICT_ATTEMPTS = 6

Save = Callable[[], None]


def is_done(obj: Obj | None, target: PolicyTarget, window: str) -> bool:
    """The policy already is what this window wants, written and finished by a tidal run
    (and any Lazy tidal added is gone, or was kept on purpose by that run)."""
    if obj is None:
        return False
    view = PolicyView(obj)
    return (
        view.window == window
        and view.completed_run is not None
        and view.completed_run == view.run
        and (not view.temporary_lazy()[0] or view.lazy_added_by == view.completed_run)
        and view.spec_without_activation() == comparable(target.target_spec)
    )


def temporary_lazy(obj: Obj | None) -> tuple[bool, str | None]:
    """(is this policy's Lazy one tidal added?, the activationPreference to put back)."""
    return PolicyView.of(obj).temporary_lazy()


def _lazy_marks(run_id: str, original: str | None) -> dict[str, str]:
    return {LAZY_ADDED_BY: run_id, ACTIVATION_BEFORE_LAZY: original or ""}


def _unmark_lazy() -> dict[str, None]:
    return {LAZY_ADDED_BY: None, ACTIVATION_BEFORE_LAZY: None}


def _adopt(record: PolicyRecord, obj: Obj | None) -> None:
    """A Lazy an earlier tidal run added (and never restored) is this run's to restore."""
    added, original = temporary_lazy(obj)
    if added and not record.lazy.added:
        record.lazy, record.original_activation = LazyMark.ADDED, original


def record_for(target: PolicyTarget) -> PolicyRecord:
    return PolicyRecord(
        kind=target.kind,
        name=target.name,
        namespace=target.namespace,
        action=ChangeKind.SWAP if target.swap_from else ChangeKind.PATCH,
        swap_from=target.swap_from,
    )


@dataclass(frozen=True)
class RunWrite:
    """How a run writes its policy changes: its marks (window, run id), whether it adds a
    temporary Lazy, and how it journals before each write."""

    window: str
    run_id: str
    lazy: bool
    save: Save

    def marks(self) -> dict[str, str]:
        return {POLICY_WINDOW: self.window, POLICY_RUN: self.run_id}

    def wrote(self, view: PolicyView) -> bool:
        return view.written_by(self.window, self.run_id)


def apply(
    client: KarmadaClient,
    target: PolicyTarget,
    record: PolicyRecord,
    run: RunWrite,
    cached: PolicyLookup | None = None,
) -> tuple[Obj | None, PolicyAction]:
    """Apply one change; returns (the policy in force after, action taken). `cached`: a run
    alone's policy informer, read instead of a GET before the first attempt."""
    if target.swap_from:
        return _swap(client, target, record, run)
    return _patch(client, target, record, run, first=cached)


def _patch(
    client: KarmadaClient,
    target: PolicyTarget,
    record: PolicyRecord,
    run: RunWrite,
    first: PolicyLookup | None = None,
) -> tuple[Obj | None, PolicyAction]:
    patch = copy.deepcopy(target.change.patch or {})
    for _ in range(CONFLICT_ATTEMPTS):
        current, cached = _read(client, target.kind, target.name, target.namespace, first)
        first = None  # after a Conflict, or a cached copy that asks for no write: afresh
        undo = _undo_point(record)
        _adopt(record, current)
        view = PolicyView(current)
        spec = dict(view.spec)
        merged = json_merge_patch.merge(copy.deepcopy(current), patch)
        new_spec = merged.get("spec") or {}
        unchanged = _unchanged(new_spec, spec, record)
        if cached and (unchanged or run.wrote(view)):
            # nothing to write by a copy that may trail the server: only a fresh read says so
            undo(record)
            continue
        if run.wrote(view):
            record.stage = PolicyStage.APPLIED
            return current, PolicyAction.UNCHANGED  # this run already wrote it (resume)
        if unchanged:
            return current, PolicyAction.UNCHANGED
        if record.pre_image is None:
            record.pre_image = copy.deepcopy(spec)
            record.pre_hash = content_hash(spec)
            if not record.lazy.added:  # else known from a halted run that added the Lazy
                record.original_activation = view.activation
        body = MergePatch(patch).annotate(run.marks())
        if run.lazy and new_spec.get("activationPreference") != LAZY:
            body.activation(LAZY).annotate(_lazy_marks(run.run_id, record.original_activation))
            record.lazy = LazyMark.ADDED
        run.save()
        try:
            after = api.patch_policy(
                client,
                target.kind,
                target.name,
                target.namespace,
                body,
                resource_version=view.resource_version,
            )
        except Conflict:
            undo(record)  # what was taken from the outdated copy goes with it
            continue
        record.stage = PolicyStage.APPLIED
        record.post_hash = content_hash(PolicyView(after).spec_without_activation())
        return after, PolicyAction.PATCH
    raise Conflict(f"{target.key}: still conflicting after {CONFLICT_ATTEMPTS} attempts")


def _unchanged(new_spec: dict[str, Any], spec: dict[str, Any], record: PolicyRecord) -> bool:
    """The patch changes nothing, and this run wrote nothing there yet."""
    return comparable(new_spec) == comparable(spec) and not record.applied


def _manifest(target: PolicyTarget, run: RunWrite, record: PolicyRecord) -> Obj:
    manifest = copy.deepcopy(target.change.swap.manifest if target.change.swap else {}) or {}
    meta = manifest.setdefault("metadata", {})
    meta.setdefault("annotations", {}).update(run.marks())
    if target.namespace and "namespace" not in meta:
        meta["namespace"] = target.namespace
    manifest.setdefault("kind", target.kind)
    manifest.setdefault("apiVersion", "policy.karmada.io/v1alpha1")
    spec = manifest.setdefault("spec", {})
    record.original_activation = spec.get("activationPreference")
    if run.lazy and spec.get("activationPreference") != LAZY:
        spec["activationPreference"] = LAZY
        record.lazy = LazyMark.ADDED
        meta["annotations"].update(_lazy_marks(run.run_id, record.original_activation))
    return manifest


def _swap(
    client: KarmadaClient, target: PolicyTarget, record: PolicyRecord, run: RunWrite
) -> tuple[Obj | None, PolicyAction]:
    assert target.swap_from is not None
    # read afresh, not from a cache: the old policy is deleted without a precondition and
    # its spec kept for a rollback, so a copy trailing a hand edit would lose the edit
    to_obj = api.find_policy(client, target.kind, target.name, target.namespace)
    from_obj = api.find_policy(client, target.kind, target.swap_from, target.namespace)
    if to_obj is not None and from_obj is None:
        _adopt(record, to_obj)
        ours = run.wrote(PolicyView(to_obj))
        # done before by someone else: nothing of ours to undo
        record.stage = PolicyStage.APPLIED if ours else PolicyStage.PENDING
        return to_obj, PolicyAction.SWAP if ours else PolicyAction.UNCHANGED
    if from_obj is not None and record.pre_image is None:
        record.pre_image = strip_server_fields(from_obj)
        record.pre_hash = content_hash(from_obj.get("spec"))
    manifest = _manifest(target, run, record)
    run.save()
    if from_obj is not None:
        api.delete_policy(client, target.kind, target.swap_from, target.namespace)
    if to_obj is None:
        try:
            to_obj = api.create_policy(client, manifest)
        except AlreadyExists:
            to_obj = api.get_policy(client, target.kind, target.name, target.namespace)
    record.stage = PolicyStage.APPLIED
    record.post_hash = content_hash(PolicyView(to_obj).spec_without_activation())
    return to_obj, PolicyAction.SWAP


def finish(
    client: KarmadaClient,
    record: PolicyRecord,
    *,
    run_id: str,
    save: Save,
    cached: PolicyLookup | None = None,
) -> PolicyAction:
    """After the last wave: restore activationPreference (unless kept) and mark completion
    (`cached`: read instead of a GET before the first attempt)."""
    restore = record.lazy is LazyMark.ADDED
    if not record.applied and not restore:
        return PolicyAction.UNCHANGED
    notes: dict[str, str | None] = {COMPLETED_RUN: run_id} if record.applied else {}
    action = PolicyAction.LAZY_RESTORED if restore else PolicyAction.COMPLETED
    if record.lazy is LazyMark.KEPT:
        notes[LAZY_ADDED_BY] = run_id  # kept on purpose by this (completed) run
    else:
        notes.update(_unmark_lazy())  # also stale marks of a Lazy an owner lifted by hand
    body = MergePatch().annotate(notes)
    if restore:
        body.activation(record.original_activation)
    save()
    _patch_retrying(client, record, body, cached)
    if restore:
        record.lazy = LazyMark.LIFTED
    return action


def _read(
    client: KarmadaClient, kind: str, name: str, namespace: str | None, cached: PolicyLookup | None
) -> tuple[Obj, bool]:
    """The policy from `cached` if it holds it, else read (NotFound if it is not there);
    and whether it came from the cache (which may trail the server)."""
    found = cached(kind, name, namespace) if cached is not None else None
    if found is not None:
        return found, True
    return api.get_policy(client, kind, name, namespace), False


def _undo_point(record: PolicyRecord) -> Callable[[PolicyRecord], None]:
    """Puts back what an attempt takes from the copy it read (pre-image, Lazy mark), for an
    attempt whose copy turned out outdated (a Conflict) or not to be trusted (a cache)."""
    kept = (record.pre_image, record.pre_hash, record.original_activation, record.lazy)

    def undo(into: PolicyRecord) -> None:
        into.pre_image, into.pre_hash, into.original_activation, into.lazy = kept

    return undo


def _patch_retrying(
    client: KarmadaClient,
    record: PolicyRecord,
    body: MergePatch,
    first: PolicyLookup | None = None,
) -> Obj:
    for _ in range(CONFLICT_ATTEMPTS):
        current, _cached = _read(client, record.kind, record.name, record.namespace, first)
        first = None  # a Conflict: read afresh
        try:
            return api.patch_policy(
                client,
                record.kind,
                record.name,
                record.namespace,
                body,
                resource_version=PolicyView(current).resource_version,
            )
        except Conflict:
            continue
    raise Conflict(f"{record.key}: still conflicting after {CONFLICT_ATTEMPTS} attempts")


def rollback(
    client: KarmadaClient, record: PolicyRecord, *, run_id: str, lazy: bool, save: Save
) -> PolicyAction:
    """Put the previous spec back (keeping Lazy while waves move workloads back)."""
    if not record.applied or record.restored:
        return PolicyAction.UNCHANGED
    if record.action is ChangeKind.SWAP and record.pre_image is None:
        return PolicyAction.UNCHANGED  # no pre-image of `from`: deleting `to` would leave none
    save()
    if record.action is ChangeKind.SWAP:
        _unswap(client, record, run_id=run_id, lazy=lazy)
    else:
        _unpatch(client, record, run_id=run_id, lazy=lazy)
    record.stage = PolicyStage.RESTORED
    return PolicyAction.RESTORE


def _unswap(client: KarmadaClient, record: PolicyRecord, *, run_id: str, lazy: bool) -> None:
    """Delete the swap's `to` policy and create `from` again from its pre-image (Lazy, with
    the run's marks, while waves move workloads back)."""
    assert record.swap_from is not None
    api.delete_policy(client, record.kind, record.name, record.namespace)
    if record.pre_image is None:
        return
    manifest = copy.deepcopy(record.pre_image)
    labels = manifest.setdefault("metadata", {}).get("labels") or {}
    for key in claim_labels():
        labels.pop(key, None)
    spec = manifest.setdefault("spec", {})
    if lazy and spec.get("activationPreference") != LAZY:
        original = original_activation(record)
        spec["activationPreference"] = LAZY
        manifest["metadata"].setdefault("annotations", {}).update(_lazy_marks(run_id, original))
    with contextlib.suppress(AlreadyExists):
        api.create_policy(client, manifest)


def _unpatch(client: KarmadaClient, record: PolicyRecord, *, run_id: str, lazy: bool) -> None:
    """Patch the policy's spec back to its pre-image (Lazy kept while waves move back) and
    drop the run's window marks."""
    current = api.get_policy(client, record.kind, record.name, record.namespace)
    wanted = copy.deepcopy(record.pre_image or {})
    body = MergePatch()
    if lazy:
        wanted["activationPreference"] = LAZY
        original = original_activation(record)
        if original != LAZY and PolicyView(current).lazy_added_by is None:
            body.annotate(_lazy_marks(run_id, original))
    body.spec_to(current.get("spec") or {}, wanted)
    if PolicyView(current).run == run_id:  # the policy no longer is this run's window
        body.annotate({POLICY_WINDOW: None, POLICY_RUN: None})
    if body:
        _patch_retrying(client, record, body)


def original_activation(record: PolicyRecord) -> str | None:
    """The activationPreference the policy had before tidal: the pre-image's own, unless that
    was itself a Lazy an earlier run added."""
    pre_image = record.pre_image or {}
    if record.action is ChangeKind.SWAP:  # the pre-image is the `from` policy, whole
        view = PolicyView(pre_image)
        added, original = view.temporary_lazy()
        return original if added else view.activation
    if record.lazy.added:  # the pre-image is the patched policy's spec
        return record.original_activation
    value = pre_image.get("activationPreference")
    return str(value) if value is not None else None


def restore_activation_after_rollback(
    client: KarmadaClient, record: PolicyRecord, *, save: Save
) -> None:
    """After rolled-back waves: the activationPreference from before tidal, marks removed."""
    name = record.swap_from if record.action is ChangeKind.SWAP else record.name
    assert name is not None
    original = original_activation(record)
    current = api.find_policy(client, record.kind, name, record.namespace)
    if current is None:
        return
    view = PolicyView(current)
    marked = view.lazy_added_by is not None
    if view.activation == original and not marked:
        return
    save()
    body = MergePatch().activation(original)
    if marked:
        body.annotate(_unmark_lazy())
    api.patch_policy(client, record.kind, name, record.namespace, body)


def run_under_way(client: KarmadaClient, schedule: TidalSchedule, window: str, run_id: str) -> bool:
    """Does a policy of the schedule's `window` carry `run_id`'s marks without its completion
    (the run changed it and did not finish)?"""
    for change in schedule.window(window).policies:
        ref = change.policy_refs()[-1]  # the policy in force after the change
        view = PolicyView.of(api.find_policy(client, ref.kind, ref.name, ref.namespace))
        if view.written_by(window, run_id) and view.completed_run != run_id:
            return True
    return False
