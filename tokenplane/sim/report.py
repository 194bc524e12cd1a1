"""Human views of a workbench run: rich tables for the terminal and a self-contained HTML page of plots.

Both read ``summarize``'s plain data, so the tables, the HTML and ``--json``
always show the same numbers. matplotlib is imported only when a page is
written (with the Agg backend: no display needed), and its figures are inlined
as SVG so that the page is one file.
"""

from __future__ import annotations

import html
import io
import math
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tokenplane.errors import SpecError
from tokenplane.tables import console_for_output, fmt_num, simple_table

TIMELINE_ROWS = 8  # instants in the terminal's replicas-over-time table; the HTML page plots every period
PLOT_POINTS = 600  # steps per line in a timeline: a day has 5,760 periods, more than a plot's pixels
BURST_ZOOM_S = 900.0  # the zoomed burst plot shows 15 minutes either side of it
HTML_POOLS = 12  # pools in the burst zoom (one axis for every region), busiest first: more lines would not be legible
PANEL_COLUMNS = 3  # the timelines are small multiples, one panel per region, this many across
# A series' look: ten well-separated colours, then the same ten dashed, dotted, dash-dotted: 40 series before a
# look repeats, and a panel or legend never holds that many.
_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
_DASHES = ("-", "--", ":", "-.")


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return fmt_num(value, 0) if value >= 10 else fmt_num(value, 1)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _latency_table(summary: dict[str, Any]) -> Table:
    table = simple_table(
        "latency per pool and class (ms; P50/P95/P99 of served requests)",
        [
            ("pool", "l"),
            ("class", "l"),
            ("requests", "r"),
            ("TTFT", "r"),
            ("ITL", "r"),
            ("E2E", "r"),
            ("queue mean/p95", "r"),
            ("shed", "r"),
            ("SLO met", "r"),
            ("goodput req/s", "r"),
        ],
    )

    def row(where: str, cls: str, s: dict[str, Any], end: bool) -> None:
        table.add_row(
            where,
            cls,
            f"{s['requests']:,}",
            "/".join(_ms(s[f"ttft_p{q}_ms"]) for q in (50, 95, 99)),
            "/".join(_ms(s[f"itl_p{q}_ms"]) for q in (50, 95, 99)),
            "/".join(_ms(s[f"e2e_p{q}_ms"]) for q in (50, 95, 99)),
            f"{_ms(s['queue_mean_ms'])}/{_ms(s['queue_p95_ms'])}",
            Text(f"{s['shed']:,}", style="red" if s["shed"] else ""),
            _pct(s["slo_attainment"]),
            fmt_num(s["goodput_rps"], 2),
            end_section=end,
        )

    for pool in summary["pools"]:
        classes = list(pool["classes"].items())
        for i, (cls, s) in enumerate(classes):
            row(f"{pool['region']}/{pool['pool']}" if i == 0 else "", cls, s, i == len(classes) - 1)
    for provider in summary["providers"]:
        classes = list(provider["classes"].items())
        for i, (cls, s) in enumerate(classes):
            row(f"provider {provider['provider']}" if i == 0 else "", cls, s, i == len(classes) - 1)
    classes = list(summary["classes"].items())
    for i, (cls, s) in enumerate(classes):
        row("all" if i == 0 else "", cls, s, False)
    return table


def _pool_table(summary: dict[str, Any]) -> Table:
    table = simple_table(
        "pools: utilization, KV cache, replicas and cost",
        [
            ("pool", "l"),
            ("ρ mean/max", "r"),
            ("KV mean/max", "r"),
            ("replicas start/min/max/end", "r"),
            ("started (cold)", "r"),
            ("preempted", "r"),
            ("failover", "r"),
            ("$/h", "r"),
            ("$/1M tok", "r"),
        ],
    )
    for p in summary["pools"]:
        r = p["replicas"]
        rho_max = p["rho_max"]
        style = "red" if rho_max is None or rho_max >= 1 else ("yellow" if rho_max > 0.85 else "")
        table.add_row(
            f"{p['region']}/{p['pool']}",
            Text(f"{p['utilization']:.2f}/{fmt_num(rho_max, 2) if rho_max is not None else '∞'}", style=style),
            f"{p['kv_usage_mean']:.0%}/{p['kv_usage_max']:.0%}",
            f"{r['start']}/{r['min']}/{r['max']}/{r['end']}",
            f"{r['started']} ({r['cold_starts']})",
            f"{p['preemptions']:,}",
            f"{p['failover']:,}",
            fmt_num(p["usd_per_hour"], 2),
            "-" if p["usd_per_million_tokens"] is None else fmt_num(p["usd_per_million_tokens"], 3),
        )
    return table


