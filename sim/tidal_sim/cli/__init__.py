"""`tidal sim` and `tidal demo`: registered in the `tidal.commands` entry-point group."""
