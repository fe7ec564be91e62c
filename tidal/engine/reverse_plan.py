"""The rollback as a plan, built from the journal alone (no I/O, no clock): what
tidal.engine.rollback does, and in which order. It has three sub-phases:

    restore   every policy the run has a record of, last first (put back to its previous spec)
    waves     the waves moved back, in order, each with the workloads it moves:
                the run's own moves first (waves with a forward trigger or a rebalancer,
                last wave first), then the waves it never triggered whose templates moved
                all the same (found on the switched placement: `stray`; or touched by the
                wave's bridge), last first; a wave whose workloads all left the run is
                still listed (its result is marked rolled back)
    lift      the policies whose temporary Lazy goes (those the run wrote, and any whose
                Lazy it adopted); rollback.py keeps one whose lifting would move templates
                at once, which only the cluster can tell

`stray` is the one fact from the cluster: the workloads of untriggered waves whose bindings
carry the placement this run switched to (rollback.moved_outside_waves, read once the
policies are restored). A resumed rollback builds the same plan again from the same journal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from tidal.engine.journal import RunState, WaveState
from tidal.engine.states import WaveResult

# a wave that ran (or began to) forward: it may have moved something
_RAN = (WaveResult.SUCCEEDED, WaveResult.FAILED)


@dataclass(frozen=True)
class WaveUndo:
    """One wave moved back: its index (from 1) and the workloads it moves, in wave order."""

    wave: int
    workloads: tuple[str, ...]


@dataclass(frozen=True)
class ReversePlan:
    """The rollback's sub-phases, in order (see the module's docstring)."""

    restore: tuple[str, ...]  # policy keys, last first
    waves: tuple[WaveUndo, ...]
    lift: tuple[str, ...]  # policy keys


def restore_order(state: RunState) -> tuple[str, ...]:
    """The policies to put back, last first (the first sub-phase: it runs before the cluster
    is read for `stray`)."""
    return tuple(record.key for record in reversed(state.policies))


def reverse_plan(state: RunState, stray: Set[str], policy_of: Mapping[str, str]) -> ReversePlan:
    """The rollback of the journalled run. `stray`: workloads of untriggered waves that moved
    to the switched placement all the same; `policy_of`: workload -> the key of its policy,
    for the workloads of the run's plan (one outside it is not moved back)."""
    changed = changed_policies(state)
    waves = tuple(
        WaveUndo(wave.index, _moved_back(wave, stray, policy_of, changed))
        for wave in waves_to_undo(state.waves, stray)
    )
    lift = tuple(r.key for r in state.policies if r.applied or r.lazy.added)
    return ReversePlan(restore_order(state), waves, lift)


def changed_policies(state: RunState) -> set[str]:
    """The keys of the policies the run wrote. One it did not change (it only adopted an
    earlier run's Lazy) has no earlier placement to go back to: its workloads already follow
    it, nothing of theirs is undone."""
    return {record.key for record in state.policies if record.applied}


def waves_to_undo(waves: Sequence[WaveState], stray: Set[str]) -> list[WaveState]:
    """The waves to move back, in order: the run's own moves first (last wave first), then
    what Karmada moved of untriggered waves (a floor such a workload breaks, a scale past
    capacity, must not keep the triggered waves where the run put them). A wave whose bridge
    touched templates moved those (to the bridge): they go back too."""
    undo = [
        w
        for w in waves
        if (w.result in _RAN and (triggered(w) or bridged(w)))
        or not stray.isdisjoint(str(k) for k in w.workloads)
    ]
    ours = [w for w in undo if triggered(w)]
    return [*reversed(ours), *reversed([w for w in undo if w not in ours])]


def _moved_back(
    wave: WaveState, stray: Set[str], policy_of: Mapping[str, str], changed: Set[str]
) -> tuple[str, ...]:
    """The wave's workloads to move back: all of a triggered wave, only what Karmada moved
    (stray or bridged) of an untriggered one; each of the plan, of a policy the run changed."""
    names = [str(key) for key in wave.workloads]
    if not triggered(wave):
        moved = stray | bridged(wave)
        names = [n for n in names if n in moved]
    return tuple(n for n in names if policy_of.get(n) in changed)


def triggered(wave: WaveState) -> bool:
    """The run moved the wave itself (a touch written, or a rebalancer asked)."""
    return bool(wave.forward.triggered or wave.rebalancers)


def bridged(wave: WaveState) -> set[str]:
    """The templates the wave's forward bridge touched (their bindings carry the bridge
    placement)."""
    bridge = wave.forward.bridge
    return set(bridge.touched) if bridge is not None else set()
