"""Legacy (unaggregated) discovery documents: /api, /apis, /apis/G/V, /api/v1, /version.

Clients that ask for aggregated discovery (kubectl >= 1.30) get these plain documents with
`Content-Type: application/json` and fall back to legacy discovery, as against older servers.
"""

from __future__ import annotations

import re
from typing import Any

from tidal.sim.kinds import KindRegistry, ResourceType

SERVER_ADDRESS = [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]

VERSION_INFO = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-tidal-sim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def core_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": SERVER_ADDRESS}


def _groups(kinds: KindRegistry) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for rtype in sorted(kinds.all(), key=lambda r: (r.group, _version_priority(r.version))):
        if rtype.group and rtype.version not in groups.setdefault(rtype.group, []):
            groups[rtype.group].append(rtype.version)
    return groups


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version priority, highest first (v1 > v1beta1 > v1alpha2 > v1alpha1), so the
    preferred version of work.karmada.io is v1alpha2 as on a real apiserver."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (3, 0, 0)
    major, level, minor = match.groups()
    rank = {"alpha": 2, "beta": 1, None: 0}[level]
    return (rank, -int(major), -int(minor or 0))


def _group_doc(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": name,
        "versions": entries,
        "preferredVersion": entries[0],
    }


def group_list(kinds: KindRegistry) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_doc(name, versions) for name, versions in _groups(kinds).items()],
    }


def group(kinds: KindRegistry, name: str) -> dict[str, Any] | None:
    versions = _groups(kinds).get(name)
    return _group_doc(name, versions) if versions else None


def _resource_entries(rtype: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": _VERBS,
    }
    if rtype.short_names:
        main["shortNames"] = list(rtype.short_names)
    if rtype.group.endswith("karmada.io"):
        main["categories"] = ["karmada-io"]
    elif rtype.group == "apps":
        main["categories"] = ["all"]
    entries = [main]
    if (rtype.group, rtype.plural) in {("apps", "deployments"), ("apps", "statefulsets")}:
        entries.append(
            {
                "name": f"{rtype.plural}/scale",
                "singularName": "",
                "namespaced": True,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }
        )
    if rtype.has_status:
        entries.append(
            {
                "name": f"{rtype.plural}/status",
                "singularName": "",
                "namespaced": rtype.namespaced,
                "kind": rtype.kind,
                "verbs": ["get", "patch", "update"],
            }
        )
    return entries


def resource_list(kinds: KindRegistry, group_name: str, version: str) -> dict[str, Any] | None:
    types = [r for r in kinds.all() if r.group == group_name and r.version == version]
    if not types:
        return None
    resources = [e for r in sorted(types, key=lambda r: r.plural) for e in _resource_entries(r)]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group_name}/{version}" if group_name else version,
        "resources": resources,
    }
