"""``tokenplane plan``'s progress line on stderr, shown only once the run has taken longer than a second.

A plan of a small spec finishes before a line is worth reading; a large one (dozens of pools,
the Pulumi render, ``--verify``'s simulations) takes seconds to minutes, and a silent
terminal for that long reads as a hang. stderr keeps ``--json`` on stdout clean.
"""

from __future__ import annotations

import time
from typing import TextIO

QUIET_S = 1.0  # nothing is printed before this much of the run has passed


class ProgressLine:
    """Reports pools sized and stages entered; on a terminal it rewrites one line, elsewhere it prints lines."""

    def __init__(self, stream: TextIO, *, quiet_s: float = QUIET_S) -> None:
        self.stream = stream
        self.quiet_s = quiet_s
        self._now = time.monotonic
        self.started = self._now()
        self.shown = False
        self._tty = stream.isatty()
        self._last = -QUIET_S

    def _say(self, text: str, *, last: bool = False) -> None:
        now = self._now()
        elapsed = now - self.started
        if elapsed < self.quiet_s:
            return
        if not self._tty and now - self._last < QUIET_S and not last:
            return  # a log keeps one line a second, not one per pool
        self._last = now
        line = f"{text} ({elapsed:.1f} s)"
        if self._tty:
            self.stream.write(f"\r\x1b[2K{line}")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.shown = True

    def pools(self, done: int, total: int, where: str) -> None:
        """The planner's ``progress``: ``done`` of ``total`` pools sized, the last one ``where``."""
        self._say(f"planning: {done}/{total} pools sized, last {where}", last=done == total)

    def stage(self, name: str) -> None:
        """A stage after sizing starts (verifying, rendering, checking the graph)."""
        self._say(name, last=True)

    def close(self) -> None:
        """End the rewritten line, so that the report starts on a line of its own."""
        if self.shown and self._tty:
            self.stream.write("\n")
            self.stream.flush()
