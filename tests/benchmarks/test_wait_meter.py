"""B4's wait meter: what it counts as the engine waiting for the cluster."""

from __future__ import annotations

import time
from typing import Any

import pytest

from benchmarks.harness import karmada_client, wait_until
from benchmarks.waiting import WaitMeter, _covered
from tidal.domain.clock import SystemClock
from tidal.karmada.client import CLUSTERS
from tidal_sim.apiserver import server
from tidal_sim.emulator import Emulator


def test_overlapping_waits_are_counted_once_and_clipped_to_the_span() -> None:
    """The union of the intervals within the span: overlaps once, the parts outside dropped."""
    intervals = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (9.0, 12.0)]
    assert _covered(intervals, 0.5, 10.0) == 1.5 + 1.0 + 1.0 + 1.0
    assert _covered([], 0.0, 1.0) == 0.0
    assert _covered([(2.0, 3.0)], 0.0, 1.0) == 0.0


def _one_metered_request(emulator: Emulator) -> None:
    """One GET over real HTTP, metered: its answer starts within the request's span and
    counts as waiting there; the engine's event waits are apart."""
    client = karmada_client(emulator)
    meter = WaitMeter()
    try:
        with meter.active(SystemClock()):
            before = time.time()
            client.find(CLUSTERS, None, "no-such-cluster")
            after = time.time()
            # the server's thread notes the answer's end once the reply is written, which a
            # loaded machine may run after the client has read that reply
            assert wait_until(lambda: len(meter.answers) == 1, timeout=10.0, interval=0.001)
        start, end = meter.answers[0]
        assert before <= start <= min(end, after)
        answered = meter.answered(before, after)
        assert answered == min(end, after) - start > 0.0
        assert meter.waited(before, after) == answered
        assert meter.waited_for_events(before, after) == 0.0
    finally:
        client.close()


def test_the_api_servers_answer_to_a_request_counts_as_waiting(emulator: Emulator) -> None:
    """A request answered over real HTTP while metered is kept as an answer interval that
    starts within the request's span, and counts as waiting there."""
    _one_metered_request(emulator)


def test_an_answer_noted_after_the_client_read_it_is_still_counted(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server thread that finishes well after its reply was read (a loaded machine) still
    leaves its answer, clipped to the request's span."""
    serve = server._Handler._serve

    def slow_to_finish(handler: Any) -> Any:
        out = serve(handler)
        time.sleep(0.2)
        return out

    monkeypatch.setattr(server._Handler, "_serve", slow_to_finish)
    _one_metered_request(emulator)


def test_a_watch_stream_is_not_an_answer() -> None:
    """A handler serving a watch (open for minutes, waiting for events) leaves no interval."""
    meter = WaitMeter()

    class Handler:
        def __init__(self, path: str) -> None:
            self.path = path

    serve = meter.answering(lambda handler: None)
    serve(Handler("/apis/work.karmada.io/v1alpha2/resourcebindings?watch=true"))
    assert meter.answers == []
    serve(Handler("/apis/work.karmada.io/v1alpha2/resourcebindings?limit=500"))
    assert len(meter.answers) == 1
