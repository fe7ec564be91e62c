"""The `tidal` command: a click group; each sub-command lives in its own module."""

from __future__ import annotations

import sys

import click

from tidal import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tidal")
def cli() -> None:
    """Scheduled, wave-by-wave tidal switches on a Karmada control plane."""
    from tidal.cli.redacting import redact_stderr

    redact_stderr()


def _register() -> None:
    # Sub-commands register here, one module each, so the group stays thin; commands of other
    # distributions (tidal-sim: sim, demo) come through the `tidal.commands` entry points.
    import importlib

    from tidal.cli.plugins import OPTIONAL, discovered, missing

    for name in (
        "validate",
        "schema",
        "plan",
        "switch",
        "run",
        "status",
        "controls",
        "rbac",
        "cleanup",
        "estimator",
    ):
        module = importlib.import_module(f"tidal.cli.{name}")
        for command in getattr(module, "COMMANDS", ()):
            cli.add_command(command)
    for command in discovered():
        if command.name not in cli.commands:
            cli.add_command(command)
    for name, summary in OPTIONAL.items():
        if name not in cli.commands:
            cli.add_command(missing(name, summary))


_register()


def main(prog_name: str = "tidal") -> None:
    try:
        cli.main(prog_name=prog_name, standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)


def kubectl_main() -> None:
    """`kubectl-tidal`, the kubectl plugin: kubectl runs it for `kubectl tidal ...`."""
    main(prog_name="kubectl tidal")
