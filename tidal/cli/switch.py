"""`tidal switch SCHEDULE_FILE --window NAME`: run a window now, with live progress on a TTY.

Asks for confirmation unless --yes; without --yes and without a terminal on stdin it refuses
(exit 4). `-o json` (the default when stdout is not a terminal) prints the run record, one JSON
document, on stdout; logs go to stderr. Exit 0 on success, 2 when a wave failed (halted or
rolled back), 3 when the plan is refused as unsafe (nothing written), 1 on invalid input,
4 not a terminal, 5 declined at the prompt.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TextIO, cast

import click

from tidal.cli.daemon_api import daemon_options
from tidal.cli.exitcodes import DECLINED, NOT_A_TERMINAL, OK, UNSAFE_PLAN, WAVE_FAILED
from tidal.cli.options import (
    context_option,
    kubeconfig_option,
    schedules_option,
    teams_option,
    yes_option,
)
from tidal.cli.plan import (
    allow_unchecked_option,
    cli_settings,
    fail,
    karmada_version_option,
    load_checked,
    load_target,
    refused_writes,
    render_plan,
    team_estimate_of,
)


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


@contextlib.contextmanager
def _progress(settings: Any) -> Iterator[Any]:
    """The live view on a terminal's stderr (None elsewhere). While it shows, logs below
    WARNING are not printed (the view says it; TIDAL_LOG_LEVEL=DEBUG keeps them) and those
    that are print above the view, never through it."""
    from tidal.cli.progress import LiveProgress
    from tidal.logs import configure_logging

    if not stderr_is_terminal():
        yield None
        return
    level = settings.log_level if settings.log_level == "DEBUG" else "WARNING"
    with LiveProgress(width=settings.columns) as progress:
        configure_logging(settings.log_format, level, cast(TextIO, progress.log_stream()))
        try:
            yield progress
        finally:  # what is logged after the view (the lock released...) stays as quiet
            configure_logging(settings.log_format, level)


def _output_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """-o/--output of the commands that run a switch (text or json, as `tidal switch`)."""
    return click.option(
        "-o", "--output", type=click.Choice(["text", "json"]), default=None, help=help_text
    )


@click.command("switch")
@click.argument("schedule_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--window", required=True, help="the window to carry out now")
@kubeconfig_option
@context_option
@yes_option
@_output_option(
    "json: print the run record (the default when stdout is not a terminal); text: one summary line"
)
@teams_option
@karmada_version_option
@allow_unchecked_option
def switch_command(
    schedule_file: Path,
    window: str,
    kubeconfig: Path | None,
    context: str | None,
    yes: bool,
    output: str | None,
    teams: Path | None,
    karmada_version: str | None,
    allow_unchecked: bool,
) -> None:
    """Run a window's switch now: policies changed, workloads moved in waves, floors held."""
    from tidal.daemon.manual import LockBusy
    from tidal.engine.journal import FencedOut, JournalLost
    from tidal.engine.resolve import ResolveError
    from tidal.engine.switch import PlanRefused
    from tidal.engine.write_check import PolicyWritesRefused
    from tidal.karmada.errors import KarmadaError

    settings = cli_settings(kubeconfig, context, karmada_version)
    output = output or ("text" if stdout_is_terminal() else "json")  # scripts get one document
    if not yes and not stdin_is_terminal():
        load_target(schedule_file, window)
        fail("not a terminal: pass --yes to run without confirmation", NOT_A_TERMINAL)
    loaded, client = load_checked(schedule_file, window, settings, allow_unchecked)
    journal: Any = None
    team = team_estimate_of(settings, client, teams)
    try:
        if not yes:
            _confirm(client, loaded, window, team, output, settings)
        journal = _journal(client, settings)
        record = _carry_out(client, loaded, window, team, journal, settings)
    except (
        PlanRefused,
        PolicyWritesRefused,
        ResolveError,
        FencedOut,
        JournalLost,
        LockBusy,
        KarmadaError,
    ) as exc:
        _exit_for(exc, loaded)
    finally:
        if journal is not None:
            journal.close()
        client.close()
    _report(record, output)
    if not record.succeeded:
        for line in left_behind(record, loaded, kubeconfig, context):
            click.echo(line, err=True)
    raise SystemExit(OK if record.succeeded else WAVE_FAILED)


