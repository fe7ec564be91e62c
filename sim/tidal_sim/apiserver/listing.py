"""List semantics: label and field selectors, limit/continue paging."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from tidal_sim.apiserver.errors import ApiError
from tidal_sim.kinds import ResourceType
from tidal_sim.labels import SelectorError, matches, parse
from tidal_sim.store import Store

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
    store: Store,
    rtype: ResourceType,
    namespace: str | None,
    accepts: Callable[[Obj], bool] | None,
    limit: int | None,
    token: str | None,
) -> tuple[list[Obj], int, str | None, int | None]:
    """(page items, list resourceVersion, next continue token, remaining count).

    The page is a range read of the store after the token's key, so reading a long list page by
    page stays linear. A token from before the last compaction is 410 Expired, as etcd's
    compaction makes it.
    """
    after: tuple[str, str] | None = None
    list_rv: int | None = None
    if token:
        list_rv, after = decode_continue(token)
        if list_rv < store.compacted_at:
            raise ApiError(
                410,
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter.",
                reason="Expired",
            )
    limit = limit if limit and limit > 0 else None
    chunk, rv, remaining = store.list_range(
        rtype, namespace, accepts, after=after, limit=limit, copy_=False
    )
    list_rv = rv if list_rv is None else list_rv
    if limit is None or remaining == 0 or not chunk:
        return chunk, list_rv, None, None
    return chunk, list_rv, encode_continue(list_rv, _key(chunk[-1])), remaining
