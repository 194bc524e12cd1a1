"""The hardened re-run's cases (see ../README.md)."""
