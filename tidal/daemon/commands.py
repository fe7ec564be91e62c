"""The operator's commands to a schedule's switch (`pause`, `resume`, `abort`, `promote`,
`retry`), as one change of the schedule's persisted controls each: the one code path the CLI
(writing the state object itself) and the daemon's command API (tidal.daemon.command_api) share,
so both give the same answer in the same words.

A run in flight reads its controls before each wave (tidal.daemon.interlude), whichever process
runs it (the daemon or `tidal switch`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from tidal.daemon.state import StateStore
from tidal.domain.run_control import OUTCOMES, RunCommand, Source, Verb, command_for
from tidal.domain.windows import Controls
from tidal.engine.journal import RunState
from tidal.engine.states import RunResult

ControlsChange = Callable[[Controls], Controls]


class CommandRefused(ValueError):
    """The command cannot apply now (no switch in flight, nothing failed to retry); the
    message is one line for the operator."""


def no_schedule(name: str, directory: object, known: list[str]) -> str:
    """The one-line answer to a command for a schedule that is not loaded."""
    return f"no schedule {name!r} in {directory} (known: {', '.join(sorted(known)) or 'none'})"


@dataclass(frozen=True)
class Given:
    """A command written into the controls: what the operator is told."""

    schedule: str
    verb: Verb
    run_id: str | None
    message: str


def change_for(
    name: str, verb: Verb, run: RunState | None, now: datetime, source: Source
) -> ControlsChange:
    """The change of NAME's controls that `verb` makes (not retry: see failed_run).
    CommandRefused when pause, abort or promote find no switch in flight."""
    if verb is Verb.RETRY:
        raise ValueError("retry changes no controls")
    if verb is Verb.RESUME:

        def resume(c: Controls) -> Controls:
            control = c.run
            if control is not None and control.paused:
                control = control.apply(RunCommand.RESUME, now, source.value)
            return replace(c, suspended=False, run=control)

        return resume
    if run is None or run.finished:
        raise CommandRefused(f"no switch of {name} is running; `tidal status` shows its last run")
    command, run_id = RunCommand(verb.value), run.run_id

    def give(c: Controls) -> Controls:
        return replace(c, run=command_for(c.run, run_id, command, now, source.value))

    return give


def give(store: StateStore, name: str, verb: Verb, now: datetime, source: Source) -> Given:
    """Write `verb` (pause, resume, abort, promote) into NAME's persisted controls; what the
    operator is told. CommandRefused as change_for; KarmadaError when the state is unreachable."""
    run = store.load(name) if verb is not Verb.RESUME else None
    store.update_controls(name, change_for(name, verb, run, now, source))
    return Given(name, verb, run.run_id if run is not None else None, f"{name}: {OUTCOMES[verb]}")


def failed_run(store: StateStore, name: str) -> RunState:
    """NAME's last run when it failed (the one `retry` runs again); CommandRefused otherwise."""
    run = store.load(name)
    if run is None or not run.finished or run.result is not RunResult.FAILED:
        state = (
            "running"
            if run is not None and not run.finished
            else str(run.result)
            if run is not None
            else "none"
        )
        raise CommandRefused(
            f"{name}: no failed switch to retry (last run: {state}); `tidal status` shows it"
        )
    return run


def ask_retry(store: StateStore, name: str) -> Given:
    """`retry` through the daemon: mark NAME's failed run to be run again by the daemon's next
    pass (its window, from the wave that failed); CommandRefused when nothing failed."""
    run = failed_run(store, name)
    store.update_controls(name, lambda c: replace(c, retry_run=run.run_id))
    return Given(
        name,
        Verb.RETRY,
        run.run_id,
        f"{name}: the daemon runs window {run.window} again from its failed wave "
        f"(failed run {run.run_id}); `tidal status` shows it",
    )
