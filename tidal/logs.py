"""structlog, configured once: JSON lines for machines, readable lines on a terminal.

Secrets never reach the output: `redact_secrets` runs last before rendering, over every key
and value (nested too, tracebacks included), and the kubernetes client's debug output, which
prints request headers straight to stdout, is switched off and its loggers held at WARNING.
"""

from __future__ import annotations

import http.client
import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any, Final, TextIO

import structlog

REDACTED: Final = "[REDACTED]"

# Keys whose value is a secret whatever it looks like (matched case-insensitively, as a part).
_SECRET_KEY = re.compile(
    r"(token|authorization|password|passwd|secret|bearer|api[-_]?key|cookie|credential"
    r"|client[-_]?key|client[-_]?certificate|private[-_]?key)",
    re.IGNORECASE,
)
# Values that are secrets wherever they appear inside a string.
_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|\Z)", re.DOTALL)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_AUTH_SCHEME = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE)
_AUTH_HEADER = re.compile(
    r"(['\"]?authorization['\"]?\s*[:=]\s*)(['\"]?)[^'\"\n,}]+", re.IGNORECASE
)
# `token: abc`, `client-key-data: LS0t...` and friends inside kubeconfig text or a repr.
_SECRET_FIELD = re.compile(
    r"(['\"]?(?:token|id-token|refresh-token|access-token|password|client-key-data"
    r"|client-certificate-data|client_key|client_cert|api_key)['\"]?\s*[:=]\s*)"
    r"(['\"]?)[^'\"\s,}]+",
    re.IGNORECASE,
)
# A failed kubeconfig exec plugin: the client quotes its stderr, which may hold a credential.
_EXEC_OUTPUT = re.compile(r"(exec: process returned -?\d+)\.\s.*?(\n?)\Z", re.DOTALL)
# A whole kubeconfig pasted into a value: drop it all rather than guess which parts matter.
_KUBECONFIG = re.compile(r"kind:\s*['\"]?Config\b|['\"]kind['\"]:\s*['\"]Config['\"]")
_MAX_DEPTH: Final = 8
_NOISY_LOGGERS: Final = ("kubernetes", "kubernetes.client.rest", "urllib3")


def redact_text(text: str) -> str:
    """Replace every secret-looking part of a string."""
    if _KUBECONFIG.search(text) and "users" in text:
        return REDACTED
    text = _EXEC_OUTPUT.sub(lambda m: f"{m.group(1)}. (plugin output {REDACTED}){m.group(2)}", text)
    text = _PEM.sub(REDACTED, text)
    text = _JWT.sub(REDACTED, text)
    text = _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _AUTH_SCHEME.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _SECRET_FIELD.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def _is_secret_key(key: object) -> bool:
    # "token_file" names a path, not a secret; "tokens_used" would be a count: keep both.
    return (
        isinstance(key, str)
        and bool(_SECRET_KEY.search(key))
        and not key.endswith(("_file", "_path", "_count", "_used"))
    )


def redact_value(value: Any, depth: int = 0) -> Any:
    """Redact a value of any shape: strings scrubbed, containers walked, secret keys blanked."""
    if depth > _MAX_DEPTH:
        return REDACTED
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, bytes):
        return redact_text(value.decode("utf-8", "replace"))
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if isinstance(value, dict):
        # Keys become strings: a JSON line cannot carry tuple keys and must not fail to render.
        return {
            (k if isinstance(k, str) else redact_text(str(k))): (
                REDACTED
                if _is_secret_key(k) and v not in (None, "")
                else redact_value(v, depth + 1)
            )
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        return [redact_value(v, depth + 1) for v in value]
    # Anything else is rendered by its repr/str: scrub that text instead.
    return redact_text(str(value))


def redact_secrets(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: blank secret keys and scrub secret-looking text in every value."""
    for key in list(event_dict):
        value = event_dict[key]
        if _is_secret_key(key) and value not in (None, ""):
            event_dict[key] = REDACTED
        else:
            event_dict[key] = redact_value(value)
    return event_dict


def silence_kubernetes_debug() -> None:
    """Keep the kubernetes client from ever printing headers or bodies.

    Its `Configuration.debug` sets http.client's debuglevel (raw prints to stdout, beyond any
    logging processor) and puts its loggers at DEBUG (response bodies). Undo both.
    """
    from kubernetes.client import Configuration  # local: a heavy import, only needed here

    default = Configuration.get_default_copy()
    if default.debug:
        default.debug = False
        Configuration.set_default(default)
    http.client.HTTPConnection.debuglevel = 0
    for name in _NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def _shared_processors() -> list[structlog.types.Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        redact_secrets,
    ]


def configure_logging(fmt: str = "auto", level: str = "INFO", stream: TextIO | None = None) -> None:
    out = stream or sys.stderr
    use_json = fmt == "json" or (fmt == "auto" and not out.isatty())
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if use_json
        else structlog.dev.ConsoleRenderer(colors=out.isatty())
    )
    structlog.configure(
        processors=[*_shared_processors(), renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    # Libraries that log through the standard library (APScheduler, urllib3, kubernetes) go
    # through the same redaction and renderer, to the same stream.
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *_shared_processors()],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    handler.set_name("tidal")
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "tidal"]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.getLevelName(level))
    silence_kubernetes_debug()
