"""The resource verbs: get, list, watch, create, update, patch, delete, on objects and /status."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from typing import Any, Protocol

import json_merge_patch

from tidal.sim.apiserver import patching, scale
from tidal.sim.apiserver.errors import ApiError, status_body
from tidal.sim.apiserver.listing import object_filter, page
from tidal.sim.apiserver.request import Request, Response, StreamResponse
from tidal.sim.apiserver.routing import Route
from tidal.sim.apiserver.tables import TableConvertor, wants_table
from tidal.sim.apiserver.watching import WatchRegistry, open_watch
from tidal.sim.faults import Faults
from tidal.sim.kinds import ResourceType
from tidal.sim.store import Conflict, Invalid, NotFound, Store, StoreError

Obj = dict[str, Any]

# Kinds whose status may be given on create: a Cluster's status carries the member's capacity.
_STATUS_ON_CREATE = {("cluster.karmada.io", "clusters")}


class Admitter(Protocol):
    def admit(self, rtype: ResourceType, obj: Obj, field_validation: str = "Warn") -> list[str]:
        """Prune, default and validate an object written through the API, in place; returns
        warnings; raises a StoreError (Invalid, or BadRequest for Strict unknown fields)."""


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


class RestHandlers:
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
        cut_after = self._apply_faults(verb, route)
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
    def _apply_faults(self, verb: str, route: Route) -> float | None:
        cut_after: float | None = None
        for fault in self.faults.fire(verb, route.resource, route.namespace, route.name):
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
        items, rv = self.store.list(route.rtype, route.namespace, accepts, copy_=False)
        chunk, list_rv, token, remaining = page(
            items, rv, req.int_param("limit"), req.query.get("continue")
        )
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if token:
            meta["continue"] = token
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

    def _scale(self, verb: str, route: Route, req: Request) -> Response:
        rtype, name = route.rtype, route.name or ""
        if verb == "get":
            return Response(200, scale.to_scale(self.store.get(rtype, route.namespace, name)))
        if verb not in ("update", "patch"):
            raise ApiError(405, f"{verb} is not supported on the scale subresource")
        current = self.store.get(rtype, route.namespace, name)
        view = scale.to_scale(current)
        if verb == "update":
            wanted = self._body(req)
        else:
            wanted = patching.apply_patch(
                rtype, view, req.headers.get("Content-Type") or "", req.body
            )
            if (wanted.get("metadata") or {}).get("resourceVersion") == view["metadata"].get(
                "resourceVersion"
            ):
                wanted["metadata"].pop("resourceVersion", None)  # a patch is not a precondition
        try:
            updated = scale.apply_scale(current, wanted)
        except ValueError as exc:
            raise ApiError(422, str(exc), reason="Invalid") from exc
        return Response(200, scale.to_scale(self.store.update(rtype, updated)))

    def _table(self, route: Route, req: Request, items: list[Obj], meta: Obj | None) -> Obj:
        include = req.query.get("includeObject") or "Metadata"
        return self.tables.table(route.rtype, items, meta, include)

    def _watch(self, route: Route, req: Request, cut_after: float | None) -> StreamResponse:
        accepts = object_filter(
            req.query.get("labelSelector", ""), req.query.get("fieldSelector", "")
        )
        send_initial = req.query.get("sendInitialEvents")
        chunks = open_watch(
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
            bookmark_interval=self.bookmark_interval,
            render=(lambda obj: self._table(route, req, [obj], None))
            if wants_table(req.headers.get("Accept"))
            else None,
        )
        return StreamResponse(chunks)

    # -- writes ----------------------------------------------------------------------------
    def _body(self, req: Request) -> Obj:
        content_type = (req.headers.get("Content-Type") or "").split(";")[0].strip()
        if content_type not in ("", "application/json", "application/yaml", "*/*"):
            raise ApiError(
                415,
                f"the body of the request was in an unknown format ({content_type}) - "
                "accepted media types include: application/json; the emulator does "
                "not decode protobuf: use `kubectl apply -f` / `create -f`",
                reason="UnsupportedMediaType",
            )
        try:
            body = json.loads(req.body or b"null")
        except ValueError as exc:
            raise ApiError(400, f"the request body is not valid JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        return body

    def _check_identity(self, route: Route, body: Obj) -> None:
        rtype = route.rtype
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if (api_version and api_version != rtype.api_version) or (kind and kind != rtype.kind):
            raise ApiError(
                400,
                f"the API version in the data ({api_version}) and kind ({kind}) "
                f"do not match the resource {rtype.api_version}/{rtype.kind}",
            )
        meta = body.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "metadata must be an object")
        if rtype.namespaced:
            if meta.get("namespace") and meta["namespace"] != route.namespace:
                raise ApiError(
                    400,
                    "the namespace of the provided object does not match the "
                    "namespace sent on the request",
                )
            meta["namespace"] = route.namespace
        if route.name and meta.get("name") and meta["name"] != route.name:
            raise ApiError(
                400,
                "the name of the object "
                f"({meta['name']}) does not match the name on the URL ({route.name})",
            )
        if route.name:
            meta["name"] = route.name

    def _admit(self, rtype: ResourceType, obj: Obj, req: Request) -> dict[str, str]:
        """Admission; returns the response headers it asks for (Warning)."""
        if self.admitter is None:
            return {}
        warnings = self.admitter.admit(rtype, obj, req.query.get("fieldValidation") or "Warn")
        if not warnings:
            return {}
        return {"Warning": ", ".join('299 - "' + w.replace('"', '\\"') + '"' for w in warnings)}

    def _create(self, route: Route, req: Request) -> Response:
        rtype = route.rtype
        if route.name:
            raise ApiError(405, "create is done on the collection, not on a named object")
        if rtype.namespaced and not route.namespace:
            raise ApiError(404, "the server could not find the requested resource")
        body = self._body(req)
        self._check_identity(route, body)
        if rtype.has_status and (rtype.group, rtype.plural) not in _STATUS_ON_CREATE:
            body.pop("status", None)
        for drop in ("resourceVersion", "uid", "creationTimestamp", "generation"):
            body["metadata"].pop(drop, None)
        headers = self._admit(rtype, body, req)
        if req.query.get("dryRun"):
            return Response(201, body, headers)
        created = self.store.create(rtype, body)
        if self.on_created is not None:
            self.on_created(rtype, created)
        return Response(201, created, headers)

    def _update(self, route: Route, req: Request) -> Response:
        rtype = route.rtype
        body = self._body(req)
        self._check_identity(route, body)
        if rtype.custom and not body["metadata"].get("resourceVersion"):
            raise ApiError.from_store(
                Invalid(
                    f'{rtype.kind}.{rtype.group} "{route.name}" is invalid: '
                    "metadata.resourceVersion: "
                    "Invalid value: 0x0: must be specified for an update",
                    causes=[
                        {
                            "reason": "FieldValueInvalid",
                            "field": "metadata.resourceVersion",
                            "message": "Invalid value: 0x0: must be specified for an update",
                        }
                    ],
                ),
                rtype,
                route.name,
            )
        if route.subresource == "status":
            return Response(200, self.store.update(rtype, body, subresource="status"))
        headers = self._admit(rtype, body, req)
        if req.query.get("dryRun"):
            return Response(200, body, headers)
        return Response(200, self.store.update(rtype, body), headers)

    def _patch(self, route: Route, req: Request) -> Response:
        rtype = route.rtype
        content_type = req.headers.get("Content-Type") or ""
        if content_type.split(";")[0].strip().lower() == patching.APPLY:
            return self._server_side_apply(route, req)
        last: StoreError | None = None
        for _ in range(5):  # the real server retries a patch that lost a race
            current = self.store.get(rtype, route.namespace, route.name or "")
            patched = patching.apply_patch(rtype, current, content_type, req.body)
            meta = patched.setdefault("metadata", {})
            if not isinstance(meta, dict):
                raise ApiError(422, "metadata must be an object", reason="Invalid")
            if meta.get("name") != route.name or (
                rtype.namespaced and meta.get("namespace") != route.namespace
            ):
                raise ApiError(400, "the patch may not change the object's name or namespace")
            if route.subresource == "status":
                try:
                    return Response(200, self.store.update(rtype, patched, subresource="status"))
                except Conflict as exc:
                    last = exc
                    if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
                        raise
                    continue
            headers = self._admit(rtype, patched, req)
            if req.query.get("dryRun"):
                return Response(200, patched, headers)
            try:
                return Response(200, self.store.update(rtype, patched), headers)
            except Conflict as exc:
                last = exc
                if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
                    raise  # the patch itself carried a stale resourceVersion: a real conflict
        assert last is not None
        raise last

    def _server_side_apply(self, route: Route, req: Request) -> Response:
        """Server-side apply, approximated: create if absent, else a merge of the configuration
        (field ownership is not tracked, so there are no apply conflicts)."""
        if req.query.get("fieldManager") in (None, ""):
            raise ApiError(
                400, "PATCH requests with application/apply-patch+yaml need fieldManager"
            )
        config = patching.apply_configuration(req.body)
        self._check_identity(route, config)
        try:
            current = self.store.get(route.rtype, route.namespace, route.name or "")
        except NotFound:
            if route.subresource:
                raise
            config["metadata"].pop("resourceVersion", None)
            self._admit(route.rtype, config, req)
            return Response(201, self.store.create(route.rtype, config))
        merged = json_merge_patch.merge(current, config)
        if route.subresource == "status":
            return Response(200, self.store.update(route.rtype, merged, subresource="status"))
        self._admit(route.rtype, merged, req)
        return Response(200, self.store.update(route.rtype, merged))

    def _delete(self, route: Route, req: Request) -> Response:
        rtype = route.rtype
        options = json.loads(req.body) if req.body.strip() else {}
        preconditions = options.get("preconditions") or {} if isinstance(options, dict) else {}
        if preconditions:
            current = self.store.get(rtype, route.namespace, route.name or "", copy_=False)
            want_rv = preconditions.get("resourceVersion")
            want_uid = preconditions.get("uid")
            if (want_rv and want_rv != current["metadata"]["resourceVersion"]) or (
                want_uid and want_uid != current["metadata"]["uid"]
            ):
                raise Conflict(
                    f"Operation cannot be fulfilled on {rtype.plural}.{rtype.group} "
                    f'"{route.name}": '
                    "Precondition failed"
                )
        if req.query.get("dryRun"):
            return Response(200, self.store.get(rtype, route.namespace, route.name or ""))
        if rtype.group == "" and rtype.plural == "namespaces":
            self._empty_namespace(route.name or "")
        return Response(200, self.store.delete(rtype, route.namespace, route.name or ""))

    def _empty_namespace(self, namespace: str) -> None:
        for rtype in self.store.kinds.all():
            if not rtype.namespaced:
                continue
            items, _ = self.store.list(rtype, namespace, copy_=False)
            for obj in items:
                with contextlib.suppress(StoreError):
                    self.store.delete(rtype, namespace, obj["metadata"]["name"])

    def _delete_collection(self, route: Route, req: Request) -> Response:
        accepts = object_filter(
            req.query.get("labelSelector", ""), req.query.get("fieldSelector", "")
        )
        items, _ = self.store.list(route.rtype, route.namespace, accepts, copy_=False)
        deleted = []
        for obj in items:
            meta = obj["metadata"]
            with contextlib.suppress(StoreError):
                deleted.append(self.store.delete(route.rtype, meta.get("namespace"), meta["name"]))
        return Response(
            200,
            {
                "kind": route.rtype.list_kind,
                "apiVersion": route.rtype.api_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)},
                "items": deleted,
            },
        )


def error_response(exc: ApiError) -> Response:
    return Response(exc.code, exc.body(), dict(exc.headers))


def ok_status(message: str = "") -> dict[str, Any]:
    return status_body(200, "", message)
