"""Shared plumbing: a benchmark's result section, clients for an emulator, clocks, waiting."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tidal_sim.clock import Clock as SimClock
from tidal_sim.emulator import Emulator

NOT_MEASURED = -1.0


@dataclass
class Section:
    """What one benchmark hands to the report: flat numeric results, markdown, plot files."""

    key: str
    title: str
    results: dict[str, float] = field(default_factory=dict)
    markdown: list[str] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def put(self, name: str, value: float | int | None) -> None:
        self.results[f"{self.key}.{name}"] = NOT_MEASURED if value is None else float(value)

    def say(self, *lines: str) -> None:
        self.markdown.extend(lines)

    def not_measured(self, names: list[str], reason: str) -> None:
        for name in names:
            self.put(name, NOT_MEASURED)
        self.say(f"**Not measured** ({', '.join(names)} reported as -1): {reason}")


@dataclass(frozen=True)
class RunConfig:
    out: Path
    quick: bool
    tiny: bool = False  # toy sizes for the smoke test: the figures mean nothing


def kube_api(emu: Emulator, user: str = "bench") -> Any:
    """An official kubernetes ApiClient pointed at the emulator."""
    from kubernetes import client

    config = client.Configuration()
    config.host = emu.url
    config.api_key = {"authorization": f"Bearer sim:{user}"}
    return client.ApiClient(config)


def karmada_client(emu: Emulator, user: str = "tidal") -> Any:
    from tidal.karmada.client import KarmadaClient

    return KarmadaClient(kube_api(emu, user))


class SimEngineClock:
    """The engine's Clock over the emulator's (possibly accelerated) clock: the engine's waits
    and deadlines then run in simulated seconds, as they would against a real control plane."""

    def __init__(self, sim: SimClock) -> None:
        self.sim = sim
        self.speed = float(getattr(sim, "speed", 1.0))

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.sim.now(), tz=UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds / self.speed)

    def monotonic(self) -> float:
        return self.sim.now()


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate` (wall time) until true or `timeout` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def converged(emu: Emulator) -> bool:
    """Every (workload, cluster) pair of the timeline has ready == assigned."""
    current = emu.controllers.timeline.current()
    return all(assigned == ready for assigned, ready in current.values())


def fmt(value: float, digits: int = 2) -> str:
    if value == NOT_MEASURED:
        return "not measured"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def rtype(emu: Emulator, api_version: str, kind: str) -> Any:
    """The emulator's ResourceType of a kind (it must be registered)."""
    found = emu.kinds.by_kind(api_version, kind)
    if found is None:
        raise LookupError(f"the emulator does not serve {api_version} {kind}")
    return found
