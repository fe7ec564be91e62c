"""`tidal status [-o json]`: every schedule's window in force, last run, next start, controls,
drift, and the current leader."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tidal.cli.exitcodes import INVALID_INPUT, OK, USAGE_ERROR
from tidal.cli.options import context_option, kubeconfig_option, schedules_option, table_width
from tidal.cli.plan import fail

if TYPE_CHECKING:
    from rich.table import Table


def connect(
    schedules: Path | None, kubeconfig: Path | None, context: str | None
) -> tuple[Any, Any, list[Any]]:
    """Settings, a client and the loaded schedules, or a one-line error and exit 1."""
    from tidal.karmada.client import KarmadaClient
    from tidal.karmada.errors import KarmadaError
    from tidal.loading import load_schedules
    from tidal.settings import SettingsError, load_settings

    try:
        settings = load_settings(schedules=schedules, kubeconfig=kubeconfig, context=context)
    except SettingsError as exc:
        fail(str(exc))
    if not settings.schedules.exists():
        fail(
            f"schedules {settings.schedules} does not exist; pass --schedules DIR "
            "or set TIDAL_SCHEDULES",
            USAGE_ERROR,
        )
    try:
        client = KarmadaClient.from_settings(settings)
    except KarmadaError as exc:
        fail(f"{exc}; pass --kubeconfig or set TIDAL_KUBECONFIG")
    result = load_schedules([settings.schedules], crd_dir=settings.karmada_crds)
    for error in result.errors:
        click.echo(f"warning: {error}", err=True)
    return settings, client, result.schedules


def _when(value: str | None, zone: tzinfo) -> str:
    """An ISO time in `zone`, with the zone's abbreviation (CST, CEST, UTC)."""
    if not value:
        return "-"
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def _in_force(in_force: dict[str, Any], zone: tzinfo) -> str:
    """`night (since ...)`, and what the schedule says when a switch by hand overrode it."""
    text = f"{in_force.get('window', '-')} ({_when(in_force.get('start'), zone)})"
    scheduled = in_force.get("scheduled")
    if in_force.get("source") != "schedule" and scheduled and scheduled != in_force["window"]:
        text += f", not {scheduled} as scheduled"
    return text


def last_run(entry: dict[str, Any]) -> dict[str, Any]:
    """{window, start, outcome} of the table's last-run columns: the run record (whoever
    started it: the daemon or `tidal switch`), unless a later start was handled without one
    (missed, skipped, refused)."""
    handled, run = entry["lastHandled"] or {}, entry["lastRun"] or {}
    if not run or (
        handled
        and handled.get("runId") != run.get("runId")
        and str(handled.get("start") or "") > str(run.get("startedAt") or "")
    ):
        return handled
    outcome = run.get("result") or f"running ({run.get('phase')})"
    return {"window": run.get("window"), "start": run.get("startedAt"), "outcome": outcome}


def leftover_note(items: list[dict[str, Any]]) -> str:
    """`N leftover(s) (kinds), oldest Ns, runs ...`: what crashed or stopped runs left."""
    ages = [x["ageSeconds"] for x in items if x.get("ageSeconds") is not None]
    kinds = ", ".join(sorted({str(x["kind"]) for x in items}))
    runs = ", ".join(sorted({str(x["runId"]) for x in items}))
    oldest = f", oldest {max(ages)}s" if ages else ""
    return f"{len(items)} leftover(s) ({kinds}{oldest}; run {runs})"


def state_flags(s: dict[str, Any], zone: tzinfo) -> list[str]:
    """The `state` column of one schedule: suspended, holds, skips, waits, run controls,
    blocks, Lazy held, overrides and leftovers left (empty: active)."""
    flags = []
    if s["suspended"]:
        flags.append("suspended")
    if s["hold"]:
        flags.append(f"hold {s['hold']['window']} until {_when(s['hold']['until'], zone)}")
    if s["skipStart"]:
        flags.append(f"skip {_when(s['skipStart'], zone)}")
    if s["editPending"]:
        flags.append("edit pending (applies from the next start)")
    waiting = s.get("waiting")
    if waiting:
        what = "a switch slot" if waiting["reason"] == "slot" else "surge capacity"
        flags.append(f"waiting for {what} since {_when(waiting['since'], zone)}")
    control = s.get("runControl")
    if control:
        flags.append(_control_note(control))
    if s["blocked"]:
        flags.append(f"blocked: {s['blocked']['reason']} (repair: {s['blocked']['repair']})")
    flags += [f"{held['policy']} held Lazy" for held in s["lazyHeld"]]
    flags += [
        f"wave {left['wave']} override(s) left: {left['reason']}"
        for left in (s["lastRun"] or {}).get("overridesLeft") or []
    ]
    if s.get("leftovers"):
        flags.append(leftover_note(s["leftovers"]))
    return flags


def _control_note(control: dict[str, Any]) -> str:
    if control["aborted"]:
        return "aborting (tidal abort)"
    if control["paused"]:
        return "paused (tidal resume to go on)"
    return "promoted: no more pauses" if control["promoted"] else "running"


