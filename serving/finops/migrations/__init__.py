"""Versioned schema migrations of the FinOps ledger: ``NNNN_name.sql``, applied in order by ``store.apply_migrations``.

Data files only, read through ``importlib.resources``; the package holds no code and imports nothing.
"""
