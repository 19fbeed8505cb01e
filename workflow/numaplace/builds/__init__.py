"""Build: one source tree per variant, built with NPB's make interface."""
