"""``tokenplane finops LEDGER``: what each tenant cost, the idle share, planned vs actual $ per 1M tokens.

LEDGER is a ClickHouse URL (the cluster's store, or the dev stack's metering consumer) or a chDB directory
(what ``tokenplane simulate --events`` writes). The command is registered in ``tokenplane.commands.cli``; its code is
here so that the CLI module stays a list of commands. Heavy imports (chDB, the ledger) happen inside it.
Its annotations are evaluated, not strings, as in ``cli``: typer reads the signature on every run of any command.
"""

import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from tokenplane.commands.cli_options import FormatOption, JsonFlag, json_wanted
from tokenplane.commands.cli_options import fail as _fail

LedgerArg = Annotated[
    str,
    typer.Argument(
        help="The ledger: a ClickHouse URL (http://user:password@host:8123/db, or the dev stack's consumer) "
        "or a chDB directory (what simulate --events writes)",
        show_default=False,
    ),
]


def _epoch(flag: str, text: str) -> int:
    """``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM`` (UTC) to epoch seconds."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        _fail(f"{flag} {text!r} is not a date; write YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC), e.g. 2026-01-05")
    return int(when.replace(tzinfo=when.tzinfo or UTC).timestamp())


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def finops(
    ledger: LedgerArg,
    since: Annotated[
        str | None, typer.Option("--from", help="Start, YYYY-MM-DD[THH:MM] UTC (default: the ledger's first hour)")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--to", help="End, exclusive (default: after the ledger's last hour)")
    ] = None,
    as_json: JsonFlag = False,
    fmt: FormatOption = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write an HTML page of plots here, e.g. finops.html")
    ] = None,
    budgets: Annotated[
        Path | None,
        typer.Option("--budgets", help="Check SPEC's platform and tenant monthly budgets at the period's end"),
    ] = None,
) -> None:
    """The chargeback of LEDGER: per tenant, pool and hour, with idle capacity on its own line."""
    as_json = json_wanted(as_json, fmt)
    from tokenplane.errors import SpecError
    from tokenplane.serving.finops import queries, report
    from tokenplane.serving.finops.errors import StoreError

    try:
        store = queries_store(ledger)
    except (StoreError, ImportError) as e:
        _fail(str(e))
    try:
        span = queries.extent(store)
        if span is None and (since is None or until is None):
            _fail(f"the ledger at {ledger} holds no usage or capacity yet; run traffic or simulate --events first")
        start = _epoch("--from", since) if since else span.start  # type: ignore[union-attr]  # checked above
        end = _epoch("--to", until) if until else span.end  # type: ignore[union-attr]  # checked above
        if end <= start:
            _fail(f"--to must be after --from (got {since} to {until})")
        data = _finite(report.build(store, queries.Period(start, end)).to_json())
        if budgets is not None:
            data["budgets"] = _budgets(store, budgets, end)
    except (StoreError, SpecError) as e:
        _fail(str(e))
    finally:
        store.close()
    if html is not None:
        from tokenplane.commands.finops_report import finops_html

        try:
            html.write_text(finops_html(data), encoding="utf-8")
        except OSError as e:
            _fail(f"--html {html}: cannot write the page ({e.strerror}); pick a writable path")
        except SpecError as e:
            _fail(str(e))
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")
        return
    from tokenplane.commands.finops_report import print_finops
    from tokenplane.tables import console_for_output

    console = console_for_output()
    print_finops(data, console)
    for status in data.get("budgets", []):
        verdict = status["level"] or "within budget"
        console.print(f"budget {verdict}: {status['message']}")
    if html is not None:
        typer.echo(f"report written to {html}")


def _budgets(store: Any, spec_path: Path, end: int) -> list[dict[str, Any]]:
    """Each budget of the spec as of the period's last second (a simulated day: its end)."""
    from tokenplane.load import load_spec
    from tokenplane.serving.finops.budgets import statuses

    return [s.to_json() for s in statuses(store, load_spec(spec_path), end - 1)]


def queries_store(ledger: str) -> Any:
    """The ledger, opened (and migrated: an older ledger gains the newer tables)."""
    from tokenplane.serving.finops.store import open_store

    if not ledger.startswith(("http://", "https://")) and not Path(ledger).is_dir():
        _fail(f"no ledger at {ledger}: give a chDB directory that exists, or a ClickHouse URL (http://host:8123)")
    return open_store(ledger)
