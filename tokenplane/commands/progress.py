"""A progress line on stderr for each step of a command that can take more than two seconds.

``tokenplane plan`` renders the Pulumi program for tens of seconds and ``plan --verify`` simulates
every pool for nearly a minute; without a word on the way, a user (or a CI log) cannot tell a slow
step from a hung one. On a terminal each step is a spinner, then a line with its time; elsewhere it is
plain text, one line when it starts and one when it ends, since a spinner prints nothing to a pipe.
stdout is left alone: ``--json`` stays clean.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console


def stderr_console() -> Console:
    """The console progress goes to: stderr, plain where it is not a terminal."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


@contextmanager
def step(what: str, *, console: Console | None = None) -> Iterator[None]:
    """Say on stderr that ``what`` (e.g. "rendering the Pulumi graph") is under way, then how long it took."""
    console = console or stderr_console()
    started = time.monotonic()
    if console.is_terminal:
        with console.status(f"{what}..."):
            yield
    else:
        console.print(f"{what}...")
        yield
    console.print(f"{what}: done in {time.monotonic() - started:.1f} s", style="dim" if console.is_terminal else None)
