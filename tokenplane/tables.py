"""Table helpers shared by the command views and the workbench's report: numbers, tables, the console.

Here rather than in a command view, so that the workbench (tokenplane.sim) never imports the commands.
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from collections.abc import Iterator

from rich import box
from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

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


# Characters whose width rich counts as one column (no wide, combining or control characters): the fast path's
# widths are then the strings' lengths. Anything else is left to rich.
_ONE_COLUMN = frozenset({"Na", "N", "H", "A"})
# rich reads a str cell's [markup] and replaces its :emoji: codes (where the console says so): such a cell is rich's.
_MARKUP_OR_EMOJI = re.compile(r"\[|:\S*:")


def print_table(console: Console, table: Table) -> None:
    """Print a ``simple_table`` as ``console.print(table)`` would, faster where the output is plain text.

    rich measures, wraps and pads every cell through its renderable protocol: most of a capacity plan's
    printing time (issue 28). For a table of one-line cells that fits the page, printed without colour
    (a pipe, a file, CI), the lines are laid out here instead, column widths and all, character for
    character as rich lays them out (``tests/test_tables.py`` holds the two to the same output). Any
    other table, or a colour console, is rich's.
    """
    lines = plain_lines(table, console.width) if console.color_system is None else None
    console.print(table if lines is None else _Lines(lines))


class _Lines:
    """Finished lines, handed to the console as they are (its capture, recording and file still apply)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for line in self.lines:
            yield Segment(line)
            yield Segment.line()


def plain_lines(table: Table, width: int) -> list[str] | None:
    """``table``'s lines as rich prints it ``width`` columns wide without colour; None unless ``simple_table``'s shape.

    The shape: its box, a header, cells of one line of str or plain Text in left or right justified columns, and
    a table (and its title) no wider than ``width``, so that nothing is wrapped, cropped or collapsed.
    """
    texts = _texts(table) if _is_simple(table) else None
    if texts is None:
        return None
    title, header, cells = texts
    widths = [max(len(t) for t in [h, *col]) for h, col in zip(header, cells, strict=True)]
    table_width = sum(widths) + 3 * len(widths) + 1  # each cell padded by one each side, a one-column rule between
    if table_width > width or len(title) > table_width:
        return None
    columns = table.columns
    justify = [c.justify for c in columns]

    def row(texts: list[str]) -> str:
        padded = (t.rjust(w) if j == "right" else t.ljust(w) for t, w, j in zip(texts, widths, justify, strict=True))
        return " " + " ".join(f" {t} " for t in padded) + " "

    blank = " " * table_width
    lines = [title.ljust(table_width)] if title else []
    lines += [blank, row(header), " " + "─" * (table_width - 2) + " "]
    for i, end_section in enumerate(r.end_section for r in table.rows):
        lines.append(row([col[i] for col in cells]))
        if end_section and i < len(table.rows) - 1:
            lines.append(blank)
    lines.append(blank)
    return lines


def _texts(table: Table) -> tuple[str, list[str], list[list[str]]] | None:
    """The title's, the headers' and each column's cells' text, or None if any of them is not plain one-line text."""
    title = _cell_text(table.title or "")
    header: list[str] = []
    cells: list[list[str]] = []
    for column in table.columns:
        texts = [_cell_text(column.header), *(_cell_text(cell) for cell in column.cells)]
        if any(t is None for t in texts):
            return None
        header.append(texts[0] or "")
        cells.append([t or "" for t in texts[1:]])
    return None if title is None else (title, header, cells)


def _is_simple(table: Table) -> bool:
    """Whether ``table`` has ``simple_table``'s layout, the only one ``plain_lines`` reproduces."""
    return (
        table.box is box.SIMPLE_HEAD
        and table.show_header
        and table.show_edge
        and not table.show_footer
        and not table.show_lines
        and not table.expand
        and table.width is None
        and table.min_width is None
        and table.caption is None
        and table.title_justify == "left"
        and table.padding == (0, 1, 0, 1)
        and table.pad_edge
        and not table.collapse_padding
        and table.leading == 0
        and bool(table.columns)
        and all(
            c.justify in ("left", "right")
            and c.width is None
            and c.min_width is None
            and c.max_width is None
            and c.ratio is None
            and not c.no_wrap
            for c in table.columns
        )
    )


def _cell_text(cell: object) -> str | None:
    """A cell's one line of text, or None where rich could print it otherwise (markup, emoji, wrapping, wide text)."""
    if isinstance(cell, str):
        text = cell
        if _MARKUP_OR_EMOJI.search(text):
            return None
    elif type(cell) is Text and cell.justify is None and cell.overflow is None and cell.no_wrap is None:
        text = cell.plain
    else:
        return None
    if text != text.strip() or "  " in text:  # rich's wrapping folds runs of spaces and trims at a cell's ends
        return None
    if not all(ch.isprintable() and (ch.isascii() or _one_column(ch)) for ch in text):
        return None
    return text


def _one_column(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in _ONE_COLUMN and not unicodedata.combining(ch)
