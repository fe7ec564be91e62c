"""The wave kernel's vocabulary: what a step of a wave is, what each kind of step holds and
writes, and what advancing one answers.

A wave is a list of steps (tidal.engine.strategies builds it from the run's strategy); the
runner (tidal.engine.runner) advances the current one and journals its index. A step answers
`Done` (the runner goes to the next), `Pending` (the runner waits on the watch until one of the
named objects changes, or a Cluster's status does, or the step's own deadline passes, then asks
again) or `Failed` (the wave
ends). Every step is safe to advance again after a crash: it reads what it did from its journal
record (tidal.engine.journal) and the cluster.

`STEPS` is the table every other rule reads: whether a kind holds capacity (room leased from the
run's budget), what it writes, the owner mark it leaves on what it writes, the kind whose
advance gives back what it holds (`undo`), and whether a resume advances it again although the
journal says it is done (`replay`: it re-asserts in-process state, the budget's hold or the
gates' trigger targets, and writes nothing it wrote already), and whether the wave has
converged once it is done (`settles`: the pause before the next wave counts from then, so what
follows, a surge's release, runs inside the pause rather than before it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from tidal.engine.outcome import WaveOutcome
from tidal.engine.states import FailureReason
from tidal.karmada.names import BRIDGE_PLACEMENT, LABEL_RUN, SWITCHED_AT
from tidal.karmada.objects import Obj


class StepKind(StrEnum):
    """What one step of a wave does (journalled by value with the step's index)."""

    RESERVE_ROOM = "reserve_room"  # lease the bridge's and surge's room, as one hold
    BRIDGE = "bridge"  # a Duplicated placement for a moment, where no member Work exists
    SURGE = "surge"  # overrides raise the destinations; wait until those replicas are ready
    TRIGGER_TOUCH = "trigger_touch"  # annotate every template of the wave
    TRIGGER_REBALANCE = "trigger_rebalance"  # one WorkloadRebalancer for the wave
    GATE_SCHEDULED = "gate_scheduled"  # every binding triggered and scheduled
    FIT = "fit"  # raise an override wherever the scheduler assigned more than it sets
    GATE_CONVERGED = "gate_converged"  # ready replicas reach the assignment, floors held
    HEALTH_CHECK = "health_check"  # the wave's destinations are still Ready
    RELEASE_BRIDGE = "release_bridge"  # the bridge put to rest (room back with the surge's)
    RELEASE_SURGE = "release_surge"  # overrides deleted once applied, room given back


class Writes(StrEnum):
    """What a step writes to the cluster."""

    NOTHING = "nothing"
    OVERRIDE_POLICY = "OverridePolicy"
    PLACEMENT = "placement"  # a PropagationPolicy's placement (and its mark annotation)
    ANNOTATION = "annotation"  # a template's annotation
    REBALANCER = "WorkloadRebalancer"


# the owner marks (labels or annotations) the written objects carry
OVERRIDE_OWNER = f"label {LABEL_RUN}"
BRIDGE_OWNER = f"annotation {BRIDGE_PLACEMENT}"
TOUCH_OWNER = f"annotation {SWITCHED_AT}"
REBALANCER_OWNER = f"label {LABEL_RUN}"


@dataclass(frozen=True)
class StepSpec:
    """One row of the step table."""

    holds_capacity: bool
    writes: Writes
    owner_mark: str | None
    undo: StepKind | None  # the step that gives back what this one holds or leaves
    replay: bool = False  # advanced again on a resume although journalled done
    settles: bool = False  # done: the wave has converged, the pause after it counts from here


STEPS: Final = MappingProxyType(
    {
        StepKind.RESERVE_ROOM: StepSpec(True, Writes.NOTHING, None, StepKind.RELEASE_SURGE, True),
        StepKind.BRIDGE: StepSpec(True, Writes.PLACEMENT, BRIDGE_OWNER, StepKind.RELEASE_BRIDGE),
        StepKind.SURGE: StepSpec(
            True, Writes.OVERRIDE_POLICY, OVERRIDE_OWNER, StepKind.RELEASE_SURGE
        ),
        StepKind.TRIGGER_TOUCH: StepSpec(False, Writes.ANNOTATION, TOUCH_OWNER, None, True),
        StepKind.TRIGGER_REBALANCE: StepSpec(
            False, Writes.REBALANCER, REBALANCER_OWNER, None, True
        ),
        StepKind.GATE_SCHEDULED: StepSpec(False, Writes.NOTHING, None, None),
        StepKind.FIT: StepSpec(
            False, Writes.OVERRIDE_POLICY, OVERRIDE_OWNER, StepKind.RELEASE_SURGE
        ),
        StepKind.GATE_CONVERGED: StepSpec(False, Writes.NOTHING, None, None, settles=True),
        StepKind.HEALTH_CHECK: StepSpec(False, Writes.NOTHING, None, None),
        StepKind.RELEASE_BRIDGE: StepSpec(False, Writes.PLACEMENT, None, None),
        StepKind.RELEASE_SURGE: StepSpec(False, Writes.OVERRIDE_POLICY, None, None),
    }
)


@dataclass(frozen=True)
class WakeOn:
    """The watch events that end a step's wait: those on `keys` (None: any binding the wave
    watches) for which `when()` holds (default: always); `seen` sees every event first (a
    step's incremental tracker). With `clusters`, a Cluster status change ends it instead: the
    run's Cluster cache leaving the version `clusters_seen` the step read (None: the run has no
    such cache, and the runner only polls)."""

    keys: frozenset[str] | None = None
    seen: Callable[[str, Obj | None], None] | None = None
    when: Callable[[], bool] | None = None
    clusters: bool = False
    clusters_seen: str | None = None

    def wakes(self, key: str, obj: Obj | None) -> bool:
        if self.seen is not None:
            self.seen(key, obj)
        if self.keys is not None and key not in self.keys:
            return False
        return self.when is None or self.when()


@dataclass(frozen=True)
class Done:
    """The step finished: the runner journals the next index."""


@dataclass(frozen=True)
class Pending:
    """Not yet: ask again after a watch event `wake_on` names, or at `deadline` (the step's
    own, on the clock's monotonic scale)."""

    wake_on: WakeOn
    deadline: float


@dataclass(frozen=True)
class Failed:
    """The wave fails with this reason."""

    failure: FailureReason
    reason: str

    @classmethod
    def of(cls, outcome: WaveOutcome) -> Failed:
        assert outcome.failure is not None
        return cls(outcome.failure, outcome.reason)


Answer = Done | Pending | Failed
DONE: Final = Done()


def answer(outcome: WaveOutcome | None) -> Done | Failed:
    """A primitive's outcome as a step's answer (None or ok: done)."""
    if outcome is None or outcome.ok:
        return DONE
    return Failed.of(outcome)


def undo_order(kinds: Sequence[StepKind]) -> tuple[StepKind, ...]:
    """The undo steps of a step list, each once, in reverse order of the steps that need them
    (what was taken last is given back first): the one cleanup order, read off the table."""
    out: list[StepKind] = []
    for kind in reversed(kinds):
        undo = STEPS[kind].undo
        if undo is not None and undo not in out:
            out.append(undo)
    return tuple(out)
