"""The options every write request carries, checked as kube-apiserver checks them:
`dryRun` (only `All`) and `fieldValidation` (Strict, Warn, Ignore; empty means Warn), and the
duplicate keys of a JSON body, which field validation reports like unknown fields."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tidal_sim.apiserver.errors import ApiError
from tidal_sim.apiserver.request import Request

DIRECTIVES = ("", "Ignore", "Strict", "Warn")
_JSON_TYPES = ("", "application/json", "application/merge-patch+json", "*/*")
JSON_PATCH = "application/json-patch+json"
_OPERATION_KEYS = {"op", "path", "from", "value"}


@dataclass(frozen=True)
class WriteOptions:
    field_validation: str  # Strict | Warn | Ignore
    dry_run: bool
    decoding: tuple[str, ...] = ()  # problems of the body itself, reported like unknown fields

    @property
    def strict(self) -> bool:
        return self.field_validation == "Strict"


def write_options(kind: str, req: Request, *, body_checked: bool = True) -> WriteOptions:
    """The request's options; 422 (`{kind}.meta.k8s.io`, e.g. PatchOptions) for a bad value."""
    directive = req.query.get("fieldValidation", "")
    dry_run = req.query.get("dryRun")
    causes = []
    if dry_run is not None and dry_run != "All":
        causes.append(
            ("dryRun", f'Unsupported value: []string{{"{dry_run}"}}: supported values: "All"')
        )
    if directive not in DIRECTIVES:
        allowed = ", ".join(f'"{d}"' for d in DIRECTIVES)
        causes.append(
            ("fieldValidation", f'Unsupported value: "{directive}": supported values: {allowed}')
        )
    if causes:
        texts = [f"{field}: {message}" for field, message in causes]
        joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
        raise ApiError(
            422,
            f'{kind}.meta.k8s.io "" is invalid: {joined}',
            reason="Invalid",
            details={
                "group": "meta.k8s.io",
                "kind": kind,
                "causes": [
                    {"reason": "FieldValueNotSupported", "field": f, "message": m}
                    for f, m in causes
                ],
            },
        )
    decoding = _decoding_problems(req) if body_checked else ()
    return WriteOptions(directive or "Warn", dry_run == "All", decoding)


def _decoding_problems(req: Request) -> tuple[str, ...]:
    """What strict decoding finds in the body: duplicate fields of a JSON body, or bad keys
    of JSON patch operations."""
    content_type = (req.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if content_type in _JSON_TYPES:
        return tuple(f'duplicate field "{d}"' for d in duplicate_fields(req.body))
    if content_type == JSON_PATCH:
        return json_patch_problems(req.body)
    return ()


def json_patch_problems(body: bytes) -> tuple[str, ...]:
    """Keys of JSON patch operations that are not op/path/from/value, or given twice."""
    problems: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in items]
        if "op" in keys:  # an operation, not an object inside a `value`
            for key in keys:
                if key not in _OPERATION_KEYS:
                    problems.append(f'json patch unknown field "{key}"')
            for key in sorted({k for k in keys if keys.count(k) > 1}, key=keys.index):
                problems.append(f'json patch duplicate field "{key}"')
        return dict(items)

    try:
        json.loads(body or b"null", object_pairs_hook=pairs)
    except ValueError:
        return ()
    return tuple(problems)


def duplicate_fields(body: bytes) -> tuple[str, ...]:
    """Keys given twice in one JSON object of the body, in order of appearance (each once)."""
    seen: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys: set[str] = set()
        for key, _ in items:
            if key in keys and key not in seen:
                seen.append(key)
            keys.add(key)
        return dict(items)

    try:
        json.loads(body or b"null", object_pairs_hook=pairs)
    except ValueError:
        return ()  # the body's own parser reports it
    return tuple(seen)
