"""``print_table`` prints what rich prints, character for character, and takes its fast path on a plan's tables."""

from __future__ import annotations

import io
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tests.paths import REPO_ROOT
from tokenplane.commands import plan_report
from tokenplane.load import load_spec
from tokenplane.model.planner import plan
from tokenplane.tables import PIPE_WIDTH, plain_lines, print_table, simple_table

# What a plan's cells hold (digits, separators, the Greek column names, the infinite wait) and what rich prints
# otherwise: runs of spaces, wide and combining characters, a tab, markup and emoji codes.
_PLAN_CHARS = "abcxyz019.,/:()-$%λμρ∞─"
_HARD_CHARS = _PLAN_CHARS + "  漢\u0301\t[]é"
_PLAIN = st.lists(st.text(alphabet=_PLAN_CHARS, min_size=1, max_size=6), max_size=3).map(" ".join)
_HARD = st.text(alphabet=_HARD_CHARS, max_size=14) | st.sampled_from(["A:3 B:5", ":smile:", "[bold]x", " lead", ""])
# Two tables in three of plan-like cells only (the fast path), one of cells some of which rich alone prints.
_CELLS = st.sampled_from([_PLAIN, _PLAIN, st.one_of(_PLAIN, _HARD)])


@dataclass
class _Shape:
    title: str
    columns: list[tuple[str, str]]
    rows: list[tuple[list[str | Text], bool]]


@st.composite
def _shapes(
    draw: st.DrawFn, cells: st.SearchStrategy[st.SearchStrategy[str]], title: st.SearchStrategy[str] | None = None
) -> _Shape:
    cell = draw(cells)
    columns = draw(st.lists(st.tuples(cell, st.sampled_from("lr")), min_size=1, max_size=5))
    styled = st.builds(Text, cell, style=st.sampled_from(["", "red", "bold"]))
    rows = draw(
        st.lists(
            st.tuples(st.lists(cell | styled, min_size=len(columns), max_size=len(columns)), st.booleans()), max_size=6
        )
    )
    return _Shape(draw(cell if title is None else title), columns, rows)


def _table(shape: _Shape) -> Table:
    table = simple_table(shape.title, shape.columns)
    for cells, end_section in shape.rows:
        table.add_row(*cells, end_section=end_section)
    return table


def _printed(width: int, markup: bool, fast: bool, shape: _Shape) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False, markup=markup)
    if fast:
        print_table(console, _table(shape))
    else:
        console.print(_table(shape))
    out = console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above
    assert isinstance(out, str)
    return out


@settings(max_examples=200, deadline=None)
@given(shape=_shapes(_CELLS), width=st.integers(min_value=8, max_value=120), markup=st.booleans())
def test_print_table_prints_what_rich_prints(shape: _Shape, width: int, markup: bool) -> None:
    assert _printed(width, markup, True, shape) == _printed(width, markup, False, shape)


@settings(max_examples=100, deadline=None)
@given(shape=_shapes(st.just(st.text(alphabet=_PLAN_CHARS.replace(":", ""), max_size=12)), st.just("t")))
def test_a_table_of_plain_cells_that_fits_takes_the_fast_path(shape: _Shape) -> None:
    assert plain_lines(_table(shape), width=10_000) is not None


def test_a_colour_console_gets_rich_table() -> None:
    shape = _Shape("t", [("λ req/s", "r")], [([Text("1.00", style="red")], False)])
    console = Console(file=io.StringIO(), width=80, color_system="truecolor", force_terminal=True)
    print_table(console, _table(shape))
    assert "\x1b[31m" in console.file.getvalue()  # type: ignore[attr-defined]  # the red of the cell


def test_a_capacity_plans_tables_take_the_fast_path() -> None:
    result = plan(load_spec(REPO_ROOT / "stacks" / "minimal.yaml"))
    for table in (plan_report._capacity_table(result.pools), plan_report._load_table(result.pools)):
        lines = table.lines(PIPE_WIDTH)
        assert lines is not None, table.title
        assert plain_lines(table.rich(), PIPE_WIDTH) == lines, table.title