def _timeline_table(summary: dict[str, Any]) -> Table:
    times: list[float] = summary["timeline"]["t_s"]
    picks = sorted({round(i * (len(times) - 1) / max(1, TIMELINE_ROWS - 1)) for i in range(TIMELINE_ROWS)})
    picks = [i for i in picks if i < len(times)]
    table = simple_table(
        "ready replicas over time (+ starting)",
        [("pool", "l")] + [(_clock(summary, times[i]), "r") for i in picks],
    )
    for key, series in summary["timeline"]["pools"].items():
        if not any(series["arrival_rps"]) and series["ready"] and min(series["ready"]) == max(series["ready"]):
            continue  # an idle standby at its floor all run long says nothing over time
        cells = []
        for i in picks:
            starting = int(series["starting"][i])
            cells.append(f"{int(series['ready'][i])}" + (f" +{starting}" if starting else ""))
        table.add_row(key, *cells)
    return table


def _audit_table(summary: dict[str, Any]) -> Table:
    table = simple_table(
        "λ < μ audit over time",
        [
            ("pool", "l"),
            ("stable", "l"),
            ("ρ max", "r"),
            ("unstable s", "r"),
            ("first unstable", "r"),
            ("queue max", "r"),
            ("queue growth max req/s", "r"),
        ],
    )
    for a in summary["audit"]:
        if a["rho_max"] == 0:
            continue
        table.add_row(
            f"{a['region']}/{a['pool']}",
            Text("yes" if a["stable"] else "no", style="" if a["stable"] else "red"),
            "∞" if a["rho_max"] is None else fmt_num(a["rho_max"], 2),
            fmt_num(a["unstable_seconds"], 0),
            "-" if a["first_unstable_s"] is None else _clock(summary, a["first_unstable_s"]),
            f"{a['queue_max']:,}",
            fmt_num(a["queue_growth_max_rps"], 1),
        )
    return table


def _clock(summary: dict[str, Any], t_s: float) -> str:
    start = summary["config"]["start"]
    hours, minutes = (int(x) for x in start.split()[-1].split(":"))
    total = hours * 3600 + minutes * 60 + int(t_s)
    return f"{total // 3600 % 24:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def print_simulation(summary: dict[str, Any], console: Console | None = None) -> None:
    """The run as tables: latency per pool and class, pools, replicas over time, the audit and the cost."""
    console = console or console_for_output()
    console.print(_latency_table(summary))
    console.print(_pool_table(summary))
    console.print(_timeline_table(summary))
    console.print(_audit_table(summary))
    req, cost, cfg = summary["requests"], summary["cost"], summary["config"]
    bursts = f", bursts {' '.join(cfg['bursts'])}" if cfg["bursts"] else ""
    console.print(
        Text.assemble(
            (summary["platform"], "bold"),
            f": {cfg['duration_s']:,.0f} s from {cfg['start']} at {cfg['rps']:,.0f} req/s peak ({cfg['profile']}"
            f"{bursts}, seed {cfg['seed']}); {req['platform']:,} requests ({req['cache_hits']:,} cache hits, "
            f"{req['to_providers']:,} to providers, {req['failover']:,} failed over, {req['shed']:,} shed, "
            f"{req['in_flight']:,} in flight at the end) + {req['embedding_calls']:,} embedding calls",
        )
    )
    console.print(
        f"cost ${cost['usd']:,.2f} = ${cost['usd_per_hour']:,.2f}/h (pools ${cost['pools_usd_per_hour']:,.2f}/h, "
        f"providers ${cost['providers_usd_per_hour']:,.2f}/h); "
        f"${fmt_num(cost['usd_per_million_tokens'] or math.inf, 3)} per 1M tokens served"
    )
    unstable = [a for a in summary["audit"] if not a["stable"]]
    verdict = (
        Text(f"λ ≥ μ in {len(unstable)} pool(s)", style="red") if unstable else Text("λ < μ throughout", style="green")
    )
    console.print(
        Text.assemble(
            verdict,
            f"; simulated {req['simulated']:,} requests in {summary['wall_seconds']:.2f} s "
            f"({req['simulated_per_wall_second'] or 0:,.0f} per second); fidelity: {summary['fidelity']['note']}",
        )
    )


# --- HTML --------------------------------------------------------------------------------------


