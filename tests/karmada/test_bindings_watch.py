"""BindingWatch over HTTP: a live cache from list + watch, resume, and re-list after 410."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tidal.karmada.bindings import BindingWatch
from tidal.karmada.client import RESOURCE_BINDINGS, KarmadaClient

pytestmark = pytest.mark.e2e


def _binding(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resource": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "namespace": "default",
                "name": name,
            }
        },
    }


def _client(emulator: Any, tmp_path: Path) -> KarmadaClient:
    return KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kc"))


def _create(client: KarmadaClient, name: str) -> None:
    client.request(
        "create", RESOURCE_BINDINGS, "POST", RESOURCE_BINDINGS.path("default"), body=_binding(name)
    )


def _first_changes(watch: BindingWatch, count: int) -> list[tuple[str, bool]]:
    """(name, deleted) of the watch's first `count` changes within a second."""
    seen: list[tuple[str, bool]] = []
    for obj, deleted in watch.changes(1.0):
        seen.append((obj["metadata"]["name"], deleted))
        if len(seen) == count:
            break
    return seen


def test_watch_sees_new_bindings_and_deletions(emulator: Any, tmp_path: Path) -> None:
    """Changes after the list arrive through the watch and update the cache."""
    client = _client(emulator, tmp_path)
    _create(client, "a")
    watch = BindingWatch(client, "default")
    assert set(watch.start()) == {"default/a"}
    _create(client, "b")
    client.request("delete", RESOURCE_BINDINGS, "DELETE", RESOURCE_BINDINGS.path("default", "a"))
    seen = _first_changes(watch, 2)
    assert seen == [("b", False), ("a", True)]
    assert set(watch.cache) == {"default/b"}


def test_gone_relists_and_reports_the_difference(emulator: Any, tmp_path: Path) -> None:
    """A resourceVersion older than the server's history (410) triggers a re-list."""
    client = _client(emulator, tmp_path)
    _create(client, "a")
    watch = BindingWatch(client, "default")
    watch.start()
    _create(client, "b")
    emulator.store.compact()
    changed = [(obj["metadata"]["name"], deleted) for obj, deleted in watch.changes(1.0)]
    assert ("b", False) in changed
    assert watch.relists == 1
    assert set(watch.cache) == {"default/a", "default/b"}


def test_a_keyed_watch_keeps_and_yields_only_its_keys(emulator: Any, tmp_path: Path) -> None:
    """With keys, the namespace is listed and watched but only those bindings are cached and
    yielded: a key created later, a key deleted; other bindings never appear."""
    client = _client(emulator, tmp_path)
    _create(client, "a")
    _create(client, "b")
    watch = BindingWatch(client, "default", keys={"default/a", "default/c"})
    assert set(watch.start()) == {"default/a"}
    _create(client, "other")
    _create(client, "c")
    client.request("delete", RESOURCE_BINDINGS, "DELETE", RESOURCE_BINDINGS.path("default", "a"))
    seen = _first_changes(watch, 2)
    assert seen == [("c", False), ("a", True)]
    assert set(watch.cache) == {"default/c"}


def test_a_keyed_watch_relists_its_keys_only(emulator: Any, tmp_path: Path) -> None:
    """After a 410 the re-list reports the difference for the watch's keys only."""
    client = _client(emulator, tmp_path)
    _create(client, "a")
    watch = BindingWatch(client, "default", keys={"default/a", "default/b"})
    watch.start()
    _create(client, "b")
    _create(client, "other")
    emulator.store.compact()
    changed = [(obj["metadata"]["name"], deleted) for obj, deleted in watch.changes(1.0)]
    assert changed == [("b", False)]
    assert watch.relists == 1
    assert set(watch.cache) == {"default/a", "default/b"}
