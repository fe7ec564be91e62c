"""List semantics: label and field selectors, limit/continue paging."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from tidal.domain.selectors import SelectorError, matches, parse
from tidal.sim.apiserver.errors import ApiError

Obj = dict[str, Any]


def _field_value(obj: Obj, path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def parse_field_selector(query: str) -> list[tuple[str, bool, str]]:
    """`a=b,c!=d` into (path, equal?, value) triples; any dotted path of the object is allowed."""
    out: list[tuple[str, bool, str]] = []
    for part in filter(None, (p.strip() for p in query.split(","))):
        for token, equal in (("!=", False), ("==", True), ("=", True)):
            if token in part:
                path, _, value = part.partition(token)
                out.append((path.strip(), equal, value.strip()))
                break
        else:
            raise ApiError(
                400, f'invalid field selector: "{part}": expected key=value or key!=value'
            )
    return out


def object_filter(label_query: str, field_query: str) -> Callable[[Obj], bool] | None:
    """A predicate over stored objects, or None when nothing filters."""
    try:
        labels = parse(label_query)
    except SelectorError as exc:
        raise ApiError(400, f"unable to parse requirement: {exc}") from exc
    fields = parse_field_selector(field_query)
    if not labels and not fields:
        return None

    def accepts(obj: Obj) -> bool:
        if labels and not matches(labels, obj.get("metadata", {}).get("labels") or {}):
            return False
        return all((_field_value(obj, p) == v) == eq for p, eq, v in fields)

    return accepts


def encode_continue(rv: int, after: tuple[str, str]) -> str:
    raw = json.dumps({"rv": rv, "ns": after[0], "name": after[1]}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        return int(data["rv"]), (str(data["ns"]), str(data["name"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError(400, "continue key is not valid: " + str(exc)) from exc


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata", {})
    return meta.get("namespace") or "", meta.get("name") or ""


def page(
    items: list[Obj], rv: int, limit: int | None, token: str | None, compacted_at: int = 0
) -> tuple[list[Obj], int, str | None, int | None]:
    """(page items, list resourceVersion, next continue token, remaining count).

    A token from before the last compaction is 410 Expired, as etcd's compaction makes it.
    """
    list_rv = rv
    if token:
        list_rv, after = decode_continue(token)
        if list_rv < compacted_at:
            raise ApiError(
                410,
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter.",
                reason="Expired",
            )
        # items are sorted by (namespace, name): find the first one after the token's key
        lo, hi = 0, len(items)
        while lo < hi:
            mid = (lo + hi) // 2
            if _key(items[mid]) <= after:
                lo = mid + 1
            else:
                hi = mid
        items = items[lo:]
    if not limit or limit <= 0 or len(items) <= limit:
        return items, list_rv, None, None
    chunk = items[:limit]
    return chunk, list_rv, encode_continue(list_rv, _key(chunk[-1])), len(items) - limit
