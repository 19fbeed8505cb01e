"""Shared leaves: CPU lists, bounds, strict file reading, the schemas, statistics, artifact names."""
