"""The run's state machines (phases, surge and bridge steps) and the engine's own vocabulary.

The outcome vocabulary shared with metrics, status and the CLI (results, failure reasons,
gates, triggers, strategies) lives in tidal.domain.outcomes and is re-exported here. Every
value a run journals, resumes on, reports or alerts on is a StrEnum; its value is the string
stored in the journal and printed by `tidal switch -o json` (so old journals read back
unchanged). A run moves between phases only along `TRANSITIONS`; any other move raises
IllegalTransition.

    planned -> policies -> waves -> finishing -> done
                  |          |
                  |          +--> rollback -> done     (a failed wave, onFailure: rollback)
                  +----------+--> done                 (halt, API error, drift)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final, TypeVar

from tidal.domain.outcomes import (
    AUTO,
    NOT_STARTED,
    FailureReason,
    Gate,
    RunResult,
    Strategy,
    Trigger,
    WaveResult,
)

__all__ = [
    "AUTO",
    "BRIDGE_TRANSITIONS",
    "DIRECTIONS",
    "NOT_STARTED",
    "SURGE_TRANSITIONS",
    "TRANSITIONS",
    "BridgeStep",
    "ChangeKind",
    "Direction",
    "DirectionFacts",
    "FailureReason",
    "Gate",
    "IllegalBridgeStep",
    "IllegalSurgeStep",
    "IllegalTransition",
    "LazyMark",
    "Phase",
    "PolicyAction",
    "PolicyStage",
    "RunResult",
    "Strategy",
    "SurgeStep",
    "Trigger",
    "WaveResult",
    "check_bridge_step",
    "check_surge_step",
    "check_transition",
]

_S = TypeVar("_S", bound=StrEnum)


class Phase(StrEnum):
    """Where a run is; journalled before every side effect, resumed from."""

    PLANNED = "planned"
    POLICIES = "policies"
    WAVES = "waves"
    FINISHING = "finishing"
    ROLLBACK = "rollback"
    DONE = "done"


# The legal moves; staying in a phase (a resume re-enters it) is always legal.
TRANSITIONS: Final[dict[Phase, frozenset[Phase]]] = {
    Phase.PLANNED: frozenset({Phase.POLICIES, Phase.DONE}),
    Phase.POLICIES: frozenset({Phase.WAVES, Phase.DONE}),
    Phase.WAVES: frozenset({Phase.FINISHING, Phase.ROLLBACK, Phase.DONE}),
    Phase.FINISHING: frozenset({Phase.DONE}),
    Phase.ROLLBACK: frozenset({Phase.DONE}),
    Phase.DONE: frozenset(),
}


def _legal(table: Mapping[_S, frozenset[_S]], current: _S, wanted: _S) -> bool:
    """Staying is always legal; a move must be one `table` allows (every state machine here)."""
    return wanted == current or wanted in table[current]


class IllegalTransition(RuntimeError):
    """A move the state machine does not allow: a bug, never an input error."""

    def __init__(self, current: Phase, wanted: Phase) -> None:
        super().__init__(f"illegal run transition {current} -> {wanted}")
        self.current = current
        self.wanted = wanted


def check_transition(current: Phase, wanted: Phase) -> Phase:
    """`wanted` when the move is legal; IllegalTransition otherwise."""
    if not _legal(TRANSITIONS, current, wanted):
        raise IllegalTransition(current, wanted)
    return wanted


class Direction(StrEnum):
    """Which way a wave moves its workloads. What differs between the two ways is data, one
    row of `DIRECTIONS` each (read through the properties below); what a wave did each way is
    its leg (tidal.engine.journal.WaveLeg)."""

    FORWARD = "forward"
    BACK = "back"

    @property
    def rollback(self) -> bool:
        """The way back: said in events (`rollback`) and in the overrides' owner labels."""
        return DIRECTIONS[self].rollback

    @property
    def suffix(self) -> str:
        """Of the names this way gives (the room's holder, overrides, rebalancers)."""
        return DIRECTIONS[self].suffix

    @property
    def planned(self) -> bool:
        """The plan's way: its surges, bridges, selectors and the waves moved before; the way
        back goes to the split from before the run, from what the forward leg did."""
        return DIRECTIONS[self].planned


@dataclass(frozen=True)
class DirectionFacts:
    """What differs between the two ways a wave moves (one row of `DIRECTIONS`)."""

    rollback: bool
    suffix: str
    planned: bool


DIRECTIONS: Final[Mapping[Direction, DirectionFacts]] = MappingProxyType(
    {
        Direction.FORWARD: DirectionFacts(rollback=False, suffix="", planned=True),
        Direction.BACK: DirectionFacts(rollback=True, suffix="-back", planned=False),
    }
)


class PolicyAction(StrEnum):
    PATCH = "patch"
    SWAP = "swap"
    RESTORE = "restore"
    LAZY_RESTORED = "lazy_restored"
    UNCHANGED = "unchanged"
    COMPLETED = "completed"


class ChangeKind(StrEnum):
    """How a window changes a policy."""

    PATCH = "patch"
    SWAP = "swap"


class PolicyStage(StrEnum):
    """Where a policy record is: not (yet) written, written by the run, put back."""

    PENDING = "pending"
    APPLIED = "applied"
    RESTORED = "restored"


