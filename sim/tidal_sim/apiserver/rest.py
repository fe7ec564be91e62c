"""The resource verbs: dispatch, injected faults, get, list and watch (writes: writes.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tidal_sim.apiserver.errors import ApiError
from tidal_sim.apiserver.jsonenc import dumps
from tidal_sim.apiserver.listing import object_filter, page
from tidal_sim.apiserver.request import Request, Response, StreamResponse
from tidal_sim.apiserver.routing import Route
from tidal_sim.apiserver.tables import TableConvertor, wants_table
from tidal_sim.apiserver.watching import WatchRegistry, open_watch
from tidal_sim.apiserver.writes import Admitter, WriteVerbs
from tidal_sim.faults import BODY_FAULT_TYPES, FAULT_TYPES, STATE_FAULT_TYPES, Faults
from tidal_sim.kinds import ResourceType
from tidal_sim.store import Conflict, Store, StoreError

Obj = dict[str, Any]

__all__ = ["Admitter", "RestHandlers", "corrupt_body", "error_response", "verb_of"]


def _as_configmap(obj: Any) -> Any:
    if not isinstance(obj, dict) or "metadata" not in obj:
        return obj
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj["metadata"], "data": {}}


def corrupt_body(response: Response, fault_type: str) -> Response:
    """The answer as a faulty server or proxy would send it (fault types truncate, wrong-kind)."""
    body = response.body
    if fault_type == "truncate":
        payload = body.encode() if isinstance(body, str) else dumps(body)
        return Response(response.code, payload[: max(len(payload) // 2, 1)], response.headers)
    if isinstance(body, dict) and isinstance(body.get("items"), list):
        wrong = dict(
            body,
            apiVersion="v1",
            kind="ConfigMapList",
            items=[_as_configmap(i) for i in body["items"]],
        )
        return Response(response.code, wrong, response.headers)
    return Response(response.code, _as_configmap(body), response.headers)


def verb_of(method: str, route: Route, req: Request) -> str:
    if method == "GET":
        if route.name:
            return "get"
        return "watch" if req.flag("watch") else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if route.name else "deletecollection"
    raise ApiError(405, f"method {method} is not allowed")


class RestHandlers(WriteVerbs):
    def __init__(
        self,
        store: Store,
        faults: Faults,
        watches: WatchRegistry,
        admitter: Admitter | None = None,
        on_created: Callable[[ResourceType, Obj], None] | None = None,
        bookmark_interval: float = 1.0,
    ) -> None:
        self.store = store
        self.faults = faults
        self.watches = watches
        self.admitter = admitter
        self.on_created = on_created
        self.bookmark_interval = bookmark_interval
        self.tables = TableConvertor(store.clock)

    def handle(self, verb: str, route: Route, req: Request) -> Response | StreamResponse:
        cut_after = self._apply_faults(verb, route, req.identity)
        response = self._answer(verb, route, req, cut_after)
        if isinstance(response, Response) and response.code < 400:
            for fault in self.faults.fire(
                verb,
                route.resource,
                route.namespace,
                route.name,
                types=BODY_FAULT_TYPES,
                identity=req.identity,
            ):
                response = corrupt_body(response, fault.type)
        return response

    def _answer(
        self, verb: str, route: Route, req: Request, cut_after: float | None
    ) -> Response | StreamResponse:
        try:
            if route.subresource == "scale":
                return self._scale(verb, route, req)
            if verb == "get":
                obj = self.store.get(route.rtype, route.namespace, route.name or "", copy_=False)
                if wants_table(req.headers.get("Accept")):
                    meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                    return Response(200, self._table(route, req, [obj], meta))
                return Response(200, obj)
            if verb == "list":
                return self._list(route, req)
            if verb == "watch":
                return self._watch(route, req, cut_after)
            if verb == "create":
                return self._create(route, req)
            if verb == "update":
                return self._update(route, req)
            if verb == "patch":
                return self._patch(route, req)
            if verb == "delete":
                return self._delete(route, req)
            return self._delete_collection(route, req)
        except StoreError as exc:
            raise ApiError.from_store(exc, route.rtype, route.name) from exc

    # -- faults ----------------------------------------------------------------------------
    def _apply_faults(self, verb: str, route: Route, identity: str) -> float | None:
        cut_after: float | None = None
        request_faults = tuple(
            t for t in FAULT_TYPES if t not in BODY_FAULT_TYPES + STATE_FAULT_TYPES
        )
        for fault in self.faults.fire(
            verb, route.resource, route.namespace, route.name, request_faults, identity
        ):
            if fault.type == "latency":
                time.sleep(fault.seconds)
            elif fault.type == "error":
                raise ApiError(500, "Internal error occurred: injected fault " + fault.id)
            elif fault.type == "throttle":
                raise ApiError(
                    429,
                    "Too many requests, please try again later.",
                    details={"retryAfterSeconds": fault.retry_after},
                    headers={"Retry-After": str(fault.retry_after)},
                )
            elif fault.type == "conflict":
                exc = Conflict(
                    f"Operation cannot be fulfilled on {route.rtype.plural}.{route.rtype.group} "
                    f'"{route.name or ""}": the object has been modified; please apply your '
                    "changes to the latest version and try again"
                )
                raise ApiError.from_store(exc, route.rtype, route.name)
            elif fault.type == "drop-watch" and verb == "watch":
                cut_after = fault.seconds
        return cut_after

    # -- reads -----------------------------------------------------------------------------
    def _list(self, route: Route, req: Request) -> Response:
        accepts = object_filter(
            req.query.get("labelSelector", ""), req.query.get("fieldSelector", "")
        )
        chunk, list_rv, token, remaining = page(
            self.store,
            route.rtype,
            route.namespace,
            accepts,
            req.int_param("limit"),
            req.query.get("continue"),
        )
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if token:
            meta["continue"] = token
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        if wants_table(req.headers.get("Accept")):
            return Response(200, self._table(route, req, chunk, meta))
        return Response(
            200,
            {
                "kind": route.rtype.list_kind,
                "apiVersion": route.rtype.api_version,
                "metadata": meta,
                "items": chunk,
            },
        )

    def _table(self, route: Route, req: Request, items: list[Obj], meta: Obj | None) -> Obj:
        include = req.query.get("includeObject") or "Metadata"
        return self.tables.table(route.rtype, items, meta, include)

    def _watch(self, route: Route, req: Request, cut_after: float | None) -> StreamResponse:
        accepts = object_filter(
            req.query.get("labelSelector", ""), req.query.get("fieldSelector", "")
        )
        send_initial = req.query.get("sendInitialEvents")
        chunks, cleanup = open_watch(
            self.store,
            self.watches,
            route.rtype,
            route.resource,
            route.namespace,
            accepts,
            resource_version=req.query.get("resourceVersion"),
            send_initial=None if send_initial is None else send_initial.lower() == "true",
            bookmarks=req.flag("allowWatchBookmarks"),
            timeout=req.int_param("timeoutSeconds"),
            cut_after=cut_after,
            is_closed=req.is_closed,
            stalled=lambda: self.faults.stalled(route.resource, route.namespace),
            idle=req.idle,
            now=req.now,
            bookmark_interval=self.bookmark_interval,
            render=(lambda obj: self._table(route, req, [obj], None))
            if wants_table(req.headers.get("Accept"))
            else None,
        )
        return StreamResponse(chunks, cleanup)

    # -- writes ----------------------------------------------------------------------------


def error_response(exc: ApiError) -> Response:
    return Response(exc.code, exc.body(), dict(exc.headers))
