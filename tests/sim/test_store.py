"""The emulator's storage: versioning rules and range reads for paged lists."""

from __future__ import annotations

import pytest

from tidal_sim.clock import ManualClock
from tidal_sim.kinds import KindRegistry
from tidal_sim.store import Conflict, Store


@pytest.fixture
def store() -> Store:
    kinds = KindRegistry()
    s = Store(kinds, ManualClock())
    namespaces = kinds.by_kind("v1", "Namespace")
    assert namespaces is not None
    for name in ("a", "b", "b2"):
        s.create(namespaces, {"metadata": {"name": name}})
    return s


def _configmaps(store: Store, namespace: str, count: int) -> None:
    rtype = store.kinds.by_kind("v1", "ConfigMap")
    assert rtype is not None
    for i in range(count):
        store.create(
            rtype,
            {
                "metadata": {
                    "name": f"cm-{i:03d}",
                    "namespace": namespace,
                    "labels": {"even": str(i % 2 == 0).lower()},
                }
            },
        )


def test_generation_moves_on_spec_changes_only(store: Store) -> None:
    """A label change keeps metadata.generation; a spec change bumps it; a stale rv is a 409."""
    deployments = store.kinds.by_kind("apps/v1", "Deployment")
    assert deployments is not None
    obj = store.create(
        deployments, {"metadata": {"name": "d", "namespace": "a"}, "spec": {"replicas": 1}}
    )
    obj["metadata"]["labels"] = {"x": "y"}
    relabelled = store.update(deployments, obj)
    assert relabelled["metadata"]["generation"] == 1
    relabelled["spec"]["replicas"] = 2
    assert store.update(deployments, relabelled)["metadata"]["generation"] == 2
    with pytest.raises(Conflict):
        store.update(deployments, relabelled)


def test_range_reads_walk_a_namespace_in_order_without_gaps(store: Store) -> None:
    """Pages after a key cover exactly the namespace's objects, in name order, with a count left."""
    _configmaps(store, "a", 7)
    _configmaps(store, "b", 5)
    _configmaps(store, "b2", 3)
    rtype = store.kinds.by_kind("v1", "ConfigMap")
    assert rtype is not None
    seen: list[str] = []
    after = None
    while True:
        items, _, remaining = store.list_range(rtype, "b", after=after, limit=2)
        seen += [o["metadata"]["name"] for o in items]
        if not remaining:
            break
        assert remaining == 5 - len(seen)
        after = ("b", items[-1]["metadata"]["name"])
    assert seen == [f"cm-{i:03d}" for i in range(5)]


def test_filtered_range_reads_leave_the_remaining_count_unknown(store: Store) -> None:
    """With a filter the page holds only matches and the count left is not guessed."""
    _configmaps(store, "a", 10)
    rtype = store.kinds.by_kind("v1", "ConfigMap")
    assert rtype is not None
    even = lambda o: o["metadata"]["labels"]["even"] == "true"  # noqa: E731
    items, _, remaining = store.list_range(rtype, None, even, limit=3)
    assert [o["metadata"]["name"] for o in items] == ["cm-000", "cm-002", "cm-004"]
    assert remaining is None
    items, _, remaining = store.list_range(rtype, None, even, after=("a", "cm-004"), limit=3)
    assert [o["metadata"]["name"] for o in items] == ["cm-006", "cm-008"]
    assert remaining == 0


def test_deleted_objects_leave_the_order(store: Store) -> None:
    """A deleted object is no longer listed, and a re-created one is listed once."""
    _configmaps(store, "a", 3)
    rtype = store.kinds.by_kind("v1", "ConfigMap")
    assert rtype is not None
    store.delete(rtype, "a", "cm-001")
    assert [o["metadata"]["name"] for o in store.list(rtype)[0]] == ["cm-000", "cm-002"]
    store.create(rtype, {"metadata": {"name": "cm-001", "namespace": "a"}})
    assert [o["metadata"]["name"] for o in store.list(rtype)[0]] == ["cm-000", "cm-001", "cm-002"]


def test_managed_fields_carry_the_time_of_the_last_change(store: Store) -> None:
    """Each change stamps the object's managedFields entry with the store's time; a no-op
    write keeps it; a status-only change has its own entry."""
    clock = store.clock
    assert isinstance(clock, ManualClock)
    deployments = store.kinds.by_kind("apps/v1", "Deployment")
    assert deployments is not None
    obj = store.create(
        deployments, {"metadata": {"name": "d", "namespace": "a"}, "spec": {"replicas": 1}}
    )
    created = obj["metadata"]["managedFields"]
    assert [e.get("subresource") for e in created] == [None]
    clock.advance(5.0)
    same = store.update(deployments, obj)
    assert same["metadata"]["managedFields"] == created
    obj["spec"]["replicas"] = 2
    changed = store.update(deployments, obj)
    (entry,) = changed["metadata"]["managedFields"]
    assert entry["time"] == clock.rfc3339() != created[0]["time"]
    clock.advance(5.0)
    changed["status"] = {"readyReplicas": 1}
    status = store.update(deployments, changed, subresource="status")
    times = {e.get("subresource", ""): e["time"] for e in status["metadata"]["managedFields"]}
    assert times == {"": entry["time"], "status": clock.rfc3339()}
