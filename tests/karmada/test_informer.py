"""The shared informer over HTTP: one list and one watch serve many readers, each with its own
view; 410 re-lists; it stops when no switch uses it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tidal.karmada.client import RESOURCE_BINDINGS, KarmadaClient, RetryPolicy
from tidal.karmada.informer import SharedReads

pytestmark = pytest.mark.e2e


def _binding(name: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                                  "namespace": namespace, "name": name}}}


def _create(client: KarmadaClient, name: str, namespace: str = "default") -> None:
    client.request("create", RESOURCE_BINDINGS, "POST", RESOURCE_BINDINGS.path(namespace),
                   body=_binding(name, namespace))


def _requests(emulator: Any, verb: str, since: int = 0) -> int:
    return sum(1 for r in emulator.request_log(since)
               if r.verb == verb and r.resource == "resourcebindings")


def _drain(view: Any, want: int, seconds: float = 5.0) -> list[tuple[str, bool]]:
    seen: list[tuple[str, bool]] = []
    end = time.monotonic() + seconds
    while len(seen) < want and time.monotonic() < end:
        for obj, deleted in view.changes(0.5):
            seen.append((obj["metadata"]["name"], deleted))
            if len(seen) == want:
                break
    return seen


def test_many_readers_share_one_list_and_one_watch(emulator: Any, tmp_path: Path) -> None:
    """Ten readers in two namespaces see their own bindings and changes; the server saw one
    list and one watch of resourcebindings, across all namespaces."""
    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kc"))
    _create(client, "a")
    _create(client, "k", "kube-public")
    reads = SharedReads(client, max_watch_seconds=30)
    with reads.in_use():
        views = [reads.binding_watch("default" if i % 2 else "kube-public") for i in range(10)]
        caches = [set(v.start()) for v in views]
        assert caches[1] == {"default/a"} and caches[0] == {"kube-public/k"}
        _create(client, "b")
        client.request("delete", RESOURCE_BINDINGS, "DELETE",
                       RESOURCE_BINDINGS.path("default", "a"))
        for view in views[1::2]:
            assert _drain(view, 2) == [("b", False), ("a", True)]
            assert set(view.cache) == {"default/b"}
        assert list(views[0].changes(0.2)) == []
    log = emulator.request_log()
    lists = [r for r in log if r.verb == "list" and r.resource == "resourcebindings"]
    watches = [r for r in log if r.verb == "watch" and r.resource == "resourcebindings"]
    assert len(lists) == 1 and len(watches) == 1
    assert lists[0].namespace is None and watches[0].namespace is None


def test_gone_relists_and_readers_get_the_difference(emulator: Any, tmp_path: Path) -> None:
    """A resume from a version the server forgot (410) makes the informer list again; a
    reader sees what changed in between, once."""
    from tidal.karmada.state_objects import ensure_namespace

    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kc"))
    _create(client, "a")
    reads = SharedReads(client, max_watch_seconds=1)
    with reads.in_use():
        view = reads.binding_watch("default")
        view.start()
        informer = reads.informers["resourcebindings"]
        ensure_namespace(client, "elsewhere")  # the store moves on past the informer's version
        emulator.faults.inject(type="drop-watch", resource="resourcebindings", compact=True)
        deadline = time.monotonic() + 10
        while informer.lists < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert informer.lists == 2
        _create(client, "b")
        assert _drain(view, 1) == [("b", False)]
    assert set(view.cache) == {"default/a", "default/b"}


def test_clusters_come_from_the_cache_and_it_stops_after_the_last_run(
        demo_emulator: Any, tmp_path: Path) -> None:
    """Clusters are listed once for every reader; when no run uses the informers any more,
    their threads end and a later run lists afresh."""
    client = KarmadaClient.from_kubeconfig(demo_emulator.write_kubeconfig(tmp_path / "kc"))
    reads = SharedReads(client, max_watch_seconds=1)
    with reads.in_use():
        names = [sorted(c["metadata"]["name"] for c in reads.list_clusters()) for _ in range(5)]
    assert names[0] == names[-1] and len(names[0]) >= 2
    informer = reads.informers["clusters"]
    assert informer.lists == 1
    deadline = time.monotonic() + 10
    while informer._thread is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert informer._thread is None
    with reads.in_use():
        assert len(reads.list_clusters()) == len(names[0])
    assert informer.lists == 2


def test_dropped_watches_and_500s_heal_without_the_readers_noticing(
        emulator: Any, tmp_path: Path) -> None:
    """The shared watch is cut and its history forgotten (410 on resume), and the lists that
    follow answer 500: the informer retries, re-lists, and a reader gets every change."""
    from structlog.testing import capture_logs

    from tidal.karmada.state_objects import ensure_namespace

    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kc"),
                                           retry=RetryPolicy(attempts=2, base_delay=0.01))
    _create(client, "a")
    reads = SharedReads(client, max_watch_seconds=30, retry_seconds=0.05)
    with reads.in_use(), capture_logs() as logs:
        view = reads.binding_watch("default")
        view.start()
        informer = reads.informers["resourcebindings"]
        ensure_namespace(client, "elsewhere")  # the store moves on past the informer's version
        emulator.faults.inject(type="error", verb="list", resource="resourcebindings", count=3)
        emulator.faults.inject(type="drop-watch", resource="resourcebindings", compact=True)
        _create(client, "b")
        assert ("b", False) in _drain(view, 1, seconds=10)
        assert informer.lists >= 2
        _create(client, "c")
        assert ("c", False) in _drain(view, 1)
    assert set(view.cache) == {"default/a", "default/b", "default/c"}
    assert any(e["event"] == "shared_watch_failed" for e in logs)


def test_a_reader_gets_the_api_error_when_the_cache_cannot_fill(
        emulator: Any, tmp_path: Path) -> None:
    """While every list fails, a wave asking for the cache gets the API's error (its run
    fails as it did with its own listing), not a silent empty cache."""
    from tidal.karmada.errors import KarmadaError

    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kc"),
                                           retry=RetryPolicy(attempts=1))
    emulator.faults.inject(type="error", verb="list", resource="resourcebindings")
    reads = SharedReads(client, retry_seconds=0.05, sync_timeout=1.0)
    with reads.in_use(), pytest.raises(KarmadaError):
        reads.binding_watch("default").start()
