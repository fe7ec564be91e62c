"""tidal_sim."""
