"""tidal.karmada."""
