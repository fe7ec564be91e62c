"""The daemon's command API, on a port of its own (settings.commands):

    POST /v1/schedules/{name}/{pause|resume|abort|promote|retry}
    Authorization: Bearer <the token in settings.commands.token_file>

Answers are one JSON document: {"message", "schedule", "command", "runId", "replica"} when the
command was given, else {"error": "<one line>", "replica"}. 401 without the right token; 404 an
unknown schedule or path; 409 a command that cannot apply now (no switch in flight, nothing to
retry); 503 no leader known (or the state unreachable); 502 the leader did not answer.

Only the leader gives commands. A standby forwards the request, token and all, to the address
the leader publishes on its Lease (tidal.daemon.lease.API_ANNOTATION) and returns the leader's
answer; a forwarded request is never forwarded again (header X-Tidal-Forwarded-By)."""

from __future__ import annotations

import hmac
import json
import re
import socket
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import structlog

from tidal.daemon.http import ServedOnThread
from tidal.domain.run_control import Verb

log = structlog.get_logger("tidal.daemon.command_api")

PREFIX = "/v1/schedules/"
PATH = re.compile(r"^/v1/schedules/([^/]+)/([^/]+)$")
FORWARDED = "X-Tidal-Forwarded-By"
FORWARD_TIMEOUT = 30.0  # seconds the leader may take to answer a forwarded command
USAGE = "POST /v1/schedules/NAME/VERB, VERB one of " + "|".join(v.value for v in Verb)


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status code and JSON body."""

    code: int
    body: dict[str, Any] = field(default_factory=dict)


def error(code: int, message: str) -> Answer:
    return Answer(code, {"error": message})


def read_token(path: Path) -> str | None:
    """The bearer token in `path` (surrounding whitespace dropped); None when it cannot be read
    or is empty."""
    try:
        token = path.read_text().strip()
    except OSError:
        return None
    return token or None


def advertised_url(host: str | None, listen: str, port: int) -> str:
    """http://HOST:PORT other replicas reach this one's command API at: the advertised host,
    else the listen address, else (a wildcard) this host's address."""
    if not host:
        host = (
            listen
            if listen not in ("0.0.0.0", "::")
            else socket.gethostbyname(socket.gethostname())
        )
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class CommandServer(ServedOnThread):
    """The command API's HTTP server (stdlib http.server on a thread)."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        token_file: Path,
        identity: str,
        is_leader: Callable[[], bool],
        leader_url: Callable[[], str | None],
        give: Callable[[str, Verb], Answer],
        on_answer: Callable[[str, int], None] = lambda command, code: None,
    ) -> None:
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                answer = server_self.answer(
                    self.path, self.headers.get("Authorization"), self.headers.get(FORWARDED)
                )
                self._send(answer)

            def do_GET(self) -> None:
                self._send(error(405, f"use {USAGE}"), allow="POST")

            do_PUT = do_DELETE = do_PATCH = do_GET

            def _send(self, answer: Answer, allow: str | None = None) -> None:
                body = json.dumps(
                    {**answer.body, "replica": answer.body.get("replica", identity)}
                ).encode()
                self.send_response(answer.code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if answer.code == 401:
                    self.send_header("WWW-Authenticate", 'Bearer realm="tidal"')
                if allow:
                    self.send_header("Allow", allow)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # each command is logged as a structured event instead

        self.token_file, self.identity = token_file, identity
        self.is_leader, self.leader_url, self.give = is_leader, leader_url, give
        self.on_answer = on_answer
        super().__init__(host, port, Handler, "tidal-command-api")

    # --- one request ------------------------------------------------------------------------
    def answer(self, path: str, authorization: str | None, forwarded_by: str | None) -> Answer:
        """The answer to POST `path`; logged and counted by verb and code."""
        match = PATH.match(path.split("?", 1)[0])
        verb = match.group(2) if match else "unknown"
        answer = self._answer(match, authorization, forwarded_by)
        command = verb if verb in Verb._value2member_map_ else "unknown"
        log.info(
            "command_request",
            command=command,
            schedule=match.group(1) if match else None,
            code=answer.code,
            forwarded_by=forwarded_by,
            error=answer.body.get("error"),
        )
        self.on_answer(command, answer.code)
        return answer

    def _answer(
        self, match: re.Match[str] | None, authorization: str | None, forwarded_by: str | None
    ) -> Answer:
        token = read_token(self.token_file)
        if token is None:
            return error(
                503,
                f"the command API's token file {self.token_file} cannot be read "
                "or is empty; give the daemon its token (the chart's Secret)",
            )
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            return error(
                401,
                "missing or wrong credentials: send the API token as a bearer "
                "token (tidal ... --daemon URL --token-file FILE)",
            )
        if match is None:
            return error(404, f"unknown path; use {USAGE}")
        name, verb_text = match.groups()
        if verb_text not in Verb._value2member_map_:
            return error(404, f"unknown command {verb_text!r}; use {USAGE}")
        if self.is_leader():
            return self.give(name, Verb(verb_text))
        if forwarded_by:
            return error(
                503,
                f"{self.identity} is not the leader either (forwarded by "
                f"{forwarded_by}); try again once a leader is elected",
            )
        url = self.leader_url()
        if url is None:
            return error(
                503,
                "no leader is known to forward the command to; try again once "
                "a replica leads (`tidal status` shows the leader)",
            )
        return self._forward(url.rstrip("/") + f"{PREFIX}{name}/{verb_text}", authorization or "")

    def _forward(self, url: str, authorization: str) -> Answer:
        request = urllib.request.Request(
            url,
            data=b"",
            method="POST",
            headers={"Authorization": authorization, FORWARDED: self.identity},
        )
        try:
            with urllib.request.urlopen(request, timeout=FORWARD_TIMEOUT) as response:
                return Answer(response.status, _json(response.read()))
        except urllib.error.HTTPError as exc:
            return Answer(exc.code, _json(exc.read()))
        except (OSError, ValueError) as exc:
            return error(
                502,
                f"the leader's command API at {url} did not answer: {getattr(exc, 'reason', exc)}",
            )


def _json(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except ValueError:
        return {"error": body.decode(errors="replace").strip()[:300]}
    return value if isinstance(value, dict) else {"error": str(value)[:300]}
