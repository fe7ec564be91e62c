"""`tidal plan SCHEDULE_FILE --window NAME`: the dry run. Shows each wave's workloads and the
predicted replicas per cluster before, after each wave and at the end, with the floor verdict.
Writes nothing. Exit 0 when safe, 3 when a floor would break, 1 on invalid input."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from tidal.cli.exitcodes import INVALID_INPUT, OK, UNSAFE_PLAN
from tidal.cli.options import context_option, kubeconfig_option, table_width, teams_option
from tidal.domain.karmada_release import LATEST_RELEASE, KarmadaRelease
from tidal.domain.outcomes import Strategy


def fail(message: str, code: int = INVALID_INPUT) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    raise SystemExit(code)


UNCHECKED_FLAG = "--allow-unchecked-fields"
allow_unchecked_option = click.option(
    UNCHECKED_FLAG,
    "allow_unchecked",
    is_flag=True,
    help="write policy patches and swap manifests even when no Karmada schema can check their "
    "fields (neither --crds/TIDAL_KARMADA_CRDS nor the apiserver's OpenAPI v3 gives one); "
    "a misspelt field is then dropped by Karmada in silence",
)


def load_target(schedule_file: Path, window: str, schemas: Any = None) -> Any:
    """The one LoadedSchedule in the file, with `window` checked (policies against `schemas`
    when given); exits 1 otherwise."""
    from tidal.loading import load_schedules

    result = load_schedules([schedule_file], schemas=schemas)
    if result.errors:
        for error in result.errors:
            click.echo(str(error), err=True)
        raise SystemExit(INVALID_INPUT)
    if len(result.schedules) != 1:
        fail(f"{schedule_file}: expected one TidalSchedule, found {len(result.schedules)}")
    loaded = result.schedules[0]
    try:
        loaded.schedule.window(window)
    except KeyError as exc:
        fail(f"{schedule_file}: {exc.args[0]}")
    return loaded


def policy_schemas(settings: Any, client: Any) -> Any:
    """The policy schemas to check against: the CRD directory of the settings when given (it
    wins), else the ones the apiserver publishes; None when neither has them."""
    from tidal.karmada.errors import KarmadaError
    from tidal.karmada.schemas import published_schemas
    from tidal.loading.policies import POLICY_KINDS, PolicySchemas

    if settings.karmada_crds is not None:
        local = PolicySchemas.from_crd_dir(settings.karmada_crds)
        if local is None:
            fail(
                f"{settings.karmada_crds}: no policy.karmada.io CRD files there; fix "
                "--crds/TIDAL_KARMADA_CRDS or unset it to use the apiserver's schemas"
            )
        return local
    try:
        return PolicySchemas.from_published(published_schemas(client, POLICY_KINDS))
    except KarmadaError as exc:
        fail(f"Karmada API: {exc}")


def load_checked(
    schedule_file: Path,
    window: str,
    settings: Any,
    allow_unchecked: bool,
) -> tuple[Any, Any]:
    """The schedule (load_target) and a client, the policy writes checked against
    policy_schemas(); without a schema a window that writes policy fields is refused (exit 1)
    unless `allow_unchecked`. A file that is invalid on its own fails before any request."""
    loaded = load_target(schedule_file, window)
    client = client_of(settings)
    schemas = policy_schemas(settings, client)
    if schemas is not None:
        return load_target(schedule_file, window, schemas), client
    writes = [
        c.name for c in loaded.schedule.window(window).policies if c.patch or c.swap is not None
    ]
    what = (
        f"the policy fields of {', '.join(writes)} cannot be checked"
        if writes
        else "the window writes no policy fields"
    )
    notice = (
        "no Karmada policy schema (the apiserver publishes no OpenAPI v3 for "
        f"policy.karmada.io/v1alpha1 and no --crds/TIDAL_KARMADA_CRDS is set): {what}"
    )
    if writes and not allow_unchecked:
        client.close()
        fail(
            f"{schedule_file}: {notice}; set TIDAL_KARMADA_CRDS to the Karmada CRDs, or pass "
            f"{UNCHECKED_FLAG} to write them unchecked"
        )
    click.echo(f"warning: {notice}" + (f" ({UNCHECKED_FLAG})" if writes else ""), err=True)
    return loaded, client


def refused_writes(loaded: Any, exc: Any) -> NoReturn:
    """The apiserver refused a dry run of the window's policy writes: each refusal located in
    the schedule file, exit 1; nothing was written."""
    from tidal.loading.refusals import locate_refusals

    for error in locate_refusals(loaded.path, exc.window, exc.problems):
        click.echo(str(error), err=True)
    raise SystemExit(INVALID_INPUT)


# The Karmada API does not tell its release, so the planner is told (docs/fidelity.md).
karmada_version_option = click.option(
    "--karmada-version",
    type=click.Choice([r.value for r in KarmadaRelease]),
    default=None,
    help="the Karmada release whose scheduler rules the prediction follows "
    f"(TIDAL_KARMADA__VERSION; default: the latest release, {LATEST_RELEASE.value})",
)


def karmada_overrides(karmada_version: str | None) -> dict[str, Any] | None:
    """load_settings' override of the karmada group for the --karmada-version flag."""
    return {"version": karmada_version} if karmada_version else None


