"""The chaos soak (issue 9): one emulator, two `tidal run` daemons, windows every minute and
random faults; invariants checked from the emulator's store, request log and state objects.

`python -m benchmarks.soak --minutes N --out DIR [--seed S]` writes DIR/soak.json and
DIR/soak.md; exit 0 when every invariant held, 1 otherwise.
"""
