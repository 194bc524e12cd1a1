"""The FinOps plane's exceptions, one tree.

``FinopsError``
    ``StoreError``: the ledger (chDB or ClickHouse) refused a statement or could not be reached.
    ``BadEvent``: a record that cannot enter the ledger; its message is the reason written to ``dead_letters``.
"""

from __future__ import annotations


class FinopsError(Exception):
    """Anything the FinOps plane raises on purpose."""


class StoreError(FinopsError):
    """The ledger refused a statement or could not be reached; the message names the statement and the fix."""


class BadEvent(FinopsError):
    """A malformed or unknown-version event; the message is the reason recorded with it."""
