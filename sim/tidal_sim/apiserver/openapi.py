"""OpenAPI v3 discovery: server-side field validation for kubectl, and the Karmada schemas.

kubectl (apply, create, replace) checks, per group/version, that the PATCH operation of the
resource declares the `fieldValidation` query parameter; if so it validates on the server and
needs no schema of its own. A kind with an upstream CRD schema is published in
`components.schemas` as an apiserver publishes a CRD's (named by the reversed group, tagged with
`x-kubernetes-group-version-kind`, metadata a reference to ObjectMeta), which is what
`kubectl explain` and tidal's patch check read. Built-in kinds carry no schema: kubectl then
uses its compiled-in types, as against a server without OpenAPI.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

from tidal_sim.kinds import KindRegistry, ResourceType


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def root(kinds: KindRegistry) -> dict[str, Any]:
    paths = {}
    for group, version in sorted({(r.group, r.version) for r in kinds.all()}):
        gv = _gv_path(group, version)
        digest = hashlib.sha256(gv.encode()).hexdigest()[:16].upper()
        paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
    return {"paths": paths}


def _operation(rtype: ResourceType) -> dict[str, Any]:
    return {
        "x-kubernetes-group-version-kind": {
            "group": rtype.group,
            "version": rtype.version,
            "kind": rtype.kind,
        },
        "x-kubernetes-action": "patch",
        "parameters": [
            {
                "name": "fieldValidation",
                "in": "query",
                "schema": {"type": "string", "uniqueItems": True},
            },
            {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
        ],
        "responses": {"200": {"description": "OK"}},
    }


SchemaOf = Callable[[str, str, str], dict[str, Any] | None]  # (group, version, kind) -> schema
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_OBJECT_META_SCHEMA: dict[str, Any] = {
    "description": "Standard object metadata.",
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Name, unique within a namespace."},
        "namespace": {"type": "string", "description": "The namespace of a namespaced object."},
        "labels": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Map of string keys and values to select objects by.",
        },
        "annotations": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Unstructured key value map set by tools.",
        },
        "resourceVersion": {"type": "string", "description": "The object's version."},
        "uid": {"type": "string", "description": "Unique in time and space."},
    },
}


def component_name(rtype: ResourceType) -> str:
    """`io.karmada.policy.v1alpha1.ClusterPropagationPolicy` for policy.karmada.io."""
    group = ".".join(reversed(rtype.group.split("."))) if rtype.group else "io.k8s.api.core"
    return f"{group}.{rtype.version}.{rtype.kind}"


def _published(rtype: ResourceType, schema: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(schema)
    properties = doc.setdefault("properties", {})
    properties["metadata"] = {
        "allOf": [{"$ref": f"#/components/schemas/{OBJECT_META}"}],
        "default": {},
        "description": "Standard object's metadata.",
    }
    doc["x-kubernetes-group-version-kind"] = [
        {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
    ]
    return doc


def group_version(
    kinds: KindRegistry, group: str, version: str, schema_of: SchemaOf | None = None
) -> dict[str, Any] | None:
    types = [r for r in kinds.all() if r.group == group and r.version == version]
    if not types:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rtype in sorted(types, key=lambda r: r.plural):
        prefix = "/" + _gv_path(group, version)
        if rtype.namespaced:
            prefix += "/namespaces/{namespace}"
        paths[f"{prefix}/{rtype.plural}/{{name}}"] = {"patch": _operation(rtype)}
        schema = schema_of(group, version, rtype.kind) if schema_of is not None else None
        if schema is not None:
            schemas[component_name(rtype)] = _published(rtype, schema)
    if schemas:
        schemas[OBJECT_META] = copy.deepcopy(_OBJECT_META_SCHEMA)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (tidal emulator)", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }
