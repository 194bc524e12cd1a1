"""A progress line on stderr for each step of a command that runs longer than a second.

``tokenplane plan`` renders the Pulumi program for tens of seconds and ``plan --verify`` simulates
every pool for nearly a minute; without a word on the way, a user (or a CI log) cannot tell a slow
step from a hung one. A step that ends within ``SHOW_AFTER_S`` (a warm ``plan --capacity-only``)
prints nothing, so that a fast command stays quiet. Past it, on a terminal the step is a spinner,
then a line with its time; elsewhere it is plain text, one line when it is found slow and one when
it ends, since a spinner prints nothing to a pipe. stdout is left alone: ``--json`` stays clean.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.status import Status  # rich.live and its spinners: imported by ``console.status`` only when slow

SHOW_AFTER_S = 1.0  # a step that ends sooner prints nothing: a second is where a silent command starts to look hung


def stderr_console() -> Console:
    """The console progress goes to: stderr, plain where it is not a terminal."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


class _Announcer:
    """Says that a step is under way, once, from the timer's thread, unless the step has ended first."""

    def __init__(self, what: str, console: Console | None) -> None:
        self.what = what
        self._console = console
        self.shown = False
        self._ended = False
        self._status: Status | None = None
        self._lock = threading.Lock()  # the timer's announcement and the step's end must not interleave

    @property
    def console(self) -> Console:
        """The given console, or stderr's, made when there is something to say (a quick step imports no rich)."""
        if self._console is None:
            self._console = stderr_console()
        return self._console

    def announce(self) -> None:
        with self._lock:
            if self._ended:
                return
            self.shown = True
            if self.console.is_terminal:
                self._status = self.console.status(f"{self.what}...")
                self._status.start()
            else:
                self.console.print(f"{self.what}...")

    def end(self) -> None:
        with self._lock:
            self._ended = True
            if self._status is not None:
                self._status.stop()


@contextmanager
def step(what: str, *, console: Console | None = None, after_s: float | None = None) -> Iterator[None]:
    """Say on stderr that ``what`` (e.g. "rendering the Pulumi graph") is under way, then how long it took.

    Nothing is printed when the step ends within ``after_s`` (default ``SHOW_AFTER_S``); ``0`` announces it at once.
    """
    wait = SHOW_AFTER_S if after_s is None else after_s
    started = time.monotonic()
    announcer = _Announcer(what, console)
    if wait <= 0:
        announcer.announce()
        timer = None
    else:
        timer = threading.Timer(wait, announcer.announce)
        timer.daemon = True  # a step that raises must not leave the interpreter waiting on its timer
        timer.start()
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()
        announcer.end()
    if announcer.shown:
        shown = announcer.console
        shown.print(f"{what}: done in {time.monotonic() - started:.1f} s", style="dim" if shown.is_terminal else None)