def _exit_for(exc: Exception, loaded: Any) -> NoReturn:
    """The one-line error and exit code of a switch that stopped on `exc`."""
    from tidal.engine.journal import FencedOut, JournalLost
    from tidal.engine.switch import PlanRefused
    from tidal.engine.write_check import PolicyWritesRefused
    from tidal.karmada.errors import KarmadaError

    if isinstance(exc, PlanRefused):
        click.echo("refused: the plan is unsafe; nothing was written:", err=True)
        for problem in exc.problems[:50]:
            click.echo(f"  {problem}", err=True)
        raise SystemExit(UNSAFE_PLAN) from None
    if isinstance(exc, PolicyWritesRefused):
        refused_writes(loaded, exc)
    if isinstance(exc, FencedOut):
        fail(str(exc), WAVE_FAILED)
    if isinstance(exc, JournalLost):
        fail(
            f"{exc}; stopped at once: run `tidal switch` again to carry the switch on", WAVE_FAILED
        )
    if isinstance(exc, KarmadaError):
        fail(f"Karmada API: {exc}")
    fail(str(exc))  # ResolveError, LockBusy


def _confirm(client: Any, loaded: Any, window: str, team: Any, output: str, settings: Any) -> None:
    """Show the plan and ask before anything is written (exits when unsafe or declined)."""
    from tidal.engine.planning import build_plan
    from tidal.engine.preflight import preflight, ready_field_of
    from tidal.engine.switch import plan_problems

    sp = build_plan(client, loaded.schedule, window, team=team)
    check = preflight(sp, ready_field_of(sp))
    problems = check.problems + plan_problems(sp)  # root causes first
    render_plan(sp, problems, sys.stderr if output == "json" else None, settings.columns)
    if problems:
        raise SystemExit(UNSAFE_PLAN)
    if not click.confirm("carry out this switch now?", default=False, err=True):
        click.echo("declined: nothing written", err=True)
        raise SystemExit(DECLINED)


def _carry_out(
    client: Any, loaded: Any, window: str, team: Any, journal: Any, settings: Any
) -> Any:
    """Run the switch with its Events, the live progress on a terminal, and the operator's
    pause/promote/abort between waves; the run record."""
    from tidal.daemon.interlude import OperatorInterlude
    from tidal.domain.clock import SystemClock
    from tidal.engine.switch import run_switch

    observers = [_events(client, settings, journal)]
    with _progress(settings) as progress:
        if progress is not None:
            observers.append(progress)

        def on_event(event: Any) -> None:
            for observer in observers:
                observer(event)

        return run_switch(
            client,
            loaded,
            window,
            clock=SystemClock(),
            journal=journal,
            on_event=on_event,
            policy_settle=settings.karmada.policy_settle_seconds,
            interlude=OperatorInterlude(journal.store, loaded.schedule.name, SystemClock()),
            team=team,
        )


def _report(record: Any, output: str) -> None:
    """The run record as JSON, or warnings and one summary line."""
    if output == "json":
        click.echo(record.to_json())
        return
    for warning in record.warnings:
        click.echo(f"warning: {warning}", err=True)
    waves = ", ".join(f"{w.index}:{w.result}" for w in record.waves) or "none"
    click.echo(
        f"{record.schedule}/{record.window} run {record.run_id}: {record.result}"
        + (" (already in force)" if record.noop else "")
        + f"; waves {waves}"
        + (f"; {record.reason}" if record.reason else "")
    )


