"""`tidal validate PATH...`: check schedule files; every error as FILE:LINE:COL: message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from tidal.cli.exitcodes import INVALID_INPUT, OK
from tidal.loading import LocatedError, load_schedules
from tidal.loading.policies import POLICY_KINDS, PolicySchemas

NOT_CHECKED = (
    "note: policy patches and swap manifests were not checked against the Karmada "
    "CRD schemas (none found), so a misspelt or mistyped policy field passes here; "
    "pass --crds DIR (or set TIDAL_KARMADA_CRDS), or --kubeconfig to use the "
    "control plane's published schemas, or run `tidal plan`, which dry-runs every "
    "policy write on the Karmada apiserver"
)


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=False))
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: errors on stderr; json: a list of errors on stdout",
)
@click.option(
    "--crds",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="directory of the Karmada CRDs used to check policy manifests and patches "
    "[default: TIDAL_KARMADA_CRDS]",
)
@click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="also check floor clusters against the Clusters of this control plane, and "
    "policies against its published schemas (when no --crds is given)",
)
@click.option("--context", default=None, help="kubeconfig context (with --kubeconfig)")
def validate_command(
    paths: tuple[Path, ...],
    output: str,
    crds: Path | None,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """Check schedule files (files or directories, recursively *.yaml/*.yml).

    Exit 0 when everything is valid, 1 otherwise.
    """
    from tidal.cli.plan import settings_and_client
    from tidal.settings import SettingsError, load_settings

    try:
        crds = load_settings(karmada_crds=crds).karmada_crds
    except SettingsError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(INVALID_INPUT) from None
    schemas = PolicySchemas.from_crd_dir(crds)
    client = None
    if kubeconfig is not None or context is not None:
        _, client = settings_and_client(kubeconfig, context)
        if schemas is None:  # the control plane's own schemas (OpenAPI v3)
            schemas = _published(client)
    try:
        result = load_schedules(paths, schemas=schemas)
        if client is not None:
            result.errors += _against_clusters(result.schedules, client)
    finally:
        if client is not None:
            client.close()
    if output == "json":
        click.echo(json.dumps([error.to_json() for error in result.errors], indent=2))
    else:
        _print_result(result, checked=schemas is not None)
    raise SystemExit(OK if result.ok else INVALID_INPUT)


def _print_result(result: Any, *, checked: bool) -> None:
    """Each error on stderr, then one line: the valid schedules, or the error count."""
    for error in result.errors:
        click.echo(str(error), err=True)
    if result.ok:
        names = ", ".join(s.schedule.name for s in result.schedules) or "none found"
        click.echo(f"ok: {len(result.schedules)} schedule(s) valid ({names})")
        if not checked:
            click.echo(NOT_CHECKED, err=True)
    else:
        files = len({error.file for error in result.errors})
        click.echo(f"{len(result.errors)} error(s) in {files} file(s)", err=True)


def _published(client: Any) -> PolicySchemas | None:
    from tidal.cli.plan import fail
    from tidal.karmada.errors import KarmadaError
    from tidal.karmada.schemas import published_schemas

    try:
        return PolicySchemas.from_published(published_schemas(client, POLICY_KINDS))
    except KarmadaError as exc:
        fail(f"Karmada API: {exc}")


def _against_clusters(schedules: list[Any], client: Any) -> list[LocatedError]:
    from tidal.cli.plan import fail
    from tidal.karmada.clusters import list_clusters
    from tidal.karmada.errors import KarmadaError
    from tidal.loading.clusters import unknown_floor_clusters

    try:
        existing = {str((c.get("metadata") or {}).get("name")) for c in list_clusters(client)}
        errors = [e for loaded in schedules for e in unknown_floor_clusters(loaded, existing)]
        return errors + [e for loaded in schedules for e in _coverage(client, loaded)]
    except KarmadaError as exc:
        fail(f"Karmada API: {exc}")


def _coverage(client: Any, loaded: Any) -> list[LocatedError]:
    """Each window's templates claimed by its policies but missed by spec.workloads (or a
    selector matching nothing), located at spec.workloads; a window whose policies cannot be
    read is `tidal plan`'s to report."""
    from tidal.engine.planning import coverage_refusals
    from tidal.engine.resolve import ResolveError, resolve
    from tidal.loading.coverage import workloads_errors

    if not loaded.schedule.spec.workloads:
        return []
    errors: list[LocatedError] = []
    for window in loaded.schedule.spec.windows:
        try:
            selection = resolve(client, loaded.schedule, window)
        except ResolveError:
            continue
        errors += workloads_errors(loaded, window.name, coverage_refusals(selection))
    return errors


COMMANDS = [validate_command]
