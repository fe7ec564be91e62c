"""`tidal rbac SCHEDULES_DIR`: print least-privilege RBAC for the Karmada apiserver."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import click
from ruamel.yaml import YAML

from tidal.cli.exitcodes import INVALID_INPUT
from tidal.domain.schedule import TidalSchedule
from tidal.loading import load_schedules
from tidal.rbac import (
    Subject,
    TemplateKind,
    derive_rules,
    patched_policies,
    policy_template_kinds,
    rbac_manifests,
    unknown_template_kinds,
)
from tidal.settings import SettingsError, load_settings

_TEMPLATE = re.compile(
    r"^(?P<resource>[a-z0-9-]+)(?:\.(?P<group>[a-z0-9.-]+))?"
    r"(?:@(?P<namespace>[a-z0-9-]+))?$"
)


def _template(value: str) -> TemplateKind:
    match = _TEMPLATE.match(value)
    if not match:
        raise click.BadParameter(
            f"{value!r}: write RESOURCE[.GROUP][@NAMESPACE], "
            "e.g. deployments.apps@ai-app or configmaps"
        )
    return TemplateKind(match["group"] or "", match["resource"], match["namespace"])


def _subject(
    service_account: str | None, user: str | None, group: str | None, state_namespace: str
) -> Subject:
    given = [v for v in (service_account, user, group) if v]
    if len(given) > 1:
        raise click.UsageError("give only one of --service-account, --user, --group")
    if user:
        return Subject("User", user)
    if group:
        return Subject("Group", group)
    namespace, _, name = (service_account or f"{state_namespace}/tidal").rpartition("/")
    if not namespace or not name:
        raise click.BadParameter(
            f"{service_account!r}: write NAMESPACE/NAME", param_hint="--service-account"
        )
    return Subject("ServiceAccount", name, namespace)


def _yaml_stream(objects: list[dict[str, Any]], header: str) -> str:
    yaml = YAML()  # round-trip dumper: keeps the natural key order of Kubernetes objects
    yaml.indent(mapping=2, sequence=4, offset=2)
    out = io.StringIO()
    out.write(header)
    for obj in objects:
        out.write("---\n")
        yaml.dump(obj, out)
    return out.getvalue()


def _live_template_kinds(
    schedule: TidalSchedule, kubeconfig: Path, context: str | None
) -> list[TemplateKind]:
    """Template kinds of the patched policies, read (GET) from the control plane."""
    from tidal.karmada import policies
    from tidal.karmada.client import KarmadaClient
    from tidal.karmada.errors import KarmadaError

    kinds: list[TemplateKind] = []
    try:
        client = KarmadaClient.from_kubeconfig(kubeconfig, context)
        for kind, name, namespace in patched_policies(schedule):
            policy = policies.find_policy(client, kind, name, namespace)
            if policy is None:
                where = f"{namespace}/{name}" if namespace else name
                click.echo(
                    f"warning: {kind} {where} (schedule {schedule.name}) does not "
                    "exist in the control plane; its template kinds are unknown",
                    err=True,
                )
                continue
            kinds += policy_template_kinds(policy)
    except KarmadaError as exc:
        click.echo(f"error: reading policies from {kubeconfig}: {exc}", err=True)
        raise SystemExit(INVALID_INPUT) from None
    return kinds


def _kinds_of_unnamed(
    loaded_schedules: list[Any], kubeconfig: Path | None, context: str | None, *, warn: bool
) -> list[TemplateKind]:
    """The template kinds of schedules that name none, read from the control plane (with a
    kubeconfig); a warning for each schedule left without any (unless `warn` is off)."""
    extra: list[TemplateKind] = []
    for loaded in loaded_schedules:
        if not unknown_template_kinds(loaded.schedule):
            continue
        live = _live_template_kinds(loaded.schedule, kubeconfig, context) if kubeconfig else []
        extra += live
        if not live and warn:
            click.echo(
                f"{loaded.path}: warning: schedule {loaded.schedule.name} names no "
                "template kind (no spec.workloads, and its patched policies' "
                "resourceSelectors are not in the file); add spec.workloads, "
                "--template-resource RESOURCE.GROUP or --kubeconfig",
                err=True,
            )
    return extra


@click.command("rbac")
@click.argument(
    "schedules_dir", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True)
)
@click.option(
    "--state-namespace",
    default=None,
    help="namespace of tidal's state, Lease and Events in the Karmada control plane "
    "[default: TIDAL_STATE_NAMESPACE or tidal-system]",
)
@click.option(
    "--lease-name",
    default=None,
    help="name of the leader-election Lease (chart value leaderElection.leaseName) "
    "[default: TIDAL_LEADER_ELECTION__LEASE_NAME or tidal-leader]",
)
@click.option(
    "--name",
    default="tidal",
    show_default=True,
    help="name of the ClusterRole, Roles and their bindings",
)
@click.option(
    "--service-account",
    default=None,
    metavar="NAMESPACE/NAME",
    help="bind to this ServiceAccount (printed too) [default: STATE_NAMESPACE/tidal]",
)
@click.option("--user", default=None, help="bind to this user instead (e.g. a client cert's CN)")
@click.option("--group", default=None, help="bind to this group instead")
@click.option(
    "--template-resource",
    "templates",
    multiple=True,
    type=str,
    metavar="RESOURCE[.GROUP][@NS]",
    help="add a template kind the schedules' files do not name (repeatable), "
    "e.g. deployments.apps@ai-app",
)
@click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="read the patched policies' resourceSelectors from this control plane "
    "(for schedules without spec.workloads); read-only",
)
@click.option("--context", default=None, help="kubeconfig context (with --kubeconfig)")
@click.option(
    "-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True
)
def rbac_command(
    schedules_dir: tuple[Path, ...],
    state_namespace: str | None,
    lease_name: str | None,
    name: str,
    service_account: str | None,
    user: str | None,
    group: str | None,
    templates: tuple[str, ...],
    kubeconfig: Path | None,
    context: str | None,
    output: str,
) -> None:
    """Print the RBAC tidal needs in the Karmada apiserver for the schedules under SCHEDULES_DIR.

    get/patch on exactly the named policies, create/delete for swaps, list/patch on the
    selected template kinds, read access to bindings and clusters, WorkloadRebalancers, and its
    state, Lease and Events in the state namespace. Never `*`. Apply it with
    `kubectl --kubeconfig KARMADA_KUBECONFIG apply -f -`.
    """
    try:
        settings = load_settings()
        namespace = state_namespace or settings.state_namespace
    except SettingsError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(INVALID_INPUT) from None
    subject = _subject(service_account, user, group, namespace)
    extra = [_template(t) for t in templates]
    result = load_schedules(schedules_dir, crd_dir=settings.karmada_crds)
    if not result.ok:
        for error in result.errors:
            click.echo(str(error), err=True)
        click.echo("no RBAC printed: fix the schedules first (tidal validate)", err=True)
        raise SystemExit(INVALID_INPUT)
    schedules = [loaded.schedule for loaded in result.schedules]
    extra += _kinds_of_unnamed(result.schedules, kubeconfig, context, warn=not templates)
    rules = derive_rules(
        schedules,
        state_namespace=namespace,
        extra_templates=extra,
        lease_name=lease_name or settings.leader_election.lease_name,
        member_capacity=settings.watches_members,
    )
    objects = rbac_manifests(rules, name=name, subject=subject)
    if output == "json":
        click.echo(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2))
        return
    names = ", ".join(s.name for s in schedules) or "none"
    header = (
        f"# RBAC for tidal in the Karmada apiserver, from {len(schedules)} schedule(s): "
        f"{names}.\n# Generated by `tidal rbac`; regenerate when the schedules change.\n"
    )
    click.echo(_yaml_stream(objects, header), nl=False)


COMMANDS = [rbac_command]
