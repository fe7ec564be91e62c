"""SIGTERM and SIGINT for the long-running commands (`tidal run`, `tidal estimator`).

Python runs a signal handler in the main thread between two bytecodes, which may be inside
`Event.wait` while that thread holds the Event's own lock. A handler that then calls
`Event.set()` on the same Event waits for a lock its own thread holds, and the process hangs
for good (seen: a `tidal run` idle in `Daemon.wait` never stopped on SIGTERM). So the handler
only notes the signal; the main loop, which polls anyway, acts on it outside the handler.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType

POLL_SECONDS = 0.5


class StopSignals:
    """Notes SIGTERM/SIGINT in a plain attribute (no lock taken in the handler)."""

    def __init__(self) -> None:
        self.received: int | None = None

    def install(self) -> StopSignals:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._note)
        return self

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.received = signum

    def wait(self, stopped: Callable[[float], bool], poll: float = POLL_SECONDS) -> None:
        """Until a signal came or `stopped(poll)` (a wait of up to `poll` seconds, e.g. an
        Event's) says the program stops of its own accord."""
        while self.received is None and not stopped(poll):
            pass
