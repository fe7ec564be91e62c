"""`tidal cleanup [--dry-run]`: the daemon's sweep of leftovers, from the CLI (for users who run
`tidal switch` without a daemon): every tidal-owned temporary object whose run is not active,
of any schedule (one that no longer exists too), restored or deleted safely."""

from __future__ import annotations

import json
from pathlib import Path

import click

from tidal.cli.exitcodes import OK, WAVE_FAILED
from tidal.cli.options import context_option, kubeconfig_option


@click.command("cleanup")
@click.option("--dry-run", is_flag=True, help="say what would be swept; write nothing")
@kubeconfig_option
@context_option
@click.option(
    "-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def cleanup_command(
    dry_run: bool, kubeconfig: Path | None, context: str | None, output: str
) -> None:
    """Remove what crashed or stopped runs left: surge overrides, bridge placements (a
    temporary Lazy is reported: a run of its window lifts it). Exit 0 when nothing of a
    finished run is left, 2 when something had to be kept (the reason is given)."""
    from tidal.cli.plan import fail, settings_and_client
    from tidal.daemon.sweeping import sweep_leftovers
    from tidal.domain.clock import SystemClock
    from tidal.engine.sweeper import SweepResult
    from tidal.karmada.errors import KarmadaError

    settings, client = settings_and_client(kubeconfig, context)
    try:
        report = sweep_leftovers(
            client,
            settings.state_namespace,
            SystemClock(),
            by=f"cli:{settings.identity}",
            dry_run=dry_run,
        )
    except KarmadaError as exc:
        fail(f"Karmada API: {exc}")
    finally:
        client.close()
    kept = [a for a in report.actions if a.result is SweepResult.KEPT]
    if output == "json":
        click.echo(json.dumps({"dryRun": dry_run, **report.to_json()}, indent=2))
    else:
        for action in report.actions:
            x = action.leftover
            owner = f"schedule {x.schedule or '?'} run {x.run_id or '?'}"
            click.echo(
                f"{action.result.value}: {x.kind.value} {x.ref} ({owner})"
                + (f": {action.reason}" if action.reason else "")
            )
        if not report.actions:
            click.echo("nothing to sweep")
    raise SystemExit(WAVE_FAILED if kept else OK)


COMMANDS = [cleanup_command]
