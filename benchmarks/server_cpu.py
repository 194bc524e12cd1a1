"""The OpenAI server's CPU per request, per engine step and per streamed token, on the real engine.

vLLM's API server is one Python process per replica (``--api-server-count``, default 1): it parses and
tokenizes each request, and for every engine step it receives the step's outputs, detokenizes each running
request's new token and writes its streamed chunk. Past about one core of that work it cannot keep up, and
every first token and every chunk waits behind it (a fresh-clone CI run saw a first token wait 1.3 s beside
12 streams of the tiny model). ``capacity.api_server_busy`` prices that work at a pool's planned operating
point, and the planner asks for more server processes before it reaches saturation.

This script reads the server process's own CPU seconds (``/proc/<pid>/stat``: the API server, not its
engine-core child) around phases of known shape, and the engine's steps from vLLM's
``vllm:iteration_tokens_total`` histogram (one observation a step), then fits

    CPU seconds = per_request x requests + per_step x steps + per_token x streamed tokens

by least squares over every phase of every round. The phases differ in what they load: single-token
requests (requests), one long stream (steps, a token each) and batches of 8 and 16 streams (tokens per
step). One vLLM CPU engine serves the dev spec's ``small`` pool through its rendered argv.

Run: ``python benchmarks/server_cpu.py [--update BENCHMARKS.md] [--json]`` with ``tokenplane[cpu-engine]``
installed; ``tests/engine/test_server_cpu.py`` runs the same fit and fails when the engine's per-token
cost is over three times what ``capacity.API_CPU_PER_TOKEN_S`` prices.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import update_section  # noqa: E402
from tokenplane.commands.calibrate import completion_request, unique_prompt  # noqa: E402
from tokenplane.model import capacity as cap  # noqa: E402

TITLE = "The server's CPU per request, step and token, on the real engine (server_cpu.py)"
SPEC = ROOT / "stacks" / "dev.yaml"
POOL = "small"
# (concurrent streams, requests, tokens each): what each phase loads
PHASES = ((1, 40, 1), (1, 1, 1000), (8, 8, 500), (16, 16, 250))
ROUNDS = 3
PROMPT_WORDS = 16
REQUEST_TIMEOUT = 300.0
_STEPS = "vllm:iteration_tokens_total_count"
_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` alone (its threads, not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def engine_steps(base: str) -> float:
    """Engine steps so far: the observations of vLLM's tokens-per-step histogram."""
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(f"{base}/metrics", timeout=30).read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == _STEPS
    )


_numbers = itertools.count()


def stream(base: str, model: str, tokens: int) -> int:
    """One streamed completion of exactly ``tokens`` tokens, read unparsed; returns the chunks that carried one."""
    # A unique first word: no prefix-cache hit.
    request = completion_request(base, model, unique_prompt(next(_numbers), PROMPT_WORDS), tokens)
    chunks = 0
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:
        while block := response.read1(1 << 16):
            chunks += block.count(b'data: {"id"')
    return chunks


@dataclass(frozen=True)
class Phase:
    """One phase's counts and the server's CPU seconds over it."""

    streams: int
    requests: int
    steps: float
    tokens: int
    cpu_s: float
    wall_s: float


def run_phase(base: str, model: str, pid: int, streams: int, requests: int, tokens: int) -> Phase:
    steps0, cpu0, t0 = engine_steps(base), process_cpu_s(pid), time.monotonic()
    with ThreadPoolExecutor(max_workers=streams) as pool:
        chunks = sum(pool.map(lambda _: stream(base, model, tokens), range(requests)))
    wall, cpu = time.monotonic() - t0, process_cpu_s(pid) - cpu0
    # The /metrics scrape is the server's work too, once before and once after: small beside a phase's.
    return Phase(streams, requests, engine_steps(base) - steps0, chunks, cpu, wall)


@dataclass(frozen=True)
class Fit:
    per_request_ms: float
    per_step_ms: float
    per_token_us: float
    residual_ms: float  # root mean square over the phases
    phases: list[Phase]


