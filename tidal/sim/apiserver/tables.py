"""Server-side printing: `meta.k8s.io/v1 Table` answers for kubectl (`Accept: ...;as=Table`).

Columns follow upstream: the Karmada CRDs' additionalPrinterColumns, the built-in printers of
kube-apiserver for Deployments, ConfigMaps and the like, and karmada-aggregated-apiserver's for
Cluster. Kinds declared by a CRD in the topology use its own additionalPrinterColumns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tidal.sim.clock import Clock, parse_rfc3339
from tidal.sim.kinds import ResourceType

Obj = dict[str, Any]
Getter = Callable[[Obj], Any]


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    get: Getter
    description: str = ""
    priority: int = 0


_FILTER = re.compile(
    r"^(?P<field>[^\[]+)\[\?\(@\.(?P<key>[\w.-]+)==[\"'](?P<value>[^\"']*)[\"']\)\]$"
)


def json_path(expr: str) -> Getter:
    """A getter for the simple JSONPath forms printer columns use: `.a.b`, `.a[0].b`,
    `.a[?(@.type=="Ready")].status`."""
    parts = [p for p in re.split(r"\.(?![^\[]*\])", expr.strip().lstrip(".")) if p]

    def get(obj: Obj) -> Any:
        node: Any = obj
        for part in parts:
            if node is None:
                return None
            match = _FILTER.match(part)
            if match:
                items = node.get(match["field"]) if isinstance(node, dict) else None
                node = next(
                    (
                        i
                        for i in items or []
                        if isinstance(i, dict) and str(i.get(match["key"])) == match["value"]
                    ),
                    None,
                )
                continue
            index = re.match(r"^(?P<field>[^\[]+)\[(?P<i>\d+)\]$", part)
            if index:
                items = node.get(index["field"]) if isinstance(node, dict) else None
                i = int(index["i"])
                node = items[i] if isinstance(items, list) and i < len(items) else None
                continue
            node = node.get(part) if isinstance(node, dict) else None
        return node

    return get


def human_duration(seconds: float) -> str:
    """kubectl's short ages: 45s, 5m10s, 3h, 2d."""
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 48:
        return f"{hours}h"
    return f"{hours // 24}d"


def _condition(kind: str) -> Getter:
    return json_path(f'.status.conditions[?(@.type=="{kind}")].status')


def _ready_ratio(obj: Obj) -> str:
    status = obj.get("status") or {}
    return f"{status.get('readyReplicas', 0)}/{(obj.get('spec') or {}).get('replicas', 1)}"


def _count(field: str) -> Getter:
    return lambda o: len(o.get(field) or {}) + len(o.get("binaryData") or {})


def _event_object(obj: Obj) -> str:
    involved = obj.get("involvedObject") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


