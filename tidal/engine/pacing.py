"""Pacing of a surging run: what lets its waves follow each other closer than one whole surge
start-up and one whole pause apiece, without holding more than the plan announced.

- **Raised ahead** (`raise_ahead`): once a wave's own surge is written, the following waves'
  surges go up while it settles, in order, each only if the plan announced it up by then
  (tidal.domain.surge.raise_ahead: it fits beside the surges already up, and needs no bridge),
  the run's budget grants its room at once (a wave raised ahead never waits for room: refused,
  it asks no more and stays for its own turn) and nothing has failed. Its SurgeRecord is
  journalled as at its own turn (room reserved and overrides named in one save before the
  first write, then up), so its own Surge step later finds the overrides up and their
  replicas ready, a crash resumes it like any surged wave, and every way of stopping gives
  its room and overrides back (tidal.engine.cleanup reads every wave's record). A resumed
  run raises nothing ahead: the plan it rebuilds is not the one announced.
- **The pause** (`pause_after`): with `strategy: surge`, the pause halves after each wave
  that succeeded, down to an eighth of `pauseBetweenWaves` (half of it after wave 1, a quarter
  after wave 2, an eighth from wave 3 on); a resumed run counts its clean waves afresh. Every
  pause counts from the moment the wave converged (the step table's `settles`), not from the
  wave's last step: a surge's release (Karmada rendering the new split, the overrides
  deleted) happens inside the pause instead of before it. A
  surging wave is gated on its surged replicas being ready before it moves, so the pause is
  no longer the only time a failure has to show; the operator's pause and abort between
  waves (tidal.daemon.interlude) work as before, handed the shortened pause.
"""

from __future__ import annotations

from typing import Final

from tidal.domain.plan import Amounts
from tidal.domain.surge import add, missing
from tidal.engine import room, surging
from tidal.engine.events import SurgeRaisedAhead
from tidal.engine.inflight import SwitchContext, WaveInFlight
from tidal.engine.journal import SurgeRecord, WaveState
from tidal.engine.states import Direction, Strategy, SurgeStep, WaveResult

# the shortest pause, as a fraction of pauseBetweenWaves (three halvings)
PAUSE_FLOOR: Final = 0.125


def pause_after(
    ctx: SwitchContext, pause: float, clean: int, settled_at: float | None = None
) -> float:
    """What is left to wait after the `clean`-th wave in a row that succeeded in this process
    (1: the first): the whole `pause` but with `strategy: surge`, where it halves after each
    clean wave, down to PAUSE_FLOOR of it; counted from `settled_at` (when the wave converged,
    on the clock's monotonic scale), so the time its release took is part of it."""
    if ctx.state.strategy is Strategy.SURGE and clean >= 1:
        pause = max(pause * 0.5**clean, pause * PAUSE_FLOOR)
    if settled_at is not None:
        pause -= ctx.clock.monotonic() - settled_at
    return max(pause, 0.0)


def raise_ahead(run: WaveInFlight) -> None:
    """Raise the surges of the waves after `run`'s that the plan announced up by now (see
    the module's doc), all in one write of the run's overrides; a forward wave of a new run
    only."""
    ctx = run.ctx
    last = ctx.raised_to.get(run.wave.index, 0)
    if run.direction is Direction.BACK or last <= run.wave.index or _failed(ctx):
        return
    held = _held(ctx)
    granted: list[tuple[WaveState, SurgeRecord]] = []
    for wave in ctx.state.waves:
        if run.wave.index < wave.index <= last:
            found = _grant(run, wave, held)
            if found is None:
                break
            held, record = found
            if record is not None:
                granted.append((wave, record))
    if not granted:
        return
    surging.raise_all(ctx, [record for _wave, record in granted])
    for wave, record in granted:
        ctx.emitter.emit(
            SurgeRaisedAhead(
                **ctx.event_base(wave.index),
                during=run.wave.index,
                workloads=tuple(sorted(record.targets)),
                overrides=len(record.overrides),
            )
        )


def _failed(ctx: SwitchContext) -> bool:
    return ctx.state.result is not None or any(
        w.result not in (None, WaveResult.SUCCEEDED) for w in ctx.state.waves
    )


def _held(ctx: SwitchContext) -> Amounts:
    """The room every surge and bridge of this run still holds (a budget of a run alone does
    not count them: what the clusters report free may not show them yet)."""
    out: Amounts = {}
    for wave in ctx.state.waves:
        for need in room.held_by(wave.forward):
            out = add(out, need)
    return out


def _grant(
    run: WaveInFlight, wave: WaveState, held: Amounts
) -> tuple[Amounts, SurgeRecord | None] | None:
    """The room held once `wave`'s surge is granted ahead, and its record to raise (None:
    nothing to raise, up already or nothing to surge); None if it may not be raised ahead:
    it stays for its own turn, and so do the waves after it."""
    ctx = run.ctx
    if wave.started_at is not None or wave.result is not None:
        return None
    names = {str(key) for key in wave.workloads}
    if names & set(ctx.bridges) or (wave.forward.bridge is not None):
        return None
    record = wave.forward.surge
    if record is not None and record.step is not SurgeStep.NONE:
        return held, None  # up already (raised by an earlier wave)
    ahead = WaveInFlight(
        ctx,
        wave,
        [w for w in ctx.everyone if w.name in names],
        run.placements,
        run.watch,
        Direction.FORWARD,
    )
    record = surging.record_for(ahead, journal=False)  # journalled once its overrides are named
    if record is None:
        return held, None  # nothing to surge
    if record.need and not _granted(ctx, wave, record.need, held):
        return None
    return add(held, record.need), record


def _granted(ctx: SwitchContext, wave: WaveState, need: Amounts, held: Amounts) -> bool:
    """The budget grants `need` at once, beside what the run holds; a refusal leaves no
    waiter behind (a shared budget queues whoever asks)."""
    free, versions = room.free_now(ctx, need)
    left = add(free, held, -1.0)
    if missing(need, left):
        return False
    name = room.holder(ctx, wave, wave.forward)
    if ctx.budget.reserve(name, need, left, versions):
        return True
    ctx.budget.release(name)
    return False
