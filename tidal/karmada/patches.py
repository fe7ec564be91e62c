"""The JSON merge patches (RFC 7386) tidal writes to Karmada objects, built from typed values
instead of nested dicts assembled at each write.

`MergePatch` collects one patch: annotations or labels set (a None value removes the key, as
in any merge patch), spec fields set, a policy's activationPreference, a policy's placement
from a typed `Placement` (its raw form is what is written), or a spec moved to a wanted one as
the smallest patch that does it (`json_merge_patch.create_patch`). `body()` is what the write
sends, optionally guarded by the resourceVersion read. Keys come in the order they were first
set, so a body is the same, byte for byte, as the nested dict the call site built before.

Reading stays with the views (tidal.karmada.views); this module only shapes writes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import json_merge_patch

from tidal.domain.placement import Placement
from tidal.karmada.names import SWITCH_RUN, SWITCHED_AT

ACTIVATION = "activationPreference"


class MergePatch:
    """One JSON merge patch being built; each method adds to it and returns it."""

    __slots__ = ("_body",)

    def __init__(self, start: Mapping[str, Any] | None = None) -> None:
        """Start from `start` (a schedule's own patch of a policy), copied."""
        self._body: dict[str, Any] = copy.deepcopy(dict(start or {}))

    def annotate(self, notes: Mapping[str, str | None]) -> MergePatch:
        """Set these annotations (None: remove the annotation)."""
        return self._metadata("annotations", notes)

    def label(self, labels: Mapping[str, str | None]) -> MergePatch:
        """Set these labels (None: remove the label)."""
        return self._metadata("labels", labels)

    def spec(self, fields: Mapping[str, Any]) -> MergePatch:
        """Set these fields of spec (each replaces what this patch set for it before)."""
        self._body.setdefault("spec", {}).update(copy.deepcopy(dict(fields)))
        return self

    def activation(self, value: str | None) -> MergePatch:
        """Set a policy's activationPreference (None: remove it, Karmada's default)."""
        return self.spec({ACTIVATION: value})

    def spec_to(self, current: Mapping[str, Any], wanted: Mapping[str, Any]) -> MergePatch:
        """What turns spec `current` into `wanted` (nothing when they are equal)."""
        diff = json_merge_patch.create_patch(dict(current), dict(wanted))
        return self.spec(diff) if diff else self

    def placement(self, current: Mapping[str, Any], placement: Placement) -> MergePatch:
        """A policy's placement set to `placement`, patched from spec `current` (only the
        fields that differ)."""
        return self.spec_to(current, {**current, "placement": placement.raw()})

    def body(self, resource_version: str | None = None) -> dict[str, Any]:
        """The patch to send (a copy); with `resource_version`, the server refuses it
        (Conflict) when the object changed since that version was read."""
        out = copy.deepcopy(self._body)
        if resource_version is not None:
            out.setdefault("metadata", {})["resourceVersion"] = resource_version
        return out

    def __bool__(self) -> bool:
        return bool(self._body)

    def __repr__(self) -> str:
        return f"MergePatch({self._body!r})"

    def _metadata(self, part: str, values: Mapping[str, str | None]) -> MergePatch:
        self._body.setdefault("metadata", {}).setdefault(part, {}).update(values)
        return self


def touch(stamp: str, run_id: str) -> MergePatch:
    """The template touch: tidal's switched-at and run annotations (a user edit in Karmada's
    eyes, so the detector schedules the template again)."""
    return MergePatch().annotate({SWITCHED_AT: stamp, SWITCH_RUN: run_id})
