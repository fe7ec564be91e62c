"""Waves: the selected workloads in a stable order, cut into groups of `waveSize`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

T = TypeVar("T")
Order = Literal["name", "smallestFirst", "largestFirst"]


@dataclass(frozen=True, order=True)
class WorkloadKey:
    """A resource template: sorts by (namespace, name), then kind."""

    namespace: str
    name: str
    kind: str
    api_version: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name}"

    @classmethod
    def parse(cls, text: str, api_version: str = "") -> WorkloadKey:
        namespace, kind, name = text.split("/", 2)
        return cls(namespace, name, kind, api_version)


def ordered(
    items: Sequence[T],
    key: Callable[[T], WorkloadKey],
    replicas: Callable[[T], int | None] | None = None,
    order: Order = "name",
) -> list[T]:
    """Stable wave order: (namespace, name), or by replicas with (namespace, name) breaking ties."""
    by_name = sorted(items, key=key)
    if order == "name" or replicas is None:
        return by_name
    sign = 1 if order == "smallestFirst" else -1
    return sorted(by_name, key=lambda item: sign * (replicas(item) or 0))


def split_waves(items: Sequence[T], size: int) -> list[list[T]]:
    """Consecutive groups of `size` (the last may be smaller); no empty wave."""
    if size < 1:
        raise ValueError(f"a wave holds at least one workload, got size {size}")
    return [list(items[i : i + size]) for i in range(0, len(items), size)]
