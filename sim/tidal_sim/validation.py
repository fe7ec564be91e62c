"""Admission of objects written through the API: CRD defaults and openAPIV3Schema validation.

Karmada kinds are checked against the upstream CRD schemas (the directory given to the
Emulator, else the one tidal_sim.upstream_crds finds or fetches) as the real apiserver does: an
object that violates the schema is refused 422 Invalid with one cause per field path, e.g.
`spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight`. Defaults the
schema declares are filled in. When the directory is absent a minimal built-in check of the
fields tidal relies on stands in. Status is not validated (controllers own it).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from tidal_sim.kinds import ResourceType
from tidal_sim.store import Invalid, StoreError
from tidal_sim.topology import load_yaml_documents
from tidal_sim.upstream_crds import CrdSource, find_crds
from tidal_sim.version import KarmadaVersion

Obj = dict[str, Any]
Cause = dict[str, str]

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def load_crd_schemas(directory: Path) -> dict[tuple[str, str, str], Obj]:
    """(group, version, kind) -> openAPIV3Schema, for every CRD file in the directory."""
    return copy.deepcopy(_load_cached(directory.resolve()))


@functools.lru_cache(maxsize=4)
def _load_cached(directory: Path) -> dict[tuple[str, str, str], Obj]:
    schemas: dict[tuple[str, str, str], Obj] = {}
    for path in sorted(directory.glob("*.y*ml")):
        for doc in load_yaml_documents(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc.get("spec", {})
            for version in spec.get("versions", []):
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                if schema:
                    schemas[(spec["group"], version["name"], spec["names"]["kind"])] = schema
    return schemas


def _field_path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _render(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return f"{type(value).__name__}"
    return str(value)


def _cause(error: jsonschema.ValidationError) -> list[Cause]:
    path = _field_path(error.absolute_path)
    kind, value = error.validator, error.validator_value
    if kind == "required":
        instance = error.instance if isinstance(error.instance, dict) else {}
        missing = [p for p in value if p not in instance] or [str(value)]
        return [
            {
                "reason": "FieldValueRequired",
                "field": _field_path([*error.absolute_path, m]),
                "message": "Required value",
            }
            for m in missing
        ]
    shown = _render(error.instance)
    if kind == "enum":
        allowed = ", ".join(_render(v) for v in value)
        return [
            {
                "reason": "FieldValueNotSupported",
                "field": path,
                "message": f"Unsupported value: {shown}: supported values: {allowed}",
            }
        ]
    descriptions = {
        "minimum": f"should be greater than or equal to {value}",
        "maximum": f"should be less than or equal to {value}",
        "minItems": f"should have at least {value} items",
        "maxItems": f"should have at most {value} items",
        "minLength": f"should be at least {value} chars long",
        "maxLength": f"may not be longer than {value}",
        "pattern": f"should match '{value}'",
        "type": f"must be of type {value}: {shown}",
    }
    detail = descriptions.get(str(kind), error.message)
    return [
        {
            "reason": "FieldValueInvalid",
            "field": path,
            "message": f"Invalid value: {shown}: {path} in body {detail}",
        }
    ]


def apply_defaults(schema: Obj, value: Any) -> None:
    """Fill in `default`s of the schema where the object leaves the field out (in place)."""
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                apply_defaults(sub, value[key])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in set(value) - set(schema.get("properties") or {}):
                apply_defaults(extra, value[key])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(schema["items"], item)


class SchemaValidator:
    """Admits objects written through the API (the Admitter the REST layer calls)."""

    def __init__(self, crds_dir: Path | None = None) -> None:
        self.crds_dir = crds_dir
        self.source = CrdSource(crds_dir, "given" if crds_dir else "none")
        self._schemas: dict[tuple[str, str, str], Obj] = {}
        self._validators: dict[tuple[str, str, str], jsonschema.Draft7Validator] = {}
        if crds_dir is not None:
            self._schemas = load_crd_schemas(crds_dir)
            for key, schema in self._schemas.items():
                spec_only = copy.deepcopy(schema)
                (spec_only.get("properties") or {}).pop("status", None)
                self._validators[key] = jsonschema.Draft7Validator(spec_only)

    @classmethod
    def discover(cls, version: KarmadaVersion | None = None) -> SchemaValidator:
        """The validator of the CRDs found for `version` (tidal_sim.upstream_crds)."""
        source = find_crds(version)
        validator = cls(source.directory)
        validator.source = source
        return validator

    def schema(self, group: str, version: str, kind: str) -> Obj | None:
        """The openAPIV3Schema of a kind, when the upstream CRDs give one."""
        return self._schemas.get((group, version, kind))

    @property
    def upstream(self) -> bool:
        return bool(self._schemas)

    def admit(
        self,
        rtype: ResourceType,
        obj: Obj,
        field_validation: str = "Warn",
        *,
        decoding: tuple[str, ...] = (),
        patch: bool = False,
    ) -> list[str]:
        """Prune unknown fields, fill defaults and validate, in place; returns warnings.

        `field_validation` is the request's: Strict refuses the body's decoding problems
        (`decoding`: duplicate keys, unknown keys of JSON patch operations) and unknown fields
        (BadRequest, all of them named), Warn and Ignore drop unknown fields (Warn returns
        each problem as a warning), as the apiserver does.
        """
        key = (rtype.group, rtype.version, rtype.kind)
        causes = _metadata_causes(obj)
        validator = self._validators.get(key)
        unknown: list[str] = []
        if validator is not None:
            prune(self._schemas[key], obj, "", unknown, root=True)
        elif rtype.kind in ("PropagationPolicy", "ClusterPropagationPolicy"):
            unknown.extend(fallback_unknown(obj))
        problems = [*decoding, *(f'unknown field "{u}"' for u in sorted(unknown))]
        if problems and field_validation == "Strict":
            text = "strict decoding error: " + ", ".join(problems)
            raise BadRequest(
                text
                if patch
                else f'{rtype.kind} in version "{rtype.version}" cannot be handled as '
                f"a {rtype.kind}: {text}"
            )
        warnings = problems if field_validation == "Warn" else []
        if validator is not None:
            apply_defaults(self._schemas[key], obj)
            for error in sorted(
                validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))
            ):
                causes.extend(_cause(error))
        elif rtype.group.endswith("karmada.io"):
            causes.extend(fallback_causes(rtype, obj))
        if causes:
            raise invalid(rtype, obj.get("metadata", {}).get("name", ""), causes)
        return warnings


class BadRequest(StoreError):
    reason, code = "BadRequest", 400


def prune(schema: Obj, value: Any, path: str, unknown: list[str], *, root: bool = False) -> None:
    """Drop fields the structural schema does not declare (recording their paths), in place."""
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        for key in list(value):
            where = f"{path}.{key}" if path else key
            if props is not None and key in props:
                if not (root and key == "metadata"):
                    prune(props[key], value[key], where, unknown)
            elif isinstance(extra, dict):
                prune(extra, value[key], where, unknown)
            elif props is not None and extra is not True and not preserve:
                unknown.append(where)
                del value[key]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            prune(schema["items"], item, f"{path}[{i}]", unknown)


def invalid(rtype: ResourceType, name: str, causes: list[Cause]) -> Invalid:
    texts = [f"{c['field']}: {c['message']}" for c in causes]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    group = f".{rtype.group}" if rtype.group else ""
    return Invalid(f'{rtype.kind}{group} "{name}" is invalid: {joined}', causes=causes)


def _metadata_causes(obj: Obj) -> list[Cause]:
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    if not name and meta.get("generateName"):
        return []
    if not name:
        return [
            {
                "reason": "FieldValueRequired",
                "field": "metadata.name",
                "message": "Required value: name or generateName is required",
            }
        ]
    if len(name) > 253 or not _NAME.match(name):
        return [
            {
                "reason": "FieldValueInvalid",
                "field": "metadata.name",
                "message": f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist '
                "of lower case alphanumeric characters, '-' or '.', and must start and "
                "end with an alphanumeric character",
            }
        ]
    return []


_WEIGHTS = "spec.placement.replicaScheduling.weightPreference.staticWeightList"
_WEIGHT_FIELDS = ("targetCluster", "weight")


def fallback_unknown(obj: Obj) -> list[str]:
    """Without the CRDs: the unknown fields of a policy's static weights (pruned, in place),
    the one place a misspelt field changes what tidal's schedules do."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    weights = (
        ((spec.get("placement") or {}).get("replicaScheduling") or {}).get("weightPreference") or {}
    ).get("staticWeightList") or []
    unknown = []
    for i, item in enumerate(weights if isinstance(weights, list) else []):
        for key in [k for k in item if k not in _WEIGHT_FIELDS] if isinstance(item, dict) else []:
            unknown.append(f"{_WEIGHTS}[{i}].{key}")
            del item[key]
    return unknown


