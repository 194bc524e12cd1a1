"""The workbench's progress: simulated time, requests simulated and the ETA, on stderr.

On stderr so that ``--json`` on stdout stays clean. On a terminal, rich draws a bar. Elsewhere (a CI
log, a pipe) a bar would print nothing until the end, so a plain line is written at each tenth of the
run instead: a job that runs for minutes shows it is alive, and the log stays a dozen lines long.
"""

from __future__ import annotations

import time
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
    if not console.is_terminal:
        yield _plain_lines(config, console)
        return
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


PLAIN_STEPS = 10  # lines per run where stderr is not a terminal: one per tenth of the simulated time


def _plain_lines(config: SimConfig, console: Console) -> Advance:
    total, started = config.duration_s, time.monotonic()
    printed = [0]  # the tenths already reported

    def advance(simulated_s: float, requests: int) -> None:
        step = int(PLAIN_STEPS * simulated_s / total) if total > 0 else PLAIN_STEPS
        if step <= printed[0]:
            return
        printed[0] = step
        elapsed = time.monotonic() - started
        console.print(
            f"simulating: {step * 100 // PLAIN_STEPS}% ({_clock(simulated_s)} of {_clock(total)} simulated, "
            f"{requests:,} requests, {elapsed:.0f} s elapsed, {config.fidelity.value} fidelity)",
            highlight=False,
            soft_wrap=True,
        )

    return advance
