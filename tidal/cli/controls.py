"""Operator controls persisted in the state (hold across restarts and replicas):
`tidal suspend NAME`, `tidal resume NAME`, `tidal skip NAME`, `tidal hold NAME --window W
--until TIME`; and of the switch in flight: `tidal pause|abort|promote NAME` (`resume` too),
written to the state object or, with --daemon URL, sent to a daemon's command API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import click

from tidal.cli.daemon_api import daemon_options, routed
from tidal.cli.daemon_api import give as send_command
from tidal.cli.exitcodes import INVALID_INPUT, OK
from tidal.cli.options import context_option, kubeconfig_option, schedules_option
from tidal.cli.status import connect
from tidal.domain.run_control import Verb


def _common(f: Callable[..., Any]) -> Callable[..., Any]:
    f = context_option(f)
    f = kubeconfig_option(f)
    f = schedules_option(f)
    return click.argument("name")(f)


def _apply(
    name: str,
    schedules: Path | None,
    kubeconfig: Path | None,
    context: str | None,
    change: Callable[..., Any],
    done: str | Callable[[], str],
    *,
    with_run: bool = False,
) -> None:
    """Write `change(controls, schedule, now[, run in the journal])` into NAME's controls."""
    from tidal.daemon.state import StateStore
    from tidal.domain.clock import SystemClock
    from tidal.karmada.errors import KarmadaError

    settings, client, loaded = connect(schedules, kubeconfig, context)
    item = next((s for s in loaded if s.schedule.name == name), None)
    if item is None:
        known = ", ".join(sorted(s.schedule.name for s in loaded)) or "none"
        click.echo(
            f"error: no schedule {name!r} in {settings.schedules} (known: {known})", err=True
        )
        raise SystemExit(INVALID_INPUT)
    now = SystemClock().now()
    store = StateStore(client, settings.state_namespace)
    try:
        run = (store.load(name),) if with_run else ()
        store.update_controls(name, lambda c: change(c, item.schedule, now, *run))
    except KarmadaError as exc:
        click.echo(f"error: cannot write the controls of {name}: {exc}", err=True)
        raise SystemExit(INVALID_INPUT) from None
    except ValueError as exc:  # CommandRefused too
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(INVALID_INPUT) from None
    click.echo(done if isinstance(done, str) else done())
    raise SystemExit(OK)


@click.command("suspend")
@_common
def suspend_command(
    name: str, schedules: Path | None, kubeconfig: Path | None, context: str | None
) -> None:
    """Stop running NAME's windows until `tidal resume NAME` (persisted)."""
    _apply(
        name,
        schedules,
        kubeconfig,
        context,
        lambda c, schedule, now: replace(c, suspended=True),
        f"{name}: suspended",
    )


def _run_command(verb: Verb, help_text: str) -> click.Command:
    """`tidal pause|resume|abort|promote NAME`: a command to the switch of NAME in flight (run
    by the daemon or by `tidal switch`), which acts on it before its next wave; written to the
    state object, or sent to a daemon's command API with --daemon."""

    @click.command(verb.value, help=help_text)
    @_common
    @daemon_options
    def given(
        name: str,
        schedules: Path | None,
        kubeconfig: Path | None,
        context: str | None,
        daemon_url: str | None,
        token_file: Path | None,
    ) -> None:
        from tidal.daemon.commands import change_for
        from tidal.domain.run_control import OUTCOMES, Source

        route = routed(daemon_url, token_file)
        if route is not None:
            send_command(*route, name, verb.value)

        def change(c: Any, schedule: Any, now: datetime, run: Any = None) -> Any:
            return change_for(name, verb, run, now, Source.CLI)(c)

        _apply(
            name,
            schedules,
            kubeconfig,
            context,
            change,
            f"{name}: {OUTCOMES[verb]}",
            with_run=verb is not Verb.RESUME,
        )

    return given


resume_command = _run_command(
    Verb.RESUME,
    "Undo `tidal suspend NAME` (a missed window inside catchUpWindow then runs), and let a "
    "switch of NAME paused by `tidal pause NAME` go on.",
)
pause_command = _run_command(
    Verb.PAUSE,
    "Hold NAME's switch in flight before its next wave, until `tidal resume NAME`, "
    "`tidal promote NAME` or `tidal abort NAME`.",
)
abort_command = _run_command(
    Verb.ABORT,
    "Stop NAME's switch in flight before its next wave: rolled back (onFailure: rollback) or "
    "halted (onFailure: halt).",
)
promote_command = _run_command(
    Verb.PROMOTE,
    "Let NAME's switch in flight go on at once, skipping its remaining pauses between waves "
    "(and a `tidal pause`).",
)


@click.command("skip")
@_common
def skip_command(
    name: str, schedules: Path | None, kubeconfig: Path | None, context: str | None
) -> None:
    """Skip NAME's next window start only; the window in force stays."""
    from tidal.domain.windows import next_start, times_of

    chosen: list[str] = []

    def change(c: Any, schedule: Any, now: datetime) -> Any:
        upcoming = next_start(times_of(schedule), now)
        if upcoming is None:
            raise ValueError(f"{name} has no upcoming window start to skip")
        chosen.append(f"{upcoming.window} at {upcoming.at.isoformat()}")
        return replace(c, skip_start=upcoming.at)

    def done() -> str:
        return f"{name}: the start of {chosen[-1]} will be skipped"

    _apply(name, schedules, kubeconfig, context, change, done)


def parse_until(text: str, tz: ZoneInfo, now: datetime) -> datetime:
    """An ISO 8601 time with offset, or HH:MM (the next such local time in the schedule's zone)."""
    try:
        if ":" in text and len(text) <= 5:
            local = time.fromisoformat(text if len(text) == 5 else "0" + text)
            day = now.astimezone(tz).date()
            candidate = datetime.combine(day, local, tzinfo=tz)
            if candidate <= now:
                candidate = datetime.combine(day + timedelta(days=1), local, tzinfo=tz)
            return candidate
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"--until {text!r}: write HH:MM (local to the schedule) or an ISO 8601 "
            "time such as 2026-12-03T07:00:00+08:00"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=tz)


@click.command("hold")
@_common
@click.option("--window", "window", required=True, help="the window to keep in force")
@click.option(
    "--until", "until", required=True, help="HH:MM in the schedule's zone, or an ISO 8601 time"
)
def hold_command(
    name: str,
    schedules: Path | None,
    kubeconfig: Path | None,
    context: str | None,
    window: str,
    until: str,
) -> None:
    """Keep WINDOW in force for NAME until a time (running it now if it is not), then resume
    the normal schedule."""
    from tidal.domain.windows import Hold

    def change(c: Any, schedule: Any, now: datetime) -> Any:
        try:
            schedule.window(window)
        except KeyError as exc:
            raise ValueError(str(exc).strip("'\"")) from None
        end = parse_until(until, ZoneInfo(schedule.spec.time_zone), now)
        if end <= now:
            raise ValueError(f"--until {until!r} is in the past")
        return replace(c, hold=Hold(window, end, now))

    _apply(
        name, schedules, kubeconfig, context, change, f"{name}: window {window} held until {until}"
    )


COMMANDS = [
    suspend_command,
    resume_command,
    skip_command,
    hold_command,
    pause_command,
    abort_command,
    promote_command,
]
