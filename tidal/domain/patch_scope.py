"""What a schedule's merge patch may change in a policy (pure).

A tidal switch moves workloads between clusters: its patches change `spec.placement` and
nothing else, unless the policy change lists more fields in `allowFields` (dotted paths under
`spec`). `metadata` is never patched: names, labels and tidal's own marks live there. A patch
must be a mapping of mappings down to the fields it changes: `spec: null` (or a list or a
scalar where the policy has an object) would delete or replace the whole object.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

Loc = tuple[str | int, ...]
Problem = tuple[Loc, str]

ALWAYS_ALLOWED = ("spec.placement",)
FIELD_PATH = re.compile(r"^spec(\.[A-Za-z][A-Za-z0-9]*)+$")


def allow_field_problem(path: str) -> str | None:
    """Why `path` cannot be listed in allowFields (None when it can)."""
    if path == "metadata" or path.startswith("metadata."):
        return (
            f"{path!r}: metadata is never patched (names, labels and tidal's marks live "
            "there); remove it"
        )
    if not FIELD_PATH.match(path):
        return (
            f"{path!r} is not a field path under spec; write it as spec.<field>[.<field>], "
            "e.g. spec.failover"
        )
    return None


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r + ".") for r in roots)


def _above(path: str, roots: tuple[str, ...]) -> bool:
    return any(r.startswith(path + ".") for r in roots)


def scope_problems(patch: Any, allow_fields: list[str] | tuple[str, ...] = ()) -> list[Problem]:
    """Every place where `patch` reaches beyond what it may change (locations inside it)."""
    if not isinstance(patch, dict):
        return [
            (
                (),
                "a patch is a mapping (a JSON merge patch of the policy); "
                "write patch: {spec: {placement: ...}}",
            )
        ]
    roots = tuple(dict.fromkeys((*ALWAYS_ALLOWED, *allow_fields)))
    problems: list[Problem] = []
    for key, value in patch.items():
        if key == "metadata":
            problems.append(
                (
                    (key,),
                    "metadata is never patched (names, labels and tidal's "
                    "marks live there); remove it",
                )
            )
        elif key != "spec":
            problems.append(((key,), f"only spec is patched; remove {key}"))
        else:
            problems += _walk("spec", value, (key,), roots)
    return problems


def _walk(path: str, value: Any, loc: Loc, roots: tuple[str, ...]) -> list[Problem]:
    if _under(path, roots):
        if path in ALWAYS_ALLOWED and not isinstance(value, dict):
            shown = "null" if value is None else type(value).__name__
            return [
                (
                    loc,
                    f"{path} must be a mapping of the placement fields to change, not "
                    f"{shown} (that would delete or replace the whole placement)",
                )
            ]
        return []
    if _above(path, roots):
        if not isinstance(value, dict):
            shown = "null" if value is None else type(value).__name__
            return [
                (
                    loc,
                    f"{path} must be a mapping of the fields to change, not {shown} "
                    "(that would delete or replace all of it)",
                )
            ]
        problems: list[Problem] = []
        for key, sub in value.items():
            problems += _walk(f"{path}.{key}", sub, (*loc, key), roots)
        return problems
    close = difflib.get_close_matches(path, roots, n=1)
    hint = f"did you mean {close[0]}? or " if close else ""
    return [
        (
            loc,
            f"{path} may not be patched: a schedule changes {', '.join(roots)} only; "
            f"{hint}list {path!r} in allowFields (of this policy change, or of the "
            "schedule's spec) if the window must change it",
        )
    ]


def beyond_placement(patch: Any) -> list[str]:
    """The top field paths a (valid) patch changes besides spec.placement, for the plan."""
    spec = patch.get("spec") if isinstance(patch, dict) else None
    return sorted(
        f"spec.{k}"
        for k in (spec if isinstance(spec, dict) else {})
        if f"spec.{k}" not in ALWAYS_ALLOWED
    )


def _covers(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Does selector `old` select at least everything `new` selects? (conservative)"""
    if (old.get("apiVersion"), old.get("kind")) != (new.get("apiVersion"), new.get("kind")):
        return False
    for key in ("namespace", "name", "labelSelector"):
        if old.get(key) not in (None, "", {}) and old.get(key) != new.get(key):
            return False
    return True


def _describe(selector: dict[str, Any]) -> str:
    parts = [f"{selector.get('kind')} ({selector.get('apiVersion')})"]
    for key in ("namespace", "name"):
        if selector.get(key):
            parts.append(f"{key} {selector[key]}")
    if selector.get("labelSelector"):
        parts.append(f"labelSelector {selector['labelSelector']}")
    elif not selector.get("name"):
        parts.append("any labels")
    return " ".join(parts)


def added_selectors(old_spec: Any, new_spec: Any) -> list[str]:
    """The resourceSelectors of `new_spec` that no selector of `old_spec` covers."""
    old = [s for s in ((old_spec or {}).get("resourceSelectors") or []) if isinstance(s, dict)]
    new = [s for s in ((new_spec or {}).get("resourceSelectors") or []) if isinstance(s, dict)]
    return [_describe(s) for s in new if not any(_covers(o, s) for o in old)]
