"""Watch over real HTTP: initial state, resume from a resourceVersion, 410 Gone, bookmarks."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import Any

import pytest
from kubernetes import client

from tests.sim import kube
from tests.sim.kube import ApiException
from tidal_sim.emulator import Emulator

pytestmark = pytest.mark.e2e


def cm(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
    }


def read_lines(
    emu: Emulator, query: str, path: str = "/api/v1/namespaces/default/configmaps"
) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{emu.url}{path}?watch=1&{query}", timeout=10) as resp:
        return [json.loads(line) for line in resp.read().splitlines() if line.strip()]


def test_watch_replays_from_resource_version(api_client: client.ApiClient) -> None:
    """A watch from a list's resourceVersion sees exactly the later ADDED/MODIFIED/DELETED."""
    core = kube.core(api_client)
    core.create_namespaced_config_map("default", cm("before"))
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", cm("new"))
    core.patch_namespaced_config_map("new", "default", {"data": {"a": "b"}})
    core.delete_namespaced_config_map("new", "default")
    events = [
        (e["type"], e["object"].metadata.name)
        for e in kube.watcher().stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
        )
    ]
    assert events == [("ADDED", "new"), ("MODIFIED", "new"), ("DELETED", "new")]


def test_watch_without_version_starts_with_current_state(emulator: Emulator) -> None:
    """No resourceVersion: synthetic ADDED events for what exists, then live events."""
    core_events = read_lines(emulator, "timeoutSeconds=1", "/api/v1/namespaces")
    names = {e["object"]["metadata"]["name"] for e in core_events if e["type"] == "ADDED"}
    assert {"default", "kube-system"} <= names


def test_live_events_reach_open_watch(api_client: client.ApiClient) -> None:
    """Events written after the watch opened stream to it while it is open."""
    core = kube.core(api_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    seen: list[tuple[str, str]] = []
    w = kube.watcher()

    def consume() -> None:
        for event in w.stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5
        ):
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 2:
                w.stop()

    thread = threading.Thread(target=consume)
    thread.start()
    time.sleep(0.2)
    core.create_namespaced_config_map("default", cm("live"))
    core.delete_namespaced_config_map("live", "default")
    thread.join(timeout=5)
    assert seen == [("ADDED", "live"), ("DELETED", "live")]


def test_too_old_resource_version_is_410(emulator: Emulator, api_client: client.ApiClient) -> None:
    """After history is compacted, resuming from an old version yields an ERROR 410 Expired."""
    core = kube.core(api_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", cm("x"))
    emulator.store.compact()
    core.create_namespaced_config_map("default", cm("y"))
    events = read_lines(emulator, f"resourceVersion={rv}")
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"
    with pytest.raises(ApiException) as err:
        list(
            kube.watcher().stream(
                core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
            )
        )
    assert err.value.status == 410


def test_bookmarks_carry_the_current_version(make_emulator: Any) -> None:
    """allowWatchBookmarks=true yields BOOKMARK events with the latest resourceVersion."""
    emu = make_emulator(bookmark_interval=0.1)
    rv = emu.store.resource_version
    events = read_lines(emu, f"resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1")
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks
    assert bookmarks[-1]["object"]["metadata"]["resourceVersion"] == str(emu.store.resource_version)


def test_selector_watch_sees_objects_leave_and_enter(
    api_client: client.ApiClient, emulator: Emulator
) -> None:
    """With a labelSelector, relabelling out is DELETED and relabelling in is ADDED."""
    core = kube.core(api_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", cm("s", {"team": "a"}))
    core.patch_namespaced_config_map("s", "default", {"metadata": {"labels": {"team": "b"}}})
    core.patch_namespaced_config_map("s", "default", {"metadata": {"labels": {"team": "a"}}})
    events = read_lines(emulator, f"resourceVersion={rv}&labelSelector=team%3Da&timeoutSeconds=1")
    assert [e["type"] for e in events] == ["ADDED", "DELETED", "ADDED"]


def test_watch_for_one_object_by_field_selector(api_client: client.ApiClient) -> None:
    """fieldSelector=metadata.name narrows a watch to one object (the client's read-watch)."""
    core = kube.core(api_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", cm("one"))
    core.create_namespaced_config_map("default", cm("two"))
    events = list(
        kube.watcher().stream(
            core.list_namespaced_config_map,
            "default",
            field_selector="metadata.name=two",
            resource_version=rv,
            timeout_seconds=1,
        )
    )
    assert [e["object"].metadata.name for e in events] == ["two"]


def test_custom_objects_watch(api_client: client.ApiClient) -> None:
    """Cluster-scoped custom objects (CPPs) stream through CustomObjectsApi with watch.Watch."""
    api = kube.custom(api_client)
    listed = api.list_cluster_custom_object(
        "policy.karmada.io", "v1alpha1", "clusterpropagationpolicies"
    )
    rv = listed["metadata"]["resourceVersion"]
    api.create_cluster_custom_object(
        "policy.karmada.io",
        "v1alpha1",
        "clusterpropagationpolicies",
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "ClusterPropagationPolicy",
            "metadata": {"name": "w"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]},
        },
    )
    events = list(
        kube.watcher().stream(
            api.list_cluster_custom_object,
            "policy.karmada.io",
            "v1alpha1",
            "clusterpropagationpolicies",
            resource_version=rv,
            timeout_seconds=1,
        )
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "w")]


def test_abandoned_watches_are_cleaned_up(emulator: Emulator) -> None:
    """Clients that vanish mid-watch leave no subscription behind."""
    import socket

    port = emulator.port
    for _ in range(5):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(
            b"GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        sock.close()
    deadline = time.time() + 3
    while emulator.server.watches.count() and time.time() < deadline:
        time.sleep(0.05)
    assert emulator.server.watches.count() == 0
