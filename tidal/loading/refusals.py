"""The apiserver's refusal of a policy write, located in the schedule file: the field of the
patch it names (FILE:LINE:COL), or the swap's `to` for a manifest."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from tidal.loading.errors import LocatedError, YamlProblem
from tidal.loading.locate import dotted, locate
from tidal.loading.policies import PolicySchemas, allowed_fields, unknown_field
from tidal.loading.yamlfile import YamlDocument, read_yaml_file

_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


class Refusal(Protocol):
    @property
    def index(self) -> int: ...
    @property
    def swap(self) -> bool: ...
    @property
    def policy(self) -> str: ...
    @property
    def fields(self) -> tuple[str, ...]: ...
    @property
    def message(self) -> str: ...


def field_parts(path: str) -> tuple[str | int, ...]:
    """`spec.a[0].b` -> ("spec", "a", 0, "b")."""
    return tuple(int(index) if index else name for name, index in _PART.findall(path))


def _window_index(document: YamlDocument | None, window: str) -> int:
    """The index of the window under spec.windows (0 when the file does not say)."""
    if document is None or not isinstance(document.data, dict):
        return 0
    windows = (document.data.get("spec") or {}).get("windows")
    return next(
        (i for i, w in enumerate(windows or []) if isinstance(w, dict) and w.get("name") == window),
        0,
    )


def locate_refusals(
    path: Path, window: str, refusals: Iterable[Refusal], schemas: PolicySchemas | None = None
) -> list[LocatedError]:
    """One located error per refused write (per field the server named, where it named any);
    an unknown field lists the names the policy schema allows there when `schemas` has it."""
    try:
        document = read_yaml_file(path)
    except YamlProblem:
        document = None
    w_index = _window_index(document, window)
    errors = []
    for refusal in refusals:
        at: tuple[str | int, ...] = ("spec", "windows", w_index, "policies", refusal.index)
        what = "manifest" if refusal.swap else "patch"
        fields: list[str | None] = (
            [None] if refusal.swap or not refusal.fields else list(refusal.fields)
        )
        for field in fields:
            place = (
                (*at, "swap", "to") if refusal.swap else (*at, "patch", *field_parts(field or ""))
            )
            (line, col), found = (
                locate(document.tree, place) if document is not None else ((1, 1), place)
            )
            errors.append(
                LocatedError(
                    str(path),
                    line,
                    col,
                    f"{dotted(found)}: " + _message(refusal, what, field, schemas),
                )
            )
    return errors


def _message(refusal: Refusal, what: str, field: str | None, schemas: PolicySchemas | None) -> str:
    head = f"the apiserver refuses this {what} of {refusal.policy} (server-side dry run)"
    if field is None:
        return f"{head}: {refusal.message}"
    kind = refusal.policy.split("/")[0]
    parent = ".".join(str(p) for p in field_parts(field)[:-1] if isinstance(p, str))
    explain = f"kubectl explain {kind.lower()[:-1]}ies" + (f".{parent}" if parent else "")
    if f'unknown field "{field}"' in refusal.message:
        parts = field_parts(field)
        name = str(parts[-1])
        allowed = allowed_fields(schemas, kind, parts[:-1])
        if allowed is not None:
            return f"{head}: {unknown_field(name, allowed)}"
        return (
            f"{head}: unknown field `{name}` (it would be dropped); fix its name, "
            f"`{explain}` lists the fields"
        )
    return f"{head}: {refusal.message}; fix the value, `{explain}` describes it"
