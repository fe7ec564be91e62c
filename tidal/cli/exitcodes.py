"""Exit codes that scripts rely on (see README, CLI reference)."""

OK = 0
INVALID_INPUT = 1
WAVE_FAILED = 2
UNSAFE_PLAN = 3
NOT_A_TERMINAL = 4  # confirmation needed but stdin is not a terminal (pass --yes)
DECLINED = 5  # the confirmation prompt was answered no
# 2 is also click's usage error (unknown option, missing argument), and a missing input
USAGE_ERROR = 2