def cli_settings(
    kubeconfig: Path | None, context: str | None, karmada_version: str | None = None
) -> Any:
    """The settings (flags over TIDAL_* variables), logging configured; exits 1 on a bad one."""
    from tidal.logs import configure_logging
    from tidal.settings import SettingsError, load_settings

    try:
        settings = load_settings(
            kubeconfig=kubeconfig, context=context, karmada=karmada_overrides(karmada_version)
        )
    except SettingsError as exc:
        fail(str(exc))
    configure_logging(settings.log_format, settings.log_level)
    return settings


def client_of(settings: Any) -> Any:
    """A KarmadaClient for the settings' kubeconfig; exits 1 when there is none."""
    from tidal.karmada.client import KarmadaClient
    from tidal.karmada.errors import KarmadaError

    try:
        return KarmadaClient.from_settings(settings)
    except KarmadaError as exc:
        fail(f"{exc}; pass --kubeconfig or set TIDAL_KUBECONFIG")


def settings_and_client(
    kubeconfig: Path | None, context: str | None, karmada_version: str | None = None
) -> tuple[Any, Any]:
    settings = cli_settings(kubeconfig, context, karmada_version)
    return settings, client_of(settings)


def render_plan(sp: Any, problems: list[str], out: Any = None, columns: int | None = None) -> None:
    from rich.console import Console

    out = out or sys.stdout
    console = Console(
        file=out,
        soft_wrap=True,
        markup=False,
        highlight=False,
        width=table_width(out, columns, 160),
    )
    plan = sp.plan
    console.print(
        f"schedule {sp.schedule.name}, window {sp.window.name}: "
        f"{len(plan.workloads)} workload(s) in {len(plan.waves)} wave(s), "
        f"trigger {sp.trigger}, strategy {plan.strategy}"
        + (", Lazy during the switch" if sp.lazy else "")
    )
    for index, wave in plan.numbered():
        console.print(_wave_table(plan, index, wave))
        if index <= len(plan.rooms):
            _print_room(console, plan.rooms[index - 1], any(w.bridged for w in wave), index)
    console.print(_steps_table(plan))
    for warning in sp.warnings:
        console.print(f"warning: {warning}")
    if problems:
        console.print(f"UNSAFE: {len(problems)} problem(s); nothing will be written:")
        for p in problems[:50]:
            console.print(f"  {p}")
    else:
        console.print("safe: every floor holds before, during and after each wave")


def _surge_cell(plan: Any, w: Any) -> str:
    if w.surged:
        return _dist(w.surge())
    if w.bridged:
        return f"bridge {_dist(w.bridge_shares())}"
    return "none (no room)" if w.name in plan.no_room else "none"


def _wave_table(plan: Any, index: int, wave: list[Any]) -> Any:
    """One wave's workloads: replicas, split before and after, and the surge of each."""
    from rich.table import Table

    surge = plan.strategy is Strategy.SURGE
    table = Table(title=f"wave {index}", title_justify="left")
    table.add_column("workload")
    table.add_column("replicas", justify="right")
    table.add_column("before")
    table.add_column("after")
    if surge:
        table.add_column("surge (override, or bridge)")
    for w in wave:
        row = [
            w.name,
            str(w.replicas if w.replicas is not None else "-"),
            _dist(w.before),
            _dist(w.after) + ("" if w.exact else " (est.)"),
        ]
        if surge:
            row.append(_surge_cell(plan, w))
        table.add_row(*row)
    return table


