"""`tidal switch SCHEDULE_FILE --window NAME`: run a window now, with live progress on a TTY.

Asks for confirmation on a TTY unless --yes. `-o json` prints the run record. Exit 0 on
success, 2 when a wave failed (halted or rolled back), 3 when the plan is refused as unsafe
(nothing written), 1 on invalid input.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from tidal.cli.exitcodes import OK, UNSAFE_PLAN, WAVE_FAILED
from tidal.cli.plan import fail, load_target, render_plan, settings_and_client


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
            self.say(f"  policy {event.kind} {event.policy}: {event.action}"
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
def switch_command(schedule_file: Path, window: str, kubeconfig: Path | None,
                   context: str | None, yes: bool, output: str) -> None:
    """Run a window's switch now: policies changed, workloads moved in waves, floors held."""
    from tidal.daemon.manual import LockBusy
    from tidal.domain.clock import SystemClock
    from tidal.engine.journal import FencedOut, JournalLost
    from tidal.engine.planning import build_plan
    from tidal.engine.preflight import preflight, ready_field_of
    from tidal.engine.resolve import ResolveError
    from tidal.engine.switch import PlanRefused, plan_problems, run_switch
    from tidal.karmada.errors import KarmadaError

    loaded = load_target(schedule_file, window)
    settings, client = settings_and_client(kubeconfig, context)
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    journal: Any = None
    try:
        if interactive and not yes:
            sp = build_plan(client, loaded.schedule, window)
            check = preflight(sp, ready_field_of(sp))
            problems = plan_problems(sp) + check.problems
            render_plan(sp, problems)
            if problems:
                raise SystemExit(UNSAFE_PLAN)
            if not click.confirm("carry out this switch now?", default=False):
                click.echo("nothing done", err=True)
                raise SystemExit(OK)
        journal = _journal(client, settings)
        on_event = Progress() if sys.stderr.isatty() and output != "json" else None
        record = run_switch(client, loaded, window, clock=SystemClock(), journal=journal,
                            on_event=on_event)
    except PlanRefused as exc:
        click.echo("refused: the plan is unsafe; nothing was written:", err=True)
        for problem in exc.problems[:50]:
            click.echo(f"  {problem}", err=True)
        raise SystemExit(UNSAFE_PLAN) from None
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
    raise SystemExit(OK if record.succeeded else WAVE_FAILED)


def _journal(client: Any, settings: Any) -> Any:
    # The schedule's run lock, shared with `tidal run` (taken at the first save).
    from tidal.daemon.lease import ElectionTimings
    from tidal.daemon.manual import ManualRunJournal
    from tidal.domain.clock import SystemClock

    return ManualRunJournal(client, settings.state_namespace, settings.identity, SystemClock(),
                            ElectionTimings.of(settings.leader_election))


COMMANDS = [switch_command]