def _required(field: str) -> Cause:
    return {"reason": "FieldValueRequired", "field": field, "message": "Required value"}


def fallback_causes(rtype: ResourceType, obj: Obj) -> list[Cause]:
    """The few schema rules tidal depends on, for when the upstream CRDs are not at hand."""
    spec = obj.get("spec")
    if rtype.kind in ("PropagationPolicy", "ClusterPropagationPolicy"):
        if not isinstance(spec, dict):
            return [_required("spec")]
        return _selector_causes(spec) + _weight_causes(spec)
    if rtype.kind == "WorkloadRebalancer":
        if not isinstance(spec, dict) or not spec.get("workloads"):
            return [_required("spec.workloads")]
        return []
    if rtype.kind in ("ResourceBinding", "ClusterResourceBinding"):
        resource = spec.get("resource") if isinstance(spec, dict) else None
        if not isinstance(resource, dict):
            return [_required("spec.resource")]
        return [
            _required(f"spec.resource.{key}")
            for key in ("apiVersion", "kind", "name")
            if not resource.get(key)
        ]
    return []


def _selector_causes(spec: Obj) -> list[Cause]:
    """A policy's resourceSelectors: at least one, each with apiVersion and kind."""
    selectors = spec.get("resourceSelectors")
    causes = [] if selectors else [_required("spec.resourceSelectors")]
    for i, sel in enumerate(selectors or []):
        for key in ("apiVersion", "kind"):
            if not isinstance(sel, dict) or not sel.get(key):
                causes.append(_required(f"spec.resourceSelectors[{i}].{key}"))
    return causes


def _weight_causes(spec: Obj) -> list[Cause]:
    """A policy's static weights: each given, an integer of at least 1."""
    weights = (
        ((spec.get("placement") or {}).get("replicaScheduling") or {}).get("weightPreference") or {}
    ).get("staticWeightList") or []
    causes: list[Cause] = []
    for i, item in enumerate(weights):
        weight = item.get("weight") if isinstance(item, dict) else None
        field = f"spec.placement.replicaScheduling.weightPreference.staticWeightList[{i}].weight"
        if weight is None:
            causes.append(_required(field))
        elif not isinstance(weight, int) or weight < 1:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "field": field,
                    "message": f"Invalid value: {weight}: {field} in body should be "
                    "greater than or equal to 1",
                }
            )
    return causes
