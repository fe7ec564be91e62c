"""One switch, start to finish: `run_switch` prepares a Run (tidal.engine.run) and executes
it, returning the run record; an unsafe plan raises PlanRefused (nothing written)."""

from __future__ import annotations

import contextlib
from typing import Any

from tidal.domain.clock import Clock
from tidal.domain.team_capacity import TeamEstimate
from tidal.engine.budget import SurgeBudget
from tidal.engine.events import Emitter, OnEvent
from tidal.engine.journal import Journal, RunState
from tidal.engine.record import RunRecord
from tidal.engine.refusal import PlanRefused, plan_problems
from tidal.engine.run import Interlude, NoOp, Refusal, carried_over, new_run_id, prepare
from tidal.engine.snapshot import ScheduleSource
from tidal.karmada.client import KarmadaClient
from tidal.karmada.informer import SharedReads

__all__ = ["PlanRefused", "carried_over", "new_run_id", "plan_problems", "run_switch"]


def run_switch(
    client: KarmadaClient,
    loaded: ScheduleSource,
    window_name: str,
    *,
    clock: Clock,
    journal: Journal,
    on_event: OnEvent | None = None,
    run_id: str | None = None,
    resume: RunState | None = None,
    logger: Any = None,
    budget: SurgeBudget | None = None,
    reads: SharedReads | None = None,
    policy_settle: float = 0.0,
    interlude: Interlude | None = None,
    team: TeamEstimate | None = None,
) -> RunRecord:
    """Carry out one window now (or resume a half-finished run of it); surges reserve their
    capacity from `budget` (the daemon's shared one; alone, what the clusters have free), and
    waves read bindings and clusters from `reads` (the daemon's shared informers; alone, their
    own lists and watches); a policy changed less than `policy_settle` seconds ago is patched
    only once it is that old (tidal.engine.detector_settle); `interlude` runs between two
    waves instead of the rollout's pause (an operator's pause, promote or abort)."""
    emitter = Emitter(on_event, logger)
    if reads is None and client.background_watch:
        # alone: informers of the run's own, so the run lists and watches each kind once,
        # every wave reading the same cache (a wave of its own would list and watch again)
        reads = SharedReads(client, private=True)
    with reads.in_use() if reads is not None else contextlib.nullcontext():
        prepared = prepare(
            client,
            loaded,
            window_name,
            clock=clock,
            journal=journal,
            emitter=emitter,
            run_id=run_id,
            resume=resume,
            budget=budget,
            reads=reads,
            policy_settle=policy_settle,
            interlude=interlude,
            team=team,
        )
        if isinstance(prepared, Refusal):
            raise prepared.error
        if isinstance(prepared, NoOp):
            return prepared.report(emitter, clock)
        return prepared.execute()
