"""Versioned schema migrations of the FinOps ledger: NNNN_name.sql, applied in order by ``store.apply_migrations``."""
