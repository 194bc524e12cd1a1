"""Table helpers shared by the command views and the workbench's report: numbers, tables, the console.

Here rather than in a command view, so that the workbench (tokenplane.sim) never imports the commands.
"""

from __future__ import annotations

import math
import sys

from rich import box
from rich.console import Console
from rich.table import Table

PIPE_WIDTH = 200  # columns for piped output; a plan's widest table needs about 170


def fmt_num(value: float, digits: int = 1) -> str:
    if not math.isfinite(value):
        return "∞"
    return f"{value:,.{digits}f}"


def simple_table(title: str, columns: list[tuple[str, str]]) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for column, justify in columns:
        table.add_column(column, justify="right" if justify == "r" else "left")
    return table


def console_for_output() -> Console:
    """A console for plain user text (markup off: names print as written).

    Piped output (CI logs, files) gets a wide page instead of rich's default 80
    columns, so that a plan's tables are neither cut nor reflowed.
    """
    return Console(highlight=False, markup=False, width=None if sys.stdout.isatty() else PIPE_WIDTH)
