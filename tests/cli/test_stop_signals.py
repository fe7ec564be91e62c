"""SIGTERM landing while the main thread is inside `Event.wait` (holding the Event's lock):
the long-running commands' handler notes it and the wait ends; a handler that set the Event
itself would hang the process for good (the attack, shown on a naive handler)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# the main thread holds the wait's lock when the signal's handler runs, as it does when the
# signal lands between Event.wait's acquire and release
LANDS_INSIDE_THE_WAIT = """
import signal, threading
stop = threading.Event()
{install}
with stop._cond:
    signal.raise_signal(signal.SIGTERM)
{wait}
print("stopped")
"""


def _run(install: str, wait: str, timeout: float) -> subprocess.CompletedProcess[str]:
    script = LANDS_INSIDE_THE_WAIT.format(install=install, wait=wait)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_signal_inside_the_wait_is_noted_and_ends_it() -> None:
    """StopSignals' handler takes no lock: the process stops within the poll."""
    done = _run(
        "from tidal.cli.stop_signals import StopSignals\nsignals = StopSignals().install()",
        "signals.wait(stop.wait, poll=0.05)\nassert signals.received == signal.SIGTERM",
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"


def test_a_handler_that_sets_the_event_hangs_there() -> None:
    """The breach the module prevents is real: Event.set() in the handler never returns."""
    with pytest.raises(subprocess.TimeoutExpired):
        _run(
            "signal.signal(signal.SIGTERM, lambda *_: stop.set())",
            "while not stop.wait(0.05):\n    pass",
            timeout=3,
        )
