"""tidal.sim."""
