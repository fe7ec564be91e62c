"""tidal: scheduled, wave-by-wave tidal switches on a Karmada control plane."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tidal")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
