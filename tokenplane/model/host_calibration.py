"""A pool's measured host: the file ``tokenplane calibrate`` writes, read back and turned into iteration costs.

The datasheet constants (``capacity.Efficiency``) cannot close the TTFT error on a given host: the
server's floor, how TTFT grows with the prompt and how TPOT grows with the batch belong to the host,
its driver and the vLLM release. A pool that names a calibration (``pools[].calibration``) is priced
from what was measured on it instead, through the same ``pool_model.PoolTiming`` that the planner,
``--verify``, ``simulate`` and the simulated engine step by, so planner and simulator still agree.

How the measurements become the timing's terms (``fit``):

- **TTFT against the prompt.** A lone request's TTFT is, as the engines price it, the server's floor,
  one iteration's overhead and the prompt's prefill, ``A + per_token x P + per_pair x P^2 / 2``.
  ``A``, ``per_token`` and ``per_pair`` are a non-negative least-squares fit over the measured prompts
  (the one-token prompt included), so a prompt between them is interpolated and a longer one follows
  the fitted quadratic.
- **The decode step against the batch.** TPOT at ``c`` streams started together is one decode step of
  ``c`` sequences at the measured (short) context. Between measured concurrencies it is interpolated
  linearly, below the first it is the first, beyond the last the last segment's slope goes on (never
  falling).
- **The KV read against the context.** One more wave at long prompts (``long_context``) gives what a KV
  token held by the batch adds to a step, the step's growth over the short wave's at the same batch;
  the engines add it for the context beyond the one the steps were measured at.
- **The iteration overhead** is the one-sequence decode step less its KV read (at most ``A``, and under
  every measured step less its KV read), which is what an iteration with one short sequence costs
  besides reading its KV; the floor is ``A`` less it. Only an iteration that prefills
  with nothing decoding sees the split; a lone request's TTFT is ``A`` either way.
- **The server's work per stream** (the file's ``api_per_request_s``, ``per_request_s``): a short fresh
  prompt's TTFT sent while ``k`` streams decode, less what the engines price for it without the server's
  term (``HostTiming.beside_batch_ttft_s``), over ``k``; a least-squares fit through the origin over the
  measured ``k``, never negative. The pool's ``PoolTiming.api_per_stream_s`` is it, so that the planner
  and the simulator add the host's term (``capacity.server_seconds``) instead of the one read on other
  hosts; a file written before it was measured keeps that default.
- **Saturated throughput** is recorded, not an input: the pool model derives a replica's throughput from
  the steps above (``pool_model.PoolTiming.calibrated`` also keeps the overhead under every step less its
  KV read, so that no measured step is clipped).

Speculative decoding is measured, not modelled, on a calibrated pool (its factor is 1): calibrate the
replica with the pool's own argv.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tokenplane.model.sizing import IMAGE_VLLM
from tokenplane.spec import PlatformSpec, Pool
from tokenplane.vllm_args import served_model_names

CALIBRATION_FORMAT = 2  # 2: unique prompts (no prefix-cache hits), the TPOT context, the host shape


class CalibrationFileError(ValueError):
    """A calibration file that cannot be read: missing, not JSON, or not what ``tokenplane calibrate`` writes."""


@dataclass(frozen=True)
class HostShape:
    """The hardware a calibration was measured on, as the user told ``calibrate`` (``--gpu``, ``--tensor-parallel``)."""

    gpu: str
    tensor_parallel: int = 1


@dataclass(frozen=True)
class LongContext:
    """One decode step of ``streams`` sequences holding ``context_tokens`` each: the KV read's growth with context."""

    streams: int
    context_tokens: float
    step_s: float