def _print_room(console: Any, room: Any, bridged: bool, index: int) -> None:
    """What a surge wave takes of the destinations' free capacity, and what the run holds
    while it runs (with the surges of the waves raised ahead: tidal.engine.pacing)."""
    console.print(
        f"  surge takes: {_amounts(room.surge)}" + (" (bridges included)" if bridged else "")
    )
    ahead = room.raised_to - index
    raised = (
        ""
        if ahead <= 0
        else f"; wave {index + 1} raised ahead"
        if ahead == 1
        else f"; waves {index + 1}-{room.raised_to} raised ahead"
    )
    console.print(
        f"  held extra:  {_amounts(room.extra)} (at most, beyond the steady state{raised})"
    )
    console.print(f"  free before: {_amounts(room.free_before)}")
    console.print(f"  free after:  {_amounts(room.free_after)}")


def _steps_table(plan: Any) -> Any:
    """Predicted replicas per cluster at each step, the lowest ready and the floors."""
    from rich.table import Table

    surge = plan.strategy is Strategy.SURGE
    clusters = sorted({c for s in plan.steps for c in s.assigned})
    steps = Table(title="predicted replicas per cluster (assigned / ready)", title_justify="left")
    steps.add_column("step")
    for c in clusters:
        steps.add_column(c, justify="right")
    if surge:
        steps.add_column("ready at the surge's peak")
    steps.add_column("lowest ready of a workload (in flight)")
    steps.add_column("floors")
    for s in plan.steps:
        row = [s.label, *[f"{s.assigned.get(c, 0)} / {s.ready.get(c, 0)}" for c in clusters]]
        if surge:
            row.append(_dist(s.surged))
        steps.add_row(
            *row,
            _dist(s.lowest_ready),
            "ok" if not s.violations else f"{len(s.violations)} breach(es)",
        )
    return steps


def _dist(d: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(d.items())) or "-"


def _amounts(amounts: dict[str, dict[str, float]]) -> str:
    """Per cluster, the resources a surge cares about (pods, cpu, memory, GPUs...)."""
    from tidal.domain.surge import describe

    return describe(amounts) or "-"


def team_estimate_of(settings: Any, client: Any, teams: Path | None) -> Any:
    """The team estimate when a TeamCapacity file is given (flag or setting); exits 1 on a bad
    file; None without one."""
    path = teams or settings.estimator.teams
    if path is None:
        return None
    from datetime import UTC, datetime

    from tidal.estimator.planned import team_estimate
    from tidal.loading.teams import TeamsFileError, load_teams

    try:
        rules = load_teams(path)
    except TeamsFileError as exc:
        fail(str(exc))
    return team_estimate(client, rules, lambda: datetime.now(UTC), settings.estimator.stale_seconds)


@click.command("plan")
@click.argument("schedule_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--window", required=True, help="the window to plan")
@kubeconfig_option
@context_option
@click.option(
    "-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@teams_option
@karmada_version_option
@allow_unchecked_option
def plan_command(
    schedule_file: Path,
    window: str,
    kubeconfig: Path | None,
    context: str | None,
    output: str,
    teams: Path | None,
    karmada_version: str | None,
    allow_unchecked: bool,
) -> None:
    """Dry-run a window: waves, predicted replicas per cluster, floor verdict. Writes nothing."""
    from tidal.engine.planning import build_plan
    from tidal.engine.preflight import preflight, ready_field_of
    from tidal.engine.resolve import ResolveError
    from tidal.engine.switch import plan_problems
    from tidal.engine.write_check import PolicyWritesRefused
    from tidal.karmada.errors import KarmadaError

    settings = cli_settings(kubeconfig, context, karmada_version)
    loaded, client = load_checked(schedule_file, window, settings, allow_unchecked)
    try:
        team = team_estimate_of(settings, client, teams)
        sp = build_plan(client, loaded.schedule, window, team=team)
        if team is not None and settings.estimator.status_url:
            from tidal.estimator.planned import asked_warnings

            sp.warnings.extend(
                asked_warnings(settings.estimator.status_url, [c.name for c in sp.clusters])
            )
        check = preflight(sp, ready_field_of(sp))
    except PolicyWritesRefused as exc:
        refused_writes(loaded, exc)
    except ResolveError as exc:
        fail(str(exc))
    except KarmadaError as exc:
        fail(f"Karmada API: {exc}")
    finally:
        client.close()
    problems = check.problems + plan_problems(sp)  # root causes first
    if output == "json":
        data = sp.plan.to_dict()
        data.update(
            {
                "schedule": sp.schedule.name,
                "window": sp.window.name,
                "trigger": sp.trigger,
                "lazy": sp.lazy,
                "warnings": sp.warnings,
                "problems": problems,
                "safe": not problems,
            }
        )
        click.echo(json.dumps(data, indent=2))
    else:
        render_plan(sp, problems, columns=settings.columns)
    raise SystemExit(UNSAFE_PLAN if problems else OK)


COMMANDS = [plan_command]
