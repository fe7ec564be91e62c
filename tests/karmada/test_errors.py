"""Error translation: HTTP answers and transport failures map onto the access layer's hierarchy."""

from __future__ import annotations

import json

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from tidal.karmada import errors as E


def _status(code: int, reason: str, **details: object) -> str:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": f"it failed: {reason}",
            "reason": reason,
            "code": code,
            "details": details,
        }
    )


@pytest.mark.parametrize(
    ("code", "reason", "cls", "retryable"),
    [
        (404, "NotFound", E.NotFound, False),
        (409, "Conflict", E.Conflict, False),
        (409, "AlreadyExists", E.AlreadyExists, False),
        (422, "Invalid", E.Invalid, False),
        (415, "UnsupportedMediaType", E.Invalid, False),
        (403, "Forbidden", E.Forbidden, False),
        (410, "Expired", E.Gone, False),
        (429, "TooManyRequests", E.Throttled, True),
        (500, "InternalError", E.ServerError, True),
        (503, "ServiceUnavailable", E.ServerError, True),
    ],
)
def test_status_bodies_map_to_classes(code: int, reason: str, cls: type, retryable: bool) -> None:
    """Each Kubernetes Status reason becomes its error class with the right retryability."""
    err = E.error_for_status(code, _status(code, reason), verb="get", resource="clusters")
    assert type(err) is cls
    assert err.retryable is retryable
    assert err.code == code
    assert "it failed" in str(err)


def test_retry_after_header_wins_over_details() -> None:
    """A 429 carries the Retry-After header's seconds."""
    err = E.error_for_status(
        429, _status(429, "TooManyRequests", retryAfterSeconds=9), {"Retry-After": "2"}
    )
    assert isinstance(err, E.Throttled)
    assert err.retry_after == 2.0


def test_non_status_body_still_maps_by_code() -> None:
    """A plain-text error body is mapped by its HTTP code."""
    err = E.error_for_status(502, b"bad gateway")
    assert isinstance(err, E.ServerError)
    assert err.message == "bad gateway"


def test_api_exception_and_urllib3_errors_translate() -> None:
    """kubernetes ApiException and urllib3 failures become KarmadaErrors."""
    exc = ApiException(status=404, reason="Not Found", body=_status(404, "NotFound"))
    assert isinstance(E.translate(exc), E.NotFound)
    assert isinstance(E.translate(ApiException(status=0, reason="ssl")), E.Unavailable)
    dropped = urllib3.exceptions.ProtocolError("connection reset")
    assert isinstance(E.translate(dropped), E.Unavailable)
    assert E.translate(dropped).retryable
