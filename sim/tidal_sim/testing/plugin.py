"""pytest fixtures for tests against the emulator: `pytest_plugins = ["tidal_sim.testing.plugin"]`.

Over real HTTP on loopback (port 0): make_emulator, emulator, demo_emulator, kubeconfig,
api_client. In-process, no sockets, on a ManualClock: make_karmada_fake, karmada_fake.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, Self, TypeVar

import pytest

from tidal_sim.emulator import DEFAULT_TOPOLOGY, Emulator
from tidal_sim.store import Obj
from tidal_sim.testing.inprocess import InProcessKarmada

MakeEmulator = Callable[..., Emulator]
MakeKarmadaFake = Callable[..., InProcessKarmada]


class _Startable(Protocol):
    def start(self) -> Self: ...

    def stop(self) -> None: ...


S = TypeVar("S", bound=_Startable)


def _started_until_teardown(kind: Callable[..., S]) -> Iterator[Callable[..., S]]:
    """A factory fixture's body: each `kind(topology, **kwargs)` made is started, and all are
    stopped at teardown, newest first."""
    made: list[S] = []

    def make(topology: Path | str | list[Obj] | None = None, **kwargs: Any) -> S:
        item = kind(topology, **kwargs)
        made.append(item)  # before start: one that fails to start is still stopped
        return item.start()

    yield make
    for item in reversed(made):
        item.stop()


@pytest.fixture
def make_emulator() -> Iterator[MakeEmulator]:
    """Factory: `make_emulator(topology=None, **Emulator kwargs)` -> a started Emulator.

    Every emulator made is stopped at teardown. Pass `clock=ManualClock()` to drive time by hand.
    """
    yield from _started_until_teardown(Emulator)


@pytest.fixture
def emulator(make_emulator: MakeEmulator) -> Emulator:
    """An emulator with no topology: only the namespaces default, kube-system, kube-public,
    karmada-system."""
    return make_emulator()


@pytest.fixture
def demo_emulator(make_emulator: MakeEmulator) -> Emulator:
    """An emulator loaded with the default demo topology (tidal_sim/topologies/default.yaml)."""
    return make_emulator(DEFAULT_TOPOLOGY)


@pytest.fixture
def kubeconfig(emulator: Emulator, tmp_path: Path) -> Path:
    """A kubeconfig file for the `emulator` fixture (context tidal-sim, user admin)."""
    return emulator.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def api_client(emulator: Emulator) -> Iterator[Any]:
    """An official `kubernetes.client.ApiClient` pointed at the `emulator` fixture."""
    from kubernetes import client

    config = client.Configuration()
    config.host = emulator.url
    config.api_key = {"authorization": "Bearer sim:test"}
    api = client.ApiClient(config)
    yield api
    api.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def make_karmada_fake() -> Iterator[MakeKarmadaFake]:
    """Factory: `make_karmada_fake(topology=None, **Emulator kwargs)` -> a started in-process
    Karmada (no sockets, ManualClock); stopped at teardown."""
    yield from _started_until_teardown(InProcessKarmada)


@pytest.fixture
def karmada_fake(make_karmada_fake: MakeKarmadaFake) -> InProcessKarmada:
    """An in-process Karmada with the demo topology's clusters, on a ManualClock."""
    return make_karmada_fake(DEFAULT_TOPOLOGY)
