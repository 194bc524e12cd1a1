"""``tokenplane.plain_text`` and ``Page`` print what rich prints, character for character, without importing rich."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from tests.paths import REPO_ROOT
from tokenplane.commands import plan_report
from tokenplane.load import load_spec
from tokenplane.model.planner import plan
from tokenplane.plain_text import plain_page_width, wrapped
from tokenplane.runtime_env import Var
from tokenplane.tables import PIPE_WIDTH, PlainTable

# A plan's notes and warnings (words, figures, the Greek letters, brackets that a Text does not read), runs of
# spaces, words longer than a line; and what rich alone lays out: wide and combining characters, a tab, a newline.
_PLAIN_CHARS = "abcxyz019.,/:()-$%λμρ∞[]"
_WORDS = st.lists(
    st.text(alphabet=_PLAIN_CHARS, min_size=1, max_size=12) | st.text(alphabet=" ", min_size=1, max_size=3),
    max_size=20,
).map("".join)
_HARD = st.text(alphabet=_PLAIN_CHARS + " 漢\u0301\té\n", max_size=30)


def _rich_lines(parts: list[str | tuple[str, str]], width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False, markup=False)
    console.print(Text.assemble(*parts))
    out = console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above
    assert isinstance(out, str)
    return out


def _joined(lines: list[str] | None) -> str | None:
    return None if lines is None else "".join(f"{line}\n" for line in lines)


@settings(max_examples=300, deadline=None)
@given(label=st.sampled_from(["", "note ", "warning "]), text=_WORDS | _HARD, width=st.integers(1, 40))
def test_a_wrapped_line_is_what_rich_prints(label: str, text: str, width: int) -> None:
    printed = _joined(wrapped(label + text, width))
    if printed is not None:
        assert printed == _rich_lines([(label, "cyan"), text], width)


def test_a_line_of_wide_or_control_characters_is_left_to_rich() -> None:
    assert wrapped("漢字", 10) is None
    assert wrapped("a\tb", 10) is None
    assert wrapped("a\nb", 10) is None


def test_a_long_note_wraps_where_rich_wraps_it_at_the_pipes_width() -> None:
    note = "rate limits and quotas are counted per region; " * 12 + "x" * 250 + " end "
    lines = wrapped("note " + note, PIPE_WIDTH)
    assert lines is not None and len(lines) > 4
    assert _joined(lines) == _rich_lines([("note ", "cyan"), note], PIPE_WIDTH)


_CELL = st.text(alphabet="abc019.,/λρ∞", min_size=1, max_size=8)


@settings(max_examples=100, deadline=None)
@given(
    columns=st.lists(st.tuples(_CELL, st.sampled_from("lr")), min_size=1, max_size=5),
    data=st.data(),
)
def test_a_plain_table_prints_what_rich_prints(columns: list[tuple[str, str]], data: st.DataObject) -> None:
    cell = _CELL | st.tuples(_CELL, st.sampled_from(["", "red"]))
    table = PlainTable(data.draw(_CELL), columns)
    for _ in range(data.draw(st.integers(0, 5))):
        table.add_row(
            *data.draw(st.lists(cell, min_size=len(columns), max_size=len(columns))),
            end_section=data.draw(st.booleans()),
        )
    console = Console(file=io.StringIO(), width=PIPE_WIDTH, color_system=None, highlight=False, markup=False)
    console.print(table.rich())
    printed = _joined(table.lines(PIPE_WIDTH))  # None: a title wider than the table, which rich folds
    if printed is not None:
        assert printed == console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above


def test_output_to_a_pipe_is_laid_out_without_rich_and_a_terminals_by_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(Var.FORCE_COLOR, raising=False)
    monkeypatch.delenv(Var.TTY_COMPATIBLE, raising=False)
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert plain_page_width(PIPE_WIDTH) == PIPE_WIDTH
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert plain_page_width(PIPE_WIDTH) is None


@pytest.mark.parametrize("var", [Var.FORCE_COLOR, Var.TTY_COMPATIBLE])
def test_a_pipe_that_rich_is_told_is_a_terminal_is_left_to_rich(monkeypatch: pytest.MonkeyPatch, var: Var) -> None:
    monkeypatch.setattr("sys.stdout", io.StringIO())
    monkeypatch.setenv(var, "1")
    assert plain_page_width(PIPE_WIDTH) is None


@pytest.mark.parametrize("stack", ["minimal", "dev"])
def test_a_plan_printed_to_a_pipe_is_what_a_consoles_page_prints(monkeypatch: pytest.MonkeyPatch, stack: str) -> None:
    monkeypatch.delenv(Var.FORCE_COLOR, raising=False)
    monkeypatch.delenv(Var.TTY_COMPATIBLE, raising=False)
    result = plan(load_spec(REPO_ROOT / "stacks" / f"{stack}.yaml"))
    console = Console(file=io.StringIO(), width=PIPE_WIDTH, color_system=None, highlight=False, markup=False)
    plan_report.print_plan(result, console)  # rich's lines, its tables by print_table
    piped = io.StringIO()
    monkeypatch.setattr("sys.stdout", piped)
    plan_report.print_plan(result)  # tokenplane.plain_text's
    assert piped.getvalue() == console.file.getvalue()  # type: ignore[attr-defined]
    assert "plan ok" in piped.getvalue() or "violation(s)" in piped.getvalue()


def test_a_pipe_that_cannot_write_utf8_is_left_to_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(Var.FORCE_COLOR, raising=False)
    monkeypatch.delenv(Var.TTY_COMPATIBLE, raising=False)
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    assert plain_page_width(PIPE_WIDTH) is None  # rich says how to fix the encoding, as it did
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    assert plain_page_width(PIPE_WIDTH) == PIPE_WIDTH
