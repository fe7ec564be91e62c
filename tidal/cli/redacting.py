"""The error output of every command passes the redaction the daemon's logs pass: whatever a
command, a library it calls (the kubernetes client logging a failed exec plugin's output) or
Python itself writes to stderr."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from tidal.logs import redact_text


class RedactingStream:
    """A text stream that writes through `redact_text` (each write is one message: click
    echoes a message and its newline at once, a logging handler a record)."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(redact_text(text) if isinstance(text, str) else text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._inner.flush()

    def isatty(self) -> bool:
        return bool(self._inner.isatty())

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":  # no way around the redaction
            raise AttributeError(name)
        return getattr(self._inner, name)


def redact_stderr() -> None:
    """Route this process's stderr through the redaction (idempotent)."""
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = RedactingStream(sys.stderr)
