"""B4's wait meter: the wall time the engine's own thread spends blocked waiting for the
(emulated) cluster, so that the engine's overhead is wall time minus that.

The engine waits in a few places only, each of which wakes on a watch event or a deadline:
a binding view's wait for its next change (the run's informer queue, or its own watch), the
informer's wait for a Cluster change, and the Clock's sleep (pauses, backoff). `WaitMeter`
wraps each for one measured run (calls from other threads, such as the informers' own, are
not counted) and keeps each blocked interval, so any span can be split into waiting and work.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any


class WaitMeter:
    """Blocked intervals (wall start, wall end) of one thread, gathered while `active`."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.intervals: list[tuple[float, float]] = []

    def timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self.thread:
                return fn(*args, **kwargs)
            start = time.time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.intervals.append((start, time.time()))

        return wrapper

    def timed_iterator(self, fn: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
        """For a generator: the time between asking for the next item and getting it."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
            inner = fn(*args, **kwargs)
            mine = threading.get_ident() == self.thread
            try:
                while True:
                    start = time.time()
                    try:
                        item = next(inner)
                    except StopIteration:
                        return
                    finally:
                        if mine:
                            self.intervals.append((start, time.time()))
                    yield item
            finally:
                inner.close()  # type: ignore[attr-defined]

        return wrapper

    def waited(self, start: float, end: float) -> float:
        """Seconds blocked within [start, end]."""
        return sum(max(0.0, min(b, end) - max(a, start)) for a, b in self.intervals)

    @contextlib.contextmanager
    def active(self, clock: Any) -> Iterator[WaitMeter]:
        """Measure the engine's waits (and `clock.sleep`) until the block ends."""
        from tidal.karmada import bindings, informer

        patched = [
            (owner, name, wrap)
            for owner, name, wrap in (
                (informer._Subscriber, "get", self.timed),
                (informer.Informer, "wait_changed", self.timed),
                (bindings.BindingWatch, "changes", self.timed_iterator),
            )
            if hasattr(owner, name)
        ]  # (an older engine, measured for comparison, has fewer)
        originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patched]
        sleep = clock.sleep
        try:
            for owner, name, wrap in patched:
                setattr(owner, name, wrap(getattr(owner, name)))
            clock.sleep = self.timed(sleep)
            yield self
        finally:
            for owner, name, original in originals:
                setattr(owner, name, original)
            clock.sleep = sleep
