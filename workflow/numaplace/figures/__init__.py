"""Figures: drawn from the tables."""
