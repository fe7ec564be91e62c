"""The access layer's error hierarchy: what went wrong with a Karmada API call, and whether
trying again can help (`.retryable`). Callers never see kubernetes or urllib3 exceptions."""

from __future__ import annotations

import json
import re
from typing import Any

_UNKNOWN_FIELD = re.compile(r'unknown field \\?"([^"\\]+)\\?"')


class KarmadaError(Exception):
    """A failed call to the Karmada apiserver."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        code: int = 0,
        reason: str = "",
        verb: str = "",
        resource: str = "",
        retryable: bool | None = None,
        fields: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields  # JSON paths the server named (causes, unknown fields), if any
        self.code = code
        self.reason = reason
        self.verb = verb
        self.resource = resource
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        where = f"{self.verb} {self.resource}: " if self.verb else ""
        code = f" ({self.code} {self.reason})" if self.code else ""
        return f"{where}{self.message}{code}"


class NotFound(KarmadaError):
    """404: the object (or its kind) does not exist."""


class Conflict(KarmadaError):
    """409 on a write with a stale resourceVersion: re-read and try again (the caller's job)."""


class AlreadyExists(KarmadaError):
    """409 AlreadyExists on create."""


class Invalid(KarmadaError):
    """422 (or 400/415): the server refused the object or the patch; it will not pass as it is."""


class Forbidden(KarmadaError):
    """401/403: RBAC says no."""


class Gone(KarmadaError):
    """410: a watch or a list continue token whose resourceVersion is too old: re-list."""


class Throttled(KarmadaError):
    """429 Too Many Requests; wait `retry_after` seconds (when the server said so)."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ServerError(KarmadaError):
    """5xx from the apiserver."""

    retryable = True


class Unavailable(KarmadaError):
    """No answer: connection refused or reset, timeout, TLS failure."""

    retryable = True


class BadResponse(KarmadaError):
    """The answer was not what the API promises: truncated or malformed JSON, wrong kind."""


class LeaseLost(Exception):
    """An acting write refused because this process no longer holds its Lease, or would send
    (or retry) it after the Lease may have passed to another replica.

    Deliberately not a KarmadaError: no handler of API failures may take it for one (fail the
    wave, roll back, retry); whoever acts stops at once and a standby carries on."""

    retryable = False

    def __init__(self, message: str, *, verb: str = "", resource: str = "") -> None:
        super().__init__(f"{verb} {resource}: {message}" if verb else message)
        self.verb, self.resource = verb, resource


_BY_REASON: dict[str, type[KarmadaError]] = {
    "NotFound": NotFound,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Invalid": Invalid,
    "BadRequest": Invalid,
    "UnsupportedMediaType": Invalid,
    "Forbidden": Forbidden,
    "Unauthorized": Forbidden,
    "Gone": Gone,
    "Expired": Gone,
    "TooManyRequests": Throttled,
    "ServiceUnavailable": ServerError,
    "InternalError": ServerError,
    "Timeout": ServerError,
}

_BY_CODE: dict[int, type[KarmadaError]] = {
    400: Invalid,
    401: Forbidden,
    403: Forbidden,
    404: NotFound,
    405: Invalid,
    409: Conflict,
    410: Gone,
    415: Invalid,
    422: Invalid,
    429: Throttled,
}


def parse_retry_after(value: object) -> float | None:
    """Seconds from a Retry-After header (delta-seconds form only; dates are ignored)."""
    if value is None:
        return None
    try:
        seconds = float(str(value).strip())
    except ValueError:
        return None
    return max(0.0, seconds)


def error_for_status(
    code: int,
    body: bytes | str | None,
    headers: Any = None,
    *,
    verb: str = "",
    resource: str = "",
) -> KarmadaError:
    """The error for an HTTP error answer, from its `kind: Status` body where there is one."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
    reason, message, retry_after, fields = _status_of(text, code)
    if headers is not None:
        header = headers.get("Retry-After") if hasattr(headers, "get") else None
        retry_after = parse_retry_after(header) if header is not None else retry_after
    cls = _class_of(code, reason)
    kw: dict[str, Any] = {
        "code": code,
        "reason": reason or str(code),
        "verb": verb,
        "resource": resource,
        "fields": fields,
    }
    if cls is Throttled:
        return Throttled(message, retry_after=retry_after, **kw)
    return cls(message, **kw)


def _status_of(text: str, code: int) -> tuple[str, str, float | None, tuple[str, ...]]:
    """(reason, message, retryAfterSeconds, fields) of an answer's body: a `kind: Status`
    document, or text."""
    reason, message = "", text.strip()[:300] or f"HTTP {code}"
    try:
        status = json.loads(text) if text else None
    except ValueError:
        status = None
    if not isinstance(status, dict):
        return reason, message, None, ()
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or message)
    details = status.get("details")
    retry_after = None
    if isinstance(details, dict) and details.get("retryAfterSeconds") is not None:
        retry_after = parse_retry_after(details.get("retryAfterSeconds"))
    return reason, message, retry_after, _fields_of(details, message)


def _class_of(code: int, reason: str) -> type[KarmadaError]:
    """The error class of a Status reason, else of the HTTP code."""
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code)
    if cls is None:
        cls = ServerError if code >= 500 else KarmadaError
    if cls is Conflict and reason == "AlreadyExists":
        cls = AlreadyExists
    return cls


def _fields_of(details: Any, message: str) -> tuple[str, ...]:
    """The object paths an error answer names: its causes' fields, then the unknown fields of
    a strict decoding error (which only the message carries)."""
    found: list[str] = []
    causes = details.get("causes") if isinstance(details, dict) else None
    for cause in causes if isinstance(causes, list) else []:
        field = cause.get("field") if isinstance(cause, dict) else None
        if isinstance(field, str) and field and field not in found:
            found.append(field)
    for field in _UNKNOWN_FIELD.findall(message):
        if field not in found:
            found.append(field)
    return tuple(found)


def translate(exc: BaseException, *, verb: str = "", resource: str = "") -> KarmadaError:
    """Map a kubernetes ApiException or urllib3/socket error onto the hierarchy (not raised)."""
    if isinstance(exc, KarmadaError):
        return exc
    from kubernetes.client.exceptions import ApiException  # the access layer may know it
    from urllib3.exceptions import HTTPError as Urllib3Error

    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        if status == 0:
            return Unavailable(str(exc.reason or "no response"), verb=verb, resource=resource)
        return error_for_status(status, exc.body, exc.headers, verb=verb, resource=resource)
    if isinstance(exc, Urllib3Error | ConnectionError | TimeoutError | OSError):
        reason = getattr(exc, "reason", None)  # MaxRetryError wraps the real cause
        cause = reason if isinstance(reason, BaseException) else exc
        return Unavailable(
            f"no answer from the API server: {type(cause).__name__}: {cause}",
            verb=verb,
            resource=resource,
        )
    if isinstance(exc, ValueError):
        return BadResponse(
            f"{type(exc).__name__}: {exc}", verb=verb, resource=resource, retryable=True
        )
    return KarmadaError(f"{type(exc).__name__}: {exc}", verb=verb, resource=resource)
