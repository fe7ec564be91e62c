"""Calls that end something temporary are retried within a time budget, Retry-After honoured."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.karmada.test_client import _client, _ok, _Response
from tidal.domain.clock import FakeClock
from tidal.engine.patience import patiently
from tidal.karmada import errors as E
from tidal.karmada.client import CLUSTERS


def _clock() -> FakeClock:
    return FakeClock(datetime(2026, 1, 1, tzinfo=UTC))


def test_a_retry_after_within_the_budget_is_waited_out_once_per_answer() -> None:
    """Two 429s (Retry-After 12 s) then 200: the client sends each request once, the budget
    (60 s) waits 12 s twice on the run's clock, and the call returns the object."""
    clock, sleeps, calls = _clock(), list[float](), list[tuple[str, str, int]]()
    client = _client(
        [_Response(429, b"{}", {"Retry-After": "12"})] * 2 + [_ok({"kind": "Cluster"})],
        sleeps,
        calls,
    )
    got = patiently(
        client, clock, 60, lambda: client.request("get", CLUSTERS, "GET", CLUSTERS.path(name="a"))
    )
    assert got == {"kind": "Cluster"}
    assert sleeps == [] and clock.monotonic() == 24.0
    assert [c for _v, _r, c in calls] == [429, 429, 200]


def test_the_last_error_is_raised_when_the_next_try_would_pass_the_budget() -> None:
    """A 429 asking for 12 s with a 6 s budget is raised at once; no sleep."""
    clock, sleeps, calls = _clock(), list[float](), list[tuple[str, str, int]]()
    client = _client([_Response(429, b"{}", {"Retry-After": "12"})], sleeps, calls)
    with pytest.raises(E.Throttled):
        patiently(
            client,
            clock,
            6,
            lambda: client.request("get", CLUSTERS, "GET", CLUSTERS.path(name="a")),
        )
    assert clock.monotonic() == 0.0


def test_permanent_errors_are_not_retried() -> None:
    """A 404 is the caller's at once."""
    clock, sleeps, calls = _clock(), list[float](), list[tuple[str, str, int]]()
    client = _client([_Response(404, b"{}")], sleeps, calls)
    with pytest.raises(E.NotFound):
        patiently(
            client,
            clock,
            60,
            lambda: client.request("get", CLUSTERS, "GET", CLUSTERS.path(name="a")),
        )
    assert len(calls) == 1