@dataclass
class HeldOut:
    """Points measured in the same rounds as the fitted ones but left out of the fit: the calibration's own check."""

    ttft_by_prompt: list[tuple[int, float]] = field(default_factory=list)
    tpot_by_concurrency: list[tuple[int, float]] = field(default_factory=list)
    # The probe's TTFT beside a concurrency the per-request fit never sees; empty in files written before it.
    probe_ttft_by_concurrency: list[tuple[int, float]] = field(default_factory=list)


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
    tpot_context_tokens: float = 0.0  # mean KV tokens a stream held while its TPOT was measured
    long_context: LongContext | None = None
    requests: int = 0
    host: HostShape | None = None
    held_out: HeldOut | None = None
    format: int = CALIBRATION_FORMAT
    # A short fresh prompt's TTFT sent while that many streams decode (``probe_prompt_tokens`` each, as the
    # engine counted them), and the server's per-request work fitted on them (``per_request_s``). Files
    # written before these were measured have none: their pool keeps ``capacity``'s default term.
    probe_prompt_tokens: int = 0
    probe_ttft_by_concurrency: list[tuple[int, float]] = field(default_factory=list)  # (streams decoding, TTFT s)
    api_per_request_s: float | None = None

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")


def _number(data: dict[str, Any], key: str, *, minimum: float, inclusive: bool = False) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CalibrationFileError(f"{key} must be a number, got {value!r}")
    if value < minimum or (value == minimum and not inclusive):
        raise CalibrationFileError(f"{key}={value} must be {'at least' if inclusive else 'above'} {minimum}")
    return float(value)


def _pairs(data: dict[str, Any], key: str, *, first_min: int, least: int = 2) -> list[tuple[int, float]]:
    """A list of at least ``least`` ``[count, seconds]`` pairs, counts strictly rising, seconds positive."""
    value = data.get(key)
    if not isinstance(value, list) or len(value) < least:
        raise CalibrationFileError(f"{key} must list at least {least} [count, seconds] points, got {value!r}")
    out: list[tuple[int, float]] = []
    for i, item in enumerate(value):
        ok = (
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[0], int)
            and not isinstance(item[0], bool)
            and item[0] >= first_min
            and isinstance(item[1], (int, float))
            and not isinstance(item[1], bool)
            and math.isfinite(item[1])
            and item[1] > 0
        )
        if not ok:
            raise CalibrationFileError(f"{key}[{i}]={item!r} must be [count >= {first_min}, seconds > 0]")
        if out and item[0] <= out[-1][0]:
            raise CalibrationFileError(f"{key}[{i}]: counts must rise strictly ({out[-1][0]} then {item[0]})")
        out.append((int(item[0]), float(item[1])))
    return out


