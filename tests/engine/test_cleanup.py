"""What a stopping run gives back, and in which order: one row per way a run stops
(tidal.engine.cleanup.STOPS), the order read off the step table (the rebalancers, then the
surges, then the bridges they stood on)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from tidal.engine import bridging, cleanup, surging
from tidal.engine.cleanup import STOPS, Stop
from tidal.engine.inflight import SwitchContext
from tidal.karmada.errors import KarmadaError

CTX = cast(SwitchContext, object())


def _record(monkeypatch: pytest.MonkeyPatch, fail: str = "") -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []

    def undo(name: str) -> Any:
        def call(ctx: SwitchContext, **kw: Any) -> None:
            assert ctx is CTX
            calls.append((name, kw))
            if name == fail:
                raise KarmadaError(f"{name} refused")

        return call

    monkeypatch.setattr(cleanup, "remove_rebalancers", undo("rebalancers"))
    monkeypatch.setattr(surging, "clean_up", undo("surges"))
    monkeypatch.setattr(bridging, "clean_up", undo("bridges"))
    return calls


def test_every_stop_has_a_row() -> None:
    assert set(STOPS) == set(Stop)


def _expected(rebalancers: bool, keep: bool, forward_only: bool) -> list[tuple[str, object]]:
    surges = ("surges", {"keep_if_breaking": keep, "forward_only": forward_only})
    return [("rebalancers", {})] * rebalancers + [
        surges,
        ("bridges", {"forward_only": forward_only}),
    ]


@pytest.mark.parametrize(
    ("stop", "rebalancers", "keep", "forward_only"),
    [
        (Stop.HALT, True, True, False),
        (Stop.API_ERROR, False, True, False),
        (Stop.ROLLBACK_STARTS, False, False, True),
        (Stop.ROLLED_BACK, True, False, False),
        (Stop.ROLLBACK_FAILED, True, True, False),
        (Stop.FINISHED, True, False, False),
    ],
)
def test_each_stop_gives_back_in_the_table_order(
    monkeypatch: pytest.MonkeyPatch, stop: Stop, rebalancers: bool, keep: bool, forward_only: bool
) -> None:
    """The rebalancers first (where the stop removes them), then the surges, then the bridges
    (a surge stands on its bridge); a halt or a failed rollback keeps what holds a floor, the
    rollback's start leaves the rollback's own holds."""
    calls = _record(monkeypatch)
    cleanup.clean_up(CTX, stop)
    assert calls == _expected(rebalancers, keep, forward_only)


def test_an_api_error_stop_goes_on_past_a_refused_undo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Best effort: the bridges are still put to rest when removing the surges fails."""
    calls = _record(monkeypatch, fail="surges")
    cleanup.clean_up(CTX, Stop.API_ERROR)
    assert [name for name, _ in calls] == ["surges", "bridges"]


def test_any_other_stop_ends_on_a_refused_undo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Elsewhere an API error ends the run: the next undo is not tried."""
    calls = _record(monkeypatch, fail="surges")
    with pytest.raises(KarmadaError):
        cleanup.clean_up(CTX, Stop.HALT)
    assert [name for name, _ in calls] == ["rebalancers", "surges"]
