"""The `tidal` command group itself."""

from __future__ import annotations

from click.testing import CliRunner

from tidal import __version__
from tidal.cli.main import cli


def test_version_is_the_package_version() -> None:
    """`tidal --version` prints the installed package version."""
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output
