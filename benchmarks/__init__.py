"""Measured comparisons (not tests); each script runs on its own: ``python benchmarks/<name>.py``."""
