"""B4's wait meter: the wall time the engine spends blocked waiting for the (emulated)
cluster, so that the engine's overhead is wall time minus that.

The engine waits in a few places only, each of which wakes on a watch event or a deadline:
a binding view's wait for its next change (the run's informer queue, or its own watch), the
informer's wait for a Cluster change, and the Clock's sleep (pauses, backoff). `WaitMeter`
wraps each for one measured run (calls from other threads, such as the informers' own, are
not counted) and keeps each blocked interval, so any span can be split into waiting and work.

It also keeps the intervals in which the in-process emulator's API server was working out an
answer to a request (from reading the request to writing the answer; watch streams are not
answers): while it does, whoever sent the request waits for the cluster. `waited` is the
union of both; `waited_for_events` the first alone (B4's figure before 2026-12-07).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any


class WaitMeter:
    """Blocked intervals (wall start, wall end) of one thread, gathered while `active`."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.intervals: list[tuple[float, float]] = []
        self.answers: list[tuple[float, float]] = []  # the API server at work on a request

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

    def answering(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """For the API server's request handler: the interval of each answer (not a watch)."""

        @functools.wraps(fn)
        def wrapper(handler: Any) -> Any:
            if "watch=true" in handler.path or "watch=1" in handler.path:
                return fn(handler)
            start = time.time()
            try:
                return fn(handler)
            finally:
                self.answers.append((start, time.time()))

        return wrapper

    def waited(self, start: float, end: float) -> float:
        """Seconds within [start, end] the engine waited: blocked on an event, or for an
        answer of the API server (overlaps counted once)."""
        return _covered(self.intervals + self.answers, start, end)

    def waited_for_events(self, start: float, end: float) -> float:
        """Seconds within [start, end] the engine's thread was blocked on an event or a sleep."""
        return _covered(self.intervals, start, end)

    def answered(self, start: float, end: float) -> float:
        """Seconds within [start, end] the API server was answering a request."""
        return _covered(self.answers, start, end)

    @contextlib.contextmanager
    def active(self, clock: Any) -> Iterator[WaitMeter]:
        """Measure the engine's waits (and `clock.sleep`) until the block ends."""
        from tidal.karmada import bindings, informer

        server: ModuleType | None
        try:
            from tidal_sim.apiserver import server
        except ImportError:  # (not installed: only the engine's own waits are counted)
            server = None
        patched = [
            (owner, name, wrap)
            for owner, name, wrap in (
                (_subscriber_class(informer), "get", self.timed),
                (informer.Informer, "wait_changed", self.timed),
                (bindings.BindingWatch, "changes", self.timed_iterator),
                *([(server._Handler, "_serve", self.answering)] if server else []),
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


def _covered(intervals: list[tuple[float, float]], start: float, end: float) -> float:
    """The length of the union of `intervals` clipped to [start, end]."""
    clipped = sorted((max(a, start), min(b, end)) for a, b in intervals if b > start and a < end)
    total, reach = 0.0, start
    for a, b in clipped:
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def _subscriber_class(informer: ModuleType) -> type:
    """The informer's per-reader queue (tidal.karmada.watch_cache.Subscriber; an older engine
    kept it private in tidal.karmada.informer)."""
    found: type = getattr(informer, "Subscriber", None) or informer._Subscriber
    return found
