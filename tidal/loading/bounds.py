"""Cheap bounds checked before a schedule file is parsed in full.

The position-keeping parser (ruamel, pure Python) costs seconds per hundred kilobytes, and the
model's cross-window checks grow with the square of the windows. A fast event scan (libyaml)
counts windows and the policy changes of each window first, and stops at the first count over
its limit, with the position of the list that is too long. Anything it cannot parse is left to
the full parser, which reports it with a better message.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from tidal.domain.schedule import MAX_POLICIES_PER_WINDOW, MAX_WINDOWS
from tidal.loading.errors import YamlProblem

_Path = tuple[str | int, ...]
_WINDOWS: _Path = ("spec", "windows")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML was built with it


@dataclass
class _Frame:
    path: _Path
    is_map: bool
    mark: tuple[int, int]  # 1-based position of the key (or item) that holds this collection
    key: str | int | None = None
    key_mark: tuple[int, int] = (1, 1)
    expect_key: bool = True
    items: int = 0

    def child(self) -> tuple[str | int, tuple[int, int]]:
        if self.is_map:
            return (self.key if self.key is not None else "?"), self.key_mark
        return self.items, self.mark

    def advance(self) -> None:
        if self.is_map:
            self.expect_key = True
        else:
            self.items += 1


def _dotted(path: _Path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _check(frame: _Frame) -> None:
    """Raise at the first item past a limit (called as items are counted)."""
    path = frame.path
    if path == _WINDOWS and frame.items > MAX_WINDOWS:
        raise YamlProblem(
            *frame.mark,
            f"{_dotted(path)}: more than {MAX_WINDOWS} windows; "
            "split the schedule into several files",
        )
    if (
        len(path) == 4
        and path[:2] == _WINDOWS
        and path[3] == "policies"
        and frame.items > MAX_POLICIES_PER_WINDOW
    ):
        raise YamlProblem(
            *frame.mark,
            f"{_dotted(path)}: more than {MAX_POLICIES_PER_WINDOW} policy changes "
            "in one window; split the window or the schedule",
        )


def check_bounds(text: str) -> None:
    """Raise YamlProblem when the first document has too many windows or policy changes."""
    stack: list[_Frame] = []
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            if isinstance(event, yaml.DocumentEndEvent):
                return
            top = stack[-1] if stack else None
            mark = (event.start_mark.line + 1, event.start_mark.column + 1)
            if isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
                if top is not None and top.is_map and top.expect_key:
                    top.key = getattr(event, "value", None)
                    top.key_mark = mark
                    top.expect_key = False
                elif top is not None:
                    top.advance()
                    _check(top)
            elif isinstance(event, yaml.CollectionStartEvent):
                if top is None:
                    path: _Path = ()
                    where = mark
                else:
                    name, where = top.child()
                    path = (*top.path, name)
                    if not top.is_map:
                        where = mark
                stack.append(_Frame(path, isinstance(event, yaml.MappingStartEvent), where))
            elif isinstance(event, yaml.CollectionEndEvent):
                stack.pop()
                if stack:
                    stack[-1].advance()
                    _check(stack[-1])
    except yaml.YAMLError:
        return  # the full parser reports it, with its position and a fix
