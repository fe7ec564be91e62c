"""tidal.domain."""
