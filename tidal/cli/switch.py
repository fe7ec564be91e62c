"""`tidal switch SCHEDULE_FILE --window NAME`: run a window now, with live progress on a TTY.

Asks for confirmation unless --yes; without --yes and without a terminal on stdin it refuses
(exit 4). `-o json` prints the run record. Exit 0 on success, 2 when a wave failed (halted or
rolled back), 3 when the plan is refused as unsafe (nothing written), 1 on invalid input,
4 not a terminal, 5 declined at the prompt.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from tidal.cli.exitcodes import DECLINED, NOT_A_TERMINAL, OK, UNSAFE_PLAN, WAVE_FAILED
from tidal.cli.plan import (
    cli_settings,
    client_of,
    fail,
    karmada_version_option,
    load_target,
    refused_writes,
    render_plan,
    team_estimate_of,
)


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


class WarningsOnly:
    """The engine's logger with its info and debug lines dropped (the progress shows them)."""

    def __init__(self) -> None:
        import structlog

        self._log = structlog.get_logger("tidal.engine")

    def __getattr__(self, level: str) -> Any:
        if level in ("warning", "error", "critical", "exception"):
            return getattr(self._log, level)
        return lambda *args, **kwargs: None


class Progress:
    """Renders engine events as a compact live display (rich) on a terminal."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(file=sys.stderr, markup=False, highlight=False)

    def say(self, text: str, style: str | None = None) -> None:
        self.console.print(text, style=style)

    def __call__(self, event: Any) -> None:
        from tidal.engine import events as ev

        if isinstance(event, ev.RunStarted):
            self.say(f"switch {event.schedule}/{event.window} run {event.run_id}: "
                     f"{event.workloads} workload(s), {event.waves} wave(s), "
                     f"trigger {event.trigger}", "bold")
        elif isinstance(event, ev.PolicyChanged):
            self.say(f"  policy {event.kind} {event.policy}: {ev.policy_action_text(event.action)}"
                     + (" (+Lazy)" if event.lazy_added else ""))
        elif isinstance(event, ev.WaveStarted):
            what = "rollback wave" if event.rollback else "wave"
            self.say(f"{what} {event.wave}: {len(event.workloads)} workload(s)", "bold")
        elif isinstance(event, ev.GatePassed):
            self.say(f"    gate {event.gate} passed")
        elif isinstance(event, ev.WaveProgress):
            ready = " ".join(f"{k}={v}/{event.assigned.get(k, 0)}"
                             for k, v in sorted(event.ready.items()))
            self.say(f"    {event.converged}/{event.total} converged; ready {ready}", "dim")
        elif isinstance(event, ev.FloorBreached):
            self.say(f"    floor breached: {event.workload} {event.ready} ready in "
                     f"{event.cluster}, needs {event.required}", "red")
        elif isinstance(event, ev.WorkloadSkipped):
            self.say(f"    left out {event.workload}: {event.reason}", "yellow")
        elif isinstance(event, ev.WaveFinished):
            self.say(f"  wave {event.wave} {event.result} {event.reason}",
                     "red" if event.result == "failed" else "green")
        elif isinstance(event, ev.RunFinished):
            self.say(f"run {event.result} {event.reason}",
                     "green" if event.result == "succeeded" else "red")


@click.command("switch")
@click.argument("schedule_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--window", required=True, help="the window to carry out now")
@click.option("--kubeconfig", type=click.Path(path_type=Path, dir_okay=False), default=None)
@click.option("--context", default=None, help="kubeconfig context")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="json: print the run record")
@click.option("--teams", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="the team estimator's TeamCapacity file, when one is deployed "
                   "(TIDAL_ESTIMATOR__TEAMS): dynamic splits take its answers into account")
@karmada_version_option
def switch_command(schedule_file: Path, window: str, kubeconfig: Path | None,
                   context: str | None, yes: bool, output: str, teams: Path | None,
                   karmada_version: str | None) -> None:
    """Run a window's switch now: policies changed, workloads moved in waves, floors held."""
    from tidal.daemon.manual import LockBusy
    from tidal.domain.clock import SystemClock
    from tidal.engine.journal import FencedOut, JournalLost
    from tidal.engine.planning import build_plan
    from tidal.engine.preflight import preflight, ready_field_of
    from tidal.engine.resolve import ResolveError
    from tidal.engine.switch import PlanRefused, plan_problems, run_switch
    from tidal.engine.write_check import PolicyWritesRefused
    from tidal.karmada.errors import KarmadaError

    settings = cli_settings(kubeconfig, context, karmada_version)
    loaded = load_target(schedule_file, window, settings.karmada_crds)
    if not yes and not stdin_is_terminal():
        fail("not a terminal: pass --yes to run without confirmation", NOT_A_TERMINAL)
    client = client_of(settings)
    journal: Any = None
    team = team_estimate_of(settings, client, teams)
    try:
        if not yes:
            sp = build_plan(client, loaded.schedule, window, team=team)
            check = preflight(sp, ready_field_of(sp))
            problems = check.problems + plan_problems(sp)  # root causes first
            render_plan(sp, problems, sys.stderr if output == "json" else None)
            if problems:
                raise SystemExit(UNSAFE_PLAN)
            if not click.confirm("carry out this switch now?", default=False, err=True):
                click.echo("declined: nothing written", err=True)
                raise SystemExit(DECLINED)
        journal = _journal(client, settings)
        observers = [_events(client, settings, journal)]
        logger = None
        if stderr_is_terminal() and output != "json":
            observers.append(Progress())
            if settings.log_level == "INFO":  # the progress lines say it: no log twin
                logger = WarningsOnly()

        def on_event(event: Any) -> None:
            for observer in observers:
                observer(event)

        record = run_switch(client, loaded, window, clock=SystemClock(), journal=journal,
                            on_event=on_event, logger=logger,
                            policy_settle=settings.karmada.policy_settle_seconds, team=team)
    except PlanRefused as exc:
        click.echo("refused: the plan is unsafe; nothing was written:", err=True)
        for problem in exc.problems[:50]:
            click.echo(f"  {problem}", err=True)
        raise SystemExit(UNSAFE_PLAN) from None
    except PolicyWritesRefused as exc:
        refused_writes(loaded, exc)
    except ResolveError as exc:
        fail(str(exc))
    except FencedOut as exc:
        fail(str(exc), WAVE_FAILED)
    except JournalLost as exc:
        fail(f"{exc}; stopped at once: run `tidal switch` again to carry the switch on",
             WAVE_FAILED)
    except LockBusy as exc:
        fail(str(exc))
    except KarmadaError as exc:
        fail(f"Karmada API: {exc}")
    finally:
        if journal is not None:
            journal.close()
        client.close()
    if output == "json":
        click.echo(record.to_json())
    else:
        for warning in record.warnings:
            click.echo(f"warning: {warning}", err=True)
        waves = ", ".join(f"{w.index}:{w.result}" for w in record.waves) or "none"
        click.echo(f"{record.schedule}/{record.window} run {record.run_id}: {record.result}"
                   + (" (already in force)" if record.noop else "") + f"; waves {waves}"
                   + (f"; {record.reason}" if record.reason else ""))
        if not record.succeeded:
            for line in left_behind(record, loaded, kubeconfig, context):
                click.echo(line, err=True)
    raise SystemExit(OK if record.succeeded else WAVE_FAILED)


