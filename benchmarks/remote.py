"""An emulator in a child process, so what the benchmark measures in this process (time,
peak memory) is the client's alone, and server and client each get a core."""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.connection import Connection
from typing import Any

from benchmarks.scenario import Fleet, Obj, populate


def fast_paging(emu: Any) -> None:
    """Serve list pages in O(page) like a real apiserver reading an etcd range, instead of
    re-filtering the whole collection for every page (the emulator's O(n) per page makes a
    50,000-object list quadratic). Same pages, same tokens: the filtered, sorted result of a
    list is cached per (resource, namespace, selectors, store resourceVersion). Benchmark-only
    (installed in B2's child process); it changes the emulator's speed, not its answers."""
    from tidal.sim.apiserver.listing import object_filter

    store = emu.store
    original = store.list
    cache: dict[tuple[Any, ...], tuple[list[Obj], int]] = {}

    def listing(rtype: Any, namespace: Any, label: str, field: str) -> tuple[list[Obj], int]:
        key = (rtype.group, rtype.plural, namespace, label, field, store.resource_version)
        hit = cache.get(key)
        if hit is None:
            cache.clear()
            hit = original(rtype, namespace, object_filter(label, field), copy_=False)
            cache[key] = hit
        return hit

    def list_(rtype: Any, namespace: Any = None, accepts: Any = None, *,
              copy_: bool = True) -> tuple[list[Obj], int]:
        selectors = getattr(accepts, "_bench_selectors", None)
        if copy_ or (accepts is not None and selectors is None):
            result: tuple[list[Obj], int] = original(rtype, namespace, accepts, copy_=copy_)
            return result
        return listing(rtype, namespace, *(selectors or ("", "")))

    import tidal.sim.apiserver.rest as rest_module

    plain_filter = object_filter

    def tagged_filter(label_query: str, field_query: str) -> Any:
        accepts = plain_filter(label_query, field_query)
        if accepts is None:
            return None
        accepts._bench_selectors = (label_query, field_query)  # type: ignore[attr-defined]
        return accepts

    setattr(rest_module, "object_filter", tagged_filter)  # noqa: B010 (rest imported it by name)
    setattr(store, "list", list_)  # noqa: B010 (an instance attribute shadows the method)


def _serve(conn: Connection, topology: list[Obj], fast: bool) -> None:
    from tidal.sim.emulator import Emulator

    emu = Emulator(topology, controllers=False).start()
    if fast:
        fast_paging(emu)
    conn.send(emu.url)
    while True:
        message = conn.recv()
        if message[0] == "populate":
            _, fleet, policy, shares = message
            populate(emu, fleet, policy, shares)
            conn.send("ok")
        elif message[0] == "requests":
            conn.send(emu.requests())
        elif message[0] == "stop":
            emu.stop()
            conn.send("ok")
            return


class RemoteEmulator:
    """`with RemoteEmulator(topology) as remote: remote.url; remote.populate(...)`."""

    def __init__(self, topology: list[Obj], *, fast_paging: bool = False) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, topology, fast_paging), daemon=True)
        self._proc.start()
        self.url: str = self._conn.recv()

    def populate(self, fleet: Fleet, policy: Obj, shares: dict[str, float]) -> None:
        self._conn.send(("populate", fleet, policy, shares))
        self._conn.recv()

    def requests(self) -> dict[str, Any]:
        self._conn.send(("requests",))
        result: dict[str, Any] = self._conn.recv()
        return result

    def stop(self) -> None:
        try:
            self._conn.send(("stop",))
            self._conn.recv()
        except (EOFError, OSError):
            pass
        self._proc.join(timeout=10)
        if self._proc.is_alive():
            self._proc.kill()

    def __enter__(self) -> RemoteEmulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
