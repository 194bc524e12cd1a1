"""The core's exceptions, in one tree.

    TokenplaneError
    └── SpecError            a spec, config.json or CLI value is invalid (also a ValueError)
        ├── SpecLoadError    a spec file failed to load; carries every issue at once
        └── CatalogError     a GPU, instance type or model preset is unknown

Every message names the offending key and value, says what is allowed, and
how to fix it. The CLI prints ``str(error)`` and exits 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class TokenplaneError(Exception):
    """Base class of every error the core raises on purpose."""


class SpecError(TokenplaneError, ValueError):
    """A spec, or a value standing in for part of one, is invalid.

    Also a ``ValueError``, so that pydantic reports one raised inside a spec
    validator (an unknown GPU, an unsupported cron) at the field's position.
    """


class CatalogError(SpecError):
    """A name is not in the catalog; the message lists the names that are."""


@dataclass(frozen=True)
class Issue:
    """One problem in a spec file, located as precisely as the source allows."""

    path: str
    message: str
    file: str = "<spec>"
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}:{self.column or 1}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class SpecLoadError(SpecError):
    """A spec file is invalid. ``issues`` holds every problem, not only the first."""

    def __init__(self, issues: Sequence[Issue]) -> None:
        self.issues = list(issues)
        count = len(self.issues)
        head = f"{count} problem{'s' if count != 1 else ''} in the spec:"
        super().__init__("\n".join([head, *(f"  {issue}" for issue in self.issues)]))
