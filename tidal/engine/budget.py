"""The seam through which a surging wave asks for room in its destination clusters.

A make-before-break wave holds extra replicas in its destination until it is released. Before it
surges it reserves that room here; afterwards it releases it. A switch run alone uses `OwnBudget`
(the room must fit what the clusters report free); the daemon passes one shared budget to all
of its concurrent switches so that their surges together never exceed what is free.

Amounts are `Need`: cluster name -> resource name -> quantity in the resource's base unit
(GPUs and pods as counts, cpu in cores, memory in bytes), as tidal.domain.prediction reads them.

`Versions` say which Cluster status an amount comes from: cluster name -> the resourceVersion of
the Cluster object read. A wave says when its replicas run (and releases its room) with the
versions read just then, so a shared budget can tell a later status, one that counts them, from
an earlier one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeAlias

Need: TypeAlias = Mapping[str, Mapping[str, float]]
Versions: TypeAlias = Mapping[str, str]


class SurgeBudget(Protocol):
    def reserve(
        self, holder: str, need: Need, free: Need, versions: Versions | None = None
    ) -> bool:
        """Hold `need` for `holder` (a run id and wave) if it fits `free` minus what others hold;
        `versions`: the Cluster objects `free` was read from.

        False holds nothing; the wave asks again later. Reserving again under the same holder
        replaces its earlier reservation (a resumed run re-reserves its wave).
        """
        ...

    def running(self, holder: str, versions: Callable[[], Versions]) -> None:
        """What `holder` holds is in use now: its replicas exist (bound to a node or waiting
        for one), so every later capacity report counts them (Karmada's resource summary
        counts a pod from its creation: allocating, then allocated); `versions` reads the
        versions now (called only by a budget that uses it, once). The room stays held until
        `release`."""
        ...

    def release(self, holder: str, versions: Callable[[], Versions] | None = None) -> None:
        """Give back what `holder` held (nothing held is fine); `versions` as for `running`."""
        ...


def fits(need: Need, free: Need) -> bool:
    """Every requested amount is at most what is free in that cluster."""
    return all(
        amount <= free.get(cluster, {}).get(resource, 0.0)
        for cluster, amounts in need.items()
        for resource, amount in amounts.items()
    )


class OwnBudget:
    """A run on its own: the surge must fit what the clusters report free right now."""

    def reserve(
        self, holder: str, need: Need, free: Need, versions: Versions | None = None
    ) -> bool:
        return fits(need, free)

    def running(self, holder: str, versions: Callable[[], Versions]) -> None:
        return None

    def release(self, holder: str, versions: Callable[[], Versions] | None = None) -> None:
        return None


@dataclass(frozen=True)
class Growth:
    """What the wave's namespaces requested in the members it leased room in, read before the
    grant, and the room leased: once their requests grew by it, the wave's pods exist."""

    base: dict[str, dict[str, float]]
    need: Need

    def shown_by(self, now: Mapping[str, Mapping[str, float]]) -> bool:
        return all(
            c in now and now[c].get(r, 0.0) - self.base[c].get(r, 0.0) >= amount - 1e-9
            for c, amounts in self.need.items()
            for r, amount in amounts.items()
            if amount > 0
        )
