"""Between two waves of a run: the rollout's pause, shaped by the operator's controls of that
run (`tidal pause|resume|abort|promote NAME`, kept in the schedule's state object): a pause
holds the run until resumed, promote ends this and every later pause at once, abort stops the
run (the engine then rolls back or halts as onFailure says)."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from tidal.daemon.state import StateStore
from tidal.domain.clock import Clock
from tidal.domain.run_control import RunCommand, RunControl, Verdict
from tidal.engine.journal import Interrupted
from tidal.karmada.errors import KarmadaError

log = structlog.get_logger("tidal.daemon.interlude")

POLL_SECONDS = 1.0  # how often the controls are read while a run waits between waves
ABORTED = "aborted by the operator (tidal abort) before wave {wave}"

OnCommand = Callable[[str, str, str], None]  # (schedule, command, source) -> metric
EVENTS = {
    RunCommand.PAUSE: "run_paused",
    RunCommand.RESUME: "run_resumed",
    RunCommand.ABORT: "run_aborted",
    RunCommand.PROMOTE: "run_promoted",
}


class OperatorInterlude:
    """The engine's Interlude for one schedule's runs (tidal.engine.run)."""

    def __init__(
        self,
        store: StateStore,
        schedule: str,
        clock: Clock,
        on_command: OnCommand | None = None,
        poll: float = POLL_SECONDS,
    ) -> None:
        self.store, self.schedule, self.clock = store, schedule, clock
        self.on_command = on_command
        self.poll = poll
        self._seen: RunControl | None = None

    def __call__(self, run_id: str, wave: int, pause: float) -> str | None:
        deadline = self.clock.monotonic() + pause
        while True:
            if not self.store.may_save():  # stopping, or the lease/lock lost
                raise Interrupted(
                    f"run {run_id} of {self.schedule} waited between waves {wave} and "
                    f"{wave + 1}: this process may no longer act; the run stays journalled "
                    "for the next pass"
                )
            verdict = self._verdict(run_id, wave)
            if verdict is Verdict.STOP:
                return ABORTED.format(wave=wave + 1)
            if verdict is Verdict.GO:
                return None
            left = deadline - self.clock.monotonic()
            if verdict is Verdict.WAIT and left <= 0:
                return None
            self.clock.sleep(self.poll if verdict is Verdict.HOLD else min(self.poll, left))

    def _verdict(self, run_id: str, wave: int) -> Verdict:
        try:
            control = self.store.read(self.schedule).controls.run
        except KarmadaError as exc:  # unreadable for now: the rollout's own pause goes on
            log.warning("run_controls_unreadable", schedule=self.schedule, error=str(exc))
            return Verdict.WAIT
        if control is None or control.run_id != run_id:
            return Verdict.WAIT
        if control != self._seen and control.last is not None:
            self._seen = control
            log.info(
                EVENTS[control.last],
                schedule=self.schedule,
                run_id=run_id,
                after_wave=wave,
                command=control.last.value,
                source=control.source or "cli",
            )
            if self.on_command is not None:
                self.on_command(self.schedule, control.last.value, control.source or "cli")
        return control.verdict()