def _svg(figure: Any) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def downsample(times: list[float], values: list[float], points: int) -> tuple[list[float], list[float]]:
    """At most ``points`` steps: each bucket of consecutive samples keeps its largest value, so peaks stay."""
    if len(values) <= points:
        return list(times), list(values)
    size = math.ceil(len(values) / points)
    xs = [times[i] for i in range(0, len(values), size)]
    ys = [max(values[i : i + size]) for i in range(0, len(values), size)]
    return xs, ys


def _finish(ax: Any, key: str, xlabel: str, ylabel: str) -> None:
    if key == "rho":
        ax.axhline(1.0, color="red", linestyle="--", linewidth=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)


def series_styles(names: list[str]) -> dict[str, tuple[str, str]]:
    """A (colour, line style) for each name, all different while there are at most 40 names.

    Raises:
        ValueError: more names than distinct styles; draw them in more panels.
    """
    unique = list(dict.fromkeys(names))
    if len(unique) > len(_COLOURS) * len(_DASHES):
        raise ValueError(
            f"{len(unique)} series in one plot; at most {len(_COLOURS) * len(_DASHES)} stay tellable apart"
        )
    return {name: (_COLOURS[i % len(_COLOURS)], _DASHES[i // len(_COLOURS)]) for i, name in enumerate(unique)}


def by_region(pools: list[str]) -> dict[str, list[str]]:
    """``region/pool`` keys grouped by region, in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for key in pools:
        region, _, _pool = key.rpartition("/")
        groups.setdefault(region or "-", []).append(key)
    return groups


def _small_multiples(
    plt: Any, pools: dict[str, Any], key: str, ts: list[float], unit: str, scale: float, ylabel: str
) -> Any:
    """One panel per region, every pool drawn; a pool's look is the same in every panel, and one legend."""
    groups = by_region(list(pools))
    styles = series_styles([k.rpartition("/")[2] for k in pools])
    cols = min(PANEL_COLUMNS, len(groups))
    rows = math.ceil(len(groups) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.3 * cols, 2.4 * rows + 0.6), sharex=True, sharey=True, squeeze=False
    )
    for ax, (region, keys) in zip(axes.flat, groups.items(), strict=False):
        for k in keys:
            xs, ys = downsample(ts, pools[k][key], PLOT_POINTS)
            colour, dash = styles[k.rpartition("/")[2]]
            ax.step([x / scale for x in xs], ys, where="post", color=colour, linestyle=dash, linewidth=1.2)
        if key == "rho":
            ax.axhline(1.0, color="red", linestyle="--", linewidth=1)
        ax.set_title(region, fontsize=9)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(groups) :]:
        ax.set_axis_off()
    for ax in axes[-1]:
        ax.set_xlabel(f"{unit} from the start", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel, fontsize=8)
    handles = [plt.Line2D([], [], color=c, linestyle=d, label=name) for name, (c, d) in styles.items()]
    fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 6), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / (2.4 * rows + 0.6)))
    return fig


def _burst_windows(summary: dict[str, Any]) -> list[tuple[float, float]]:
    """Each burst inside a run longer than the zoom: from ``BURST_ZOOM_S`` before it to as long after it."""
    cfg = summary["config"]
    duration = cfg["duration_s"]
    if duration <= 4 * BURST_ZOOM_S:
        return []
    hours, minutes = (int(x) for x in cfg["start"].split()[-1].split(":"))
    start = hours * 3600 + minutes * 60
    windows = []
    for at_s, length in zip(cfg["burst_at_s"], cfg["burst_s"], strict=True):
        offset = (at_s - start) % 86_400
        if offset < duration:
            windows.append((max(0.0, offset - BURST_ZOOM_S), min(duration, offset + length + BURST_ZOOM_S)))
    return windows