AGE = "AGE"
_BUILTIN: dict[tuple[str, str], list[Column]] = {
    ("apps", "deployments"): [
        Column("Ready", "string", _ready_ratio),
        Column("Up-to-date", "integer", json_path(".status.updatedReplicas")),
        Column("Available", "integer", json_path(".status.availableReplicas")),
    ],
    ("apps", "statefulsets"): [Column("Ready", "string", _ready_ratio)],
    ("", "configmaps"): [Column("Data", "integer", _count("data"))],
    ("", "secrets"): [
        Column("Type", "string", json_path(".type")),
        Column("Data", "integer", _count("data")),
    ],
    ("", "namespaces"): [Column("Status", "string", json_path(".status.phase"))],
    ("coordination.k8s.io", "leases"): [
        Column("Holder", "string", json_path(".spec.holderIdentity"))
    ],
    ("", "events"): [
        Column("Type", "string", json_path(".type")),
        Column("Reason", "string", json_path(".reason")),
        Column("Object", "string", _event_object),
        Column("Message", "string", json_path(".message")),
    ],
    ("cluster.karmada.io", "clusters"): [
        Column("Version", "string", json_path(".status.kubernetesVersion")),
        Column("Mode", "string", json_path(".spec.syncMode")),
        Column("Ready", "string", _condition("Ready")),
    ],
    ("policy.karmada.io", "propagationpolicies"): [
        Column("Conflict-Resolution", "string", json_path(".spec.conflictResolution")),
        Column("Priority", "string", json_path(".spec.priority")),
    ],
    ("policy.karmada.io", "clusterpropagationpolicies"): [
        Column("Conflict-Resolution", "string", json_path(".spec.conflictResolution")),
        Column("Priority", "string", json_path(".spec.priority")),
    ],
    ("work.karmada.io", "works"): [
        Column("Workload-Kind", "string", json_path(".spec.workload.manifests[0].kind")),
        Column("Applied", "string", _condition("Applied")),
    ],
    ("work.karmada.io", "resourcebindings"): [
        Column("Scheduled", "string", _condition("Scheduled")),
        Column("FullyApplied", "string", _condition("FullyApplied")),
    ],
    ("work.karmada.io", "clusterresourcebindings"): [
        Column("Scheduled", "string", _condition("Scheduled")),
        Column("FullyApplied", "string", _condition("FullyApplied")),
    ],
}


def wants_table(accept: str | None) -> bool:
    return bool(accept) and "as=Table" in (accept or "")


class TableConvertor:
    """Builds Tables for kubectl; custom kinds may register their printer columns."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._custom: dict[tuple[str, str], list[Column]] = {}

    def register_printer_columns(self, rtype: ResourceType, columns: list[Obj]) -> None:
        """Use a CRD's additionalPrinterColumns (jsonPath, name, type, priority) for a kind."""
        self._custom[(rtype.group, rtype.plural)] = [
            Column(
                str(c.get("name", "")),
                str(c.get("type", "string")),
                json_path(str(c.get("jsonPath", ""))),
                str(c.get("description", "")),
                int(c.get("priority", 0)),
            )
            for c in columns
            if c.get("jsonPath") and c.get("name")
        ]

    def _columns(self, rtype: ResourceType) -> list[Column]:
        custom = self._custom.get((rtype.group, rtype.plural))
        if custom is not None:
            return custom
        extra = _BUILTIN.get((rtype.group, rtype.plural), [])
        return [*extra, Column("Age", "date", json_path(".metadata.creationTimestamp"))]

    def _cell(self, column: Column, obj: Obj) -> Any:
        value = column.get(obj)
        if column.type == "date":
            if not value:
                return "<unknown>"
            try:
                return human_duration(self._clock.now() - parse_rfc3339(str(value)))
            except ValueError:
                return str(value)
        if value is None:
            return "<none>" if column.type == "string" else 0
        if isinstance(value, dict | list):
            return str(value)
        return value

    def table(
        self,
        rtype: ResourceType,
        items: list[Obj],
        list_meta: Obj | None,
        include_object: str = "Metadata",
        with_columns: bool = True,
    ) -> Obj:
        columns = self._columns(rtype)
        defs = [
            {
                "name": "Name",
                "type": "string",
                "format": "name",
                "priority": 0,
                "description": "Name must be unique within a namespace.",
            }
        ]
        defs += [
            {
                "name": c.name,
                "type": c.type,
                "format": "",
                "priority": c.priority,
                "description": c.description,
            }
            for c in columns
        ]
        rows = []
        for obj in items:
            row: Obj = {
                "cells": [obj.get("metadata", {}).get("name", "")]
                + [self._cell(c, obj) for c in columns]
            }
            if include_object == "Object":
                row["object"] = obj
            elif include_object != "None":
                row["object"] = {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj.get("metadata", {}),
                }
            rows.append(row)
        table: Obj = {
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": list_meta or {},
            "rows": rows,
        }
        if with_columns:
            table["columnDefinitions"] = defs
        return table
