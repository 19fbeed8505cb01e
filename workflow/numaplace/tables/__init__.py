"""Tables: the run records aggregated into CSV tables."""
