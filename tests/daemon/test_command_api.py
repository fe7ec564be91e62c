"""The daemon's command API over real HTTP on localhost: auth, unknown names, forwarding to the
leader's published address, and no leader."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tidal.daemon.command_api import Answer, CommandServer, advertised_url, error
from tidal.daemon.lease import API_ANNOTATION, api_annotation, leader_api_url
from tidal.domain.run_control import Verb

TOKEN = "s3cret-token"


class Replica:
    """A command server with a fake daemon behind it: what it was asked, who it thinks leads."""

    def __init__(
        self, token_file: Path, identity: str, leading: bool, leader: str | None = None
    ) -> None:
        self.given: list[tuple[str, Verb]] = []
        self.answers: list[tuple[str, int]] = []
        self.leading, self.leader = leading, leader
        self.server = CommandServer(
            host="127.0.0.1",
            port=0,
            token_file=token_file,
            identity=identity,
            is_leader=lambda: self.leading,
            leader_url=lambda: self.leader,
            give=self.give,
            on_answer=lambda command, code: self.answers.append((command, code)),
        ).start()
        self.url = f"http://127.0.0.1:{self.server.port}"

    def give(self, name: str, verb: Verb) -> Answer:
        self.given.append((name, verb))
        if name != "team-a":
            return error(404, f"no schedule {name!r}")
        return Answer(200, {"message": f"{name}: {verb.value} given"})


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return path


@pytest.fixture
def replicas(token_file: Path) -> Iterator[list[Replica]]:
    made: list[Replica] = []
    yield made
    for replica in made:
        replica.server.stop()


def post(url: str, path: str, token: str | None = TOKEN) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    request = urllib.request.Request(url + path, data=b"", method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_leader_gives_the_command(token_file: Path, replicas: list[Replica]) -> None:
    """With the token, the leader carries the command out itself and says which replica did."""
    leader = Replica(token_file, "a", leading=True)
    replicas.append(leader)
    code, body = post(leader.url, "/v1/schedules/team-a/pause")
    assert (code, body) == (200, {"message": "team-a: pause given", "replica": "a"})
    assert leader.given == [("team-a", Verb.PAUSE)]
    assert leader.answers == [("pause", 200)]


@pytest.mark.parametrize("token", [None, "wrong", ""])
def test_a_missing_or_wrong_token_is_401(
    token_file: Path, replicas: list[Replica], token: str | None
) -> None:
    """No token, a wrong one or an empty one: 401, one-line JSON error, nothing given."""
    leader = Replica(token_file, "a", leading=True)
    replicas.append(leader)
    with capture_logs() as logs:
        code, body = post(leader.url, "/v1/schedules/team-a/abort", token)
    assert code == 401 and "wrong credentials" in body["error"] and "\n" not in body["error"]
    assert leader.given == []
    assert [(e["event"], e["code"]) for e in logs] == [("command_request", 401)]


def test_an_unreadable_token_file_refuses_everything(
    tmp_path: Path, replicas: list[Replica]
) -> None:
    """The token file missing: 503 naming the file, never an open API."""
    leader = Replica(tmp_path / "absent", "a", leading=True)
    replicas.append(leader)
    code, body = post(leader.url, "/v1/schedules/team-a/pause", "")
    assert code == 503 and str(tmp_path / "absent") in body["error"]
    assert leader.given == []


@pytest.mark.parametrize("path", ["/v1/schedules/team-a/explode", "/v1/other", "/v1/schedules/x"])
def test_an_unknown_path_or_verb_is_404(
    token_file: Path, replicas: list[Replica], path: str
) -> None:
    """A verb or path the API does not have: 404 with the usage in one line."""
    leader = Replica(token_file, "a", leading=True)
    replicas.append(leader)
    code, body = post(leader.url, path)
    assert code == 404 and "POST /v1/schedules/NAME/VERB" in body["error"]
    assert leader.given == []


def test_an_unknown_schedule_is_the_leaders_404(token_file: Path, replicas: list[Replica]) -> None:
    """A schedule the daemon does not know: its 404 and one-line error."""
    leader = Replica(token_file, "a", leading=True)
    replicas.append(leader)
    assert post(leader.url, "/v1/schedules/nope/pause") == (
        404,
        {"error": "no schedule 'nope'", "replica": "a"},
    )


def test_a_standby_forwards_to_the_published_leader(
    token_file: Path, replicas: list[Replica]
) -> None:
    """Sent to a standby: forwarded with the token to the leader's address; the leader's answer
    comes back (replica a), each side counts one request."""
    leader = Replica(token_file, "a", leading=True)
    standby = Replica(token_file, "b", leading=False, leader=leader.url)
    replicas.extend([leader, standby])
    code, body = post(standby.url, "/v1/schedules/team-a/promote")
    assert (code, body) == (200, {"message": "team-a: promote given", "replica": "a"})
    assert leader.given == [("team-a", Verb.PROMOTE)] and standby.given == []
    assert leader.answers == [("promote", 200)] and standby.answers == [("promote", 200)]


def test_a_standby_checks_the_token_before_forwarding(
    token_file: Path, replicas: list[Replica]
) -> None:
    """A wrong token sent to a standby: 401 there; the leader is never asked."""
    leader = Replica(token_file, "a", leading=True)
    standby = Replica(token_file, "b", leading=False, leader=leader.url)
    replicas.extend([leader, standby])
    assert post(standby.url, "/v1/schedules/team-a/pause", "wrong")[0] == 401
    assert leader.answers == []


def test_no_leader_known_is_503(token_file: Path, replicas: list[Replica]) -> None:
    """A standby that knows no leader: 503, saying to try again."""
    standby = Replica(token_file, "b", leading=False, leader=None)
    replicas.append(standby)
    code, body = post(standby.url, "/v1/schedules/team-a/pause")
    assert code == 503 and "no leader" in body["error"] and body["replica"] == "b"


def test_a_forwarded_request_is_never_forwarded_again(
    token_file: Path, replicas: list[Replica]
) -> None:
    """Two standbys each naming the other as leader: one hop, then 503 (no loop)."""
    first = Replica(token_file, "b", leading=False)
    second = Replica(token_file, "c", leading=False, leader=first.url)
    first.leader = second.url
    replicas.extend([first, second])
    code, body = post(first.url, "/v1/schedules/team-a/pause")
    assert code == 503 and body["replica"] == "c" and "not the leader either" in body["error"]
    assert len(first.answers) == 1 and len(second.answers) == 1


def test_a_leader_that_does_not_answer_is_502(token_file: Path, replicas: list[Replica]) -> None:
    """The published leader's address refuses connections: 502 naming it."""
    gone = Replica(token_file, "a", leading=True)
    gone.server.stop()
    standby = Replica(token_file, "b", leading=False, leader=gone.url)
    replicas.append(standby)
    code, body = post(standby.url, "/v1/schedules/team-a/pause")
    assert code == 502 and gone.url in body["error"]


