"""tidal.engine."""
