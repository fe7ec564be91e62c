"""tidal estimator: Karmada's scheduler-estimator protocol answered with team-level capacity."""
