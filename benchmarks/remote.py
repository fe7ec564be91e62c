"""An emulator in a child process, so what the benchmark measures in this process (time,
peak memory) is the client's alone, and server and client each get a core."""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.connection import Connection
from typing import Any

from benchmarks.scenario import Fleet, Obj, populate


def _serve(conn: Connection, topology: list[Obj]) -> None:
    from tidal_sim.emulator import Emulator

    emu = Emulator(topology, controllers=False).start()
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

    def __init__(self, topology: list[Obj]) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, topology), daemon=True)
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