def status_table(report: dict[str, Any], utc: bool) -> Table:
    """The rich table of `tidal status` (times in each schedule's zone, or UTC)."""
    from zoneinfo import ZoneInfo

    from rich.table import Table

    table = Table(title=f"leader: {report['leader'] or '(none)'}")
    for col in ("schedule", "in force", "last run", "result", "next start", "state", "drift"):
        table.add_column(col)
    for s in report["schedules"]:
        zone: tzinfo = UTC if utc else ZoneInfo(s["timeZone"])
        last = last_run(s)
        nxt = s["nextStart"] or {}
        table.add_row(
            s["name"],
            _in_force(s["windowInForce"] or {}, zone),
            f"{last.get('window', '-')} {_when(last.get('start'), zone)}",
            last.get("outcome", "-"),
            f"{nxt.get('window', '-')} {_when(nxt.get('start'), zone)}",
            ", ".join(state_flags(s, zone)) or "active",
            ", ".join(d["policy"] for d in s["drift"]) or "-",
        )
    return table


@click.command("status")
@click.option(
    "-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@schedules_option
@kubeconfig_option
@context_option
@click.option("--utc", is_flag=True, help="show times in UTC instead of each schedule's zone")
@click.argument("name", required=False)
@click.option(
    "--watch",
    "watching",
    is_flag=True,
    help="a live view of the latest run per wave and cluster, refreshed every "
    "--interval (Ctrl-C ends it); off a terminal one JSON line per change",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="seconds between two refreshes of --watch",
)
@click.option(
    "--until-done",
    is_flag=True,
    help="with --watch: stop when the runs watched have finished (exit 0: all "
    "succeeded, 2: one did not)",
)
@click.option(
    "--plot",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="FILE",
    help="write a PNG of NAME's latest run (ready vs desired per cluster, floors, "
    "waves) to FILE; needs matplotlib (pip install 'tidal[plot]')",
)
def status_command(
    output: str,
    schedules: Path | None,
    kubeconfig: Path | None,
    context: str | None,
    utc: bool,
    name: str | None,
    watching: bool,
    interval: float,
    until_done: bool,
    plot: Path | None,
) -> None:
    """Show every schedule (or NAME): window in force, last run and result, next start,
    suspended, holds and skips, policy drift, and the current leader. --watch follows the
    latest run live; --plot FILE draws it."""
    from tidal.daemon.status import build_status
    from tidal.domain.clock import SystemClock
    from tidal.karmada.errors import KarmadaError

    if until_done and not watching:
        raise click.BadParameter("only with --watch", param_hint="--until-done")
    settings, client, loaded = connect(schedules, kubeconfig, context)
    if name is not None or plot is not None:
        loaded = _one(loaded, name, settings.schedules, required=plot is not None)
    if watching or plot is not None:
        raise SystemExit(
            _live(
                settings,
                client,
                loaded,
                plot=plot,
                interval=interval,
                until_done=until_done,
                lines=output == "json",
            )
        )
    try:
        report = build_status(
            client,
            settings.state_namespace,
            settings.leader_election.lease_name,
            loaded,
            SystemClock().now(),
        )
    except KarmadaError as exc:
        fail(f"cannot read state from the Karmada apiserver: {exc}")
    if output == "json":
        click.echo(json.dumps(report, indent=2))
        raise SystemExit(OK)
    from rich.console import Console

    table = status_table(report, utc)
    # COLUMNS when set; piped or redirected, never cut a value at 80 columns.
    Console(width=table_width(sys.stdout, settings.columns, 400)).print(table)
    known = {s["name"] for s in report["schedules"]}
    orphans = [x for x in report["leftovers"]["items"] if x["schedule"] not in known]
    if orphans:
        click.echo(
            f"{leftover_note(orphans)} of schedules not loaded here "
            f"({', '.join(sorted({str(x['schedule']) for x in orphans}))}); "
            "`tidal cleanup` sweeps them"
        )
    raise SystemExit(OK)


def _live(
    settings: Any,
    client: Any,
    loaded: list[Any],
    *,
    plot: Path | None,
    interval: float,
    until_done: bool,
    lines: bool,
) -> int:
    """--plot FILE (NAME's latest run drawn) or --watch (the live view); the exit code."""
    from tidal.cli import status_live
    from tidal.daemon.state import StateStore
    from tidal.karmada.errors import KarmadaError

    store = StateStore(client, settings.state_namespace)
    try:
        if plot is not None:
            click.echo(f"wrote {status_live.plot(store, loaded[0], plot)}")
            return OK
        return status_live.watch(
            status_live.Watcher(client, store, loaded),
            interval=interval,
            until_done=until_done,
            width=settings.columns,
            lines=lines,
        )
    except KarmadaError as exc:
        click.echo(f"error: cannot read state from the Karmada apiserver: {exc}", err=True)
        return INVALID_INPUT


def _one(loaded: list[Any], name: str | None, where: Path, *, required: bool) -> list[Any]:
    """The loaded schedule called `name` (the only one when `name` is None and `required`)."""
    known = sorted(item.schedule.name for item in loaded)
    if name is None:
        if len(loaded) == 1:
            return loaded
        fail(
            f"--plot draws one schedule: name it (tidal status NAME --plot FILE; "
            f"known in {where}: {', '.join(known) or 'none'})",
            USAGE_ERROR,
        )
    chosen = [item for item in loaded if item.schedule.name == name]
    if not chosen:
        fail(f"no schedule {name!r} in {where} (known: {', '.join(known) or 'none'})", USAGE_ERROR)
    return chosen


COMMANDS = [status_command]
