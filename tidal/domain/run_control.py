"""An operator's hand on a switch in flight (`tidal pause|resume|abort|promote NAME`), kept
with the schedule's controls and bound to one run: pause holds the run before its next wave,
resume lets it go on, promote lets it go on and skips its remaining pauses between waves,
abort stops it before its next wave (rolled back or halted as its onFailure says)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum


class RunCommand(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    ABORT = "abort"
    PROMOTE = "promote"


class Verdict(StrEnum):
    """What a run does between two waves, given its control."""

    WAIT = "wait"  # the pause between waves, as the rollout says
    HOLD = "hold"  # paused: wait until resumed, promoted or aborted
    GO = "go"  # promoted: the next wave now
    STOP = "stop"  # aborted


@dataclass(frozen=True)
class RunControl:
    """The commands given to run `run_id` (the last one says what holds)."""

    run_id: str
    paused: bool = False
    promoted: bool = False
    aborted: bool = False
    last: RunCommand | None = None
    at: datetime | None = None
    source: str | None = None  # how the last command came: "api" (the daemon's) or "cli"

    def apply(self, command: RunCommand, at: datetime, source: str | None = None) -> RunControl:
        if command is RunCommand.PAUSE:
            changed = replace(self, paused=True)
        elif command is RunCommand.RESUME:
            changed = replace(self, paused=False)
        elif command is RunCommand.PROMOTE:
            changed = replace(self, paused=False, promoted=True)
        else:
            changed = replace(self, aborted=True)
        return replace(changed, last=command, at=at, source=source)

    def verdict(self) -> Verdict:
        if self.aborted:
            return Verdict.STOP
        if self.paused:
            return Verdict.HOLD
        return Verdict.GO if self.promoted else Verdict.WAIT


def command_for(
    control: RunControl | None,
    run_id: str,
    command: RunCommand,
    at: datetime,
    source: str | None = None,
) -> RunControl:
    """`control` after `command` to run `run_id` (a control of another run is dropped)."""
    current = control if control is not None and control.run_id == run_id else RunControl(run_id)
    return current.apply(command, at, source)


class Verb(StrEnum):
    """What an operator may say to a schedule's switch (the API's path segment, the CLI's
    command name)."""

    PAUSE = "pause"
    RESUME = "resume"
    ABORT = "abort"
    PROMOTE = "promote"
    RETRY = "retry"


class Source(StrEnum):
    """How a command reached the controls (the `source` label of tidal_run_commands_total)."""

    API = "api"  # the daemon's command API
    CLI = "cli"  # `tidal pause ...` writing the state object itself


OUTCOMES = {
    Verb.PAUSE: "the switch in flight holds before its next wave (`tidal resume` lets it go on)",
    Verb.RESUME: "resumed",
    Verb.ABORT: "the switch in flight stops before its next wave, rolled back or halted as its "
    "onFailure says",
    Verb.PROMOTE: "the switch in flight goes on without its remaining pauses between waves",
}
