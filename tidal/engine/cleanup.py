"""What a run that stops (halt, API error, rollback, finishing) gives back, in the order the
step table defines once (tidal.engine.steps.undo_order): each kind of step that holds or
leaves something names its undo, and the undo of the step taken last runs first (a surge is
taken off before the bridge it stood on)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Final

from tidal.engine import bridging, surging
from tidal.engine.inflight import SwitchContext
from tidal.engine.steps import StepKind, undo_order
from tidal.engine.strategies import make_before_break
from tidal.karmada.errors import KarmadaError

# every kind a wave of any strategy takes, in the order it takes them
ALL_STEPS: Final = make_before_break((StepKind.TRIGGER_TOUCH, StepKind.TRIGGER_REBALANCE))


def clean_up(
    ctx: SwitchContext,
    *,
    keep_if_breaking: bool,
    forward_only: bool = False,
    best_effort: bool = False,
) -> None:
    """Undo what the run's waves still hold, every wave at once, in the table's order.
    `keep_if_breaking` (a halt): overrides whose removal would break a floor stay, said so;
    `forward_only`: the rollback's own holds stay (a resumed rollback goes on with them);
    `best_effort`: an API error of one undo does not stop the next (the run ends anyway)."""
    undo: dict[StepKind, Callable[[], None]] = {
        StepKind.RELEASE_SURGE: lambda: surging.clean_up(
            ctx, keep_if_breaking=keep_if_breaking, forward_only=forward_only
        ),
        StepKind.RELEASE_BRIDGE: lambda: bridging.clean_up(ctx, forward_only=forward_only),
    }
    for kind in undo_order(ALL_STEPS):
        if best_effort:
            with contextlib.suppress(KarmadaError):  # the next run finds what stays
                undo[kind]()
        else:
            undo[kind]()
