"""`tidal demo`: the emulator, the two example teams and the real daemon, with the windows
brought forward so a night and a day switch play out in about a minute.

clock.py     one accelerated clock for the emulator and the daemon (with a fast-forward)
scenario.py  where the examples come from and the "bring windows forward" transform
tracking.py  what happened per schedule and window (from engine events and the timeline)
render.py    live progress (rich on a terminal, plain lines otherwise) and the summary
runner.py    wiring: emulator, daemon, waiting, fast-forward, shutdown
"""
