"""The run's replicas over time, for the picture of a run (`tidal status --plot`): ready and
desired replicas per cluster summed over every workload of the run, and the lowest ready
replicas any workload has per floor cluster, sampled from the bindings a wave's gate already
watches (no request of its own) and kept in the wave's journal record, which the engine saves
at the wave's end anyway.

A sample is `{"t": seconds since the run started, "ready": {cluster: n}, "desired": {cluster:
n}, "lowest": {cluster: n}}`; a wave keeps at most MAX_SAMPLES, fewer when the run has many
waves (RUN_SAMPLES over the run, at least MIN_SAMPLES a wave): every other one is dropped when
full, so that the spacing doubles and the whole wave stays covered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tidal.engine.resolve import Workload
from tidal.karmada.views import BindingView

Sample = dict[str, Any]
MAX_SAMPLES = 48
RUN_SAMPLES = 480  # over the whole run (a ConfigMap holds 1 MiB): fewer per wave when many
MIN_SAMPLES = 4
EVERY_SECONDS = 2.0  # the least time between two samples of a wave (the last one is always kept)


def totals(
    everyone: Sequence[Workload], cache: Mapping[str, Any], ready_field: str | None
) -> tuple[dict[str, int], dict[str, int]]:
    """(ready, desired) replicas per cluster over the run's workloads, from the bindings."""
    ready: dict[str, int] = {}
    desired: dict[str, int] = {}
    for w in everyone:
        binding = cache.get(w.binding_key)
        if binding is None:
            continue
        view = BindingView.of(binding)
        for cluster, n in view.ready(ready_field).items():
            ready[cluster] = ready.get(cluster, 0) + n
        for cluster, n in view.assignment().items():
            desired[cluster] = desired.get(cluster, 0) + n
    for cluster in desired:
        ready.setdefault(cluster, 0)
    return dict(sorted(ready.items())), dict(sorted(desired.items()))


def seconds_since(started_at: str | None, now: datetime) -> float:
    """Seconds from a journal's ISO time to `now` (0 when the start is not known)."""
    if not started_at:
        return 0.0
    start = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    return round(max(0.0, (now - start).total_seconds()), 1)


def limit(waves: int) -> int:
    """Samples a wave keeps in a run of `waves` waves."""
    return max(MIN_SAMPLES, min(MAX_SAMPLES, RUN_SAMPLES // max(1, waves)))


def keep(samples: list[Sample], sample: Sample, most: int = MAX_SAMPLES) -> None:
    """Append `sample` (replacing the last one when the figures are the same), thinning a list
    of more than `most` to every other sample (the first and the last kept)."""
    figures = {k: v for k, v in sample.items() if k != "t"}
    if samples and samples[-1] == sample:
        return
    if (
        samples
        and {k: v for k, v in samples[-1].items() if k != "t"} == figures
        and len(samples) > 1
    ):
        previous = {k: v for k, v in samples[-2].items() if k != "t"}
        if previous == figures:  # a flat stretch: move its end, keep its start
            samples[-1] = sample
            return
    samples.append(sample)
    while len(samples) > most:
        samples[:] = samples[:-1:2] + samples[-1:]


@dataclass
class Sampler:
    """Takes a wave's samples no more often than EVERY_SECONDS (monotonic), unless forced."""

    every: float = EVERY_SECONDS
    _last: dict[int, float] = field(default_factory=dict)

    def due(self, wave: int, monotonic: float, force: bool = False) -> bool:
        last = self._last.get(wave)
        if not force and last is not None and monotonic - last < self.every:
            return False
        self._last[wave] = monotonic
        return True