def test_get_is_not_allowed(token_file: Path, replicas: list[Replica]) -> None:
    """GET on a command path: 405 with Allow: POST."""
    leader = Replica(token_file, "a", leading=True)
    replicas.append(leader)
    try:
        urllib.request.urlopen(leader.url + "/v1/schedules/team-a/pause", timeout=10)
    except urllib.error.HTTPError as exc:
        assert (exc.code, exc.headers["Allow"]) == (405, "POST")
    else:
        raise AssertionError("GET was answered")


def lease(holder: str | None, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "tidal-leader", "annotations": annotations},
        "spec": {"holderIdentity": holder},
    }


def test_the_leaders_published_address_is_read_only_while_it_holds_the_lease() -> None:
    """The annotation counts while its holder holds the Lease; a former holder's or a
    released Lease's gives no address."""
    published = api_annotation("a", "http://10.0.0.1:8081")
    assert leader_api_url(lease("a", published)) == "http://10.0.0.1:8081"
    assert leader_api_url(lease("b", published)) is None
    assert leader_api_url(lease(None, published)) is None
    assert leader_api_url(lease("a", {API_ANNOTATION: "{not json"})) is None
    assert leader_api_url(None) is None


def test_the_advertised_address() -> None:
    """The advertised host wins; a concrete listen address next; IPv6 in brackets."""
    assert advertised_url("10.1.2.3", "0.0.0.0", 8081) == "http://10.1.2.3:8081"
    assert advertised_url(None, "127.0.0.1", 9000) == "http://127.0.0.1:9000"
    assert advertised_url("fd00::1", "::", 8081) == "http://[fd00::1]:8081"
    assert advertised_url(None, "0.0.0.0", 8081).startswith("http://")
