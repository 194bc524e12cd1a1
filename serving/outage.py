"""One dependency's reachability as one part of the gateway sees it, logged once per outage.

Redis and Qdrant failures are designed to degrade, not to fail requests, so
during an outage every request hits the same error. One warning when the
dependency goes away (with what the gateway does meanwhile) and one when it
returns say all there is to say; a warning per request would bury both.
"""

from __future__ import annotations

import logging


class Outage:
    """Whether ``what`` is away, with a warning at each change.

    Args:
        what: Who sees what, for the log: ``"quota: Redis"``, ``"semantic cache: Qdrant or the embedder"``.
        logger: The module's logger, so that the warning names the module that degraded.
    """

    __slots__ = ("_logger", "active", "what")

    def __init__(self, what: str, logger: logging.Logger) -> None:
        self.what = what
        self._logger = logger
        self.active = False

    def down(self, error: BaseException, meanwhile: str) -> None:
        """``what`` failed with ``error``; ``meanwhile`` says what the gateway does instead (logged once)."""
        if not self.active:
            self.active = True
            self._logger.warning(
                "%s is unreachable (%s: %s); %s until it returns", self.what, type(error).__name__, error, meanwhile
            )

    def up(self, now: str = "") -> None:
        """``what`` answered again; ``now`` says what that restores (logged once, if it was away)."""
        if self.active:
            self.active = False
            self._logger.warning("%s is reachable again%s", self.what, f"; {now}" if now else "")