def left_behind(record: Any, loaded: Any, kubeconfig: Path | None, context: str | None
                ) -> list[str]:
    """What a failed run left in place, and the commands that finish or undo it."""
    import json
    import shlex

    if not record.left_lazy:
        return []
    flags = "".join(f" {flag} {shlex.quote(str(value))}" for flag, value in
                    (("--kubeconfig", kubeconfig), ("--context", context)) if value)
    lines, undos = [], []
    for policy, restores_to in record.left_lazy:
        kind, *where = policy.split("/")
        name, namespace = where[-1], (where[0] if len(where) == 2 else None)
        lines.append(f"left: {kind} {'/'.join(where)} stays activationPreference: Lazy "
                     f"(tidal added it; it goes back to {restores_to or 'unset'}); templates "
                     "it claims move only when touched")
        others = [w.name for w in loaded.schedule.spec.windows if w.name != record.window
                  and any(r.name == name for c in w.policies for r in c.policy_refs())]
        patch = json.dumps({"spec": {"activationPreference": restores_to}},
                           separators=(",", ":"))
        ns = f" -n {namespace}" if namespace else ""
        undo = (f"`tidal switch {loaded.path} --window {others[0]}{flags}` puts that window in "
                "force and lifts the Lazy, or " if others else "") + \
            f"`kubectl patch {kind.lower()} {name}{ns} --type merge -p '{patch}'` lifts it " \
            "by hand"
        undos.append(f"to undo: {undo}")
    lines.append(f"to finish: fix the cause, then `tidal switch {loaded.path} --window "
                 f"{record.window}{flags}` runs the waves not done and lifts the Lazy")
    return lines + undos


def _events(client: Any, settings: Any, journal: Any) -> Any:
    """The daemon's observer for this run: the same Kubernetes Events on the policies and the
    state ConfigMap (written only while the run lock is held); its metrics stay local."""
    from tidal.daemon.state import run_object_name
    from tidal.karmada.events import EventRecorder, configmap_ref
    from tidal.metrics import Metrics
    from tidal.observe import EngineObserver

    return EngineObserver(
        Metrics(), recorder=EventRecorder(client, instance=f"cli:{settings.identity}",
                                          may_write=journal.holds_lock),
        state_object=lambda schedule: configmap_ref(run_object_name(schedule),
                                                    settings.state_namespace))


def _journal(client: Any, settings: Any) -> Any:
    # The schedule's run lock, shared with `tidal run` (taken at the first save).
    from tidal.daemon.lease import ElectionTimings
    from tidal.daemon.manual import ManualRunJournal
    from tidal.domain.clock import SystemClock

    return ManualRunJournal(client, settings.state_namespace, settings.identity, SystemClock(),
                            ElectionTimings.of(settings.leader_election))


COMMANDS = [switch_command]
