"""The workbench's progress bar: simulated time, requests simulated and the ETA, on stderr.

rich draws it on stderr so that ``--json`` on stdout stays clean; it is shown only
when asked (``--progress``), since a short run finishes before a bar is worth drawing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from tokenplane.sim.simulate import Progress as Advance
from tokenplane.sim.workload import SimConfig


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


@contextmanager
def progress_bar(config: SimConfig, *, show: bool, console: Console | None = None) -> Iterator[Advance | None]:
    """Yield the callback ``simulate`` reports to (``None`` when ``show`` is false)."""
    if not show:
        yield None
        return
    console = console or Console(stderr=True)
    total = config.duration_s
    columns = (
        TextColumn("simulating"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[clock]} of {task.fields[total_clock]} simulated, {task.fields[requests]:,} requests"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("simulate", total=total, clock=_clock(0), total_clock=_clock(total), requests=0)

        def advance(simulated_s: float, requests: int) -> None:
            bar.update(task, completed=simulated_s, clock=_clock(simulated_s), requests=requests)

        yield advance
