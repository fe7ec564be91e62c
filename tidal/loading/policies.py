"""Karmada policy documents: the swap manifests a schedule points to, and its merge patches.

Validated against the policy schemas (`PolicySchemas`): those of a directory of upstream CRD
files (the settings' karmada_crds, TIDAL_KARMADA_CRDS, or `--crds`), which win when given, else
the ones the apiserver publishes (OpenAPI v3, read by tidal.karmada.schemas); without either, a
structural check only. Fields the schema does not know are refused: Karmada would silently drop
them.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import ValidationError as SchemaError  # type: ignore[import-untyped]
from ruamel.yaml import YAML

POLICY_API_VERSION = "policy.karmada.io/v1alpha1"
POLICY_KINDS = ("PropagationPolicy", "ClusterPropagationPolicy")
_CRD_FILES = {
    "PropagationPolicy": "policy.karmada.io_propagationpolicies.yaml",
    "ClusterPropagationPolicy": "policy.karmada.io_clusterpropagationpolicies.yaml",
}

Problem = tuple[tuple[str | int, ...], str]


@dataclass(frozen=True)
class PolicySchemas:
    """The schema of each policy kind, closed (unknown fields refused), and where it came from."""

    closed: Mapping[str, dict[str, Any]]
    origin: str  # for messages: "the CRDs in DIR", "the apiserver's OpenAPI v3"

    @classmethod
    def from_crd_dir(cls, crd_dir: Path | None) -> PolicySchemas | None:
        """Both policy CRD schemas of `crd_dir`, or None when it lacks either."""
        if crd_dir is None:
            return None
        found = {kind: _crd_schema(str(crd_dir), kind) for kind in POLICY_KINDS}
        if any(schema is None for schema in found.values()):
            return None
        return cls({k: v for k, v in found.items() if v is not None}, f"the CRDs in {crd_dir}")

    @classmethod
    def from_published(cls, published: Mapping[str, Any]) -> PolicySchemas | None:
        """The apiserver's OpenAPI v3 component schemas by kind, or None when one is missing."""
        if not all(isinstance(published.get(kind), dict) for kind in POLICY_KINDS):
            return None
        # A published schema refers to shared components (ObjectMeta): those parts go unchecked.
        closed = {
            kind: _closed(_without(copy.deepcopy(published[kind]), "$ref")) for kind in POLICY_KINDS
        }
        return cls(closed, "the apiserver's OpenAPI v3")

    def schema(self, kind: str) -> dict[str, Any] | None:
        return self.closed.get(kind)


def _without(schema: Any, key: str) -> Any:
    """The schema with `key` dropped from every object in it, at any depth."""
    if isinstance(schema, dict):
        return {k: _without(v, key) for k, v in schema.items() if k != key}
    if isinstance(schema, list):
        return [_without(v, key) for v in schema]
    return schema


@lru_cache(maxsize=8)
def _crd_schema(crd_dir: str, kind: str) -> dict[str, Any] | None:
    path = Path(crd_dir) / _CRD_FILES[kind]
    try:
        crd = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
        for version in crd["spec"]["versions"]:
            if version["name"] == "v1alpha1":
                schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
                return _closed(copy.deepcopy(schema))
    except (OSError, KeyError, TypeError, ValueError):
        return None
    return None


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """Refuse unknown fields where the CRD lists its properties (Kubernetes would prune them)."""
    if isinstance(schema.get("properties"), dict):
        if "additionalProperties" not in schema and not schema.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            schema["additionalProperties"] = False
        for sub in schema["properties"].values():
            _closed(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            _closed(schema[key])
    for key in ("anyOf", "allOf", "oneOf"):
        for sub in schema.get(key, []) or []:
            if isinstance(sub, dict):
                _closed(sub)
    return schema


def unknown_field(name: str, allowed: list[str]) -> str:
    """The one-line message for a field the policy CRD does not know, with the names it does."""
    close = difflib.get_close_matches(name, allowed, n=1)
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    names = f"; allowed: {', '.join(allowed)}" if allowed else ""
    return (
        f"unknown field `{name}`{hint} for a Karmada policy (Karmada would drop it)"
        f"{names}; fix the spelling or remove it"
    )


def allowed_fields(
    schemas: PolicySchemas | None, kind: str, path: tuple[str | int, ...]
) -> list[str] | None:
    """The field names the policy schema allows in the object at `path` (None: unknown)."""
    schema = schemas.schema(kind) if schemas is not None else None
    for part in path:
        if schema is None:
            return None
        key = "items" if isinstance(part, int) else None
        schema = schema.get(key) if key else (schema.get("properties") or {}).get(part)
        schema = schema if isinstance(schema, dict) else None
    if schema is None or not isinstance(schema.get("properties"), dict):
        return None
    return sorted(schema["properties"])


def _schema_problems(schema: dict[str, Any], document: Any) -> list[Problem]:
    problems: list[Problem] = []
    errors: Iterator[SchemaError] = Draft202012Validator(schema).iter_errors(document)
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        path = tuple(error.absolute_path)
        if error.validator == "additionalProperties":
            known = sorted(error.schema.get("properties", {}))
            for extra in sorted(set(error.instance) - set(known)):
                problems.append(((*path, extra), unknown_field(extra, known)))
            continue
        message = " ".join(error.message.split())
        if len(message) > 160:
            message = message[:157] + "..."
        problems.append((path, f"{message} (Karmada CRD schema); fix the value"))
    return problems


def manifest_problems(manifest: Any, kind: str, schemas: PolicySchemas | None) -> list[Problem]:
    """Problems of a swap manifest that must be a Karmada policy of `kind`."""
    if not isinstance(manifest, dict):
        return [
            ((), f"a swap manifest must be one Karmada policy (a mapping); write a {kind} manifest")
        ]
    problems: list[Problem] = []
    if manifest.get("apiVersion") != POLICY_API_VERSION:
        problems.append(
            (
                ("apiVersion",),
                f"apiVersion must be {POLICY_API_VERSION}; this file is not a Karmada policy",
            )
        )
    found_kind = manifest.get("kind")
    if found_kind not in POLICY_KINDS:
        problems.append(
            (
                ("kind",),
                f"kind {found_kind!r} is not a Karmada policy; the schedule swaps in a {kind}",
            )
        )
        return problems
    if found_kind != kind:
        problems.append(
            (
                ("kind",),
                f"kind {found_kind} does not match the schedule's policy "
                f"kind {kind}; make them the same",
            )
        )
    metadata = manifest.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        problems.append((("metadata",), "the policy needs metadata.name; add it"))
    elif kind == "ClusterPropagationPolicy" and "namespace" in metadata:
        problems.append(
            (
                ("metadata", "namespace"),
                "a ClusterPropagationPolicy is cluster-scoped; remove metadata.namespace",
            )
        )
    if not isinstance(manifest.get("spec"), dict):
        problems.append((("spec",), "the policy needs a spec; add spec.resourceSelectors"))
    if problems:
        return problems
    schema = schemas.schema(kind) if schemas is not None else None
    if schema is not None:
        problems += _schema_problems(schema, manifest)
    elif not manifest["spec"].get("resourceSelectors"):
        problems.append((("spec",), "the policy needs spec.resourceSelectors; add them"))
    return problems


def patch_problems(
    patch: dict[str, Any],
    kind: str,
    schemas: PolicySchemas | None,
) -> list[Problem]:
    """Problems of a merge patch: its fields must exist in the policy schema (nulls delete)."""
    schema = schemas.schema(kind) if schemas is not None else None
    if schema is None:
        return []
    return _schema_problems(_without(schema, "required"), _drop_nulls(patch))


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    return value
