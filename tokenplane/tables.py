"""Table helpers shared by the command views and the workbench's report: numbers, tables, the console, the page.

Here rather than in a command view, so that the workbench (tokenplane.sim) never imports the commands.
rich is imported where a table or a console is made, not here: a plan printed to a pipe, and every
``--json``, never import it (``Page``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tokenplane.plain_text import one_line_cell, plain_cell, plain_page_width, table_lines, wrapped

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions
    from rich.segment import Segment
    from rich.table import Table

PIPE_WIDTH = 200  # columns for piped output; a plan's widest table needs about 170


def fmt_num(value: float, digits: int = 1) -> str:
    if not math.isfinite(value):
        return "∞"
    return f"{value:,.{digits}f}"


def simple_table(title: str, columns: list[tuple[str, str]]) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for column, justify in columns:
        table.add_column(column, justify="right" if justify == "r" else "left")
    return table


def console_for_output() -> Console:
    """A console for plain user text (markup off: names print as written).

    Piped output (CI logs, files) gets a wide page instead of rich's default 80
    columns, so that a plan's tables are neither cut nor reflowed.
    """
    from rich.console import Console

    return Console(highlight=False, markup=False, width=None if sys.stdout.isatty() else PIPE_WIDTH)


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
        from rich.segment import Segment

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
    right = [c.justify == "right" for c in table.columns]
    return table_lines(title, header, right, cells, [r.end_section for r in table.rows], width)


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
    from rich import box

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
    from rich.text import Text

    if isinstance(cell, str):
        return cell if plain_cell(cell) else None
    if type(cell) is Text and cell.justify is None and cell.overflow is None and cell.no_wrap is None:
        return cell.plain if one_line_cell(cell.plain) else None  # a Text's brackets and colons are not read
    return None


Cell = str | tuple[str, str]  # a text, or (text, style) as ``Text.assemble`` takes it: the style shows in colour only


@dataclass
class PlainTable:
    """A ``simple_table`` made without rich, for a ``Page``: rich is imported only where the page prints through it."""

    title: str
    columns: list[tuple[str, str]]  # (header, "l" or "r"), as ``simple_table`` takes them
    rows: list[tuple[tuple[Cell, ...], bool]] = field(default_factory=list)  # (cells, whether it ends a section)

    def add_row(self, *cells: Cell, end_section: bool = False) -> None:
        self.rows.append((cells, end_section))

    def lines(self, width: int) -> list[str] | None:
        """The table's lines as ``print_table`` prints its ``rich()`` ``width`` columns wide without colour, or None."""
        if not self.columns or any(len(cells) != len(self.columns) for cells, _ in self.rows):
            return None
        if not all(plain_cell(text) for text in [self.title, *(header for header, _ in self.columns)]):
            return None
        columns = [[cells[i] for cells, _ in self.rows] for i in range(len(self.columns))]
        if not all(plain_cell(c) if isinstance(c, str) else one_line_cell(c[0]) for column in columns for c in column):
            return None
        return table_lines(
            self.title,
            [header for header, _ in self.columns],
            [justify == "r" for _, justify in self.columns],
            [[c if isinstance(c, str) else c[0] for c in column] for column in columns],
            [end for _, end in self.rows],
            width,
        )

    def rich(self) -> Table:
        """The same table as rich's, its styled cells as ``Text``."""
        from rich.text import Text

        table = simple_table(self.title, self.columns)
        for cells, end_section in self.rows:
            table.add_row(
                *(c if isinstance(c, str) else Text(c[0], style=c[1]) for c in cells), end_section=end_section
            )
        return table


class Page:
    """Where a command's report prints: plain lines straight to stdout where rich would print them so, or a console.

    A pipe or a file (CI, ``| less``, a test's capture) gets its lines laid out by ``tokenplane.plain_text``, the
    same characters rich would print, without importing rich (a tenth of a warm capacity plan's time). A
    terminal, a colour setting, or a text only rich lays out goes to ``console_for_output()``.

    Args:
        console: print everything through this console instead (a test's, a recording one).
    """

    def __init__(self, console: Console | None = None) -> None:
        self._console = console
        self._width = plain_page_width(PIPE_WIDTH) if console is None else None

    @property
    def console(self) -> Console:
        """The console of whatever the page does not print itself (made on first use)."""
        if self._console is None:
            self._console = console_for_output()
        return self._console

    def table(self, table: PlainTable) -> None:
        lines = table.lines(self._width) if self._width is not None else None
        if lines is None:
            print_table(self.console, table.rich())
        else:
            self._write(lines)

    def line(self, *parts: Cell) -> None:
        """Print ``Text.assemble(*parts)``, wrapped to the page."""
        text = "".join(p if isinstance(p, str) else p[0] for p in parts)
        lines = wrapped(text, self._width) if self._width is not None else None
        if lines is None:
            from rich.text import Text

            self.console.print(Text.assemble(*parts))
        else:
            self._write(lines)

    def _write(self, lines: list[str]) -> None:
        sys.stdout.write("".join(f"{line}\n" for line in lines))
