"""tidal benchmarks: availability (B1), scale (B2), API cost (B3), engine overhead (B4) and the
emulator's own throughput. Run `python -m benchmarks --out DIR [--quick]`; not tests."""
