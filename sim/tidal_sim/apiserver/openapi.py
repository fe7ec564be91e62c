"""A minimal OpenAPI v3 discovery: enough for kubectl to see server-side field validation.

kubectl (apply, create, replace) checks, per group/version, that the PATCH operation of the
resource declares the `fieldValidation` query parameter; if so it validates on the server and
needs no schema of its own. The documents carry no schemas: kubectl then computes
strategic-merge patches for built-in kinds from its compiled-in types and sends JSON merge
patches for custom kinds, exactly as against a server without OpenAPI.
"""

from __future__ import annotations

import hashlib
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


def group_version(kinds: KindRegistry, group: str, version: str) -> dict[str, Any] | None:
    types = [r for r in kinds.all() if r.group == group and r.version == version]
    if not types:
        return None
    paths: dict[str, Any] = {}
    for rtype in sorted(types, key=lambda r: r.plural):
        prefix = "/" + _gv_path(group, version)
        if rtype.namespaced:
            prefix += "/namespaces/{namespace}"
        paths[f"{prefix}/{rtype.plural}/{{name}}"] = {"patch": _operation(rtype)}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (tidal emulator)", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }
