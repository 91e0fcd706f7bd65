"""Data files of the embedded API server (generated; see tools/)."""
