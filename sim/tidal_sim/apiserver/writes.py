"""The write verbs: create, update (PUT), patch (merge, JSON, strategic, apply), delete,
deletecollection, and the /scale subresource."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import json_merge_patch

from tidal_sim.apiserver import patching, scale
from tidal_sim.apiserver.errors import ApiError
from tidal_sim.apiserver.listing import object_filter
from tidal_sim.apiserver.request import Request, Response
from tidal_sim.apiserver.routing import Route
from tidal_sim.apiserver.write_options import WriteOptions, write_options
from tidal_sim.kinds import ResourceType
from tidal_sim.store import Conflict, Invalid, NotFound, Store, StoreError

Obj = dict[str, Any]

# Kinds whose status may be given on create: a Cluster's status carries the member's capacity.
_STATUS_ON_CREATE = {("cluster.karmada.io", "clusters")}


class Admitter(Protocol):
    def admit(
        self,
        rtype: ResourceType,
        obj: Obj,
        field_validation: str = "Warn",
        *,
        decoding: tuple[str, ...] = (),
        patch: bool = False,
    ) -> list[str]:
        """Prune, default and validate an object written through the API, in place; returns
        warnings; raises a StoreError (Invalid, or BadRequest for Strict unknown fields)."""

    def schema(self, group: str, version: str, kind: str) -> Obj | None:
        """The kind's openAPIV3Schema (published in /openapi/v3), if the admitter has one."""


def _patched_meta(route: Route, patched: Obj) -> Obj:
    """The patched object's metadata; an error when the patch changed its name or namespace."""
    meta = patched.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise ApiError(422, "metadata must be an object", reason="Invalid")
    if meta.get("name") != route.name or (
        route.rtype.namespaced and meta.get("namespace") != route.namespace
    ):
        raise ApiError(400, "the patch may not change the object's name or namespace")
    return meta


class WriteVerbs:
    """Mixed into RestHandlers: everything that changes stored objects."""

    store: Store
    admitter: Admitter | None
    on_created: Callable[[ResourceType, Obj], None] | None

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

    def _admit(
        self, rtype: ResourceType, obj: Obj, options: WriteOptions, *, patch: bool = False
    ) -> dict[str, str | list[str]]:
        """Admission; returns the response headers it asks for (one Warning per problem)."""
        if self.admitter is None:
            return {}
        warnings = self.admitter.admit(
            rtype, obj, options.field_validation, decoding=options.decoding, patch=patch
        )
        if not warnings:
            return {}
        return {"Warning": ['299 - "' + w.replace('"', '\\"') + '"' for w in warnings]}

    def _create(self, route: Route, req: Request) -> Response:
        rtype = route.rtype
        if route.name:
            raise ApiError(405, "create is done on the collection, not on a named object")
        if rtype.namespaced and not route.namespace:
            raise ApiError(404, "the server could not find the requested resource")
        options = write_options("CreateOptions", req)
        body = self._body(req)
        self._check_identity(route, body)
        if rtype.has_status and (rtype.group, rtype.plural) not in _STATUS_ON_CREATE:
            body.pop("status", None)
        for drop in ("resourceVersion", "uid", "creationTimestamp", "generation"):
            body["metadata"].pop(drop, None)
        headers = self._admit(rtype, body, options)
        if options.dry_run:  # as created (uid, timestamp), but no resourceVersion: not stored
            meta = body["metadata"]
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            meta.update(
                uid=str(uuid.uuid4()), creationTimestamp=self.store.clock.rfc3339(), generation=1
            )
            return Response(201, body, headers)
        created = self.store.create(rtype, body)
        if self.on_created is not None:
            self.on_created(rtype, created)
        return Response(201, created, headers)

    def _update(self, route: Route, req: Request) -> Response:
        rtype = route.rtype
        options = write_options("UpdateOptions", req)
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
            if options.dry_run:
                return Response(200, body)
            return Response(200, self.store.update(rtype, body, subresource="status"))
        headers = self._admit(rtype, body, options)
        if options.dry_run:
            return Response(200, body, headers)
        return Response(200, self.store.update(rtype, body), headers)

    def _patch(self, route: Route, req: Request) -> Response:
        rtype = route.rtype
        content_type = req.headers.get("Content-Type") or ""
        options = write_options("PatchOptions", req)
        if content_type.split(";")[0].strip().lower() == patching.APPLY:
            return self._server_side_apply(route, req, options)
        last: StoreError | None = None
        for _ in range(5):  # the real server retries a patch that lost a race
            current = self.store.get(rtype, route.namespace, route.name or "")
            patched = patching.apply_patch(rtype, current, content_type, req.body)
            meta = _patched_meta(route, patched)
            try:
                return self._write_patched(route, patched, options)
            except Conflict as exc:
                last = exc
                if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
                    raise  # the patch itself carried a stale resourceVersion: a real conflict
        assert last is not None
        raise last

    def _write_patched(self, route: Route, patched: Obj, options: WriteOptions) -> Response:
        """Admit and store a patched object (its status alone for the status subresource)."""
        if route.subresource == "status":
            if options.dry_run:
                return Response(200, patched)
            return Response(200, self.store.update(route.rtype, patched, subresource="status"))
        headers = self._admit(route.rtype, patched, options, patch=True)
        if options.dry_run:
            return Response(200, patched, headers)
        return Response(200, self.store.update(route.rtype, patched), headers)

    def _server_side_apply(self, route: Route, req: Request, options: WriteOptions) -> Response:
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
            headers = self._admit(route.rtype, config, options, patch=True)
            if options.dry_run:
                return Response(201, config, headers)
            return Response(201, self.store.create(route.rtype, config), headers)
        return self._write_patched(route, json_merge_patch.merge(current, config), options)

    def _delete(self, route: Route, req: Request) -> Response:
        rtype = route.rtype
        dry_run = write_options("DeleteOptions", req, body_checked=False).dry_run
        options = json.loads(req.body) if req.body.strip() else {}
        preconditions = options.get("preconditions") or {} if isinstance(options, dict) else {}
        if preconditions:
            self._check_preconditions(route, preconditions)
        if dry_run:
            return Response(200, self.store.get(rtype, route.namespace, route.name or ""))
        if rtype.group == "" and rtype.plural == "namespaces":
            self._empty_namespace(route.name or "")
        return Response(200, self.store.delete(rtype, route.namespace, route.name or ""))

    def _check_preconditions(self, route: Route, preconditions: dict[str, Any]) -> None:
        """A delete's preconditions (resourceVersion, uid): a Conflict when one fails."""
        rtype = route.rtype
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
