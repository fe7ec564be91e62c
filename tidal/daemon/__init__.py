"""tidal.daemon."""
