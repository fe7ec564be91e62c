"""`tidal status [-o json]`: every schedule's window in force, last run, next start, controls,
drift, and the current leader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from tidal.cli.exitcodes import INVALID_INPUT, OK


def connect(schedules: Path | None, kubeconfig: Path | None, context: str | None
            ) -> tuple[Any, Any, list[Any]]:
    """Settings, a client and the loaded schedules, or a one-line error and exit 1."""
    from tidal.karmada.client import KarmadaClient
    from tidal.karmada.errors import KarmadaError
    from tidal.loading import load_schedules
    from tidal.settings import SettingsError, load_settings

    try:
        settings = load_settings(schedules=schedules, kubeconfig=kubeconfig, context=context)
        client = KarmadaClient.from_settings(settings)
    except (SettingsError, KarmadaError) as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(INVALID_INPUT) from None
    result = load_schedules([settings.schedules])
    for error in result.errors:
        click.echo(f"warning: {error}", err=True)
    return settings, client, result.schedules


def _short(value: str | None) -> str:
    return value[:16].replace("T", " ") if value else "-"


@click.command("status")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@click.option("--schedules", type=click.Path(path_type=Path), default=None,
              help="schedules directory (TIDAL_SCHEDULES)")
@click.option("--kubeconfig", type=click.Path(path_type=Path, dir_okay=False), default=None)
@click.option("--context", default=None)
def status_command(output: str, schedules: Path | None, kubeconfig: Path | None,
                   context: str | None) -> None:
    """Show every schedule: window in force, last run and result, next start, suspended,
    holds and skips, policy drift, and the current leader."""
    from tidal.daemon.status import build_status
    from tidal.domain.clock import SystemClock
    from tidal.karmada.errors import KarmadaError

    settings, client, loaded = connect(schedules, kubeconfig, context)
    try:
        report = build_status(client, settings.state_namespace,
                              settings.leader_election.lease_name, loaded, SystemClock().now())
    except KarmadaError as exc:
        click.echo(f"error: cannot read state from the Karmada apiserver: {exc}", err=True)
        raise SystemExit(INVALID_INPUT) from None
    if output == "json":
        click.echo(json.dumps(report, indent=2))
        raise SystemExit(OK)
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"leader: {report['leader'] or '(none)'}")
    for col in ("schedule", "in force", "last run", "result", "next start", "state", "drift"):
        table.add_column(col)
    for s in report["schedules"]:
        in_force = s["windowInForce"] or {}
        last = s["lastHandled"] or {}
        nxt = s["nextStart"] or {}
        flags = []
        if s["suspended"]:
            flags.append("suspended")
        if s["hold"]:
            flags.append(f"hold {s['hold']['window']} until {_short(s['hold']['until'])}")
        if s["skipStart"]:
            flags.append(f"skip {_short(s['skipStart'])}")
        if s["editPending"]:
            flags.append("edit pending (applies from the next start)")
        if s["blocked"]:
            flags.append(f"blocked: {s['blocked']['reason']} (repair: {s['blocked']['repair']})")
        for held in s["lazyHeld"]:
            flags.append(f"{held['policy']} held Lazy")
        table.add_row(
            s["name"], f"{in_force.get('window', '-')} ({_short(in_force.get('start'))})",
            f"{last.get('window', '-')} {_short(last.get('start'))}", last.get("outcome", "-"),
            f"{nxt.get('window', '-')} {_short(nxt.get('start'))}",
            ", ".join(flags) or "active",
            ", ".join(d["policy"] for d in s["drift"]) or "-")
    Console().print(table)
    raise SystemExit(OK)


COMMANDS = [status_command]