def parse_calibration(data: Any) -> Calibration:
    """A calibration from its JSON data; raises ``CalibrationFileError`` saying which field is wrong."""
    if not isinstance(data, dict) or "floor_ttft_s" not in data or "tpot_by_concurrency" not in data:
        raise CalibrationFileError(
            "not a calibration file: a JSON object with floor_ttft_s, ttft_by_prompt and tpot_by_concurrency "
            "(what tokenplane calibrate writes) was expected"
        )
    if data.get("format") != CALIBRATION_FORMAT:
        raise CalibrationFileError(
            f"calibration format {data.get('format')!r} is not {CALIBRATION_FORMAT}, the one this tokenplane reads; "
            "measure the host again with tokenplane calibrate"
        )
    for key in ("model", "vllm_version"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise CalibrationFileError(f"{key} must be a non-empty string, got {data.get(key)!r}")
    host = data.get("host")
    shape = None
    if host is not None:
        if (
            not isinstance(host, dict)
            or not isinstance(host.get("gpu"), str)
            or not isinstance(host.get("tensor_parallel"), int)
            or isinstance(host.get("tensor_parallel"), bool)
            or host["tensor_parallel"] < 1
        ):
            raise CalibrationFileError(f"host must be null or {{gpu: NAME, tensor_parallel: N >= 1}}, got {host!r}")
        shape = HostShape(host["gpu"], host["tensor_parallel"])
    long = data.get("long_context")
    if (
        not isinstance(long, dict)
        or not isinstance(long.get("streams"), int)
        or isinstance(long.get("streams"), bool)
        or long["streams"] < 1
    ):
        raise CalibrationFileError(f"long_context must be {{streams: N >= 1, context_tokens, step_s}}, got {long!r}")
    long_context = LongContext(
        long["streams"],
        _number(long, "context_tokens", minimum=0.0),
        _number(long, "step_s", minimum=0.0),
    )
    held = data.get("held_out")
    held_out = None
    if held is not None:
        if not isinstance(held, dict):
            raise CalibrationFileError(f"held_out must be null or a mapping, got {held!r}")
        held_out = HeldOut(
            _pairs(held, "ttft_by_prompt", first_min=1, least=1),
            _pairs(held, "tpot_by_concurrency", first_min=1, least=1),
            _pairs(held, "probe_ttft_by_concurrency", first_min=1, least=1)
            if held.get("probe_ttft_by_concurrency")
            else [],
        )
    requests = data.get("requests", 0)
    return Calibration(
        model=data["model"],
        url=str(data.get("url", "")),
        vllm_version=data["vllm_version"],
        floor_ttft_s=_number(data, "floor_ttft_s", minimum=0.0),
        ttft_by_prompt=_pairs(data, "ttft_by_prompt", first_min=1),
        tpot_by_concurrency=_pairs(data, "tpot_by_concurrency", first_min=1),
        saturated_tokens_per_s=_number(data, "saturated_tokens_per_s", minimum=0.0),
        tpot_context_tokens=_number(data, "tpot_context_tokens", minimum=0.0, inclusive=True),
        long_context=long_context,
        requests=int(requests) if isinstance(requests, int) else 0,
        host=shape,
        held_out=held_out,
        **_probe(data),
    )


def _probe(data: dict[str, Any]) -> dict[str, Any]:
    """The server's per-request measurement, when the file has one (files written before it do not)."""
    term = data.get("api_per_request_s")
    if term is None:
        return {}
    tokens = data.get("probe_prompt_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        raise CalibrationFileError(f"probe_prompt_tokens must be a count >= 1 beside api_per_request_s, got {tokens!r}")
    return {
        "probe_prompt_tokens": tokens,
        "probe_ttft_by_concurrency": _pairs(data, "probe_ttft_by_concurrency", first_min=1, least=1),
        "api_per_request_s": _number(data, "api_per_request_s", minimum=0.0, inclusive=True),
    }


def read_calibration(path: Path) -> Calibration:
    """Read a calibration file; raises ``CalibrationFileError`` (missing, unreadable, not JSON, not a calibration)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise CalibrationFileError(
            f"no such file {path}; write it with tokenplane calibrate URL --model NAME --out FILE"
        ) from e
    except (OSError, UnicodeDecodeError) as e:
        raise CalibrationFileError(f"cannot read {path}: {e}") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise CalibrationFileError(f"{path} is not JSON ({e}), so not a calibration file") from e
    try:
        return parse_calibration(data)
    except CalibrationFileError as e:
        raise CalibrationFileError(f"{path}: {e}") from e


def release_tuple(version: str) -> tuple[int, int, int] | None:
    """``"0.32.0"``, ``"v0.32"``, ``"0.32.0+cpu"`` -> ``(0, 32, 0)``; None when it is not a release number."""
    public = version.strip().lstrip("v").split("+", 1)[0]
    parts = public.split(".")
    numbers: list[int] = []
    for part in parts[:3]:
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            return None
        numbers.append(int(digits))
    if len(numbers) < 2:
        return None
    while len(numbers) < 3:
        numbers.append(0)
    return numbers[0], numbers[1], numbers[2]


# --- from measurements to iteration costs ---------------------------------------------------------


@dataclass(frozen=True)
class HostTiming:
    """The calibration as the engines' terms: see the module's docstring for how each is read."""

    ttft_floor_s: float
    overhead_s: float
    prefill_per_token_s: float
    prefill_per_pair_s: float
    steps: tuple[tuple[int, float], ...]  # (batch, decode step s) at the measured context
    context_tokens: float  # per sequence, where ``steps`` were measured
    kv_s_per_token: float  # what one more KV token held by the batch adds to a step
    # The server's work per other request in flight (``per_request_s``); None: not measured (an older file).
    api_per_request_s: float | None = None

    def step_s(self, batch: float) -> float:
        """One decode step of ``batch`` sequences at the measured context."""
        pts = self.steps
        if batch <= pts[0][0]:
            return pts[0][1]
        for (b0, s0), (b1, s1) in itertools.pairwise(pts):
            if batch <= b1:
                return s0 + (s1 - s0) * (batch - b0) / (b1 - b0)
        (b0, s0), (b1, s1) = pts[-2], pts[-1]
        return s1 + max(s1 - s0, 0.0) / (b1 - b0) * (batch - b1)

    def lone_ttft_s(self, prompt_tokens: float) -> float:
        """A lone request's TTFT for a fresh prompt, as the engines price it from these terms."""
        p = prompt_tokens
        return self.ttft_floor_s + self.overhead_s + self.prefill_per_token_s * p + self.prefill_per_pair_s * p * p / 2

    def beside_batch_ttft_s(self, prompt_tokens: float, batch: int) -> float:
        """A fresh prompt's TTFT sent while ``batch`` sequences decode, as the engines price it without the
        server's per-request term: what ``per_request_s`` leaves to that term.

        The planner (``pool_performance``'s chains) and the simulated engine (``sim.engine``) price such a
        first token the same way: it waits out the iteration in progress (half a decode step of ``batch`` on
        average, a Poisson arrival's residual), then comes out of one iteration that decodes the batch and
        prefills it (the decode step, which holds the iteration's overhead, plus the prompt's prefill), and the
        server adds its floor and its work for the ``batch`` others (``PoolTiming.first_token_server_s``).
        The lone TTFT holds the overhead of an iteration with nothing decoding, so it is taken out here
        rather than paid twice. (The overhead is split off as ``PoolTiming.calibrated`` does, so the two
        agree, except where a noisy host's steps extrapolated beyond the measured batches fall under it:
        the pool's floor then takes the difference, and the planner prices this that much higher.)
        """
        return self.lone_ttft_s(prompt_tokens) - self.overhead_s + 1.5 * self.step_s(batch)


def per_request_s(host: HostTiming, prompt_tokens: float, probes: list[tuple[int, float]]) -> float:
    """The server's work per other request in flight, from TTFTs of a fresh prompt beside ``k`` decoding streams.

    Each probe's residual over ``host.beside_batch_ttft_s`` (the engines' price without the server's term)
    is what the server added for ``k`` streams; the term is the least-squares slope of residual against
    ``k`` through the origin (``capacity.server_seconds`` is linear in the requests in flight, and the floor
    is already in the lone TTFT), clamped at 0: a host that served the probes faster than its engine terms
    predict has no measurable per-request work, and a negative term would price load as a speed-up.
    """
    if not probes:
        raise CalibrationFileError("no probe TTFTs to fit the server's per-request work on")
    slope = sum(k * (ttft - host.beside_batch_ttft_s(prompt_tokens, k)) for k, ttft in probes) / sum(
        k * k for k, _ in probes
    )
    return max(slope, 0.0)


def _nnls3(rows: list[tuple[float, float, float]], y: list[float]) -> tuple[float, float, float]:
    """Least squares with non-negative coefficients for three unknowns: the best of the 7 active sets.

    Three unknowns make the active-set enumeration exact and short; numpy's lstsq solves each set.
    """
    import numpy as np

    a = np.array(rows, dtype=np.float64)
    b = np.array(y, dtype=np.float64)
    best: tuple[float, tuple[float, float, float]] | None = None
    for size in (1, 2, 3):
        for active in itertools.combinations(range(3), size):
            coef, *_ = np.linalg.lstsq(a[:, active], b, rcond=None)
            if (coef < 0).any():
                continue
            full = np.zeros(3)
            full[list(active)] = coef
            residual = float(((a @ full - b) ** 2).sum())
            if best is None or residual < best[0]:
                best = (residual, (float(full[0]), float(full[1]), float(full[2])))
    if best is None:  # the constant column alone fits positive TTFTs with a positive mean: never reached
        raise CalibrationFileError("no non-negative fit of TTFT against the prompt")
    return best[1]


def fit(cal: Calibration) -> HostTiming:
    """The engines' terms from a calibration (see the module's docstring)."""
    rows = [(1.0, float(p), p * p / 2.0) for p, _ in cal.ttft_by_prompt]
    fixed, per_token, per_pair = _nnls3(rows, [t for _, t in cal.ttft_by_prompt])
    steps = tuple(cal.tpot_by_concurrency)
    kv = 0.0
    long = cal.long_context
    if long is not None and long.context_tokens > cal.tpot_context_tokens:
        short = HostTiming(0.0, 0.0, 0.0, 0.0, steps, cal.tpot_context_tokens, 0.0).step_s(long.streams)
        kv = max(long.step_s - short, 0.0) / (long.streams * (long.context_tokens - cal.tpot_context_tokens))
    # Under every measured step less its KV read, as ``PoolTiming.calibrated`` keeps it: the split of ``fixed``
    # between floor and overhead is then the pool's, and ``beside_batch_ttft_s`` prices what the planner does.
    overhead = max(min(fixed, *(s - kv * b * cal.tpot_context_tokens for b, s in steps)), 0.0)
    return HostTiming(
        ttft_floor_s=fixed - overhead,
        overhead_s=overhead,
        prefill_per_token_s=per_token,
        prefill_per_pair_s=per_pair,
        steps=steps,
        context_tokens=cal.tpot_context_tokens,
        kv_s_per_token=kv,
        api_per_request_s=cal.api_per_request_s,
    )


# --- against the pool that names it -------------------------------------------------------------


def pool_release(pool: Pool) -> str:
    """The vLLM release a pool's replicas run: its ``engine.vllm_version``, else the deployed image's.

    The same release as ``pool_model.engine_release`` (which sizes the KV cache with that release's
    accounting); kept apart because a calibration is checked against the engine that serves.
    """
    return pool.engine.vllm_version or IMAGE_VLLM


def mismatches(spec: PlatformSpec, pool: Pool, cal: Calibration, source: str) -> list[str]:
    """Why ``cal`` (read from ``source``) does not describe ``pool``'s replicas; empty when it does."""
    problems: list[str] = []
    served = served_model_names(spec, pool)
    if cal.model not in served:
        problems.append(
            f"{source} measured model {cal.model!r}, but pool {pool.name} serves {' / '.join(served)}; "
            f"calibrate a replica of this pool: tokenplane calibrate URL --model {served[0]}"
        )
    release = pool_release(pool)
    measured = release_tuple(cal.vllm_version)
    if measured is None or measured != release_tuple(release):
        problems.append(
            f"{source} measured vLLM {cal.vllm_version}, but pool {pool.name} runs vLLM {release} "
            "(engine.vllm_version, else the release tokenplane deploys); a release changes the scheduler and "
            "kernels, so calibrate a replica that runs it"
        )
    if cal.host is not None and (cal.host.gpu, cal.host.tensor_parallel) != (pool.gpu, pool.tensor_parallel):
        problems.append(
            f"{source} was measured on {cal.host.gpu} TP{cal.host.tensor_parallel}, but pool {pool.name} runs on "
            f"{pool.gpu} TP{pool.tensor_parallel}; calibrate a replica of this shape (--gpu {pool.gpu} "
            f"--tensor-parallel {pool.tensor_parallel})"
        )
    return problems
