"""Human (a page of tables, rich on a terminal) and machine (JSON) views of plans and sizes.

A capacity plan prints on a ``Page``, which imports rich only where the output needs it: a plan piped to a
file or a CI log, and every ``--json``, never do (issue 28: plan speed). The other views print with rich.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from tokenplane.catalog import GIB
from tokenplane.model.planner import Plan, PoolPlan
from tokenplane.model.platform_attainment import ClassOverPlatform
from tokenplane.model.sizing import SizeResult
from tokenplane.tables import Page, PlainTable, console_for_output, fmt_num, print_table, simple_table

if TYPE_CHECKING:
    from rich.console import Console

    from tokenplane.sim.verify import PoolCheck, Verification


def _ms(value: float) -> str:
    return fmt_num(value, 0) if value >= 10 or not math.isfinite(value) else fmt_num(value, 1)


def plan_json(result: Plan) -> dict[str, Any]:
    return {
        "summary": result.summary(),
        "pools": [_pool_json(p) for p in result.pools],
        "providers": [asdict(s) | {"cls": s.cls.value, "tier": s.tier.value} for s in result.spills],
        "platform_attainment": platform_json(result.platform_attainment.values()),
        "violations": [asdict(v) for v in result.violations],
        "warnings": [asdict(w) for w in result.warnings],
        "notes": list(result.notes),
    }


def platform_json(classes: Iterable[ClassOverPlatform]) -> list[dict[str, Any]]:
    """Each class over the platform: its attainment, and the shares its pools, providers and nowhere take."""
    return [
        {
            "cls": c.cls.value,
            "target": c.target,
            "attainment": round(c.attainment, 6),
            "met": c.met,
            "pooled_share": round(c.share(c.pooled_rps), 6),
            "pooled_attainment": None if c.pooled_attainment is None else round(c.pooled_attainment, 6),
            "provider_missed_share": round(c.share(c.provider_missed_rps), 6),
            "unrouted_share": round(c.share(c.unrouted_rps), 6),
            "ceiling": round(c.ceiling, 6),
            "providers": [
                {
                    "provider": p.provider.name,
                    "ttft_ms": p.provider.latency.ttft_ms,
                    "slo_ttft_ms": c.ttft_slo_ms,
                    "share": round(c.share(p.rps), 6),
                    "missed_share": round(c.share(p.missed_rps), 6),
                    "routes": [{"region": region, "tier": tier.value} for region, tier in p.routes],
                }
                for p in c.providers
            ],
        }
        for c in classes
    ]


def _platform_table(classes: Iterable[ClassOverPlatform], title: str) -> PlainTable:
    table = PlainTable(
        title,
        [
            ("class", "l"),
            ("attainment / target", "r"),
            ("pools: share (attainment)", "r"),
            ("providers: share (missed)", "r"),
            ("unrouted", "r"),
            ("at most", "r"),
        ],
    )
    for c in classes:
        pooled = "-" if c.pooled_attainment is None else f"{c.pooled_attainment:.2%}"
        table.add_row(
            c.cls.value,
            (f"{c.attainment:.2%} / {c.target:.2%}", "" if c.met else "red"),
            f"{c.share(c.pooled_rps):.2%} ({pooled})",
            f"{c.share(c.provider_rps):.2%} ({c.share(c.provider_missed_rps):.2%})",
            f"{c.share(c.unrouted_rps):.2%}",
            f"{c.ceiling:.2%}",
        )
    return table


def calibrated_pools(result: Plan) -> dict[str, str]:
    """Each calibrated pool's name and the file its timing came from (a pool runs in several regions, named once)."""
    return {p.name: p.calibration for p in result.pools if p.calibration is not None}


def _server_term(p: PoolPlan) -> str:
    """Where a calibrated pool's per-request server term came from: its file, or the default an older file keeps."""
    if p.api_per_stream_measured:
        return f"server work {p.api_per_stream_ms:.2f} ms per stream beside a first token, measured"
    return (
        f"server work {p.api_per_stream_ms:.2f} ms per stream beside a first token, the default (the file predates its "
        "measurement: calibrate again to measure it)"
    )


def _pool_json(p: PoolPlan) -> dict[str, Any]:
    out = asdict(p)
    out.pop("at_needed")  # the model's internals at replicas_needed: --verify reports what matters of it
    out["ttft_p95_ms"] = p.ttft_p95_ms
    out["service_rps"] = p.service_rps
    return out


def _by_region(pools: list[PoolPlan]) -> list[list[PoolPlan]]:
    groups: dict[str, list[PoolPlan]] = {}
    for pool in pools:
        groups.setdefault(pool.region, []).append(pool)
    return list(groups.values())


