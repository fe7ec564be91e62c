"""An error that knows where it is: `FILE:LINE:COL: message` (1-based line and column)."""

from __future__ import annotations

from dataclasses import dataclass

_ESCAPES = {code: f"\\x{code:02x}" for code in [*range(0x20), 0x7F, 0x85]}
_ESCAPES.update(
    {0x2028: "\\u2028", 0x2029: "\\u2029", ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"}
)


@dataclass(frozen=True, order=True)
class LocatedError:
    file: str
    line: int
    col: int
    message: str

    def __post_init__(self) -> None:
        # One line, always: keys and values from the file may hold control characters.
        object.__setattr__(self, "message", self.message.translate(_ESCAPES))
        object.__setattr__(self, "file", self.file.translate(_ESCAPES))

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.message}"

    def to_json(self) -> dict[str, str | int]:
        return {"file": self.file, "line": self.line, "column": self.col, "message": self.message}


class YamlProblem(Exception):
    """Raised inside the YAML reader; carries a 1-based position and a one-line message."""

    def __init__(self, line: int, col: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.col = col
        self.message = message
