"""`tidal pause ... --daemon URL`: the routing flags' own mistakes, each one line and exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tidal.cli.main import cli


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--token-file", "t"], {}, "error: --token-file needs --daemon URL (or TIDAL_DAEMON_URL)"),
        (
            ["--daemon", "ftp://x"],
            {},
            "error: --daemon 'ftp://x': expected http://HOST:PORT of the daemon's command API",
        ),
        (
            [],
            {"TIDAL_DAEMON_URL": "127.0.0.1:8081"},
            "error: --daemon '127.0.0.1:8081': expected http://HOST:PORT of the daemon's "
            "command API",
        ),
        (
            ["--daemon", "http://127.0.0.1:1", "--token-file", "absent"],
            {},
            "error: --token-file absent: No such file or directory",
        ),
    ],
)
def test_routing_mistakes_are_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    """A token file without a daemon, a URL that is not http(s), an unreadable token file."""
    monkeypatch.chdir(tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(cli, ["pause", "team-1", *args])
    assert (result.exit_code, result.stderr.strip()) == (1, message)