def simulation_html(summary: dict[str, Any], latencies: dict[str, list[float]]) -> str:
    """One self-contained page: TTFT CDFs per class, queue depth, replicas and cost over time.

    Args:
        summary: what ``summarize`` returns.
        latencies: TTFTs in milliseconds per class, for the CDFs.
    """
    try:
        import matplotlib
    except ImportError as e:
        raise SpecError("--report needs matplotlib: pip install 'tokenplane[viz]'") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures: list[tuple[str, str]] = []
    fig, ax = plt.subplots(figsize=(8, 4))
    class_styles = series_styles(list(latencies))
    for cls, values in latencies.items():
        if values:
            ordered = sorted(values)
            colour, dash = class_styles[cls]
            ax.plot(
                ordered,
                [(i + 1) / len(ordered) for i in range(len(ordered))],
                label=f"class {cls}",
                color=colour,
                linestyle=dash,
            )
    ax.set_xscale("log")
    ax.set_xlabel("TTFT (ms)")
    ax.set_ylabel("share of requests")
    ax.grid(True, alpha=0.3)
    ax.legend()
    figures.append(("Time to first token, CDF per class", _svg(fig)))
    plt.close(fig)

    pools = summary["timeline"]["pools"]
    busiest = sorted(pools, key=lambda k: -sum(pools[k]["arrival_rps"]))[:HTML_POOLS]
    hours = summary["config"]["duration_s"] > 2 * 3600  # a day reads in hours, a burst in minutes
    unit, scale = ("hours", 3600.0) if hours else ("minutes", 60.0)
    epoch_t: list[float] = summary["timeline"]["t_s"]
    queue_t: list[float] = summary["queue_times_s"]
    series = (
        ("Queue depth (requests waiting for admission)", "queue_depth", queue_t, "requests"),
        ("Ready replicas", "ready", epoch_t, "replicas"),
        ("Utilization ρ = λ / μ", "rho", epoch_t, "ρ"),
        ("Cost of each pool ($/h)", "usd_per_hour", epoch_t, "$/h"),
    )
    for title, key, ts, ylabel in series:
        fig = _small_multiples(plt, pools, key, ts, unit, scale, ylabel)
        figures.append((f"{title}, by region", _svg(fig)))
        plt.close(fig)
    zoom_styles = series_styles(busiest)
    for at_s, until_s in _burst_windows(summary):
        fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        for ax, key, ylabel in zip(axes, ("ready", "rho"), ("replicas", "ρ"), strict=True):
            for pool in busiest:
                picked = [(t, y) for t, y in zip(epoch_t, pools[pool][key], strict=True) if at_s <= t <= until_s]
                colour, dash = zoom_styles[pool]
                ax.step(
                    [t / 60 for t, _ in picked],
                    [y for _, y in picked],
                    where="post",
                    label=pool,
                    color=colour,
                    linestyle=dash,
                )
            _finish(ax, key, "minutes from the start", ylabel)
        label = f"{_clock(summary, at_s)} to {_clock(summary, until_s)}"
        figures.append((f"The burst, zoomed: ready replicas and ρ every period, {label}", _svg(fig)))
        plt.close(fig)

    cfg, cost, req = summary["config"], summary["cost"], summary["requests"]
    fidelity = summary["fidelity"]["note"]
    rows = "".join(
        f"<tr><td>{html.escape(cls)}</td><td>{s['requests']:,}</td><td>{_ms(s['ttft_p50_ms'])}</td>"
        f"<td>{_ms(s['ttft_p95_ms'])}</td><td>{_ms(s['ttft_p99_ms'])}</td><td>{_ms(s['itl_p50_ms'])}</td>"
        f"<td>{_ms(s['e2e_p95_ms'])}</td><td>{s['shed']:,}</td><td>{_pct(s['slo_attainment'])}</td></tr>"
        for cls, s in summary["classes"].items()
    )
    sections = "".join(f"<h2>{html.escape(title)}</h2>\n{svg}\n" for title, svg in figures)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>tokenplane simulate: {html.escape(summary["platform"])}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto;color:#222}}
table{{border-collapse:collapse}}td,th{{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}}
td:first-child,th:first-child{{text-align:left}}</style></head><body>
<h1>{html.escape(summary["platform"])}: {cfg["duration_s"]:,.0f} s at {cfg["rps"]:,.0f} req/s peak</h1>
<p>profile {html.escape(cfg["profile"])}, start {html.escape(cfg["start"])}, bursts
{html.escape(" ".join(cfg["bursts"]) or "none")}, seed {cfg["seed"]}. {req["platform"]:,} requests,
{req["shed"]:,} shed. Cost ${cost["usd_per_hour"]:,.2f}/h; ${fmt_num(cost["usd_per_million_tokens"] or math.inf, 3)}
per 1M tokens. Simulated in {summary["wall_seconds"]:.2f} s. Fidelity: {html.escape(fidelity)}.</p>
<table><tr><th>class</th><th>requests</th><th>TTFT p50</th><th>p95</th><th>p99</th><th>ITL p50</th>
<th>E2E p95</th><th>shed</th><th>SLO met</th></tr>{rows}</table>
{sections}</body></html>
"""
