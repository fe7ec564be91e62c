"""What a run that stops gives back, decided in one place: `STOPS` says, for each way a run
stops (halt, API error, rollback, finishing), what goes; the order is the step table's
(tidal.engine.steps.undo_order): each kind of step that holds or leaves something names its
undo, and the undo of the step taken last runs first (a surge is taken off before the bridge it
stood on). The run's WorkloadRebalancers, which no wave holds (they trigger, then only wait for
their TTL), go before any of them: nothing they triggered is waited for any more."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from tidal.engine import bridging, surging
from tidal.engine.events import RunWarning
from tidal.engine.inflight import SwitchContext
from tidal.engine.patience import patiently
from tidal.engine.steps import StepKind, undo_order
from tidal.engine.strategies import make_before_break
from tidal.engine.triggers import rebalancer_selector
from tidal.karmada.client import WORKLOAD_REBALANCERS
from tidal.karmada.errors import Forbidden, KarmadaError
from tidal.karmada.rebalancers import delete_labelled, delete_rebalancer

# every kind a wave of any strategy takes, in the order it takes them
ALL_STEPS: Final = make_before_break((StepKind.TRIGGER_TOUCH, StepKind.TRIGGER_REBALANCE))


class Stop(StrEnum):
    """How a run stops (or, for ROLLBACK_STARTS, makes way to move back)."""

    HALT = "halt"  # a wave failed and onFailure (or an abort) says halt
    API_ERROR = "api_error"  # the run ends on an API error
    ROLLBACK_STARTS = "rollback_starts"  # before moving back: the forward surges and bridges
    ROLLED_BACK = "rolled_back"
    ROLLBACK_FAILED = "rollback_failed"
    FINISHED = "finished"  # every wave released its own already: what is left, if anything


@dataclass(frozen=True)
class StopSpec:
    """One row of `STOPS`."""

    rebalancers: bool  # the run's WorkloadRebalancers are deleted (first)
    keep_if_breaking: bool  # overrides whose removal would break a floor stay, said so
    forward_only: bool = False  # the rollback's own holds stay (a resumed rollback needs them)
    best_effort: bool = False  # an API error of one undo does not stop the next


STOPS: Final = MappingProxyType(
    {
        Stop.HALT: StopSpec(rebalancers=True, keep_if_breaking=True),
        # the next run finds what stays (a resume puts bridges back from the journal)
        Stop.API_ERROR: StopSpec(rebalancers=False, keep_if_breaking=True, best_effort=True),
        # a bridge placement left on a policy would read as a hand edit to the rollback
        Stop.ROLLBACK_STARTS: StopSpec(
            rebalancers=False, keep_if_breaking=False, forward_only=True
        ),
        Stop.ROLLED_BACK: StopSpec(rebalancers=True, keep_if_breaking=False),
        Stop.ROLLBACK_FAILED: StopSpec(rebalancers=True, keep_if_breaking=True),
        Stop.FINISHED: StopSpec(rebalancers=True, keep_if_breaking=False),
    }
)


def clean_up(ctx: SwitchContext, stop: Stop) -> None:
    """Give back what the run's waves still hold, every wave at once: the rebalancers first
    when the stop's row says so, then the undo steps in the table's order."""
    spec = STOPS[stop]
    if spec.rebalancers:
        remove_rebalancers(ctx)
    undo: dict[StepKind, Callable[[], None]] = {
        StepKind.RELEASE_SURGE: lambda: surging.clean_up(
            ctx, keep_if_breaking=spec.keep_if_breaking, forward_only=spec.forward_only
        ),
        StepKind.RELEASE_BRIDGE: lambda: bridging.clean_up(ctx, forward_only=spec.forward_only),
    }
    for kind in undo_order(ALL_STEPS):
        if spec.best_effort:
            with contextlib.suppress(KarmadaError):  # the next run finds what stays
                undo[kind]()
        else:
            undo[kind]()


def remove_rebalancers(ctx: SwitchContext) -> None:
    """The run's WorkloadRebalancers are temporary: delete them (their TTL is the fallback),
    all in one request by their owner labels, or one by one where the RBAC refuses that."""
    if not any(wave.rebalancers for wave in ctx.state.waves):
        return
    plural = WORKLOAD_REBALANCERS.plural
    if plural not in ctx.collection_refused:
        try:
            patiently(
                ctx.client,
                ctx.clock,
                ctx.wave_timeout,
                functools.partial(
                    delete_labelled, ctx.client, rebalancer_selector(ctx.schedule, ctx.run_id)
                ),
            )
            return
        except Forbidden:
            ctx.collection_refused.add(plural)
        except KarmadaError:
            pass  # one by one, each with its own retries and warning
    for wave in ctx.state.waves:
        for name in wave.rebalancers:
            try:
                patiently(
                    ctx.client,
                    ctx.clock,
                    ctx.wave_timeout,
                    functools.partial(delete_rebalancer, ctx.client, name),
                )
            except KarmadaError as exc:  # best effort: the TTL removes it anyway
                ctx.emitter.emit(
                    RunWarning(
                        **ctx.event_base(wave.index),
                        code="cleanup",
                        message=f"WorkloadRebalancer {name}: {exc}",
                    )
                )
