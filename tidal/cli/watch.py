"""`tidal status --watch`: the latest run of each schedule, per wave and per cluster, re-read
from the journal (the state ConfigMap) and the bindings at every refresh.

The view model is pure: `run_rows(state, bindings)` turns a journal and a snapshot of the
run's bindings (keyed "namespace/Kind/name" of the template they bind) into the rows of
tidal.cli.progress (the live view of `tidal switch`, drawn the same way): ready over desired
per cluster; every cluster the run touches on every row (the destination before any of its
pods is ready, a cluster it left after its last pod went: from the journal's samples); ready
pods beyond what a cluster keeps counted as leaving; converged counts from the bindings for the
wave in flight (once the wave wrote a workload's trigger) and from the journal for the waves
done. `floor_notes` says the lowest ready
replicas per floor cluster against the floor; `document` is the same as JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tidal.cli.progress import SwitchView, WaveRow, WaveState
from tidal.domain.floors import FloorRule
from tidal.engine.journal import RunState
from tidal.engine.journal import WaveState as WaveRecord
from tidal.engine.states import WaveResult
from tidal.karmada.views import BindingView

Bindings = Mapping[str, Mapping[str, Any]]  # "namespace/Kind/name" of the template -> binding

_DONE = {
    WaveResult.SUCCEEDED: WaveState.SUCCEEDED,
    WaveResult.FAILED: WaveState.FAILED,
    WaveResult.ROLLED_BACK: WaveState.ROLLED_BACK,
    WaveResult.FAILED_ROLLED_BACK: WaveState.ROLLED_BACK,
}


def template_key(binding: Mapping[str, Any]) -> str:
    """ "namespace/Kind/name" of the template a binding binds (its spec.resource)."""
    ref = BindingView.of(binding).spec.get("resource") or {}
    return f"{ref.get('namespace') or ''}/{ref.get('kind')}/{ref.get('name')}"


def converged(binding: Mapping[str, Any] | None, ready_field: str | None = None) -> bool:
    """The scheduler saw the binding's latest spec and every assigned replica is ready."""
    if binding is None:
        return False
    view = BindingView.of(binding)
    assigned = view.assignment()
    if (
        not assigned
        or view.generation is None
        or view.scheduler_observed_generation != view.generation
    ):
        return False
    ready = view.ready(ready_field)
    return all(ready.get(c, 0) >= n for c, n in assigned.items())


def moved(wave: WaveRecord, key: object) -> bool:
    """The wave wrote the workload's trigger (its touch, or the wave's rebalancer): before
    that a binding converged on its old placement is not converged for the wave."""
    return bool(wave.rebalancers) or str(key) in wave.forward.triggered


def _state(wave: WaveRecord, running: bool) -> WaveState:
    if wave.result is not None:
        return _DONE.get(wave.result, WaveState.FAILED)
    return WaveState.RUNNING if running and wave.started_at else WaveState.WAITING


def run_rows(state: RunState, bindings: Bindings, ready_field: str | None = None) -> list[WaveRow]:
    """One row per wave of the run, with the figures of its workloads' bindings now."""
    running = not state.finished
    rows = [_wave_row(wave, running, bindings, ready_field) for wave in state.waves]
    clusters = {c for row in rows for c in (*row.ready, *row.desired)}
    for wave in state.waves:  # and those the run's samples saw (a cluster it left)
        for sample in wave.samples:
            clusters |= set(sample.get("desired") or {}) | set(sample.get("ready") or {})
    for row in rows:  # every cluster of the run on every row
        for c in clusters:
            row.desired.setdefault(c, 0)
    return rows


def _wave_row(
    wave: WaveRecord, running: bool, bindings: Bindings, ready_field: str | None
) -> WaveRow:
    """A wave's row: its workloads' ready and desired per cluster, and how many converged."""
    row = WaveRow(wave.index, False, len(wave.workloads), _state(wave, running))
    for key in wave.workloads:
        binding = bindings.get(str(key))
        if binding is None:
            continue
        view = BindingView.of(binding)
        for c, n in view.ready(ready_field).items():
            row.ready[c] = row.ready.get(c, 0) + n
        for c, n in view.assignment().items():
            row.desired[c] = row.desired.get(c, 0) + n
        if (
            row.state is not WaveState.SUCCEEDED
            and moved(wave, key)
            and converged(binding, ready_field)
        ):
            row.converged += 1
    if row.state is WaveState.SUCCEEDED:
        row.converged = row.total
    elif row.state is WaveState.WAITING:
        row.converged = 0
    return row


def floor_notes(
    state: RunState, bindings: Bindings, floors: Sequence[FloorRule], ready_field: str | None = None
) -> list[str]:
    """`floor cluster-b: lowest 4 ready (needs 1)` per ready-replica floor, over the run's
    workloads that have replicas (for `*`: in each cluster a workload is assigned)."""
    views = [
        BindingView.of(bindings[str(k)])
        for w in state.waves
        for k in w.workloads
        if str(k) in bindings
    ]
    views = [v for v in views if sum(v.assignment().values()) or v.replicas]
    notes = []
    for rule in floors:
        if rule.min_ready_replicas is None:
            continue
        if rule.every_cluster:
            lows = [v.ready(ready_field).get(c, 0) for v in views for c in v.assignment()]
            where = "each kept cluster"
        else:
            lows = [v.ready(ready_field).get(c, 0) for v in views for c in rule.named_clusters()]
            where = ", ".join(rule.named_clusters())
        low = "-" if not lows else str(min(lows))
        notes.append(f"floor {where}: lowest {low} ready (needs {rule.min_ready_replicas})")
    return notes


def title(state: RunState) -> str:
    outcome = str(state.result) if state.result is not None else f"running ({state.phase})"
    return (
        f"{state.schedule}/{state.window} run {state.run_id}: {outcome}; "
        f"{sum(len(w.workloads) for w in state.waves)} workload(s), "
        f"{len(state.waves)} wave(s)"
    )


def view_of(state: RunState, rows: list[WaveRow]) -> SwitchView:
    """The rows in the live view of `tidal switch`, ready to render."""
    view = SwitchView()
    view.title = title(state)
    view.waves = {(row.index, row.rollback): row for row in rows}
    return view


def document(state: RunState, rows: list[WaveRow], notes: list[str]) -> dict[str, Any]:
    """The JSON of one refresh (off a terminal, one such document a line per change)."""
    return {
        "schedule": state.schedule,
        "window": state.window,
        "runId": state.run_id,
        "phase": str(state.phase),
        "result": str(state.result) if state.result else None,
        "waves": [
            {
                "wave": r.index,
                "state": str(r.state),
                "converged": r.converged,
                "total": r.total,
                "clusters": {
                    c: {
                        "ready": min(r.ready.get(c, 0), n),
                        "desired": n,
                        "leaving": max(0, r.ready.get(c, 0) - n),
                    }
                    for c, n in sorted(r.desired.items())
                },
            }
            for r in rows
        ],
        "floors": notes,
    }
