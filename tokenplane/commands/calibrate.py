"""``tokenplane calibrate URL --model NAME``: measure a live vLLM OpenAI server, and write what was measured.

The datasheet constants of the capacity model cannot close the TTFT error on a given host (37% median
over public points): the server's floor, how TTFT grows with the prompt, how TPOT grows with the batch
are properties of the host, its driver and the release. This measures them on the replica that serves:

- the floor: TTFT of a one-token completion of a one-word prompt (the server's own overhead);
- TTFT against prompt length (``PROMPT_WORDS``), one request at a time;
- TPOT against concurrency (``CONCURRENCY``): streams started together, the gap between their tokens;
- saturated throughput: generated tokens per second at the highest concurrency.

Every number is a median over ``REPEATS`` and the whole run is bounded (``MAX_REQUESTS``, ``--time-limit``).
It refuses an endpoint that is not vLLM (no ``vllm:`` metrics, or the model not served) before measuring.
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CALIBRATION_FORMAT = 1
PROMPT_WORDS = (1, 64, 256, 1024)  # prompt lengths measured (words; the engine's token count is recorded)
CONCURRENCY = (1, 4, 8)  # streams started together for TPOT
REPEATS = 3  # medians of this many
OUTPUT_TOKENS = 32  # tokens per TPOT stream (ignore_eos: every stream runs to this length)
MAX_REQUESTS = 120  # a calibration never sends more than this many requests
REQUEST_TIMEOUT = 120.0  # seconds for one request
_WORD = "token "


class CalibrationError(RuntimeError):
    """The endpoint cannot be calibrated: not reachable, not vLLM, the model not served, or out of budget."""


@dataclass
class Calibration:
    """What ``calibrate`` measured on one host for one model and release; written as JSON."""

    model: str
    url: str
    vllm_version: str
    floor_ttft_s: float
    ttft_by_prompt: list[tuple[int, float]] = field(default_factory=list)  # (prompt tokens, TTFT s)
    tpot_by_concurrency: list[tuple[int, float]] = field(default_factory=list)  # (streams, TPOT s)
    saturated_tokens_per_s: float = 0.0
    requests: int = 0
    format: int = CALIBRATION_FORMAT

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")


@dataclass
class _Budget:
    requests: int = 0
    deadline: float = 0.0

    def spend(self) -> None:
        if self.requests >= MAX_REQUESTS:
            raise CalibrationError(f"the calibration would send more than {MAX_REQUESTS} requests")
        if time.monotonic() > self.deadline:
            raise CalibrationError("the time limit passed; raise --time-limit or calibrate a less loaded endpoint")
        self.requests += 1


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT) as response:
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError as e:
        raise CalibrationError(f"{url} is not reachable: {e}") from e


def check_vllm(base: str, model: str) -> str:
    """The server's vLLM release; raises ``CalibrationError`` unless ``base`` is a vLLM server serving ``model``."""
    status, metrics = _get(f"{base}/metrics")
    if status != 200 or "vllm:" not in metrics:
        raise CalibrationError(
            f"{base} is not a vLLM server: its /metrics (status {status}) has no vllm: metrics; "
            "calibrate measures vLLM's OpenAI server (python -m vllm.entrypoints.openai.api_server or vllm serve)"
        )
    status, models = _get(f"{base}/v1/models")
    served = [m.get("id") for m in json.loads(models).get("data", [])] if status == 200 else []
    if model not in served:
        raise CalibrationError(f"{base} does not serve --model {model}; it serves {', '.join(map(str, served))}")
    status, version = _get(f"{base}/version")
    return str(json.loads(version).get("version", "unknown")) if status == 200 else "unknown"


def _stream(base: str, model: str, prompt: str, max_tokens: int, budget: _Budget) -> tuple[float, list[float], int]:
    """One streamed completion: (TTFT s, arrival times of its tokens, prompt tokens per the engine)."""
    budget.spend()
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,  # vLLM's extension: every request generates exactly max_tokens
        "temperature": 0,
    }
    request = urllib.request.Request(
        f"{base}/v1/completions", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    start = time.monotonic()
    arrivals: list[float] = []
    prompt_tokens = 0
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk: dict[str, Any] = json.loads(line[6:])
            # Every choice chunk is a token's arrival, also one whose text is empty (a byte-level token that
            # ends mid-character decodes to nothing yet).
            if chunk.get("choices"):
                arrivals.append(time.monotonic() - start)
            if chunk.get("usage"):
                prompt_tokens = int(chunk["usage"]["prompt_tokens"])
    if not arrivals:
        raise CalibrationError(f"{base} streamed no tokens for a {max_tokens}-token completion")
    return arrivals[0], arrivals, prompt_tokens


def calibrate(url: str, model: str, *, time_limit: float = 300.0) -> Calibration:
    """Measure ``model`` at the vLLM server ``url`` (its base, without ``/v1``).

    Raises:
        CalibrationError: not vLLM, the model not served, or the request or time budget exhausted.
    """
    base = url.rstrip("/").removesuffix("/v1")
    version = check_vllm(base, model)
    budget = _Budget(deadline=time.monotonic() + time_limit)
    by_prompt: list[tuple[int, float]] = []
    for words in PROMPT_WORDS:
        samples = [_stream(base, model, _WORD * words, 1, budget) for _ in range(REPEATS)]
        by_prompt.append((samples[0][2], statistics.median(s[0] for s in samples)))
    by_concurrency: list[tuple[int, float]] = []
    saturated = 0.0
    for streams in CONCURRENCY:
        tpots, rates = [], []
        for _ in range(REPEATS):
            start = time.monotonic()
            with ThreadPoolExecutor(max_workers=streams) as pool:
                runs = list(pool.map(lambda _: _stream(base, model, _WORD * 16, OUTPUT_TOKENS, budget), range(streams)))
            wall = time.monotonic() - start
            tpots += [(a[-1] - a[0]) / (len(a) - 1) for _, a, _ in runs if len(a) > 1]
            rates.append(sum(len(a) for _, a, _ in runs) / wall)
        by_concurrency.append((streams, statistics.median(tpots)))
        saturated = max(saturated, statistics.median(rates))
    return Calibration(
        model=model,
        url=base,
        vllm_version=version,
        floor_ttft_s=by_prompt[0][1],
        ttft_by_prompt=by_prompt,
        tpot_by_concurrency=by_concurrency,
        saturated_tokens_per_s=saturated,
        requests=budget.requests,
    )