def _capacity_table(pools: list[PoolPlan]) -> PlainTable:
    table = PlainTable(
        "memory and latency at peak (at max replicas)",
        [
            ("region", "l"),
            ("pool", "l"),
            ("tier/isolation", "l"),
            ("GPUs per replica", "l"),
            ("weights/KV GiB", "r"),
            ("KV tokens", "r"),
            ("max conc.", "l"),
            ("TTFT p50/p95 ms", "r"),
            ("ITL p50/p95 ms", "r"),
            ("timing", "l"),
        ],
    )
    for group in _by_region(pools):
        for i, p in enumerate(group):
            ttft50 = max((c.ttft_p50_ms for c in p.classes.values()), default=0.0)
            table.add_row(
                f"{p.region} ({p.jurisdiction})" if i == 0 else "",
                p.name,
                f"{p.tier}/{p.isolation}",
                f"{p.gpu} x{p.gpus_per_replica} (TP{p.tp} PP{p.pp})",
                f"{p.weights_gib:.1f}/{p.kv_gib:.1f}",
                f"{p.kv_tokens:,}",
                " ".join(f"{c}:{fmt_num(v.max_concurrency, 0)}" for c, v in p.classes.items()),
                f"{_ms(ttft50)}/{_ms(p.ttft_p95_ms)}",
                f"{_ms(p.itl_p50_ms)}/{_ms(p.itl_p95_ms)}",
                "calibrated" if p.calibration else "datasheet",
                end_section=i == len(group) - 1,
            )
    return table


def _load_table(pools: list[PoolPlan]) -> PlainTable:
    table = PlainTable(
        "queue and cost at peak",
        [
            ("region", "l"),
            ("pool", "l"),
            ("λ req/s", "r"),
            ("μ req/s", "r"),
            ("ρ", "r"),
            ("wait p95 ms", "r"),
            ("replicas need/min/max", "r"),
            ("$/h", "r"),
            ("$/1M tok (provider)", "r"),
        ],
    )
    for group in _by_region(pools):
        for i, p in enumerate(group):
            provider = (
                f" ({fmt_num(p.provider_usd_per_million_tokens, 2)})" if p.provider_usd_per_million_tokens else ""
            )
            style = "red" if p.utilization >= 1 else ("yellow" if p.utilization > 0.85 else "")
            table.add_row(
                p.region if i == 0 else "",
                p.name,
                fmt_num(p.arrival_rps, 2),
                fmt_num(p.service_rps, 1),
                (fmt_num(p.utilization, 2), style),
                _ms(p.queue_wait_p95_ms),
                f"{p.replicas_needed}/{p.min_replicas}/{p.max_replicas}",
                fmt_num(p.usd_per_hour, 2),
                f"{fmt_num(p.usd_per_million_tokens, 3)}{provider}",
                end_section=i == len(group) - 1,
            )
    return table


def print_plan(result: Plan, console: Console | None = None) -> None:
    """The capacity plan's tables and findings, on ``console`` if given, else on stdout (a ``Page``)."""
    page = Page(console)
    page.table(_capacity_table(result.pools))
    page.table(_load_table(result.pools))
    if result.spills:
        spill = PlainTable(
            "traffic to external providers",
            [(c, "l") for c in ("region", "class", "tier", "provider")] + [("req/s", "r")],
        )
        for s in result.spills:
            spill.add_row(s.region, s.cls.value, s.tier.value, s.provider, fmt_num(s.rps, 2))
        page.table(spill)
    if result.platform_attainment:
        title = (
            "SLO attainment per class over the platform (pools at replicas needed; providers at their stated latency)"
        )
        page.table(_platform_table(result.platform_attainment.values(), title))
    summary = result.summary()
    page.line(
        (str(summary["platform"]), "bold"),
        f": {summary['pools']} pools in {summary['regions']} regions; "
        f"{summary['gpus_needed']} GPUs needed at peak ({summary['gpus_max']} at max replicas); "
        f"${summary['usd_per_hour']:,.2f}/h at peak, ${summary['usd_per_hour_max']:,.2f}/h at max "
        f"({summary['worst_case_scenario']}; budget ${summary['budget_usd_per_hour']:,.2f}/h); "
        f"highest ρ {summary['max_utilization']}",
    )
    by_name = {p.name: p for p in result.pools}  # a pool's timing is the same in every region it runs in
    for pool, source in calibrated_pools(result).items():
        page.line(
            ("calibrated ", "cyan"), f"pool {pool}: iteration costs measured in {source}; {_server_term(by_name[pool])}"
        )
    for note in result.notes:
        page.line(("note ", "cyan"), note)
    for w in result.warnings:
        page.line(("warning ", "yellow"), f"[{w.kind}] {w.message}")
    for v in result.violations:
        page.line(("violation ", "red"), f"[{v.kind}] {v.message}")
    if result.ok:
        page.line(("plan ok", "green"))
    else:
        page.line((f"{len(result.violations)} violation(s)", "red"))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _signed(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:+.0%}"


