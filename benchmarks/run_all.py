"""Run every serving benchmark with ``--json`` and rewrite ``BENCHMARKS.md`` from their numbers.

The benchmarks, in order: ``deployed_bench.py`` (the headline: the gateway as
deployed, two processes, every stage on, open loop, spread over repeated
windows, CPU per process), ``gateway_bench.py`` (the older shape: model gateway
in process, semantic cache off, closed loop), ``vs_litellm.py`` (against the LiteLLM proxy), ``overload.py`` (2x the
pool's capacity), ``faults.py`` (one fault at a time under load), ``fuzz.py``
(the fuzz suites at 8x their CI sizes, with the cases they tried), ``simulate_day.py``
(a day of byteion in the workbench), ``semantic_cache.py`` (the semantic cache's
lookup cost by cached answers) and ``capacity_validation.py`` (the capacity model's
error on public vLLM logs and benchmarks), ``plan_agreement.py`` (the planner against its simulator on
every pool) and ``frontdoor_targets.py`` (issue 29's targets on the
``tokenplane dev`` stack: a tenant's worst-case body, two tenants' batches) and ``plan_bench.py`` (the wall and
CPU time of ``tokenplane plan --capacity-only`` on the three stacks, cold and warm pricing cache). Each runs
as its own process under a time limit, so that one hung benchmark cannot hold
the others; a failed one is reported in the file with its last lines of output.
All of it takes about half an hour on two cores (LiteLLM alone takes minutes to start); ``--quick`` about ten.

Run: ``python benchmarks/run_all.py [--quick]`` (``make bench``); ``--only deployed_bench.py`` runs one
benchmark and rewrites its section of the existing file, leaving the others as they are.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
OUTPUT = ROOT / "BENCHMARKS.md"
RAW = ROOT / ".bench" / "last-run.json"  # the raw results, so that the Markdown can be re-rendered (--from-json)

# (script, extra args for a full run, extra args for --quick, time limit in seconds for a full run)
# (script, arguments of a full run, arguments of --quick, time limit in seconds)
BENCHMARKS: tuple[tuple[str, list[str], list[str], int], ...] = (
    ("deployed_bench.py", [], ["--rates", "300", "--windows", "2"], 420),
    ("gateway_bench.py", [], ["--seconds", "3"], 180),
    ("vs_litellm.py", [], ["--quick"], 1500),  # LiteLLM's start-up (every provider SDK) takes minutes on 2 cores
    ("overload.py", [], ["--quick"], 240),
    ("faults.py", [], ["--quick"], 720),
    ("fuzz.py", [], ["--quick"], 600),
    ("simulate_day.py", [], ["--quick"], 900),
    ("semantic_cache.py", ["--full"], ["--sizes", "10000", "--windows", "2"], 3600),  # 1M answers: ~15 min
    ("capacity_validation.py", [], [], 60),
    ("plan_agreement.py", ["--rag-seeds", "3"], [], 900),
    ("finops_bench.py", [], ["--events", "50000", "--runs", "2"], 900),
    # Needs tokenplane[cpu-engine] (vLLM's CPU build) in the running Python; fails, and says so, without it.
    ("scheduler_structure.py", [], [], 1200),
    ("server_arrivals.py", [], [], 900),  # needs tokenplane[cpu-engine] too
    ("server_cpu.py", [], ["--rounds", "1"], 600),  # and this one
    # 160 chats a phase: the P99 of fewer is one sample, and the spread between repeats hides the target.
    (
        "frontdoor_targets.py",
        ["--repeats", "3", "--seconds", "20", "--rate", "8"],
        ["--repeats", "1", "--seconds", "8"],
        900,
    ),
    # The capacity plan only: the full plan's render adds minutes at 5 runs (run plan_bench.py alone for it).
    ("plan_bench.py", ["--capacity-only"], ["--capacity-only", "--runs", "3"], 900),
    ("check_bench.py", [], ["--runs", "1"], 900),
)


def machine() -> dict[str, str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    mem_kib = next(
        int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal:")
    )
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": f"{mem_kib / 1024**2:.1f} GiB",
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
    }


def run_one(script: str, extra: list[str], limit: float) -> dict[str, object]:
    argv = [sys.executable, str(HERE / script), "--json", *extra]
    t0 = time.perf_counter()
    try:
        # Its own session: on a time-out the whole group (the stand-ins it started) goes with it.
        process = subprocess.Popen(
            argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        try:
            out, err = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 15)
            try:
                out, err = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                out, err = process.communicate()
            return {
                "error": f"timed out after {limit:.0f} s",
                "tail": err.decode(errors="replace")[-1500:],
                "seconds": time.perf_counter() - t0,
            }
    finally:
        pass
    seconds = time.perf_counter() - t0
    if process.returncode != 0:
        return {
            "error": f"exited with {process.returncode}",
            "tail": err.decode(errors="replace")[-1500:],
            "seconds": seconds,
        }
    text = out.decode()
    try:
        return {"result": json.loads(text[text.index("{") :]), "seconds": seconds}
    except ValueError as e:
        return {"error": f"no JSON on stdout: {e}", "tail": text[-1500:], "seconds": seconds}


def f(value: object, digits: int = 1) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def statuses(s: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(s.items())) or "none"


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + " --- |" * len(head),
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
    ]


def gateway_section(r: dict[str, Any]) -> list[str]:
    rows = [
        ["closed-loop throughput", f"{f(r['closed_loop_rps'], 0)} req/s"],
        ["requests/s per gateway core", f(r["rps_per_core"], 0)],
        ["engine direct P50 / P99", f"{f(r['direct_p50_ms'], 2)} / {f(r['direct_p99_ms'], 2)} ms"],
        ["via gateway P50 / P99", f"{f(r['gateway_p50_ms'], 2)} / {f(r['gateway_p99_ms'], 2)} ms"],
        ["added P50 / P99", f"{f(r['added_p50_ms'], 2)} / {f(r['added_p99_ms'], 2)} ms"],
    ]
    return table(["measure", "value"], rows)


def _range(x: dict[str, float], digits: int = 2) -> str:
    return f"{f(x['median'], digits)} ({f(x['min'], digits)}-{f(x['max'], digits)})"


SHAPE_LABELS = {
    "deployed": "deployed (headline)",
    "in-process": "in-process model gateway (old shape)",
    "floor": "floor: two pass-through proxies, no stages",
}


def deployed_section(r: dict[str, Any]) -> list[str]:
    mix = r["mix"]
    lines = [
        f"Open loop, each latency from the request's scheduled send; {r['windows']} rounds of {f(r['window_seconds'], 0)} s "
        "per rate, each round the engine alone then each gateway, back to back; median (range) over the rounds.",
        f"Mix: {mix['exact_share']:.0%} `temperature: 0` over {mix['faq_prompts']} repeated prompts (exact cache, Redis), "
        f"{mix['paraphrase_share']:.0%} near-repeats (semantic cache), the rest new prompts; {mix['stream_share']:.0%} streamed; "
        f"engine completions {mix['engine_output_tokens']} tokens of `max_tokens` {mix['max_tokens']} (the TPM reconcile runs). "
        "Every stage on: auth, limits and quota (one Redis round trip each way), exact and semantic cache "
        "(embedding pool over HTTP, embedded HNSW index), admission, model gateway, Kafka metering, metrics.",
        "Req per gateway CPU-s: requests served over the CPU seconds of the gateway processes (AI gateway + model "
        "gateway); Redis, the broker, the engines and the load generator are counted apart (ms per request). "
        "Load: the machine's 1-minute load average during the windows.",
        "The floor is the same two hops as pass-through proxies on the same stack (uvicorn with httptools on uvloop, "
        "aiohttp to the next hop; `benchmarks/bare_proxy.py`), no stage at all: what any Python gateway of this "
        "shape pays per request before it does anything.",
        "",
    ]
    rows = []
    for shape, by_rate in r["shapes"].items():
        label = SHAPE_LABELS.get(shape, shape)
        for rate, x in by_rate.items():
            cpu = ", ".join(f"{k} {v:.2f}" for k, v in x["cpu_per_request_ms"].items())
            rows.append(
                [
                    label,
                    rate,
                    f(x["achieved_rps"]["median"], 0),
                    _range(x["added_p50_ms"]),
                    _range(x["added_p99_ms"]),
                    _range(x["req_per_gateway_cpu_s"], 0),
                    cpu,
                    str(x["errors"]),
                    f(x["load1"]["median"], 1),
                ]
            )
    return (
        lines
        + table(
            [
                "shape",
                "offered RPS",
                "achieved",
                "+P50 ms",
                "+P99 ms",
                "req per gateway CPU-s",
                "CPU ms per request",
                "errors",
                "load",
            ],
            rows,
        )
        + ["Targets: >= 1,500 req per gateway CPU-s; +P99 <= 3 ms at 300 req/s and <= 5 ms at 500 req/s.", ""]
    )


def litellm_section(r: dict[str, Any]) -> list[str]:
    ll = r["litellm"]
    lines = [
        f"LiteLLM: {'ran' if ll['available'] else '**did not run**'} ({ll['note']}), {r['litellm_workers']} workers, "
        f"simple-shuffle. Auth and limits: {r['auth']}. Ours: the deployed shape. "
        f"{r['windows']} rounds of {f(r['seconds_per_window'], 0)} s per rate (engine, ours, LiteLLM back to back), "
        "open loop from the scheduled send; added = a gateway's percentile minus the engine's in the same round; "
        "median (range). A gateway stops stepping once saturated (achieved < 90 % of offered or P99 > 1 s).",
        "",
    ]
    pk = r.get("portkey")
    if pk:
        lines[0:0] = [
            f"Portkey's open-source gateway (Node, one process, routing by its headers; it checks no key and "
            f"limits nothing in this build, so it does less per request than either): "
            f"{'ran' if pk['available'] else '**did not run**'} ({pk['note']}).",
            "",
        ]
    rows = []
    for row in r["sweep"]:
        for name in ("tokenplane", "litellm", "portkey"):
            s = row.get(name)
            if not s:
                continue
            ratio = row.get(f"{name}_over_tokenplane_p99")
            rows.append(
                [
                    str(row["rate"]),
                    name,
                    f(s["achieved_rps"]["median"], 0),
                    _range(s["added_p50_ms"]),
                    _range(s["added_p99_ms"]),
                    str(s["errors"]),
                    "yes" if s["saturated"] else "",
                    _range(ratio, 1) if ratio else "",
                    f(s["load1"]["median"], 1),
                ]
            )
    lines += table(
        [
            "offered RPS",
            "gateway",
            "achieved",
            "+P50 ms",
            "+P99 ms",
            "errors",
            "saturated",
            "its +P99 / ours",
            "load",
        ],
        rows,
    )
    rl = r.get("rate_limit", {})
    if rl:
        rows = [
            [
                name,
                str(x["replicas"]),
                str(x["tpm"]),
                f(x["burst_seconds"], 1),
                str(x["admitted_tokens"]),
                f(x["allowed_tokens"], 0),
                f(x["admitted_over_allowed"], 2),
                x["allowed_rule"],
                statuses(x["statuses"]),
            ]
            for name, x in rl.items()
        ]
        lines += [
            "Rate-limit accuracy: one key, a closed-loop burst from many clients over three replicas sharing one Redis.",
            "",
        ]
        lines += table(
            [
                "gateway",
                "replicas",
                "TPM",
                "burst s",
                "tokens admitted",
                "allowed",
                "admitted/allowed",
                "allowed by",
                "statuses",
            ],
            rows,
        )
    return lines


def overload_section(r: dict[str, Any]) -> list[str]:
    lines = [
        f"μ = {f(r['mu_rps'])} req/s measured on one `small` replica (speed {r['speed']}, max_num_seqs {r['max_num_seqs']}, "
        f"{r['max_tokens']} output tokens; gateway admission permits {r['admission_permits']}); offered λ = "
        f"{f(r['offered_rps'])} req/s for {f(r['seconds'], 0)} s, {r['requests']} streamed requests; served {f(r['served_rps'])} req/s.",
        "A queued request is shed at the sooner of its level's `max_queue_wait_ms` and its class's TTFT SLO",
        "(`Queues.max_wait_s`): past its SLO it has missed it, and serving it would take the permit from one that can still meet its own.",
        "",
    ]
    rows = [
        [p, statuses(r["statuses_by_priority"][p]), f(r["p95_ttft_ms_by_priority"][p], 0)]
        for p in ("critical", "high", "normal", "batch")
    ]
    lines += table(["priority", "statuses (429/503 = shed)", "P95 TTFT ms (served)"], rows)
    rss = r["rss_mib"]
    rows = [
        [
            "interactive P95 TTFT",
            f"{f(r['interactive_p95_ttft_ms'], 0)} ms (class-A SLO {f(r['class_a_ttft_p95_slo_ms'], 0)} ms)",
        ],
        [
            "gateway RSS start / max / end",
            f"{f(rss['start'], 0)} / {f(rss['max'], 0)} / {f(rss['end'], 0)} MiB ({rss['samples']} samples)",
        ],
        [
            "recovery after the load",
            f"{f(r['recovery_s'], 2)} s (to within 2x the unloaded {f(r['baseline_latency_ms'], 0)} ms)",
        ],
    ]
    return lines + table(["measure", "value"], rows)


def faults_section(r: dict[str, Any]) -> list[str]:
    lines = [
        f"Steady open-loop load: {r['rate_rps']} req/s of streamed `small` chats ({r['max_tokens']} tokens), plus as many `large` chats for the provider fault.",
        "The broker keeps its log in an S3-compatible store (`tokenplane dev --kafka-storage s3://...` on moto's server),",
        "so that what it acknowledged survives its SIGKILL, as on MSK; with an in-memory log the events acknowledged",
        "just before the kill die with the broker, and no count could be exact.",
        "",
    ]
    rows = []
    for x in r["faults"]:
        if "error" in x:
            rows.append([x["fault"], f"did not run: {x['error']}", "", "", "", ""])
            continue
        rows.append(
            [
                x["fault"] + (f" ({f(x['hold_s'], 0)} s)" if x["hold_s"] else ""),
                statuses(x["errors_after_fault"]),
                f(x["recovery_s"]) + (f" ({f(x['recovery_after_end_s'])} after it ended)" if x["hold_s"] else ""),
                f"{x['usage_events_distinct']} / {x['metered_expected']}",
                f"missing {x['missing_events']} (after the fault {x['missing_after_fault']}), unexpected {x['unexpected_events']}, "
                f"duplicates {x['duplicate_events']}",
                "yes" if x["metering_match"] else "**no**",
            ]
        )
    return lines + table(
        [
            "fault",
            "client errors after the fault",
            "recovery s",
            "events / metered responses",
            "differences",
            "exact match",
        ],
        rows,
    )


def fuzz_section(r: dict[str, Any]) -> list[str]:
    gateway, load = r.get("gateway") or {}, r.get("load") or {}
    lines = [
        f"{'Passed' if r['passed'] else '**Failed**'} at {f(r['scale'], 0)}x the CI sizes: {r['summary']}.",
        *(f"- {line}" for line in r.get("failures", [])),
        *(["", "```text", *r.get("details", []), "```"] if r.get("details") else []),
        "",
        "schemathesis against the live gateway's `/openapi.json` (every operation, valid and invalid requests;",
        "checks: no 5xx, documented status, content type and body):",
        "",
    ]
    cases = gateway.get("cases", {})
    lines += table(["operation (mode)", "cases"], [[op, str(n)] for op, n in cases.items()])
    lines += [
        f"{gateway.get('total', 'n/a')} requests; {gateway.get('server_errors', 'n/a')} server errors, "
        f"{gateway.get('findings', 'n/a')} findings.",
        "",
        "hypothesis on the spec loader (mutated data and text of the shipped specs, alias graphs): a spec or a",
        "located `SpecLoadError`, never a crash:",
        "",
    ]
    lines += table(["property", "cases"], [[k, str(v)] for k, v in load.get("cases", {}).items()])
    lines += [f"{load.get('total', 'n/a')} inputs; {load.get('crashes', 'n/a')} crashes."]
    return lines


def delegated(module: str) -> Callable[[dict[str, Any]], list[str]]:
    """A section that ``benchmarks/<module>.py`` renders itself, with its ``lines(result)``."""

    def section(r: dict[str, Any]) -> list[str]:
        sys.path.insert(0, str(ROOT))  # run as a script, only benchmarks/ is on the path
        rendered: list[str] = importlib.import_module(f"benchmarks.{module}").lines(r)
        return rendered

    return section


def semantic_cache_section(r: dict[str, Any]) -> list[str]:
    rows = [
        [
            e["store"],
            f"{e['entries']:,}",
            f(e["insert_ms"], 3),
            f(e["p50_ms"], 3),
            f(e["p99_ms"], 3),
            f"{f(e['p99_range_ms'][0], 3)}-{f(e['p99_range_ms'][1], 3)}",
            f(e["hit_rate"], 2),
            e.get("built", "single upserts"),
        ]
        for e in r["semantic_cache"]
    ]
    return [
        "Lookup cost by cached answers, one tenant and scope (the worst case: one graph holds them all),",
        "random 384-float unit vectors (harder for HNSW than real embeddings, which cluster), lookups half",
        "near-repeats of a stored answer (noise 0.01) and half new (median of the windows; the P99's range",
        "across them; hits: the share answered, 0.5 at perfect recall). qdrant-client's local mode is the",
        "baseline it replaces. Insert: one upsert, as the gateway stores a miss (at 1M, 2,000 upserts into",
        "the full store after a batched build). Target (issue 16): lookup P99 <= 2 ms at 100k answers.",
        "qdrant-edge (Qdrant's embedded engine) was measured apart in session 5 and not re-run: its index",
        "is built by a blocking `optimize()`, 17.6 s for 10k points and 574 s for 100k, then 2.8 ms median",
        "per filtered lookup.",
        "",
        *table(
            ["store", "answers", "insert ms", "lookup P50 ms", "lookup P99 ms", "P99 range ms", "hits", "built by"],
            rows,
        ),
    ]


SECTIONS = {
    "deployed_bench.py": ("The gateway as deployed, every stage on (deployed_bench.py)", deployed_section),
    "gateway_bench.py": (
        "The older shape: model gateway in process, no semantic cache, closed loop (gateway_bench.py)",
        gateway_section,
    ),
    "vs_litellm.py": ("Against the LiteLLM proxy (vs_litellm.py)", litellm_section),
    "overload.py": ("Overload at 2x μ (overload.py)", overload_section),
    "faults.py": ("Faults under load (faults.py)", faults_section),
    "fuzz.py": ("Fuzzing (fuzz.py)", fuzz_section),
    "simulate_day.py": ("A business day in the workbench (simulate_day.py)", delegated("simulate_day")),
    "semantic_cache.py": ("The semantic cache's vector store (semantic_cache.py)", semantic_cache_section),
    "capacity_validation.py": (
        "The capacity model against public vLLM logs (capacity_validation.py)",
        delegated("capacity_validation"),
    ),
    "plan_agreement.py": (
        "The planner against its simulator on every pool (plan_agreement.py)",
        delegated("plan_agreement"),
    ),
    "finops_bench.py": (
        "The FinOps plane: the metering consumer and a day's chargeback (finops_bench.py)",
        delegated("finops_bench"),
    ),
    "scheduler_structure.py": (
        "The scheduler against vLLM's, in counts (scheduler_structure.py)",
        delegated("scheduler_structure"),
    ),
    "server_arrivals.py": (
        "The server's work per stream and per arrival, on the real engine (server_arrivals.py)",
        delegated("server_arrivals"),
    ),
    "server_cpu.py": (
        "The server's CPU per request, step and token, on the real engine (server_cpu.py)",
        delegated("server_cpu"),
    ),
    "frontdoor_targets.py": (
        "The front door's targets on the dev stack: a worst-case body, two batches (frontdoor_targets.py)",
        delegated("frontdoor_targets"),
    ),
    "plan_bench.py": ("`tokenplane plan --capacity-only` on the three stacks (plan_bench.py)", delegated("plan_bench")),
    "check_bench.py": ("`tokenplane check` on the three stacks (check_bench.py)", delegated("check_bench")),
}


def section_lines(script: str, entry: dict[str, Any], note: str | None = None) -> list[str]:
    """One benchmark's section: its heading, how long it ran (and ``note``), then its tables or its failure."""
    title, section = SECTIONS[script]
    lines = [f"## {title}", "", f"{f(entry['seconds'], 0)} s." + (f" {note}" if note else ""), ""]
    if "error" in entry:
        return [*lines, f"**Failed**: {entry['error']}.", "", "```text", str(entry.get("tail", "")).strip(), "```", ""]
    try:
        return lines + section(entry["result"])
    except (KeyError, TypeError) as e:
        return [
            *lines,
            f"**Unreadable result** ({e!r}):",
            "",
            "```json",
            json.dumps(entry["result"], indent=2)[:3000],
            "```",
            "",
        ]


