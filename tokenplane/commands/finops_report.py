"""``tokenplane finops``'s views: the chargeback, the idle share, and planned vs actual $ per 1M tokens.

All three outputs (the terminal's tables, ``--json`` and the ``--html`` page) read the same
``FinopsReport.to_json()``, so they always show the same numbers.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

from rich.console import Console

from tokenplane.errors import SpecError
from tokenplane.tables import fmt_num, simple_table

TOP_TENANTS = 10  # tenants listed in the terminal; --json lists all
HOURS_PER_DAY = 24


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _per_mtok(value: float | None) -> str:
    return "-" if value is None else f"${fmt_num(value, 3)}"


def _when(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


def print_finops(data: dict[str, Any], console: Console) -> None:
    """The report as tables: bill and idle, tenants, pools, and each pool's hours of the day."""
    period = data["period"]
    console.print(
        f"period {_when(period['start'])} to {_when(period['end'])}: node bill {_usd(data['bill_usd'])}, "
        f"idle {_usd(data['idle_usd'])} ({data['idle_share']:.1%}), allocated to tenants "
        f"{_usd(data['allocated_usd'])}, provider calls {_usd(data['provider_usd'])}"
    )
    console.print(
        f"quota ledger charged {_usd(data['quota_charged_usd'])} at the planned prices for pool-served tokens; "
        f"actual used capacity {_usd(data['bill_usd'] - data['idle_usd'])} "
        f"(difference {_usd(data['quota_minus_actual_usd'])})"
    )
    tenants = simple_table(
        f"chargeback: top {TOP_TENANTS} tenants (pool share of the node bill + provider calls)",
        [
            ("tenant", "l"),
            ("requests", "r"),
            ("tokens", "r"),
            ("pools", "r"),
            ("providers", "r"),
            ("total", "r"),
            ("quota charged", "r"),
            ("charged - actual", "r"),
        ],
    )
    for t in data["tenants"][:TOP_TENANTS]:
        tenants.add_row(
            t["tenant"],
            f"{t['requests']:,}",
            f"{t['tokens']:,}",
            _usd(t["pool_usd"]),
            _usd(t["provider_usd"]),
            _usd(t["total_usd"]),
            _usd(t["charged_usd"]),
            _usd(t["reconciliation_usd"]),
        )
    tenants.add_row("(idle)", "", "", _usd(data["idle_usd"]), "", _usd(data["idle_usd"]), "", "")
    console.print(tenants)
    pools = simple_table(
        "pools: effective $ per 1M tokens, planned at peak vs actual at the measured utilization",
        [
            ("region/pool", "l"),
            ("replica-h", "r"),
            ("bill", "r"),
            ("idle", "r"),
            ("utilization", "r"),
            ("planned $/1M", "r"),
            ("actual $/1M", "r"),
        ],
    )
    for p in data["pools"]:
        pools.add_row(
            f"{p['region']}/{p['pool']}",
            fmt_num(p["replica_hours"], 1),
            _usd(p["cost_usd"]),
            _usd(p["idle_usd"]),
            f"{p['utilization']:.1%}",
            _per_mtok(p["planned_usd_per_mtok"]),
            _per_mtok(p["actual_usd_per_mtok"]),
        )
    console.print(pools)
    _print_day(data, console)
    if data["dead_letters"]:
        console.print(f"dead letters: {sum(d['records'] for d in data['dead_letters']):,} records (see --json)")
    if data["unbilled_tokens"]:
        console.print(
            f"warning: {data['unbilled_tokens']:,} tokens were served by pool-hours with no replica counts in "
            "the ledger; their capacity is missing from the bill"
        )


def _print_day(data: dict[str, Any], console: Console) -> None:
    pools = sorted({(r["region"], r["pool"]) for r in data["hours_of_day"]})
    if not pools:
        return
    table = simple_table(
        "utilization / actual $ per 1M tokens by hour of day (UTC)",
        [("hour", "l")] + [(f"{pool}", "r") for _, pool in pools],
    )
    cells = {(r["region"], r["pool"], r["hour"]): r for r in data["hours_of_day"]}
    for hour in range(HOURS_PER_DAY):
        row = [f"{hour:02d}:00"]
        for region, pool in pools:
            cell = cells.get((region, pool, hour))
            row.append("" if cell is None else f"{cell['utilization']:.0%} {_per_mtok(cell['actual_usd_per_mtok'])}")
        if any(row[1:]):
            table.add_row(*row)
    console.print(table)


def finops_html(data: dict[str, Any]) -> str:
    """One self-contained page: utilization and $ per 1M over the day per pool, and the chargeback table."""
    try:
        import matplotlib
    except ImportError as e:
        raise SpecError("--html needs matplotlib: pip install 'tokenplane[viz]'") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tokenplane.sim.report import _svg

    figures = []
    pools = sorted({(r["region"], r["pool"]) for r in data["hours_of_day"]})
    for key, title, ylabel in (
        ("utilization", "Utilization by hour of day", "tokens served / capacity"),
        ("actual_usd_per_mtok", "Actual $ per 1M tokens by hour of day (dashed: planned at peak)", "$ / 1M tokens"),
    ):
        fig, ax = plt.subplots(figsize=(8, 4))
        for region, pool in pools:
            rows = [r for r in data["hours_of_day"] if (r["region"], r["pool"]) == (region, pool)]
            xs = [r["hour"] for r in rows if r[key] is not None]
            (line,) = ax.plot(xs, [r[key] for r in rows if r[key] is not None], marker="o", label=f"{region}/{pool}")
            if key == "actual_usd_per_mtok" and rows:
                ax.axhline(rows[0]["planned_usd_per_mtok"], linestyle="--", color=line.get_color(), alpha=0.6)
        ax.set_xlabel("hour of day (UTC)")
        ax.set_ylabel(ylabel)
        if key == "actual_usd_per_mtok":
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
        figures.append((title, _svg(fig)))
        plt.close(fig)
    table = "".join(
        f"<tr><td>{html.escape(t['tenant'])}</td><td>{t['tokens']:,}</td><td>{_usd(t['pool_usd'])}</td>"
        f"<td>{_usd(t['provider_usd'])}</td><td>{_usd(t['total_usd'])}</td><td>{_usd(t['charged_usd'])}</td></tr>"
        for t in data["tenants"]
    )
    sections = "".join(f"<h2>{html.escape(title)}</h2>\n{svg}\n" for title, svg in figures)
    period = data["period"]
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tokenplane finops</title>
<style>body{{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto;color:#222}}
table{{border-collapse:collapse}}td,th{{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}}
td:first-child,th:first-child{{text-align:left}}</style></head><body>
<h1>FinOps: {html.escape(_when(period["start"]))} to {html.escape(_when(period["end"]))}</h1>
<p>Node bill {_usd(data["bill_usd"])}, of which idle {_usd(data["idle_usd"])} ({data["idle_share"]:.1%});
provider calls {_usd(data["provider_usd"])}.</p>
<h2>Chargeback</h2>
<table><tr><th>tenant</th><th>tokens</th><th>pools</th><th>providers</th><th>total</th><th>quota charged</th></tr>
{table}<tr><td>(idle)</td><td></td><td>{_usd(data["idle_usd"])}</td><td></td><td>{_usd(data["idle_usd"])}</td><td></td></tr>
</table>
{sections}</body></html>
"""
