"""Text laid out as rich lays it out for a console without colour, without importing rich (issue 28: plan speed).

A warm ``tokenplane plan --capacity-only`` spends a tenth of its time importing rich, which it needs only
to lay out plain lines when its output is a pipe or a file. Here are those lines, character for character
as rich prints them (``tests/test_plain_text.py`` holds the two to the same output): a ``simple_table``,
and a line of text word-wrapped to the page. Anything else is left to rich: where rich would colour the
output, or a text holds a character whose width is not one column, the functions here say None.
"""

from __future__ import annotations

import builtins
import os
import re
import sys
import unicodedata
from collections.abc import Sequence

# Characters whose width rich counts as one column (no wide, combining or control characters): a text of them
# is as many columns wide as it is long. Anything else is left to rich.
_ONE_COLUMN = frozenset({"Na", "N", "H", "A"})
# rich reads a str cell's [markup] and replaces its :emoji: codes (where the console says so): such a cell is rich's.
_MARKUP_OR_EMOJI = re.compile(r"\[|:\S*:")
_WORD = re.compile(r"\s*\S+\s*")  # rich's word: the word and the spaces after it (and before it, at the start)


def one_column(text: str) -> bool:
    """Whether every character of ``text`` is printable and one column wide, as rich measures it."""
    return all(ch.isprintable() and (ch.isascii() or _one_column(ch)) for ch in text)


def _one_column(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in _ONE_COLUMN and not unicodedata.category(ch).startswith("M")


def plain_cell(text: str) -> bool:
    """Whether rich prints ``str`` cell ``text`` as it is: no markup or emoji code, and ``one_line_cell``."""
    return not _MARKUP_OR_EMOJI.search(text) and one_line_cell(text)


def one_line_cell(text: str) -> bool:
    """Whether rich prints ``Text`` cell ``text`` as it is: one line of one-column characters, nothing to fold."""
    if text != text.strip() or "  " in text:  # rich's wrapping folds runs of spaces and trims at a cell's ends
        return False
    return one_column(text)


def plain_page_width(page_width: int) -> int | None:
    """``page_width`` if rich would print to stdout without colour (a pipe, a file), else None: rich's page.

    The same test as rich's ``Console`` for ``color_system="auto"``, on its safe side: its variables that
    make a pipe a terminal (``FORCE_COLOR``, ``TTY_COMPATIBLE``), a notebook, Windows' consoles and a stream
    that is not UTF-8 (rich substitutes what it cannot write, or says how to fix the encoding) are rich's.
    """
    from tokenplane.runtime_env import Var

    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return None
    if Var.FORCE_COLOR in os.environ or Var.TTY_COMPATIBLE in os.environ:
        return None
    try:
        encoding = sys.stdout.encoding  # None: a str buffer (a test's capture), which encodes nothing
        utf8 = encoding is None or encoding.lower().replace("-", "").replace("_", "") == "utf8"
        return page_width if utf8 and not sys.stdout.isatty() else None
    except (AttributeError, ValueError):  # no stdout, or a closed one: rich decides
        return None


def wrapped(text: str, width: int) -> list[str] | None:
    """``text``'s lines as rich prints ``Text(text)`` ``width`` columns wide; None unless it is one-column text.

    rich breaks before a word that does not fit what is left of the line (a word longer than the line is
    folded), and keeps a word's trailing spaces where they fit.
    """
    if not one_column(text):
        return None
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            folds = [word[i : i + width] for i in range(0, len(word), width)]
            for fold in folds[:-1]:
                if start:
                    breaks.append(start)
                start += len(fold)
            if start:
                breaks.append(start)
            offset = len(folds[-1])
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    # A line longer than the page is a word's trailing spaces: rich crops them to the page.
    return [text[a:b][:width] for a, b in zip([0, *breaks], [*breaks, len(text)], strict=True)]


def table_lines(
    title: str,
    header: Sequence[str],
    right: Sequence[bool],
    columns: Sequence[Sequence[str]],
    ends: Sequence[bool],
    width: int,
) -> list[str] | None:
    """A ``simple_table``'s lines as rich prints it ``width`` columns wide without colour; None if rich would fold it.

    ``columns`` holds each column's cells (one line of plain text each, ``plain_cell``), ``right`` whether the
    column is right-justified, ``ends`` whether each row ends a section (a blank line after it, but the last).
    """
    widths = [max(len(t) for t in [h, *col]) for h, col in zip(header, columns, strict=True)]
    table_width = sum(widths) + 3 * len(widths) + 1  # each cell padded by one each side, a one-column rule between
    if table_width > width or len(title) > table_width:
        return None

    def row(texts: Sequence[str]) -> str:
        padded = (t.rjust(w) if r else t.ljust(w) for t, w, r in zip(texts, widths, right, strict=True))
        return " " + " ".join(f" {t} " for t in padded) + " "

    blank = " " * table_width
    lines = [title.ljust(table_width)] if title else []
    lines += [blank, row(header), " " + "─" * (table_width - 2) + " "]
    for i, end_section in enumerate(ends):
        lines.append(row([col[i] for col in columns]))
        if end_section and i < len(ends) - 1:
            lines.append(blank)
    lines.append(blank)
    return lines