def left_behind(
    record: Any, loaded: Any, kubeconfig: Path | None, context: str | None
) -> list[str]:
    """What a failed run left in place, and the commands that finish or undo it."""
    import json
    import shlex

    from tidal.karmada.patches import MergePatch

    if not record.left_lazy:
        return []
    flags = "".join(
        f" {flag} {shlex.quote(str(value))}"
        for flag, value in (("--kubeconfig", kubeconfig), ("--context", context))
        if value
    )
    lines, undos = [], []
    for policy, restores_to in record.left_lazy:
        kind, *where = policy.split("/")
        name, namespace = where[-1], (where[0] if len(where) == 2 else None)
        lines.append(
            f"left: {kind} {'/'.join(where)} stays activationPreference: Lazy "
            f"(tidal added it; it goes back to {restores_to or 'unset'}); templates "
            "it claims move only when touched"
        )
        others = [
            w.name
            for w in loaded.schedule.spec.windows
            if w.name != record.window
            and any(r.name == name for c in w.policies for r in c.policy_refs())
        ]
        patch = json.dumps(MergePatch().activation(restores_to).body(), separators=(",", ":"))
        ns = f" -n {namespace}" if namespace else ""
        undo = (
            f"`tidal switch {loaded.path} --window {others[0]}{flags}` puts that window in "
            "force and lifts the Lazy, or "
            if others
            else ""
        ) + f"`kubectl patch {kind.lower()} {name}{ns} --type merge -p '{patch}'` lifts it by hand"
        undos.append(f"to undo: {undo}")
    lines.append(
        f"to finish: fix the cause, then `tidal switch {loaded.path} --window "
        f"{record.window}{flags}` runs the waves not done and lifts the Lazy"
    )
    return lines + undos


def _events(client: Any, settings: Any, journal: Any) -> Any:
    """The daemon's observer for this run: the same Kubernetes Events on the policies and the
    state ConfigMap (written only while the run lock is held); its metrics stay local."""
    from tidal.daemon.state import run_object_name
    from tidal.karmada.events import EventRecorder, configmap_ref
    from tidal.metrics import Metrics
    from tidal.observe import EngineObserver

    return EngineObserver(
        Metrics(),
        recorder=EventRecorder(
            client, instance=f"cli:{settings.identity}", may_write=journal.holds_lock
        ),
        state_object=lambda schedule: configmap_ref(
            run_object_name(schedule), settings.state_namespace
        ),
    )


def _journal(client: Any, settings: Any) -> Any:
    # The schedule's run lock, shared with `tidal run` (taken at the first save).
    from tidal.daemon.lease import ElectionTimings
    from tidal.daemon.manual import ManualRunJournal
    from tidal.domain.clock import SystemClock

    return ManualRunJournal(
        client,
        settings.state_namespace,
        settings.identity,
        SystemClock(),
        ElectionTimings.of(settings.leader_election),
    )


@click.command("retry")
@click.argument("name")
@schedules_option
@kubeconfig_option
@context_option
@yes_option
@_output_option("as for `tidal switch`")
@daemon_options
@click.pass_context
def retry_command(
    ctx: click.Context,
    name: str,
    schedules: Path | None,
    kubeconfig: Path | None,
    context: str | None,
    yes: bool,
    output: str | None,
    daemon_url: str | None,
    token_file: Path | None,
) -> None:
    """Re-run NAME's failed switch: its window again, from the wave that failed (the waves
    done stay done), as `tidal switch` does; exits as `tidal switch`. With --daemon, the
    daemon runs it (the command returns once the daemon has taken it)."""
    from tidal.cli.daemon_api import give, routed
    from tidal.cli.status import connect
    from tidal.daemon.commands import CommandRefused, failed_run
    from tidal.daemon.state import StateStore

    route = routed(daemon_url, token_file)
    if route is not None:
        give(*route, name, "retry")
    settings, client, loaded = connect(schedules, kubeconfig, context)
    item = next((s for s in loaded if s.schedule.name == name), None)
    if item is None:
        fail(
            f"no schedule {name!r} in {settings.schedules} "
            f"(known: {', '.join(sorted(s.schedule.name for s in loaded)) or 'none'})"
        )
    try:
        run = failed_run(StateStore(client, settings.state_namespace), name)
    except CommandRefused as exc:
        fail(str(exc))
    finally:
        client.close()
    ctx.invoke(
        switch_command,
        schedule_file=item.path,
        window=run.window,
        kubeconfig=kubeconfig,
        context=context,
        yes=yes,
        output=output,
        karmada_version=None,
    )


COMMANDS = [switch_command, retry_command]