def _fewer(p: PoolCheck) -> str:
    if p.fewer_met is None:
        return "-"
    return f"{p.fewer_replicas}: {'met' if p.fewer_met else 'missed'}"


def verification_json(checked: Verification) -> dict[str, Any]:
    return {
        "ok": checked.ok,
        "fidelity": checked.fidelity,
        "pools": [asdict(p) for p in checked.pools],
        "platform_attainment": platform_json(checked.platform_attainment.values()),
    }


def print_verification(checked: Verification, console: Console | None = None) -> None:
    """Each pool's simulated SLO attainment per class at its planned peak, beside the planner's figures."""
    from rich.text import Text

    console = console or console_for_output()
    table = simple_table(
        "verify: each pool simulated at its planned peak with replicas_needed",
        [
            ("region", "l"),
            ("pool", "l"),
            ("replicas", "r"),
            ("ρ plan/sim", "r"),
            ("class", "l"),
            ("attainment sim (plan) / target", "r"),
            ("TTFT p95 ms plan/sim", "r"),
            ("Δ", "r"),
            ("preempt.", "r"),
            ("at -10% replicas", "r"),
        ],
    )
    for p in checked.pools:
        for i, c in enumerate(p.classes):
            style = "" if c.met else "red"
            table.add_row(
                p.region if i == 0 else "",
                p.pool if i == 0 else "",
                str(p.replicas) if i == 0 else "",
                f"{p.planned_rho:.2f}/{p.rho:.2f} ({_signed(p.rho_agreement)})" if i == 0 else "",
                c.name,
                Text(
                    f"{_pct(c.attainment)} ({_pct(c.planned_attainment)}) / {c.target:.0%} ±{c.tolerance:.1%}",
                    style=style,
                ),
                f"{_ms(c.planned_ttft_p95_ms)}/{_ms(c.ttft_p95_ms) if c.ttft_p95_ms is not None else '-'}",
                _signed(c.agreement),
                str(p.preemptions) if i == 0 else "",
                _fewer(p) if i == 0 else "",
                end_section=i == len(p.classes) - 1,
            )
    console.print(table)
    console.print(Text(f"fidelity: {checked.fidelity}"))
    if checked.platform_attainment:
        # The planner's verdict weighs the same requests with the model's pool attainments: they differ where pools do.
        title = (
            "verify: SLO attainment per class over the platform (pools as simulated; providers at their stated latency)"
        )
        print_table(console, _platform_table(checked.platform_attainment.values(), title).rich())
    missed = [f"{p.region}/{p.pool} class {c.name}" for p in checked.pools for c in p.classes if not c.met]
    if missed:
        console.print(
            Text.assemble(("verify failed: ", "red"), "below slo_attainment in simulation: " + ", ".join(missed))
        )
    else:
        # It judges the pools: a class's traffic sent to providers is the plan's `slo` warning, if any.
        console.print(Text("verify ok: every class reaches its slo_attainment in every pool", style="green"))


def print_size(result: SizeResult, console: Console | None = None) -> None:
    """One replica's memory, the rows named as vLLM's startup log names them, to compare line by line."""
    from rich.table import Table
    from rich.text import Text

    console = console or console_for_output()
    r, m = result.request, result.memory
    table = Table(title=f"{r.model_name} on {r.gpu.name}, TP={r.tp} PP={r.pp}", title_justify="left", show_header=False)
    table.add_column("item")
    table.add_column("value", justify="right")
    table.add_column("note")
    rows = [
        ("parameters", f"{r.arch.params_total / 1e9:,.2f} B ({r.arch.params_active / 1e9:,.2f} B active)", ""),
        ("weights / KV dtype", f"{r.quantization.value} / {r.kv_cache_dtype.value}", r.weights.description),
        ("vLLM release", r.vllm_version, "its memory accounting sizes the rows below (--vllm-version)"),
        ("GPU memory (as CUDA reports)", f"{m.gpu_total / GIB:.2f} GiB", ""),
        (f"budget x {r.gpu_memory_utilization}", f"{m.budget / GIB:.2f} GiB", "requested memory"),
    ]
    rows += [(line.label, line.text(), line.note) for line in result.vllm_log_lines()]
    rows.append(
        ("KV bytes per token (model / per GPU)", f"{result.kv_bytes_per_token:,} / {m.kv_bytes_per_token:,}", "")
    )
    for item, value, note in rows:
        table.add_row(item, value, note)
    console.print(table)
    for warning in m.warnings:
        console.print(
            Text.assemble(("warning: ", "yellow"), f"{warning}; the KV figures above are not validated for it")
        )
    if result.fits:
        console.print(Text("fits", style="green"))
    else:
        console.print(Text.assemble(("does not fit: ", "red"), result.reason or ""))
