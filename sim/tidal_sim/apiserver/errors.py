"""`kind: Status` bodies and the exception the REST layer raises to produce one."""

from __future__ import annotations

from typing import Any

from tidal_sim.kinds import ResourceType
from tidal_sim.store import StoreError

_REASON_FOR_CODE = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
}


class ApiError(Exception):
    """An error answered with a Status body; `headers` go on the response (Retry-After)."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or _REASON_FOR_CODE.get(code, "Unknown")
        self.details = details
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return status_body(self.code, self.reason, self.message, self.details)

    @classmethod
    def from_store(
        cls, exc: StoreError, rtype: ResourceType | None = None, name: str | None = None
    ) -> ApiError:
        details: dict[str, Any] = {}
        if name:
            details["name"] = name
        if rtype is not None:
            details["group"] = rtype.group
            details["kind"] = rtype.plural if exc.code in (404, 409) else rtype.kind
        if exc.causes:
            details["causes"] = exc.causes
        return cls(exc.code, exc.message, reason=exc.reason, details=details or None)


def status_body(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure" if code >= 300 else "Success",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def not_found_path(path: str) -> ApiError:
    return ApiError(
        404,
        "the server could not find the requested resource",
        details={
            "causes": [
                {"reason": "UnexpectedServerResponse", "message": f"404 page not found: {path}"}
            ]
        },
    )
