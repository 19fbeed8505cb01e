"""Run: one measured run under its launcher, with its captures."""
