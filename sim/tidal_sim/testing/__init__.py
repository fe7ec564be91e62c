"""A testing kit for code that talks to Karmada: emulator fixtures, a manual clock, and an
in-process Karmada with no sockets.

    pytest_plugins = ["tidal_sim.testing.plugin"]   # make_emulator, emulator, karmada_fake...

    with InProcessKarmada(topology) as karmada:
        client = karmada.client()          # tidal's KarmadaClient, no HTTP underneath
        clock = karmada.engine_clock()     # the engine's sleeps move the emulator's time
"""

from tidal_sim.clock import ManualClock
from tidal_sim.testing.inprocess import EngineClock, InProcessApiClient, InProcessKarmada

__all__ = ["EngineClock", "InProcessApiClient", "InProcessKarmada", "ManualClock"]
