"""The promises the soak checks, numbered as in docs/reliability.md: every violation the checker
reports belongs to one, so the summary can count evidence and violations per promise."""

from __future__ import annotations

from enum import StrEnum


class Promise(StrEnum):
    """A promise of the RELIABILITY table (value: its key in soak.json)."""

    WINDOWS = "windows"
    RESUME = "resume"
    SINGLE_WRITER = "single_writer"
    FLOORS = "floors"
    SECRETS = "secrets"
    SCOPE = "scope"
    LAZY = "lazy"
    LEFTOVERS = "leftovers"
    PROCESS = "process"
    CHECKER = "checker"

    @property
    def heading(self) -> str:
        return TITLES[self]


TITLES: dict[Promise, str] = {
    Promise.WINDOWS: "1. each window start ran exactly once, or was recorded not run with a reason",
    Promise.RESUME: "2. every run ended; nothing moved twice (a crash resumes, never repeats)",
    Promise.SINGLE_WRITER: "3. only the Lease holder acts",
    Promise.FLOORS: "4. floors and waves: moves only in their wave, breaches fail the wave",
    Promise.SECRETS: "5. no secret in logs, metrics, Events or state objects",
    Promise.SCOPE: "7. only what the schedules name is written",
    Promise.LAZY: "8. a temporary Lazy is taken off again (or kept with its marks)",
    Promise.LEFTOVERS: "9. nothing tidal writes outlives its run by more than the sweep "
    "interval; no override caps a workload below its spec",
    Promise.PROCESS: "memory and sockets flat, clean exit on SIGTERM",
    Promise.CHECKER: "the checker saw every event",
}