def splice(markdown: str, script: str, lines: list[str]) -> str:
    """``markdown`` with ``script``'s section replaced by ``lines`` (or put in its place among the sections)."""
    sections = re.split(r"(?m)^(?=## )", markdown)
    head, body = sections[0], sections[1:]
    heading = f"## {SECTIONS[script][0]}\n"
    text = "\n".join(lines).rstrip() + "\n\n"
    for i, part in enumerate(body):
        if part.startswith(heading):
            body[i] = text
            break
    else:  # not there yet: after the sections of the benchmarks that come before it in SECTIONS' order
        order = list(SECTIONS)
        earlier = tuple(f"## {SECTIONS[s][0]}\n" for s in order[: order.index(script)])
        at = next((i for i, part in enumerate(body) if not part.startswith(earlier)), len(body))
        body.insert(at, text)
    return (head + "".join(body)).rstrip() + "\n"


def render(results: dict[str, dict[str, Any]], command: str, total: float, quick: bool) -> str:
    m = machine()
    lines = [
        "# Benchmarks",
        "",
        "Measurements, not tests: each compares against a baseline measured in the same run, on this machine,",
        "with every process (load generator, gateways, engines, Redis, broker) sharing its cores.",
        "Written by `benchmarks/run_all.py`; do not edit by hand.",
        "",
        f"- date: {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {m['cpu']}, {m['cores']} cores, {m['memory']} memory, {m['os']}, Python {m['python']}",
        f"- command: `{command}`{' (quick sizes)' if quick else ''}, {total / 60:.1f} minutes in all",
        "",
    ]
    for script in SECTIONS:
        entry = results.get(script)
        if entry is not None:
            lines += section_lines(script, entry)
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="every benchmark at its smoke size")
    parser.add_argument("--json", action="store_true", help="also print every result as JSON")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="the Markdown file to rewrite")
    parser.add_argument(
        "--from-json", type=Path, help=f"re-render a saved run (e.g. {RAW.relative_to(ROOT)}) instead of running"
    )
    parser.add_argument(
        "--only", choices=[b[0] for b in BENCHMARKS], help="run one benchmark and rewrite only its section of --output"
    )
    args = parser.parse_args()
    if args.only:
        script, full, quick, limit = next(b for b in BENCHMARKS if b[0] == args.only)
        entry = run_one(script, quick if args.quick else full, limit / 2 if args.quick else limit)
        m = machine()
        command = shlex.join(["python", "benchmarks/run_all.py", *sys.argv[1:]])
        note = (
            f"Measured alone by `{command}` on {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}, "
            f"{m['cpu']}, {m['cores']} cores."
        )
        old = args.output.read_text(encoding="utf-8") if args.output.exists() else "# Benchmarks\n"
        args.output.write_text(splice(old, script, section_lines(script, entry, note)), encoding="utf-8")
        print(f"wrote the {script} section of {args.output}", file=sys.stderr)
        if args.json:
            print(json.dumps(entry, indent=2))
        return 0 if "error" not in entry else 1
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        args.output.write_text(
            render(saved["results"], saved["command"], saved["total"], saved["quick"]), encoding="utf-8"
        )
        return 0
    command = shlex.join(["python", "benchmarks/run_all.py", *sys.argv[1:]])
    results: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    for script, full, quick, limit in BENCHMARKS:
        print(f"running {script} ...", file=sys.stderr, flush=True)
        results[script] = run_one(script, quick if args.quick else full, limit / 2 if args.quick else limit)
        print(
            f"  {script}: {results[script].get('error', 'ok')} in {results[script]['seconds']:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    total = time.perf_counter() - t0
    RAW.parent.mkdir(exist_ok=True)
    RAW.write_text(json.dumps({"results": results, "command": command, "total": total, "quick": args.quick}, indent=2))
    args.output.write_text(render(results, command, total, args.quick), encoding="utf-8")
    print(f"wrote {args.output} in {total / 60:.1f} minutes", file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
