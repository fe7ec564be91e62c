"""Retrying the calls that end something temporary (releasing a surge, putting a bridge's
placement back, sweeping leftovers) within a budget of time, not a count of attempts.

The client retries a request a few times on its own; a 429 whose Retry-After is longer than
the Lease has left would make it give a gated write up and step down, leaving the overrides
(the user's scale capped) behind. Here each request is sent once (`single_attempt`) and
retried while the budget lasts: on 429 after its Retry-After, on 5xx and timeouts after a
backoff (0.2 s doubling to 5 s). The run lock is renewed by its own thread meanwhile. What
fails when the budget is spent is raised to the caller, which journals what is left.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import tenacity

from tidal.domain.clock import Clock
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import KarmadaError, Throttled

T = TypeVar("T")
FIRST_BACKOFF = 0.2
MAX_BACKOFF = 5.0


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, KarmadaError) and exc.retryable


def _wait_of(state: tenacity.RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, Throttled) and exc.retry_after is not None:
        return max(float(exc.retry_after), 0.0)
    return float(min(FIRST_BACKOFF * 2 ** (state.attempt_number - 1), MAX_BACKOFF))


def patiently(
    client: KarmadaClient, clock: Clock, budget_seconds: float, call: Callable[[], T]
) -> T:
    """`call()` (one or more requests on `client`), retried on retryable API errors while
    `budget_seconds` last: the last error is raised when the next try would start later."""
    deadline = clock.monotonic() + max(budget_seconds, 0.0)

    def stop(state: tenacity.RetryCallState) -> bool:
        return clock.monotonic() + _wait_of(state) > deadline

    def once() -> T:
        with client.single_attempt():
            return call()

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(_retryable),
        stop=stop,
        wait=_wait_of,
        sleep=clock.sleep,
        reraise=True,
    )
    return retrying(once)
