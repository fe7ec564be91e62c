"""KarmadaClient's one call path: translation, retries with Retry-After, the request hook."""

from __future__ import annotations

import json
from typing import Any

import pytest
import urllib3

from tidal.karmada import errors as E
from tidal.karmada.client import CLUSTERS, KarmadaClient, RetryPolicy


class _Response:
    def __init__(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self._body = body
        self.headers = headers or {}

    def read(self) -> bytes:
        return self._body


class FakeApi:
    """Stands in for the official ApiClient: answers queued responses in order."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, str, Any]] = []

    def param_serialize(
        self,
        method: str,
        resource_path: str,
        query_params: Any,
        header_params: Any,
        body: Any,
        auth_settings: Any,
    ) -> Any:
        return method, "http://x" + resource_path, header_params, body, None

    def call_api(
        self,
        method: str,
        url: str,
        header_params: Any = None,
        body: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        self.sent.append((method, url, body))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def _client(
    answers: list[Any], sleeps: list[float], calls: list[tuple[str, str, int]]
) -> KarmadaClient:
    return KarmadaClient(
        FakeApi(answers),
        sleep=sleeps.append,
        on_request=lambda v, r, c: calls.append((v, r, c)),
        retry=RetryPolicy(attempts=4, base_delay=0.01),
    )


def _ok(obj: dict[str, Any]) -> _Response:
    return _Response(200, json.dumps(obj).encode())


def test_throttled_request_is_retried_after_the_servers_delay() -> None:
    """A 429 with Retry-After is retried after exactly that delay, and each attempt is counted."""
    sleeps: list[float] = []
    calls: list[tuple[str, str, int]] = []
    client = _client(
        [_Response(429, b"{}", {"Retry-After": "3"}), _ok({"kind": "Cluster"})], sleeps, calls
    )
    obj = client.request("get", CLUSTERS, "GET", CLUSTERS.path(name="a"))
    assert obj == {"kind": "Cluster"}
    assert sleeps == [3.0]
    assert calls == [("get", "clusters", 429), ("get", "clusters", 200)]


def test_rate_limit_spaces_every_attempt_and_retry_after_still_holds() -> None:
    """With a limiter (1 a second, burst 1) each attempt, the retry of a 429 too, waits for its
    token; the server's Retry-After is honoured as before, on top of it."""
    from tidal.karmada.ratelimit import RateLimiter

    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    answers = [
        _ok({"kind": "Cluster"}),
        _Response(429, b"{}", {"Retry-After": "0.25"}),
        _ok({"kind": "Cluster"}),
    ]
    client = KarmadaClient(
        FakeApi(answers),
        sleep=sleep,
        limiter=RateLimiter(1, 1, monotonic=lambda: now[0], sleep=sleep),
    )
    client.request("get", CLUSTERS, "GET", CLUSTERS.path(name="a"))
    client.request("get", CLUSTERS, "GET", CLUSTERS.path(name="a"))
    assert sleeps == [1.0, 0.25, 0.75]  # token, Retry-After, the rest of the next token


def test_lease_requests_never_wait_for_the_rate_limit() -> None:
    """With the bucket empty, a Lease renewal goes at once (a wait could lose the Lease);
    any other request waits for its token."""
    from tidal.karmada.client import KNOWN
    from tidal.karmada.ratelimit import RateLimiter

    leases = next(r for r in KNOWN if r.plural == "leases")
    sleeps: list[float] = []
    limiter = RateLimiter(1, 1, monotonic=lambda: 0.0, sleep=sleeps.append)
    client = KarmadaClient(
        FakeApi([_ok({"kind": "Cluster"}), _ok({"kind": "Lease"}), _ok({"kind": "Cluster"})]),
        limiter=limiter,
    )
    client.request("get", CLUSTERS, "GET", CLUSTERS.path(name="a"))
    client.request("get", leases, "GET", leases.path("ns", "tidal-leader"))
    assert sleeps == []
    client.request("get", CLUSTERS, "GET", CLUSTERS.path(name="a"))
    assert sleeps == [1.0]


def test_settings_make_a_rate_limited_client(tmp_path: Any) -> None:
    """from_settings gives the client TIDAL_API__QPS and __BURST as its token bucket."""
    from tidal.settings import load_settings

    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            }
        )
    )
    settings = load_settings(kubeconfig=kubeconfig, api={"qps": 7, "burst": 3})
    client = KarmadaClient.from_settings(settings)
    assert client.limiter is not None
    assert (client.limiter.qps, client.limiter.burst) == (7.0, 3)


def test_permanent_errors_are_not_retried() -> None:
    """A 404 is raised at once as NotFound."""
    sleeps: list[float] = []
    client = _client([_Response(404, b'{"reason":"NotFound","message":"no"}')], sleeps, [])
    with pytest.raises(E.NotFound):
        client.request("get", CLUSTERS, "GET", CLUSTERS.path(name="a"))
    assert sleeps == []


def test_conflict_retried_only_when_asked() -> None:
    """A 409 is retried blindly only for writes that carry no resourceVersion."""
    conflict = _Response(409, b'{"reason":"Conflict","message":"stale"}')
    client = _client([conflict, _ok({})], [], [])
    assert client.request("patch", CLUSTERS, "PATCH", "/x", body={}, retry_conflict=True) == {}
    client = _client([conflict], [], [])
    with pytest.raises(E.Conflict):
        client.request("patch", CLUSTERS, "PATCH", "/x", body={})


def test_transport_errors_translate_and_chain() -> None:
    """A dropped connection becomes Unavailable (retryable), chained from the urllib3 error."""
    boom = urllib3.exceptions.ProtocolError("reset")
    client = _client([boom, boom, boom, boom], [], [])
    with pytest.raises(E.Unavailable) as info:
        client.request("list", CLUSTERS, "GET", "/x")
    assert info.value.__cause__ is boom


def test_truncated_json_is_a_bad_response() -> None:
    """A truncated body raises BadResponse after the retries run out."""
    client = _client([_Response(200, b'{"kind": "Clu')] * 4, [], [])
    with pytest.raises(E.BadResponse):
        client.request("get", CLUSTERS, "GET", "/x")


def test_wrong_shape_is_a_bad_response() -> None:
    """A JSON list where an object is promised is BadResponse."""
    client = _client([_Response(200, b"[1, 2]")], [], [])
    with pytest.raises(E.BadResponse):
        client.request("get", CLUSTERS, "GET", "/x")


def test_client_from_settings_carries_the_karmada_release(emulator: Any, tmp_path: Any) -> None:
    """The release set in TIDAL_KARMADA__VERSION (or --karmada-version) reaches every plan
    through the client built from the settings (tidal run, plan and switch alike); a client
    built without settings assumes the latest release."""
    from tidal.domain.karmada_release import LATEST_RELEASE, KarmadaRelease
    from tidal.settings import load_settings

    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    settings = load_settings(kubeconfig=kubeconfig, karmada={"version": "v1.17.4"})
    client = KarmadaClient.from_settings(settings)
    assert client.karmada_release is KarmadaRelease.V1_17
    assert KarmadaClient.from_kubeconfig(kubeconfig).karmada_release is LATEST_RELEASE