class LazyMark(StrEnum):
    """The temporary `activationPreference: Lazy` tidal manages around a change."""

    NONE = "none"  # tidal did not add one
    ADDED = "added"  # added; to be lifted after the last wave
    KEPT = "kept"  # added and left on purpose (it claims excluded templates)
    LIFTED = "lifted"  # added, then lifted again

    @property
    def added(self) -> bool:
        return self is not LazyMark.NONE


class SurgeStep(StrEnum):
    """Where a make-before-break wave is (journalled before each side effect of the step)."""

    NONE = "none"  # not surging (yet)
    RESERVED = "reserved"  # capacity held; its overrides are being created
    SURGED = "surged"  # overrides written; waiting for the surged replicas to be ready
    MOVING = "moving"  # surged replicas ready; the trigger is being written and scheduled
    # moved, and its overrides set what Karmada now assigns: they stay (changing nothing) in
    # the run's groups until the run ends, its capacity given back
    PARKED = "parked"
    RELEASING = "releasing"  # moved; overrides being deleted once the split is the new one
    RELEASED = "released"  # overrides gone, capacity given back
    KEPT = "kept"  # halted with overrides left on purpose: removing them would break a floor


SURGE_TRANSITIONS: Final[dict[SurgeStep, frozenset[SurgeStep]]] = {
    SurgeStep.NONE: frozenset({SurgeStep.RESERVED}),
    SurgeStep.RESERVED: frozenset({SurgeStep.SURGED, SurgeStep.RELEASING, SurgeStep.KEPT}),
    SurgeStep.SURGED: frozenset({SurgeStep.MOVING, SurgeStep.RELEASING, SurgeStep.KEPT}),
    SurgeStep.MOVING: frozenset({SurgeStep.PARKED, SurgeStep.RELEASING, SurgeStep.KEPT}),
    SurgeStep.PARKED: frozenset({SurgeStep.RELEASING, SurgeStep.KEPT}),
    SurgeStep.RELEASING: frozenset({SurgeStep.RELEASED, SurgeStep.KEPT}),
    SurgeStep.RELEASED: frozenset(),
    SurgeStep.KEPT: frozenset({SurgeStep.RELEASING}),
}


class IllegalSurgeStep(RuntimeError):
    """A move between surge steps that SURGE_TRANSITIONS does not allow: a bug."""

    def __init__(self, current: SurgeStep, wanted: SurgeStep) -> None:
        super().__init__(f"illegal surge step {current} -> {wanted}")


def check_surge_step(current: SurgeStep, wanted: SurgeStep) -> SurgeStep:
    """`wanted` when the move is legal (staying is); IllegalSurgeStep otherwise."""
    if not _legal(SURGE_TRANSITIONS, current, wanted):
        raise IllegalSurgeStep(current, wanted)
    return wanted


class BridgeStep(StrEnum):
    """Where a wave's bridge is: workloads whose destination has no member Work (Karmada
    builds none for a cluster assigned 0) get one by a temporary Duplicated placement on their
    Lazy policy before the move. Journalled before each side effect."""

    NONE = "none"  # not bridging (yet)
    RESERVED = "reserved"  # capacity held; the bridge placement is about to be written
    PLACING = "placing"  # the policy may carry the bridge placement (being written)
    TOUCHING = "touching"  # the bridge placement is written; bridged templates being touched
    # and their replicas awaited in every destination
    RESTORING = "restoring"  # bridged replicas ready; the window's placement being put back
    RESTORED = "restored"  # the policy has the window's placement again: the move may go
    RELEASED = "released"  # the wave converged (or stopped): capacity given back

    @property
    def placed(self) -> bool:
        """The policy may carry the bridge placement now."""
        return self in (BridgeStep.PLACING, BridgeStep.TOUCHING, BridgeStep.RESTORING)


BRIDGE_TRANSITIONS: Final[dict[BridgeStep, frozenset[BridgeStep]]] = {
    BridgeStep.NONE: frozenset({BridgeStep.RESERVED}),
    BridgeStep.RESERVED: frozenset({BridgeStep.PLACING, BridgeStep.RELEASED}),
    BridgeStep.PLACING: frozenset({BridgeStep.TOUCHING, BridgeStep.RELEASED}),
    BridgeStep.TOUCHING: frozenset({BridgeStep.RESTORING, BridgeStep.RELEASED}),
    BridgeStep.RESTORING: frozenset({BridgeStep.RESTORED, BridgeStep.RELEASED}),
    BridgeStep.RESTORED: frozenset({BridgeStep.RELEASED}),
    BridgeStep.RELEASED: frozenset(),
}


class IllegalBridgeStep(RuntimeError):
    """A move between bridge steps that BRIDGE_TRANSITIONS does not allow: a bug."""

    def __init__(self, current: BridgeStep, wanted: BridgeStep) -> None:
        super().__init__(f"illegal bridge step {current} -> {wanted}")


def check_bridge_step(current: BridgeStep, wanted: BridgeStep) -> BridgeStep:
    """`wanted` when the move is legal (staying is); IllegalBridgeStep otherwise."""
    if not _legal(BRIDGE_TRANSITIONS, current, wanted):
        raise IllegalBridgeStep(current, wanted)
    return wanted
