"""Exit codes that scripts rely on (see README, CLI reference)."""

OK = 0
INVALID_INPUT = 1
WAVE_FAILED = 2
UNSAFE_PLAN = 3
