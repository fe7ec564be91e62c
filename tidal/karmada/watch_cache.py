"""A self-healing list+watch of one resource kind and its cache (an informer).

An `Informer` lists a kind once (all namespaces, or one), keeps watching it from the last
resourceVersion (re-listing after 410 Gone), keeps the cache, and hands readers the events
they have not seen (a `Subscriber` each, by namespace or by key). tidal.karmada.informer's
SharedReads holds the informers of a daemon; tidal.karmada.member_capacity keeps a member's
Nodes and Pods with one each, reduced to their amounts (`digest`, `on_change`).
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import structlog

from tidal.karmada.bindings import key_of
from tidal.karmada.client import (
    KarmadaClient,
    Obj,
    Resource,
)
from tidal.karmada.errors import Forbidden, Gone, KarmadaError, Throttled
from tidal.karmada.paging import list_paged

log = structlog.get_logger("tidal.karmada.watch_cache")

# how long a reader that must not read a cache whose watch is down waits for the watch to
# (re)open before it reads afresh instead
LIVE_WAIT_SECONDS = 1.0
# a refused watch is retried after retry_seconds, doubled per refusal in a row up to this factor
BACKOFF_LIMIT = 16.0

T = TypeVar("T")
Event = tuple[Obj, bool]  # (object, deleted)


class Subscriber:
    """The changes one reader has not taken yet, the latest per object: a reader that waits
    long (a team waiting for capacity) holds at most one entry per object it reads, not every
    event of the night."""

    def __init__(self, namespace: str | None) -> None:
        self.namespace = namespace
        self._pending: dict[str, Event] = {}  # insertion order: the order they first changed
        self._ready = threading.Condition()

    def wants(self, obj: Obj) -> bool:
        return (
            self.namespace is None or (obj.get("metadata") or {}).get("namespace") == self.namespace
        )

    def put(self, key: str, event: Event) -> None:
        with self._ready:
            self._pending[key] = event
            self._ready.notify()

    def get(self, timeout: float) -> Event | None:
        """The oldest pending change, or None after `timeout` seconds without one."""
        with self._ready:
            if not self._ready.wait_for(lambda: bool(self._pending), timeout):
                return None
            key = next(iter(self._pending))
            return self._pending.pop(key)


class Informer:
    """A shared, self-healing list+watch of one resource kind across all namespaces."""

    def __init__(
        self,
        client: KarmadaClient,
        res: Resource,
        *,
        max_watch_seconds: float = 60.0,
        retry_seconds: float = 1.0,
        sync_timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        fail_fast: bool = False,
        namespace: str | None = None,
        digest: Callable[[Obj], Obj] | None = None,
        on_change: Callable[[Obj | None, Obj | None], None] | None = None,
        on_error: Callable[[KarmadaError], None] | None = None,
    ) -> None:
        self.client, self.res = client, res
        self._on_error = on_error  # told of every failed listing or watch (outside the lock)
        # what is cached of each object (client-go's transform: a tally of thousands of pods
        # keeps a few fields of each), and (old, new) of every change, under the lock
        self._digest = digest
        self._on_change = on_change
        self.namespace = namespace if res.namespaced else None  # None: every namespace
        self.max_watch_seconds = max_watch_seconds
        self.retry_seconds = retry_seconds
        self.sync_timeout = sync_timeout
        self._sleep = sleep
        # a reader waiting for the first listing gets its error at once (a run alone: its own
        # listing would have failed the same way), not after sync_timeout
        self.fail_fast = fail_fast
        self._lock = threading.Lock()
        self._synced = threading.Condition(self._lock)
        self._changed = threading.Condition(self._lock)  # any event or listing
        self._cache: dict[str, Obj] = {}
        self._is_synced = False
        self._watching = False  # its first watch was accepted (a fail_fast reader waits for it)
        # a watch is open now: while not (ended, refused, reconnecting, relisting) the cache
        # may miss changes, and a reader that must see the latest state reads afresh
        self._live = False
        self._down_since: float | None = None  # when the last watch ended (monotonic)
        # a watch failed: the next one may open long after the version it resumes from, and
        # would be live before it has delivered what changed meanwhile; list again first
        self._relist = False
        self._failures = 0  # watches refused in a row (the retry's backoff)
        # readers are held weakly: a finished wave drops its view and with it its subscriber
        self._subscribers: weakref.WeakSet[Subscriber] = weakref.WeakSet()  # keys=None
        # keyed readers by token, and key -> tokens (a tuple: a key has a reader or two, and
        # thousands of keys each with a set or WeakSet would cost more than the views save)
        self._keyed: dict[int, weakref.ref[Subscriber]] = {}
        self._by_key: dict[str, tuple[int, ...]] = {}
        self._tokens = itertools.count()
        # keyed readers gone: appended by their weakref callback (at any moment, in any
        # thread, so without the lock); their index entries are pruned under the lock
        self._released: collections.deque[tuple[int, frozenset[str]]] = collections.deque()
        self._users = 0
        self._thread: threading.Thread | None = None
        self.version = ""
        self.lists = 0
        self.watches = 0
        self.error: KarmadaError | None = None
        self._end_watch: Callable[[], None] | None = None  # ends the open watch at once

    # --- life cycle: runs while it has users ------------------------------------------------
    def acquire(self) -> None:
        with self._lock:
            self._users += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, daemon=True, name=f"tidal-informer-{self.res.plural}"
                )
                self._thread.start()

    def release(self) -> None:
        """One user fewer; the last one ends the open watch at once (the thread then stops,
        unless a new user came meanwhile: it then watches on from the same version)."""
        with self._lock:
            self._users = max(0, self._users - 1)
            end = self._end_watch if self._users == 0 else None
        if end is not None:
            end()

    def _should_stop(self) -> bool:
        """With no users left, end the thread and drop the cache (the lock is held)."""
        if self._users > 0:
            return False
        for obj in self._cache.values():
            self._changed_one(obj, None)
        self._thread, self._is_synced, self._cache, self.version = None, False, {}, ""
        self._watching = self._live = self._relist = False
        self._failures = 0  # a new user starts without the last one's backoff
        return True

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._should_stop():
                    return
                synced = self._is_synced and not self._relist
            try:
                if not synced:
                    self._list()
                self._watch()
            except Gone:
                with self._lock:
                    self._is_synced = False  # too old a version: list again
            except KarmadaError as exc:
                with self._lock:
                    self.error = exc
                    self._relist = True
                    if self.fail_fast and isinstance(exc, Forbidden):
                        # listed but not let watch: a cache that would never change is no
                        # cache; its readers get the refusal (and read by GET instead)
                        self._is_synced = False
                    self._synced.notify_all()
                log.warning(
                    "shared_watch_failed",
                    resource=self.res.plural,
                    error=str(exc),
                    error_class=type(exc).__name__,
                )
                if self._on_error is not None:
                    self._on_error(exc)
                self._sleep(self._retry_wait(exc))
            except Exception as exc:  # a bug must not silently stop every switch's watch
                log.exception(
                    "shared_watch_failed",
                    resource=self.res.plural,
                    error=str(exc)[:500],
                    error_class=type(exc).__name__,
                )
                with self._lock:
                    self._is_synced = False  # list afresh: the cache may have missed events
                self._sleep(self.retry_seconds)

    def _retry_wait(self, exc: KarmadaError) -> float:
        """retry_seconds, doubled for each failure since a watch last opened (each retry lists
        again: a long outage must not turn into a listing a second), up to BACKOFF_LIMIT times
        it; longer when the server asked for it (Retry-After, capped as the client caps it)."""
        with self._lock:
            self._failures += 1
            wait = self.retry_seconds * min(2.0 ** (self._failures - 1), BACKOFF_LIMIT)
        if isinstance(exc, Throttled) and exc.retry_after is not None:
            return max(wait, min(exc.retry_after, self.client.retry.max_retry_after))
        return wait

    def _list(self) -> None:
        items, version = list_paged(self.client, self.res, self.namespace, each=self._digest)
        fresh = {key_of(item): item for item in items}
        with self._lock:
            old = self._cache
            self._cache, self.version, self._is_synced = fresh, version, True
            self._relist = False
            self.lists += 1
            self.error = None
            changed: list[Event] = [
                (obj, False) for key, obj in fresh.items() if old.get(key) != obj
            ]
            changed += [(obj, True) for key, obj in old.items() if key not in fresh]
            for obj, deleted in changed:
                key = key_of(obj)
                self._changed_one(old.get(key), None if deleted else obj)
                self._publish(key, obj, deleted)
            self._synced.notify_all()
            self._changed.notify_all()

    def _watch(self) -> None:
        timeout = max(1, int(self.max_watch_seconds))
        query: dict[str, Any] = {
            "resourceVersion": self.version,
            "timeoutSeconds": timeout,
            "allowWatchBookmarks": True,
        }
        self.watches += 1

        def opened(end: Callable[[], None]) -> None:
            with self._lock:
                self._end_watch = end
                self._watching = self._live = True
                self._failures = 0
                self._synced.notify_all()
                gone = self._users == 0
            if gone:  # released while the watch was opening
                end()

        try:
            self._follow(query, timeout, opened)
        finally:
            with self._lock:
                self._live = False  # ended or failed: not live until the next one opens
                self._down_since = time.monotonic()

    def _follow(
        self, query: dict[str, Any], timeout: int, opened: Callable[[Callable[[], None]], None]
    ) -> None:
        # a refused watch reaches _run, which lists again before the next one, rather than
        # being retried here from a version the refusals may have left far behind
        with self.client.single_attempt():
            events = self.client.stream(
                self.res,
                self.res.path(self.namespace),
                query,
                read_timeout=timeout + 5.0,
                on_open=opened,
            )
            for event in events:
                if not self._apply(event):
                    return

    def _apply(self, event: Obj) -> bool:
        """Put one watch event in the cache and hand it on; False once no one reads."""
        obj = event.get("object") or {}
        with self._lock:
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self.version = str(version)
            if event.get("type") == "BOOKMARK":
                self._changed.notify_all()
                return True
            if self._digest is not None:
                obj = self._digest(obj)
            key = key_of(obj)
            deleted = event.get("type") == "DELETED"
            if deleted:
                old = self._cache.pop(key, None)
            else:
                old, self._cache[key] = self._cache.get(key), obj
            self._changed_one(old, None if deleted else obj)
            self._publish(key, obj, deleted)
            self._changed.notify_all()
            return self._users > 0

    def _changed_one(self, old: Obj | None, new: Obj | None) -> None:
        if self._on_change is not None and old != new:
            self._on_change(old, new)

    def _publish(self, key: str, obj: Obj, deleted: bool) -> None:
        """Hand a change to the readers of its namespace and to those naming its key (the lock
        is held): O(namespace-wide readers + readers of this key), not O(every reader)."""
        self._prune()
        event = (obj, deleted)
        for subscriber in list(self._subscribers):
            if subscriber.wants(obj):
                subscriber.put(key, event)
        for token in self._by_key.get(key, ()):
            keyed = self._keyed[token]()
            if keyed is not None and keyed.wants(obj):
                keyed.put(key, event)

    def _prune(self) -> None:
        """Drop the index entries of keyed readers gone (the lock is held)."""
        while self._released:
            token, keys = self._released.popleft()
            self._keyed.pop(token, None)
            for key in keys:
                left = tuple(t for t in self._by_key.get(key, ()) if t != token)
                if left:
                    self._by_key[key] = left
                else:
                    self._by_key.pop(key, None)

    def readers(self) -> tuple[int, int]:
        """(namespace-wide readers, keyed readers) alive now."""
        with self._lock:
            self._prune()
            return len(self._subscribers), len(self._keyed)

    # --- readers ----------------------------------------------------------------------------
    def _wait_synced(self) -> None:
        """Wait for the first listing (the lock is held); its error if it does not come."""
        if (
            not self._synced.wait_for(
                lambda: (
                    (self._is_synced and (self._watching or not self.fail_fast))
                    or (self.fail_fast and self.error is not None)
                ),
                self.sync_timeout,
            )
            or not self._is_synced
        ):
            raise self.error or KarmadaError(
                f"the shared {self.res.plural} cache did not fill within {self.sync_timeout:g}s",
                verb="list",
                resource=self.res.plural,
            )

    def subscribe(
        self, namespace: str | None, keys: Iterable[str] | None = None
    ) -> tuple[dict[str, Obj], Subscriber]:
        """The cache (of one namespace, or all) and a queue of every later change, taken at
        one instant so no change falls between them. With `keys` ("namespace/name"), only
        those: a key not cached yet gets its later events, a deleted one its deletion."""
        wanted = None if keys is None else frozenset(keys)
        subscriber = Subscriber(namespace)
        with self._lock:
            self._wait_synced()
            self._prune()
            if wanted is None:
                self._subscribers.add(subscriber)
                snapshot = {k: o for k, o in self._cache.items() if subscriber.wants(o)}
            else:
                token, released = next(self._tokens), self._released
                self._keyed[token] = weakref.ref(
                    subscriber, lambda _ref: released.append((token, wanted))
                )
                for key in wanted:
                    self._by_key[key] = (*self._by_key.get(key, ()), token)
                snapshot = {
                    k: o
                    for k in wanted
                    if (o := self._cache.get(k)) is not None and subscriber.wants(o)
                }
        return snapshot, subscriber

    def wait_changed(self, version: str, timeout: float) -> bool:
        """Until the cache's resourceVersion is no longer `version` (True), or `timeout`
        seconds pass (False): a wait that wakes on the watch, not on a poll."""
        return self.wait_until(lambda: self.version != version, timeout)

    def wait_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Until `done()` (asked under the lock after every event, listing and bookmark) or
        `timeout` seconds."""
        with self._lock:
            return self._changed.wait_for(done, max(0.0, timeout))

    def snapshot(self, read: Callable[[], T]) -> tuple[str, T]:
        """The cache's version and `read()` together (under the lock that every event and
        its on_change hold)."""
        with self._lock:
            return self.version, read()

    def get(self, key: str) -> Obj | None:
        """The cached object of `key` ("namespace/name", "/name" cluster-scoped), or None."""
        with self._lock:
            self._wait_synced()
            return self._cache.get(key)

    @property
    def live(self) -> bool:
        """A watch is open now (the cache follows the server)."""
        with self._lock:
            return self._live

    def following(self, grace: float) -> bool:
        """Listed, and a watch open now or one that ended at most `grace` seconds ago (the
        cache is then still the state at its version, a moment old)."""
        with self._lock:
            if not self._is_synced:
                return False
            down = self._down_since
            return self._live or (down is not None and time.monotonic() - down <= grace)

    def _wait_live(self, wait: float) -> bool:
        """Synced, and a watch open now, waiting up to `wait` seconds for one to (re)open
        (the lock is held)."""
        self._wait_synced()
        return self._synced.wait_for(lambda: self._live and self._is_synced, max(0.0, wait))

    def live_get(self, key: str, wait: float) -> tuple[bool, Obj | None]:
        """(True, the cached object of `key` or None) while a watch is open; (False, None)
        when none opens within `wait` seconds: the cache may trail, read afresh instead."""
        with self._lock:
            if not self._wait_live(wait):
                return False, None
            return True, self._cache.get(key)

    def live_items(self, wait: float, namespace: str | None = None) -> list[Obj] | None:
        """The cached objects (see `items`) while a watch is open; None when none opens
        within `wait` seconds: the cache may trail, list afresh instead."""
        with self._lock:
            if not self._wait_live(wait):
                return None
            return [
                obj
                for obj in self._cache.values()
                if namespace is None or (obj.get("metadata") or {}).get("namespace") == namespace
            ]

    def wrote(self, obj: Obj) -> None:
        """This process wrote `obj` (the server's answer): cache it now unless the watch
        brought a later version already (resourceVersions compared as integers), so a
        reader right after the write sees it (client-go's mutation cache does the same)."""
        key = key_of(obj)
        version = _version(obj)
        with self._lock:
            if not self._is_synced or version is None:
                return
            cached = self._cache.get(key)
            seen = _version(cached) if cached is not None else None
            if seen is None or version > seen:
                self._cache[key] = obj

    def items(self, namespace: str | None = None) -> list[Obj]:
        """The cached objects (of one namespace, or all)."""
        with self._lock:
            self._wait_synced()
            return [
                o
                for o in self._cache.values()
                if namespace is None or (o.get("metadata") or {}).get("namespace") == namespace
            ]


def _version(obj: Obj) -> int | None:
    text = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    return int(text) if text.isdigit() else None
