"""B4's wait meter: what it counts as the engine waiting for the cluster."""

from __future__ import annotations

import time

from benchmarks.harness import karmada_client
from benchmarks.waiting import WaitMeter, _covered
from tidal.domain.clock import SystemClock
from tidal.karmada.client import CLUSTERS
from tidal_sim.emulator import Emulator


def test_overlapping_waits_are_counted_once_and_clipped_to_the_span() -> None:
    """The union of the intervals within the span: overlaps once, the parts outside dropped."""
    intervals = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (9.0, 12.0)]
    assert _covered(intervals, 0.5, 10.0) == 1.5 + 1.0 + 1.0 + 1.0
    assert _covered([], 0.0, 1.0) == 0.0
    assert _covered([(2.0, 3.0)], 0.0, 1.0) == 0.0


def test_the_api_servers_answer_to_a_request_counts_as_waiting(emulator: Emulator) -> None:
    """A request answered over real HTTP while metered is kept as an answer interval inside
    the request's own span, and counts as waiting; the engine's event waits are apart."""
    client = karmada_client(emulator)
    meter = WaitMeter()
    try:
        with meter.active(SystemClock()):
            before = time.time()
            client.find(CLUSTERS, None, "no-such-cluster")
            after = time.time()
        assert len(meter.answers) == 1
        start, end = meter.answers[0]
        assert before <= start <= end <= after
        assert meter.waited(before, after) == meter.answered(before, after) == end - start
        assert meter.waited_for_events(before, after) == 0.0
    finally:
        client.close()


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
