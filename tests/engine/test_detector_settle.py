"""How long a run waits before patching a policy that changed moments ago."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tidal.engine.detector_settle import settle_wait
from tidal.karmada.views import PolicyView

NOW = datetime(2026, 3, 29, 1, 30, 0, tzinfo=UTC)  # a DST day in Europe; UTC is unaffected


@pytest.mark.parametrize(
    ("ago", "settle", "wait"),
    [
        (None, 15.0, 0.0),  # no managedFields: nothing to go by
        (3600.0, 15.0, 0.0),  # changed an hour ago: no wait
        (16.0, 15.0, 0.0),  # exactly settled (the second's truncation counted)
        (5.0, 15.0, 11.0),  # 15 s + the truncated second, 5 s of it gone
        (0.0, 15.0, 16.0),  # changed this second: the longest wait
        (5.0, 0.0, 0.0),  # settling switched off
        (-1.5, 15.0, 16.0),  # a second ahead (clocks apart): capped at the longest wait
        (-30.0, 15.0, 0.0),  # far ahead: another clock altogether, it says nothing
    ],
)
def test_settle_wait_counts_from_the_last_change(
    ago: float | None, settle: float, wait: float
) -> None:
    """The wait ends settle + 1 s after the last change, never exceeds that, and is none for
    an old, absent or foreign-clocked change."""
    last = None if ago is None else NOW - timedelta(seconds=ago)
    assert settle_wait(last, NOW, settle) == pytest.approx(wait)


def test_last_changed_is_the_newest_main_resource_entry() -> None:
    """The newest managedFields time of the object itself; a status entry does not count."""
    policy = {
        "metadata": {
            "managedFields": [
                {"manager": "kubectl", "operation": "Update", "time": "2026-12-03T10:00:00Z"},
                {"manager": "tidal", "operation": "Update", "time": "2026-12-03T10:05:07Z"},
                {
                    "manager": "karmada",
                    "operation": "Update",
                    "subresource": "status",
                    "time": "2026-12-03T11:00:00Z",
                },
                {"manager": "broken", "time": "yesterday"},
            ]
        }
    }
    assert PolicyView(policy).last_changed == datetime(2026, 12, 3, 10, 5, 7, tzinfo=UTC)
    assert PolicyView({"metadata": {}}).last_changed is None
