"""Watch streams: initial state, replay from a resourceVersion, bookmarks, timeouts, drops."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

from tidal_sim.apiserver.errors import status_body
from tidal_sim.apiserver.jsonenc import dumps
from tidal_sim.kinds import ResourceType
from tidal_sim.store import Gone, Store, Subscription, WatchEvent

Obj = dict[str, Any]
DEFAULT_TIMEOUT = 1800.0
_POLL = 0.25  # how often an idle stream checks for a closed client


class WatchRegistry:
    """Open watch subscriptions by resource, so faults and shutdown can close them."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._open: dict[int, tuple[Subscription, str, str | None]] = {}

    def add(self, sub: Subscription, resource: str, namespace: str | None) -> None:
        with self._lock:
            self._open[id(sub)] = (sub, resource, namespace)

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            self._open.pop(id(sub), None)

    def count(self) -> int:
        with self._lock:
            return len(self._open)

    def drop(self, which: Callable[[str, str | None], bool] = lambda r, n: True) -> int:
        """Close matching streams; returns how many were closed."""
        with self._lock:
            chosen = {id(s) for s, r, n in self._open.values() if which(r, n)}
        return self._store.close_watches(lambda s: id(s) in chosen)


def _line(etype: str, obj: Obj) -> bytes:
    return dumps({"type": etype, "object": obj}) + b"\n"


def _with_rv(obj: Obj, rv: int) -> Obj:
    return {**obj, "metadata": {**obj.get("metadata", {}), "resourceVersion": str(rv)}}


def _translate(event: WatchEvent, accepts: Callable[[Obj], bool] | None) -> tuple[str, Obj] | None:
    """The event as this watcher sees it, given its selector (None: not for it)."""
    if accepts is None:
        return event.type, event.obj
    if event.type == "DELETED":
        return ("DELETED", event.obj) if accepts(event.obj) else None
    now_in = accepts(event.obj)
    was_in = event.old is not None and accepts(event.old)
    if now_in and was_in:
        return "MODIFIED", event.obj
    if now_in:
        return "ADDED", event.obj
    if was_in and event.old is not None:
        return "DELETED", _with_rv(event.old, event.resource_version)
    return None


