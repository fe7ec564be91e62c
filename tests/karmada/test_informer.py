"""The shared informer over HTTP: one list and one watch serve many readers, each with its own
view; 410 re-lists; it stops when no switch uses it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tidal.karmada.client import RESOURCE_BINDINGS, KarmadaClient, RetryPolicy
from tidal.karmada.informer import SharedReads

pytestmark = pytest.mark.e2e


def _binding(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "resource": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "namespace": namespace,
                "name": name,
            }
        },
    }


def _create(client: KarmadaClient, name: str, namespace: str = "default") -> None:
    client.request(
        "create",
        RESOURCE_BINDINGS,
        "POST",
        RESOURCE_BINDINGS.path(namespace),
        body=_binding(name, namespace),
    )


def _requests(emulator: Any, verb: str, since: int = 0) -> int:
    return sum(
        1
        for r in emulator.request_log(since)
        if r.verb == verb and r.resource == "resourcebindings"
    )


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
        client.request(
            "delete", RESOURCE_BINDINGS, "DELETE", RESOURCE_BINDINGS.path("default", "a")
        )
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
    demo_emulator: Any, tmp_path: Path
) -> None:
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
    emulator: Any, tmp_path: Path
) -> None:
    """The shared watch is cut and its history forgotten (410 on resume), and the lists that
    follow answer 500: the informer retries, re-lists, and a reader gets every change."""
    from structlog.testing import capture_logs

    from tidal.karmada.state_objects import ensure_namespace

    client = KarmadaClient.from_kubeconfig(
        emulator.write_kubeconfig(tmp_path / "kc"), retry=RetryPolicy(attempts=2, base_delay=0.01)
    )
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
    emulator: Any, tmp_path: Path
) -> None:
    """While every list fails, a wave asking for the cache gets the API's error (its run
    fails as it did with its own listing), not a silent empty cache."""
    from tidal.karmada.errors import KarmadaError

    client = KarmadaClient.from_kubeconfig(
        emulator.write_kubeconfig(tmp_path / "kc"), retry=RetryPolicy(attempts=1)
    )
    emulator.faults.inject(type="error", verb="list", resource="resourcebindings")
    reads = SharedReads(client, retry_seconds=0.05, sync_timeout=1.0)
    with reads.in_use(), pytest.raises(KarmadaError):
        reads.binding_watch("default").start()


def test_a_keyed_reader_holds_and_gets_only_its_keys(emulator: Any, tmp_path: Path) -> None:
    """A reader naming its keys gets those in its snapshot and changes (a key created later
    too, a deleted one its deletion) while a namespace reader beside it sees everything."""
    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kc"))
    for name in ("a", "b", "c"):
        _create(client, name)
    reads = SharedReads(client, max_watch_seconds=30)
    with reads.in_use():
        keyed = reads.binding_watch("default", keys={"default/a", "default/x"})
        wide = reads.binding_watch("default")
        assert set(keyed.start()) == {"default/a"}
        assert set(wide.start()) == {"default/a", "default/b", "default/c"}
        assert reads.informers["resourcebindings"].readers() == (1, 1)
        _create(client, "d")
        _create(client, "x")
        client.request(
            "delete", RESOURCE_BINDINGS, "DELETE", RESOURCE_BINDINGS.path("default", "a")
        )
        assert _drain(wide, 3) == [("d", False), ("x", False), ("a", True)]
        assert _drain(keyed, 2) == [("x", False), ("a", True)]
        assert list(keyed.changes(0.2)) == []
    assert set(keyed.cache) == {"default/x"}
    assert set(wide.cache) == {"default/b", "default/c", "default/d", "default/x"}


def test_a_dropped_keyed_view_leaves_nothing_in_the_index(emulator: Any, tmp_path: Path) -> None:
    """Views of finished waves are released: once dropped, their keys leave the informer's
    index by the next change it publishes, and later readers are served as before."""
    import gc

    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kc"))
    _create(client, "a")
    reads = SharedReads(client, max_watch_seconds=30)
    with reads.in_use():
        informer = reads.informers["resourcebindings"]
        views = [
            reads.binding_watch("default", keys={f"default/w{i}", "default/a"}) for i in range(20)
        ]
        for view in views:
            view.start()
        assert len(informer._by_key) == 21 and informer.readers() == (0, 20)
        del views, view
        gc.collect()
        _create(client, "b")
        deadline = time.monotonic() + 5
        while (
            "default/b" not in {f"default/{o['metadata']['name']}" for o in informer.items()}
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        with informer._lock:
            assert informer._by_key == {} and informer._keyed == {}  # pruned by b's publish
        later = reads.binding_watch("default", keys={"default/a"})
        assert set(later.start()) == {"default/a"}
        assert informer.readers() == (0, 1)
        client.request(
            "delete", RESOURCE_BINDINGS, "DELETE", RESOURCE_BINDINGS.path("default", "a")
        )
        assert _drain(later, 1) == [("a", True)]


def test_a_keyed_reader_gets_the_relist_difference_of_its_keys_only(
    emulator: Any, tmp_path: Path
) -> None:
    """Changes the watch missed (410, then a slow re-list) reach a keyed reader as the
    difference the re-list found, for its keys only; a namespace reader gets all of it."""
    from tidal.karmada.state_objects import ensure_namespace

    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kc"))
    _create(client, "a")
    _create(client, "b")
    reads = SharedReads(client, max_watch_seconds=30)
    with reads.in_use():
        keyed = reads.binding_watch("default", keys={"default/a", "default/b", "default/c"})
        wide = reads.binding_watch("default")
        keyed.start()
        wide.start()
        informer = reads.informers["resourcebindings"]
        ensure_namespace(client, "elsewhere")  # the store moves on past the informer's version
        # the re-list waits a second: the changes below land before it, unseen by any watch
        emulator.faults.inject(
            type="latency", verb="list", resource="resourcebindings", seconds=1.0, count=1
        )
        emulator.faults.inject(type="drop-watch", resource="resourcebindings", compact=True)
        _create(client, "c")
        _create(client, "d")
        client.request(
            "delete", RESOURCE_BINDINGS, "DELETE", RESOURCE_BINDINGS.path("default", "a")
        )
        assert _drain(keyed, 2) == [("c", False), ("a", True)]
        assert informer.lists == 2
        assert sorted(_drain(wide, 3)) == [("a", True), ("c", False), ("d", False)]
        assert list(keyed.changes(0.2)) == []
    assert set(keyed.cache) == {"default/b", "default/c"}


def _cpp(name: str, weight: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": name},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {"clusterAffinity": {"clusterNames": [f"cluster-{weight}"]}},
        },
    }


def test_policies_are_read_from_one_list_and_watch_and_a_write_is_seen_at_once(
    emulator: Any, tmp_path: Path
) -> None:
    """A run's policy reads come from one list and one watch, no GET; a policy the run wrote
    is in the cache as soon as its answer is (before the watch brings it), and a later
    version from the watch is never replaced by an older written one."""
    from tidal.karmada import policies

    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kc"))
    policies.create_policy(client, _cpp("p-1", 1))
    since = len(emulator.request_log())
    reads = SharedReads(client, private=True)
    kind = "ClusterPropagationPolicy"
    with reads.in_use():
        assert (reads.find_policy(kind, "p-1", None) or {})["metadata"]["name"] == "p-1"
        assert reads.find_policy(kind, "absent", None) is None
        written = policies.create_policy(client, _cpp("p-2", 2))
        reads.wrote_policy(written)
        assert reads.find_policy(kind, "p-2", None) == written
        older = dict(written, metadata={**written["metadata"], "resourceVersion": "1"})
        reads.wrote_policy(older)
        assert reads.find_policy(kind, "p-2", None) == written
    verbs = [
        r.verb for r in emulator.request_log(since) if r.resource == "clusterpropagationpolicies"
    ]
    assert sorted(verbs) == ["create", "list", "watch"]


def _cut_off(emulator: Any, tmp_path: Path) -> Iterator[tuple[SharedReads, Any, str]]:
    """A policy p-1 cached by a private SharedReads whose watch is then cut and every new
    one refused (500), until the informer has seen the cut: (the reads, the refusal, kind)."""
    from tidal.karmada import policies

    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kc"))
    policies.create_policy(client, _cpp("p-1", 1))
    reads = SharedReads(client, private=True, retry_seconds=0.05)
    kind = "ClusterPropagationPolicy"
    with reads.in_use():
        assert reads.find_policy(kind, "p-1", None) is not None
        refused = emulator.faults.inject(
            type="error", verb="watch", resource="clusterpropagationpolicies"
        )
        emulator.faults.inject(type="drop-watch", resource="clusterpropagationpolicies")
        informer = reads.informers["clusterpropagationpolicies"]
        deadline = time.monotonic() + 10  # the cut reaches the informer's thread first
        while informer.live and time.monotonic() < deadline:
            time.sleep(0.01)
        yield reads, refused, kind


def test_a_watch_reopened_after_refusals_is_live_only_once_it_has_what_changed_meanwhile(
    emulator: Any, tmp_path: Path
) -> None:
    """Watches refused (500) while another client edits the policy; the next watch opens
    but sends nothing (stalled): once the cache says live it already holds the edit, because
    after a failed watch the informer lists before it watches again."""
    from tidal.karmada import policies

    for reads, refused, kind in _cut_off(emulator, tmp_path):
        informer = reads.informers["clusterpropagationpolicies"]
        lists = informer.lists
        edit = {"spec": {"placement": {"clusterAffinity": {"clusterNames": ["cluster-9"]}}}}
        policies.patch_policy(reads.client, kind, "p-1", None, edit)
        emulator.faults.inject(type="stall-watch", resource="clusterpropagationpolicies")
        emulator.faults.clear(refused.id)
        deadline = time.monotonic() + 10
        while not informer.live and time.monotonic() < deadline:
            time.sleep(0.01)
        assert informer.live
        cached = informer.get("/p-1") or {}
        assert cached["spec"]["placement"]["clusterAffinity"]["clusterNames"] == ["cluster-9"]
        assert informer.lists > lists


def test_a_policy_cache_whose_watch_is_down_is_not_read(emulator: Any, tmp_path: Path) -> None:
    """The policy watch is cut and every new one refused (500); another client edits the
    policy: a read now is a GET that sees the edit, not the cache that stopped following.
    Once a watch opens again, reads come from the cache again, with the edit."""
    from tidal.karmada import policies

    for reads, refused, kind in _cut_off(emulator, tmp_path):
        client, informer = reads.client, reads.informers["clusterpropagationpolicies"]
        edit = {"spec": {"placement": {"clusterAffinity": {"clusterNames": ["cluster-9"]}}}}
        policies.patch_policy(client, kind, "p-1", None, edit)
        since = len(emulator.request_log())
        seen = reads.find_policy(kind, "p-1", None) or {}
        assert seen["spec"]["placement"]["clusterAffinity"]["clusterNames"] == ["cluster-9"]
        assert [  # the reader's; the informer's own retries list and watch
            r.verb
            for r in emulator.request_log(since)
            if r.resource == "clusterpropagationpolicies" and r.verb not in ("list", "watch")
        ] == ["get"]
        emulator.faults.clear(refused.id)
        deadline = time.monotonic() + 10
        while not informer.live and time.monotonic() < deadline:
            time.sleep(0.05)
        since = len(emulator.request_log())
        seen = reads.find_policy(kind, "p-1", None) or {}
        assert seen["spec"]["placement"]["clusterAffinity"]["clusterNames"] == ["cluster-9"]
        assert not [
            r for r in emulator.request_log(since) if r.resource == "clusterpropagationpolicies"
        ]


def test_a_cluster_cache_whose_watch_is_down_is_not_read(
    demo_emulator: Any, tmp_path: Path
) -> None:
    """The Cluster watch is cut and every new one refused: list_clusters lists afresh (and
    sees a Cluster's status changed since), instead of the cache that stopped following."""
    client = KarmadaClient.from_kubeconfig(demo_emulator.write_kubeconfig(tmp_path / "kc"))
    reads = SharedReads(client, retry_seconds=0.05)
    with reads.in_use():
        first = reads.list_clusters()
        name = first[0]["metadata"]["name"]
        demo_emulator.faults.inject(type="error", verb="watch", resource="clusters")
        demo_emulator.faults.inject(type="drop-watch", resource="clusters")
        informer = reads.informers["clusters"]
        deadline = time.monotonic() + 10
        while informer.live and time.monotonic() < deadline:  # it saw its watch end
            time.sleep(0.05)
        demo_emulator.set_cluster_ready(name, False, reason="ClusterNotReachable")
        since = len(demo_emulator.request_log())
        listed = {c["metadata"]["name"]: c for c in reads.list_clusters()}
        conditions = listed[name]["status"]["conditions"]
        assert [c["status"] for c in conditions if c["type"] == "Ready"] == ["False"]
        assert "list" in [
            r.verb for r in demo_emulator.request_log(since) if r.resource == "clusters"
        ]