def fit(phases: list[Phase]) -> Fit:
    """Least squares of CPU seconds on requests, steps and tokens; a term that comes out negative is dropped."""
    columns = [[p.requests for p in phases], [p.steps for p in phases], [p.tokens for p in phases]]
    y = np.array([p.cpu_s for p in phases])
    kept = [0, 1, 2]
    while True:
        a = np.array([columns[i] for i in kept], dtype=float).T
        coef, *_ = np.linalg.lstsq(a, y, rcond=None)
        if (coef >= 0).all() or len(kept) == 1:
            break
        kept.pop(int(np.argmin(coef)))
    terms = dict.fromkeys(range(3), 0.0) | {i: max(float(c), 0.0) for i, c in zip(kept, coef, strict=True)}
    residual = float(np.sqrt(np.mean((a @ coef - y) ** 2)))
    return Fit(terms[0] * 1e3, terms[1] * 1e3, terms[2] * 1e6, residual * 1e3, phases)


def measure(base: str, model: str, pid: int, *, rounds: int = ROUNDS) -> Fit:
    for _ in range(3):  # the first requests' paths (compilation, caches) are not a steady server's
        stream(base, model, 4)
    phases = [run_phase(base, model, pid, *shape) for _ in range(rounds) for shape in PHASES]
    return fit(phases)


def result(f: Fit) -> dict[str, Any]:
    """The fit as JSON, with the constants the planner prices and what one server carries by them."""
    return asdict(f) | {
        "priced_per_request_ms": cap.API_CPU_PER_REQUEST_S * 1e3,
        "priced_per_step_ms": cap.API_CPU_PER_STEP_S * 1e3,
        "priced_per_token_us": cap.API_CPU_PER_TOKEN_S * 1e6,
    }


def lines(r: dict[str, Any]) -> list[str]:
    rows = [
        "| streams | requests | steps | tokens | server CPU s | wall s | CPU per token, us |",
        *["| --- " * 7 + "|"],
    ]
    by_shape: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for p in r["phases"]:
        by_shape.setdefault((p["streams"], p["requests"]), []).append(p)
    for (streams, requests), runs in by_shape.items():
        med = {k: statistics.median(p[k] for p in runs) for k in ("steps", "tokens", "cpu_s", "wall_s")}
        cpus = [p["cpu_s"] for p in runs]
        rows.append(
            f"| {streams} | {requests} | {med['steps']:.0f} | {med['tokens']:.0f} | {med['cpu_s']:.2f}"
            f" ({min(cpus):.2f}-{max(cpus):.2f}) | {med['wall_s']:.2f} | {med['cpu_s'] / med['tokens'] * 1e6:.0f} |"
        )
    tokens_per_core = 1 / (r["per_token_us"] * 1e-6 + r["per_step_ms"] * 1e-3 / 64) if r["per_token_us"] else 0.0
    return [
        f"One vLLM CPU engine (the dev spec's `{POOL}` pool, its rendered argv); the API server process's own CPU",
        f"seconds (`/proc`) over {len(r['phases'])} phases, {len(r['phases']) // len(PHASES)} interleaved rounds; the"
        " engine's steps from `vllm:iteration_tokens_total`. Medians, the CPU's range in brackets.",
        "",
        *rows,
        "",
        "Least squares, CPU = per request x requests + per step x steps + per token x tokens"
        f" (residual {r['residual_ms']:.0f} ms RMS):",
        "",
        f"- per request: **{r['per_request_ms']:.2f} ms** (priced {r['priced_per_request_ms']:.2f} ms)",
        f"- per engine step: **{r['per_step_ms']:.3f} ms** (priced {r['priced_per_step_ms']:.3f} ms)",
        f"- per streamed token: **{r['per_token_us']:.0f} us** (priced {r['priced_per_token_us']:.0f} us)",
        f"- so one server process, all its core spent, streams about {tokens_per_core:,.0f} tokens a second at a"
        " batch of 64",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--update", type=Path, help="rewrite this section of that Markdown file (BENCHMARKS.md)")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    from tokenplane.dev.real_engine import running_engine
    from tokenplane.load import load_spec

    spec = load_spec(SPEC)
    pool = spec.pool(POOL)
    with tempfile.TemporaryDirectory() as work, running_engine(spec, pool, Path(work)) as engine:
        server = engine.process.process
        if server is None:  # running_engine yields only a spawned server; say so rather than read pid of None
            raise RuntimeError("the engine's server process was not started")
        r = result(measure(engine.base_url, spec.model(pool.model).ref, server.pid, rounds=args.rounds))
    print(json.dumps(r, indent=2) if args.json else "\n".join(lines(r)))
    if args.update:
        update_section(args.update, TITLE, lines(r))


if __name__ == "__main__":
    main()
