"""The policy schemas the apiserver publishes (OpenAPI v3, `/openapi/v3/apis/<group>/<version>`).

A Karmada apiserver publishes every CRD's structural schema there (the same documents
`kubectl explain` reads), so tidal checks a policy patch against the schema of the control
plane it writes to, with no CRD files at hand. The answer is the raw component schema per kind;
`tidal.loading.policies.PolicySchemas` turns it into a checker.
"""

from __future__ import annotations

from typing import Any

from tidal.karmada.client import KarmadaClient, Obj, Resource
from tidal.karmada.errors import NotFound

POLICY_GROUP_VERSION = "policy.karmada.io/v1alpha1"
_DOCUMENT = Resource("policy.karmada.io", "v1alpha1", "openapi/v3", "", False)


def published_schemas(client: KarmadaClient, kinds: tuple[str, ...]) -> dict[str, Obj]:
    """kind -> its published OpenAPI v3 schema, for those of `kinds` the server publishes.

    Empty when the server publishes no OpenAPI v3 for the group (404) or the document lacks
    the kinds; other API errors propagate (KarmadaError)."""
    try:
        document = client.request(
            "get openapi", _DOCUMENT, "GET", f"/openapi/v3/apis/{POLICY_GROUP_VERSION}"
        )
    except NotFound:
        return {}
    components = (document.get("components") or {}).get("schemas") or {}
    found: dict[str, Obj] = {}
    for schema in components.values() if isinstance(components, dict) else ():
        kind = _kind_of(schema)
        if kind in kinds and kind not in found:
            found[kind] = schema
    return found


def _kind_of(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    for gvk in schema.get("x-kubernetes-group-version-kind") or []:
        if (
            isinstance(gvk, dict)
            and f"{gvk.get('group')}/{gvk.get('version')}" == POLICY_GROUP_VERSION
        ):
            kind = gvk.get("kind")
            return str(kind) if kind else None
    return None
