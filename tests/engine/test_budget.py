"""What the members' totals must show before a wave's leased room counts as taken."""

from __future__ import annotations

from tidal.engine.budget import Growth

GPU = "nvidia.com/gpu"
GROWTH = Growth(
    base={"cluster-b": {GPU: 1.0, "pods": 1.0}},
    need={"cluster-b": {GPU: 4.0, "pods": 4.0, "cpu": 0.0}},
)


def test_the_room_is_taken_once_every_resource_grew_by_the_need() -> None:
    """Grown by the whole need in every resource it names (a zero amount asks nothing)."""
    assert GROWTH.shown_by({"cluster-b": {GPU: 5.0, "pods": 5.0}})
    assert GROWTH.shown_by({"cluster-b": {GPU: 6.0, "pods": 7.0}})


def test_a_partial_growth_or_an_unwatched_member_shows_nothing() -> None:
    """Three of four pods, or GPUs without the pods, or a member no longer watched: not yet."""
    assert not GROWTH.shown_by({"cluster-b": {GPU: 4.0, "pods": 4.0}})
    assert not GROWTH.shown_by({"cluster-b": {GPU: 5.0, "pods": 1.0}})
    assert not GROWTH.shown_by({})
