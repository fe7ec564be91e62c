"""Listing page by page (limit/continue), shared by every resource module of the access layer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tidal.karmada.client import KarmadaClient, Obj, Resource

PAGE_SIZE = 500


def list_paged(
    client: KarmadaClient,
    res: Resource,
    namespace: str | None = None,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    page_size: int = PAGE_SIZE,
    each: Callable[[Obj], Obj] | None = None,
) -> tuple[list[Obj], str]:
    """Every object matching the selectors, page by page; and the list's resourceVersion.
    `each` turns every object into what is kept, page by page (a listing of thousands of pods
    then never holds them all whole at once)."""
    items: list[Obj] = []
    token: str | None = None
    version = ""
    while True:
        query: dict[str, Any] = {
            "limit": page_size,
            "continue": token,
            "labelSelector": label_selector or None,
            "fieldSelector": field_selector or None,
        }
        page = client.request("list", res, "GET", res.path(namespace), query=query)
        listed = page.get("items") or []
        items.extend(listed if each is None else map(each, listed))
        meta = page.get("metadata") or {}
        version = str(meta.get("resourceVersion") or version)
        token = meta.get("continue") or None
        if not token:
            return items, version