def _bookmark(rtype: ResourceType, rv: int, initial_end: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return _line(
        "BOOKMARK", {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta}
    )


def open_watch(
    store: Store,
    registry: WatchRegistry,
    rtype: ResourceType,
    resource: str,
    namespace: str | None,
    accepts: Callable[[Obj], bool] | None,
    *,
    resource_version: str | None,
    send_initial: bool | None,
    bookmarks: bool,
    timeout: float | None,
    cut_after: float | None,
    is_closed: Callable[[], bool],
    stalled: Callable[[], bool] = lambda: False,
    bookmark_interval: float = 1.0,
    render: Callable[[Obj], Obj] | None = None,
    idle: Callable[[float], None] | None = None,
    now: Callable[[], float] = time.monotonic,
) -> tuple[Iterator[bytes], Callable[[], None]]:
    """Subscribe now (so errors surface before the stream starts); returns the stream and a
    cleanup that ends the subscription even if the stream is never started."""

    def accepts_event(event: WatchEvent) -> bool:
        if event.rtype.plural != rtype.plural or event.rtype.group != rtype.group:
            return False
        ns = event.obj.get("metadata", {}).get("namespace")
        return not namespace or ns == namespace

    initial: list[Obj] = []
    rv_text = resource_version or ""
    try:
        if rv_text in ("", "0") or send_initial:
            initial, rv, sub = store.list_and_subscribe(rtype, namespace, accepts, accepts_event)
        else:
            try:
                since = int(rv_text)
            except ValueError:
                since = -1
            if since < 0:
                message = f"invalid resourceVersion {rv_text!r}"
                return iter([_line("ERROR", status_body(400, "BadRequest", message))]), _nothing
            sub = store.subscribe(accepts_event, since=since)
            rv = since
    except Gone as exc:
        return iter([_line("ERROR", status_body(410, "Expired", exc.message))]), _nothing
    registry.add(sub, resource, namespace)

    def cleanup() -> None:
        store.unsubscribe(sub)
        registry.remove(sub)

    stream = _stream(
        render,
        store,
        registry,
        sub,
        rtype,
        accepts,
        initial,
        rv,
        send_initial,
        bookmarks,
        timeout,
        cut_after,
        is_closed,
        bookmark_interval,
        idle,
        now,
        stalled,
    )
    return stream, cleanup


def _nothing() -> None:
    pass


def _initial_events(render: Callable[[Obj], Obj] | None, initial: list[Obj]) -> Iterator[bytes]:
    """The list a watch starts with, as ADDED events, 200 to a chunk."""
    batch: list[bytes] = []
    for obj in initial:
        batch.append(_line("ADDED", render(obj) if render else obj))
        if len(batch) >= 200:
            yield b"".join(batch)
            batch = []
    if batch:
        yield b"".join(batch)


def _progress_bookmark(store: Store, sub: Subscription, rtype: ResourceType) -> Iterator[bytes]:
    """A BOOKMARK at the version the subscription has drained to (none before any)."""
    current = store.drained_version(sub)
    if current is not None:
        yield _bookmark(rtype, current)


_EMPTY: Final = object()  # no event came within the wait
_HELD: Final = object()  # a stall-watch fault held the stream for the wait


def _wait_for(to_deadline: float, to_bookmark: float | None) -> float:
    """How long to wait for the next event: at most a poll, and not past the next bookmark."""
    wait = min(to_deadline, _POLL)
    return wait if to_bookmark is None else min(wait, max(0.0, to_bookmark))


def _next_event(
    sub: Subscription,
    wait: float,
    idle: Callable[[float], None] | None,
    stalled: Callable[[], bool] = lambda: False,
) -> Any:
    """The subscription's next event (None: closed by the store), or _EMPTY; _HELD after
    `wait` seconds while `stalled`. With `idle` (a simulated clock) the queue is only looked
    at, and time moves on when it is empty."""
    if stalled():
        _hold(wait, idle)
        return _HELD
    try:
        return sub.events.get(timeout=wait) if idle is None else sub.events.get_nowait()
    except queue.Empty:
        if idle is not None:
            idle(max(wait, 0.001))  # time moves; the controllers' work may send events
        return _EMPTY


def _hold(wait: float, idle: Callable[[float], None] | None) -> None:
    """Let `wait` seconds pass with nothing sent (a simulated clock: let it move)."""
    if idle is not None:
        idle(max(wait, 0.001))
    else:
        time.sleep(max(wait, 0.001))


def _deadline(start: float, timeout: float | None, cut_after: float | None) -> float:
    """When the stream ends: its timeout (or the default), or a drop-watch fault's cut."""
    deadline = start + (timeout if timeout and timeout > 0 else DEFAULT_TIMEOUT)
    return deadline if cut_after is None else min(deadline, start + cut_after)


def _stream(
    render: Callable[[Obj], Obj] | None,
    store: Store,
    registry: WatchRegistry,
    sub: Subscription,
    rtype: ResourceType,
    accepts: Callable[[Obj], bool] | None,
    initial: list[Obj],
    rv: int,
    send_initial: bool | None,
    bookmarks: bool,
    timeout: float | None,
    cut_after: float | None,
    is_closed: Callable[[], bool],
    bookmark_interval: float,
    idle: Callable[[float], None] | None,
    clock: Callable[[], float],
    stalled: Callable[[], bool] = lambda: False,
) -> Iterator[bytes]:
    start = clock()
    deadline = _deadline(start, timeout, cut_after)
    next_bookmark = start + bookmark_interval
    try:
        yield from _initial_events(render, initial)
        if send_initial and bookmarks:
            yield _bookmark(rtype, rv, initial_end=True)
        while (now := clock()) < deadline:
            wait = _wait_for(deadline - now, next_bookmark - now if bookmarks else None)
            event = _next_event(sub, wait, idle, stalled)
            if event is _HELD:  # a stall-watch fault: every event (and bookmark) held back
                if is_closed():
                    return
                continue
            if event is _EMPTY:
                if is_closed():
                    return
                if bookmarks and clock() >= next_bookmark:
                    next_bookmark = clock() + bookmark_interval
                    yield from _progress_bookmark(store, sub, rtype)
                continue
            if event is None:
                return  # closed by the store (shutdown or a drop-watch fault)
            seen = _translate(event, accepts)
            if seen is not None:
                yield _line(seen[0], render(seen[1]) if render else seen[1])
    finally:
        store.unsubscribe(sub)
        registry.remove(sub)
