"""Waves: stable (namespace, name) order and groups of waveSize."""

from __future__ import annotations

import pytest

from tidal.domain.waves import WorkloadKey, ordered, split_waves


def test_waves_are_consecutive_groups_with_a_smaller_last() -> None:
    """Ten items in waves of four give 4, 4, 2."""
    assert [len(w) for w in split_waves(list(range(10)), 4)] == [4, 4, 2]


def test_wave_size_zero_is_refused() -> None:
    """A wave must hold at least one workload."""
    with pytest.raises(ValueError, match="at least one"):
        split_waves([1], 0)


def test_name_order_is_namespace_then_name() -> None:
    """Keys sort by namespace first, then name, whatever the input order."""
    keys = [
        WorkloadKey("b", "a", "Deployment"),
        WorkloadKey("a", "z", "Deployment"),
        WorkloadKey("a", "b", "Deployment"),
    ]
    assert [str(k) for k in ordered(keys, key=lambda k: k)] == [
        "a/Deployment/b",
        "a/Deployment/z",
        "b/Deployment/a",
    ]


def test_size_orders_break_ties_by_name() -> None:
    """smallestFirst sorts by replicas, equal replicas keep (namespace, name) order."""
    items = [("n/Deployment/c", 3), ("n/Deployment/a", 5), ("n/Deployment/b", 3)]
    out = ordered(
        items, key=lambda i: WorkloadKey.parse(i[0]), replicas=lambda i: i[1], order="smallestFirst"
    )
    assert [i[0] for i in out] == ["n/Deployment/b", "n/Deployment/c", "n/Deployment/a"]
    out = ordered(
        items, key=lambda i: WorkloadKey.parse(i[0]), replicas=lambda i: i[1], order="largestFirst"
    )
    assert out[0][0] == "n/Deployment/a"


def test_key_round_trips_through_text() -> None:
    """ns/Kind/name parses back to the same key."""
    key = WorkloadKey.parse("ai/Deployment/web-1")
    assert (key.namespace, key.kind, key.name) == ("ai", "Deployment", "web-1")
    assert str(key) == "ai/Deployment/web-1"


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.text("xyz", min_size=1, max_size=4)),
        unique=True,
        max_size=40,
    ),
    st.integers(min_value=1, max_value=12),
)
def test_waves_partition_in_order(pairs: list[tuple[str, str]], size: int) -> None:
    """Waves cover every workload once, in (namespace, name) order, none larger than size."""
    keys = [WorkloadKey(ns, name, "Deployment") for ns, name in pairs]
    waves = split_waves(ordered(keys, key=lambda k: k), size)
    flat = [k for wave in waves for k in wave]
    assert flat == sorted(keys)
    assert all(1 <= len(w) <= size for w in waves)
    assert all(len(w) == size for w in waves[:-1])
