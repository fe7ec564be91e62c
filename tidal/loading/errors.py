"""An error that knows where it is: `FILE:LINE:COL: message` (1-based line and column)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class LocatedError:
    file: str
    line: int
    col: int
    message: str

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
