"""The emulator's storage: objects, resourceVersions, generations, and the watch event log.

Semantics follow the real apiserver: one global resourceVersion counter bumped on every write;
metadata.generation bumped only when something outside metadata (and outside status, for kinds
with a status subresource) changes; an update carrying a stale resourceVersion is a Conflict;
watch history is bounded and a resume from before it is Gone.

Stored objects are never mutated in place (every write stores a new dict), so readers that only
serialize may take them without copying (`copy=False`); everything else gets a deep copy.
"""

from __future__ import annotations

import bisect
import builtins
import copy
import queue
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tidal_sim.clock import Clock
from tidal_sim.kinds import KindRegistry, ResourceType

Obj = dict[str, Any]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Admission = Callable[[ResourceType, Obj | None, Obj], None]  # (type, old, new): may raise Invalid


class StoreError(Exception):
    """Base of the storage errors; the REST layer maps each to a `kind: Status` body."""

    reason = "InternalError"
    code = 500

    def __init__(self, message: str, *, causes: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.causes = causes or []


class NotFound(StoreError):
    reason, code = "NotFound", 404


class AlreadyExists(StoreError):
    reason, code = "AlreadyExists", 409


class Conflict(StoreError):
    reason, code = "Conflict", 409


class Invalid(StoreError):
    reason, code = "Invalid", 422


class Gone(StoreError):
    reason, code = "Expired", 410


@dataclass(frozen=True)
class WatchEvent:
    type: EventType
    rtype: ResourceType
    obj: Obj  # the stored object: do not mutate
    old: Obj | None
    resource_version: int


@dataclass(eq=False)  # identity: unsubscribing compares with every watcher
class Subscription:
    """A watcher's queue of events; `None` in the queue means the store closed it."""

    accepts: Callable[[WatchEvent], bool]
    events: queue.SimpleQueue[WatchEvent | None] = field(default_factory=queue.SimpleQueue)


Key = tuple[str, str, str, str, str]  # group, version, plural, namespace, name


def _key(rtype: ResourceType, namespace: str | None, name: str) -> Key:
    return (rtype.group, rtype.version, rtype.plural, namespace or "", name)


def _generation_relevant(rtype: ResourceType, obj: Obj) -> Obj:
    skip = {"metadata", "apiVersion", "kind"}
    if rtype.has_status:
        skip.add("status")
    return {k: v for k, v in obj.items() if k not in skip}


class Store:
    """Thread-safe object storage with the apiserver's versioning rules."""

    def __init__(self, kinds: KindRegistry, clock: Clock, history: int = 50_000) -> None:
        self.kinds = kinds
        self.clock = clock
        self._lock = threading.RLock()
        self._objects: dict[Key, Obj] = {}
        self._by_type: dict[tuple[str, str, str], dict[Key, Obj]] = {}
        # per type, the (namespace, name) of every object in order: lists and pages read a
        # range of it, as the real apiserver reads a key range from etcd
        self._order: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
        self._rv = 0
        self._log: deque[WatchEvent] = deque(maxlen=history)
        self._subs: list[Subscription] = []
        self.admission: list[Admission] = []
        self.preserve_uid = False
        self.compacted_at = 0  # resourceVersion of the last explicit compact()

    # -- reads ---------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        return self._rv

    def get(
        self, rtype: ResourceType, namespace: str | None, name: str, *, copy_: bool = True
    ) -> Obj:
        with self._lock:
            obj = self._objects.get(_key(rtype, namespace, name))
            if obj is None:
                raise NotFound(f'{_qualified(rtype)} "{name}" not found')
            return _clone(obj) if copy_ else obj

    def list(
        self,
        rtype: ResourceType,
        namespace: str | None = None,
        accepts: Callable[[Obj], bool] | None = None,
        *,
        copy_: bool = True,
    ) -> tuple[list[Obj], int]:
        """Objects of a type (optionally in one namespace), sorted by namespace/name, and the rv."""
        items, rv, _ = self.list_range(rtype, namespace, accepts, copy_=copy_)
        return items, rv

    def list_range(
        self,
        rtype: ResourceType,
        namespace: str | None = None,
        accepts: Callable[[Obj], bool] | None = None,
        *,
        after: tuple[str, str] | None = None,
        limit: int | None = None,
        copy_: bool = True,
    ) -> tuple[builtins.list[Obj], int, int | None]:
        """Up to `limit` matching objects after the (namespace, name) key `after`, the rv, and
        how many objects of the range come after the page (None when a filter makes that
        unknowable without reading them all, as the real apiserver leaves it out then).
        A page costs O(page + skipped), not O(collection)."""
        with self._lock:
            type_key = (rtype.group, rtype.version, rtype.plural)
            bucket = self._by_type.get(type_key, {})
            order = self._order.get(type_key, [])
            lo, hi = _bounds(order, namespace, after)
            items: builtins.list[Obj] = []
            position = lo
            while position < hi and (not limit or limit <= 0 or len(items) < limit):
                ns, name = order[position]
                obj = bucket[(*type_key, ns, name)]
                if accepts is None or accepts(obj):
                    items.append(obj)
                position += 1
            remaining: int | None = 0
            if position < hi:
                remaining = hi - position if accepts is None else None
            rv = self._rv
        return ([_clone(o) for o in items] if copy_ else items), rv, remaining

    # -- writes --------------------------------------------------------------------------
    def create(self, rtype: ResourceType, obj: Obj) -> Obj:
        new = _clone(obj)
        meta = new.setdefault("metadata", {})
        name = meta.get("name")
        if not name and meta.get("generateName"):
            name = meta["generateName"] + uuid.uuid4().hex[:5]
            meta["name"] = name
        if not name:
            raise Invalid(
                "metadata.name: Required value", causes=[_cause("metadata.name", "Required value")]
            )
        namespace = meta.get("namespace") if rtype.namespaced else None
        if rtype.namespaced and not namespace:
            raise Invalid(
                "metadata.namespace: Required value",
                causes=[_cause("metadata.namespace", "Required value")],
            )
        if not rtype.namespaced:
            meta.pop("namespace", None)
        new["apiVersion"], new["kind"] = rtype.api_version, rtype.kind
        with self._lock:
            key = _key(rtype, namespace, name)
            if key in self._objects:
                raise AlreadyExists(f'{_qualified(rtype)} "{name}" already exists')
            if namespace and not self._namespace_exists(namespace):
                raise NotFound(f'namespaces "{namespace}" not found')
            if not (self.preserve_uid and meta.get("uid")):
                meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = self.clock.rfc3339()
            meta["generation"] = 1
            meta.pop("deletionTimestamp", None)
            for hook in self.admission:
                hook(rtype, None, new)
            return self._commit("ADDED", rtype, key, None, new)

    def update(
        self,
        rtype: ResourceType,
        obj: Obj,
        *,
        subresource: Literal["status"] | None = None,
        _owned: bool = False,
        _copy_result: bool = True,
    ) -> Obj:
        """PUT semantics; a resourceVersion in the body must match the stored one.

        `_owned` (internal): `obj` is a private copy the store may keep without copying again.
        """
        meta = obj.get("metadata", {})
        namespace = meta.get("namespace") if rtype.namespaced else None
        with self._lock:
            old = self.get(rtype, namespace, meta.get("name", ""), copy_=False)
            sent_rv = meta.get("resourceVersion")
            if sent_rv and str(sent_rv) != old["metadata"]["resourceVersion"]:
                raise Conflict(
                    f"Operation cannot be fulfilled on {_qualified(rtype)} "
                    f'"{meta.get("name")}": the object has been modified; please apply your '
                    "changes to the latest version and try again"
                )
            new = self._merge_update(rtype, old, obj, subresource, owned=_owned)
            for hook in self.admission:
                hook(rtype, old, new)
            return self._commit(
                "MODIFIED",
                rtype,
                _key(rtype, namespace, new["metadata"]["name"]),
                old,
                new,
                _copy_result,
            )

    def mutate(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        change: Callable[[Obj], None],
        *,
        subresource: Literal["status"] | None = None,
        copy_result: bool = True,
    ) -> Obj:
        """Read-modify-write under the lock (for controllers): never a Conflict.

        With `copy_result=False` the stored object itself is returned: read it, never mutate it.
        """
        with self._lock:
            current = self.get(rtype, namespace, name)
            change(current)
            current["metadata"].pop("resourceVersion", None)
            return self.update(
                rtype, current, subresource=subresource, _owned=True, _copy_result=copy_result
            )

    def delete(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj:
        with self._lock:
            key = _key(rtype, namespace if rtype.namespaced else None, name)
            old = self.get(rtype, namespace if rtype.namespaced else None, name, copy_=False)
            self._rv += 1
            gone = _clone(old)
            gone["metadata"]["resourceVersion"] = str(self._rv)
            del self._objects[key]
            del self._by_type[key[:3]][key]
            order = self._order[key[:3]]
            del order[bisect.bisect_left(order, key[3:])]
            self._publish(WatchEvent("DELETED", rtype, gone, old, self._rv))
            return _clone_obj(gone)

    # -- watch ---------------------------------------------------------------------------
    def subscribe(
        self, accepts: Callable[[WatchEvent], bool], since: int | None = None
    ) -> Subscription:
        """Events after `since` (replayed from history) and every later one; Gone if too old."""
        with self._lock:
            sub = Subscription(accepts)
            if since is not None and since < self._rv:
                oldest = self._log[0].resource_version if self._log else self._rv + 1
                if since < oldest - 1:
                    raise Gone(f"too old resource version: {since} ({oldest - 1})")
                newer: builtins.list[WatchEvent] = []
                for event in reversed(self._log):  # only the tail, not the whole history
                    if event.resource_version <= since:
                        break
                    newer.append(event)
                for event in reversed(newer):
                    if accepts(event):
                        sub.events.put(event)
            self._subs.append(sub)
            return sub

    def list_and_subscribe(
        self,
        rtype: ResourceType,
        namespace: str | None,
        accepts_obj: Callable[[Obj], bool] | None,
        accepts_event: Callable[[WatchEvent], bool],
    ) -> tuple[builtins.list[Obj], int, Subscription]:
        """The current objects (uncopied) and a subscription to every later event, atomically."""
        with self._lock:
            items, rv = self.list(rtype, namespace, accepts_obj, copy_=False)
            return items, rv, self.subscribe(accepts_event, since=rv)

    def drained_version(self, sub: Subscription) -> int | None:
        """The current resourceVersion if `sub` has no event pending (a bookmark is safe)."""
        with self._lock:
            return self._rv if sub.events.empty() else None

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)
        sub.events.put(None)

    def close_watches(self, which: Callable[[Subscription], bool] = lambda s: True) -> int:
        """Drop watch connections (a fault); returns how many were closed."""
        with self._lock:
            dropped = [s for s in self._subs if which(s)]
        for sub in dropped:
            self.unsubscribe(sub)
        return len(dropped)

    def compact(self) -> None:
        """Forget the watch history, so any resume from an older version is Gone."""
        with self._lock:
            self._log.clear()
            self.compacted_at = self._rv

    # -- internals -----------------------------------------------------------------------
    def _namespace_exists(self, namespace: str) -> bool:
        return ("", "v1", "namespaces", "", namespace) in self._objects

    def _merge_update(
        self,
        rtype: ResourceType,
        old: Obj,
        sent: Obj,
        subresource: str | None,
        *,
        owned: bool = False,
    ) -> Obj:
        if subresource == "status":
            new = _clone_obj({k: v for k, v in old.items() if k != "status"})
            if "status" in sent:
                new["status"] = sent["status"] if owned else _clone(sent["status"])
            return new
        new = sent if owned else _clone_obj(sent)
        new["apiVersion"], new["kind"] = rtype.api_version, rtype.kind
        meta = new.setdefault("metadata", {})
        for immutable in ("uid", "creationTimestamp", "name"):
            meta[immutable] = old["metadata"][immutable]
        if rtype.namespaced:
            meta["namespace"] = old["metadata"]["namespace"]
        else:
            meta.pop("namespace", None)
        if rtype.has_status:
            if "status" in old:
                new["status"] = _clone(old["status"])
            else:
                new.pop("status", None)
        meta["generation"] = old["metadata"].get("generation", 1)
        if _generation_relevant(rtype, new) != _generation_relevant(rtype, old):
            meta["generation"] += 1
        return new

    def _commit(
        self,
        etype: EventType,
        rtype: ResourceType,
        key: Key,
        old: Obj | None,
        new: Obj,
        copy_result: bool = True,
    ) -> Obj:
        if old is not None and _same_content(old, new):
            # a no-op write does not bump resourceVersion
            return _clone_obj(old) if copy_result else old
        self._rv += 1
        new["metadata"]["resourceVersion"] = str(self._rv)
        _stamp_managed_fields(old, new, self.clock.rfc3339())
        self._objects[key] = new
        bucket = self._by_type.setdefault(key[:3], {})
        if key not in bucket:
            bisect.insort(self._order.setdefault(key[:3], []), key[3:])
        bucket[key] = new
        self._publish(WatchEvent(etype, rtype, new, old, self._rv))
        return _clone_obj(new) if copy_result else new

    def _publish(self, event: WatchEvent) -> None:
        self._log.append(event)
        for sub in self._subs:
            if sub.accepts(event):
                sub.events.put(event)


_CONTAINERS = (dict, list, tuple)


def _clone_obj(obj: Obj) -> Obj:
    """_clone for a stored object (typed)."""
    cloned: Obj = _clone(obj)
    return cloned


def _bounds(
    order: list[tuple[str, str]], namespace: str | None, after: tuple[str, str] | None
) -> tuple[int, int]:
    """The slice of the sorted (namespace, name) keys a list reads: the namespace's (all
    when None), starting after the key `after`."""
    start = (namespace, "") if namespace else ("", "")
    lo = (
        bisect.bisect_right(order, after)
        if after and after >= start
        else (bisect.bisect_left(order, start))
    )
    hi = bisect.bisect_left(order, (namespace + "\0", "")) if namespace else len(order)
    return lo, hi


def _clone(value: Any) -> Any:
    """Deep copy of a JSON-like tree (dicts, lists, scalars): several times faster than
    copy.deepcopy, which matters when controllers rewrite thousands of objects."""
    kind = type(value)
    if kind is dict:
        return {k: (_clone(v) if type(v) in _CONTAINERS else v) for k, v in value.items()}
    if kind is list:
        return [(_clone(v) if type(v) in _CONTAINERS else v) for v in value]
    if kind is tuple:
        return tuple(_clone(v) for v in value)
    if kind in (str, int, float, bool) or value is None:
        return value
    return copy.deepcopy(value)


def _stamp_managed_fields(old: Obj | None, new: Obj, now: str) -> None:
    """metadata.managedFields, as far as clients read it: one entry for the object's main
    resource and one for its status, each with the time of the last write that changed it
    (field sets and managers are not tracked)."""
    status_only = old is not None and _content(old, "status") == _content(new, "status")
    entries = [
        dict(e)
        for e in (old or {}).get("metadata", {}).get("managedFields") or []
        if isinstance(e, dict)
    ]
    subresource = "status" if status_only else ""
    entries = [e for e in entries if (e.get("subresource") or "") != subresource]
    entry: Obj = {
        "manager": "unknown",
        "operation": "Update",
        "apiVersion": new.get("apiVersion", ""),
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": {},
    }
    if subresource:
        entry["subresource"] = subresource
    new["metadata"]["managedFields"] = [*entries, entry]


def _content(obj: Obj, *ignored: str) -> Obj:
    """`obj` without its server bookkeeping (resourceVersion, managedFields) nor `ignored`."""
    meta = {
        k: v
        for k, v in obj.get("metadata", {}).items()
        if k not in ("resourceVersion", "managedFields")
    }
    return {
        **{k: v for k, v in obj.items() if k not in ignored and k != "metadata"},
        "metadata": meta,
    }


def _same_content(old: Obj, new: Obj) -> bool:
    return _content(old) == _content(new)


def _qualified(rtype: ResourceType) -> str:
    """`deployments.apps`, or just `configmaps` for the core group, as the apiserver says it."""
    return f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural


def _cause(field_path: str, message: str) -> dict[str, str]:
    return {"reason": "FieldValueRequired", "message": message, "field": field_path}
