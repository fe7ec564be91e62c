"""tidal.cli."""
