"""What every command shares: the report-format options and the one way a command fails.

Its own module so that commands registered from their own files (``finops``) take the same
``--json``/``--format`` pair and fail the same way as those in ``cli`` without importing it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, NoReturn

import typer

# A flag's metavar: typer would show ``<bool>`` after a flag, which takes no value.
FLAG = ""
JsonFlag = Annotated[
    bool, typer.Option("--json", help="Emit machine-readable JSON on stdout (--format json)", metavar=FLAG)
]


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


# Every command that prints a report takes both spellings: --format FORMAT, and --json for --format json
# (tests/commands/test_cli_ci.py holds each command to it).
FormatOption = Annotated[
    OutputFormat | None, typer.Option("--format", help="table for people, json for machines (--json is the same)")
]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code`` (2: bad input, 1: the check found a problem)."""
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True, highlight=False, soft_wrap=True).print(Text.assemble(("error: ", "bold red"), message))
    raise typer.Exit(code)


def json_wanted(as_json: bool, fmt: OutputFormat | None) -> bool:
    """Whether the report goes out as JSON; --json with --format table is refused."""
    if as_json and fmt is OutputFormat.TABLE:
        fail("--json and --format table ask for two formats; give one")
    return as_json or fmt is OutputFormat.JSON
