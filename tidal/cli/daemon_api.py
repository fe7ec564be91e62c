"""`tidal pause|resume|abort|promote|retry NAME --daemon URL`: the command sent to a daemon's
command API (tidal.daemon.command_api) instead of written to the state object; the same
messages and exit codes as the direct way."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from tidal.cli.exitcodes import INVALID_INPUT, OK

TIMEOUT = 60.0  # seconds: a standby forwards to the leader, which writes the state object

daemon_option = click.option(
    "--daemon",
    "daemon_url",
    default=None,
    metavar="URL",
    help="send the command to this tidal daemon's command API, e.g. "
    "http://tidal.tidal-system:8081 (TIDAL_DAEMON_URL); without it the command is written "
    "to the schedule's state object in the control plane",
)
token_file_option = click.option(
    "--token-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="file holding the bearer token of the daemon's command API, with --daemon "
    "(TIDAL_DAEMON_TOKEN_FILE)",
)


def daemon_options(f: Callable[..., Any]) -> Callable[..., Any]:
    return daemon_option(token_file_option(f))


def routed(daemon_url: str | None, token_file: Path | None) -> tuple[str, Path | None] | None:
    """The daemon URL and token file to send a command to (flags over TIDAL_DAEMON_URL and
    TIDAL_DAEMON_TOKEN_FILE); None: write the state object directly."""
    from tidal.settings import SettingsError, load_settings

    try:
        settings = load_settings(daemon_url=daemon_url, daemon_token_file=token_file)
    except SettingsError as exc:
        fail(str(exc))
    if not settings.daemon_url:
        if token_file is not None:
            fail("--token-file needs --daemon URL (or TIDAL_DAEMON_URL)")
        return None
    return settings.daemon_url, settings.daemon_token_file


def fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    raise SystemExit(INVALID_INPUT)


def send(url: str, token_file: Path | None, name: str, verb: str) -> dict[str, Any]:
    """POST the command; the daemon's answer when it was given, else its one-line error and
    exit 1 (as the direct way)."""
    token = ""
    if token_file is not None:
        try:
            token = token_file.read_text().strip()
        except OSError as exc:
            fail(f"--token-file {token_file}: {exc.strerror or exc}")
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        fail(f"--daemon {url!r}: expected http://HOST:PORT of the daemon's command API")
    target = f"{url.rstrip('/')}/v1/schedules/{urllib.parse.quote(name, safe='')}/{verb}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(target, data=b"", method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return _body(response.read())
    except urllib.error.HTTPError as exc:
        body = _body(exc.read())
        why = body.get("error") or f"HTTP {exc.code}"
        if exc.code == 401:
            why = (
                "the daemon refused the request (missing or wrong credentials): pass the "
                "file holding its API token as --token-file FILE (TIDAL_DAEMON_TOKEN_FILE)"
            )
        fail(f"{why} (daemon {url}, HTTP {exc.code})" if exc.code in (401, 502, 503) else why)
    except (OSError, ValueError) as exc:
        fail(f"the daemon at {url} did not answer: {getattr(exc, 'reason', exc)}")


def _body(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        return {"error": raw.decode(errors="replace").strip()[:300]}
    return value if isinstance(value, dict) else {}


def give(url: str, token_file: Path | None, name: str, verb: str) -> NoReturn:
    """Send the command and print the daemon's message (exit 0), or its error (exit 1)."""
    answer = send(url, token_file, name, verb)
    click.echo(str(answer.get("message") or f"{name}: {verb} given"))
    raise SystemExit(OK)
