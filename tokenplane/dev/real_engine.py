"""One real vLLM CPU server for a pool, started and stopped around a block: for scripts and the engine tier.

``running_engine(spec, pool, work_dir)`` serves the pool's rendered argv with the CPU overlay, on the
tiny deterministic model (or the model's ``local_path``), exactly as ``tokenplane dev --engine vllm``
starts a replica; ``extra`` appends flags a measurement needs (a smaller KV cache, a scheduling policy).
"""

from __future__ import annotations

import contextlib
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tokenplane.dev.standins import LOOPBACK, ManagedProcess, free_port
from tokenplane.dev.vllm_cpu import CPU_START_TIMEOUT, cpu_env, cpu_overlay, engine_models
from tokenplane.model.scheduling import serves_several_levels
from tokenplane.spec import PlatformSpec, Pool
from tokenplane.vllm_args import vllm_args

HEALTH_POLL_SECONDS = 0.5


class EngineStartError(RuntimeError):
    """The real engine exited or did not answer /health in time; the message ends with its log's tail."""


@dataclass
class RealEngine:
    """A started server: where it answers, its argv and its log."""

    process: ManagedProcess
    argv: list[str]
    port: int
    started_s: float = 0.0  # seconds from spawn to /health 200
    env: dict[str, str] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"


def engine_argv(
    spec: PlatformSpec, pool: Pool, models_dir: Path, port: int, extra: list[str] | None = None
) -> list[str]:
    """The pool's ``vllm serve`` arguments as a CPU replica runs them (the render's, then the overlay)."""
    rendered = vllm_args(
        spec, pool, models_dir=str(models_dir), port=port, priority_scheduling=serves_several_levels(spec, pool)
    )
    return [*cpu_overlay(rendered), *(extra or []), "--host", LOOPBACK]


def health(base_url: str) -> int | None:
    """The status of ``GET /health``, or None when nothing answers."""
    try:
        with urllib.request.urlopen(f"{base_url}/health", timeout=5) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def wait_healthy(engine: RealEngine, timeout: float) -> None:
    """Block until ``/health`` answers 200; raise ``EngineStartError`` if the process exits or time runs out."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        process = engine.process.process
        if process is None or process.poll() is not None:
            raise EngineStartError(f"the vLLM server exited while starting:\n{engine.process.log_tail(40)}")
        if health(engine.base_url) == 200:
            engine.started_s = time.monotonic() - start
            return
        time.sleep(HEALTH_POLL_SECONDS)
    raise EngineStartError(
        f"the vLLM server did not answer /health within {timeout:.0f} s:\n{engine.process.log_tail(40)}"
    )


@contextlib.contextmanager
def running_engine(
    spec: PlatformSpec,
    pool: Pool,
    work_dir: Path,
    *,
    extra: list[str] | None = None,
    env: dict[str, str] | None = None,
    cache_dir: Path | None = None,
    timeout: float = CPU_START_TIMEOUT,
) -> Iterator[RealEngine]:
    """Start the pool's real CPU server, wait for /health, yield it, and stop it (and all it forked)."""
    models = engine_models(spec, [pool], work_dir / "models", cache_dir or work_dir / "cache")
    port = free_port()
    argv = engine_argv(spec, pool, models, port, extra)
    engine_env = cpu_env() | (env or {})
    process = ManagedProcess(
        f"vllm-{pool.name}",
        [sys.executable, "-m", "tokenplane.dev.vllm_serve", "serve", *argv],
        port,
        work_dir / f"vllm-{pool.name}.log",
        env=engine_env,
        start_timeout=timeout,
        die_with_parent=True,
    )
    engine = RealEngine(process, argv, port, env=engine_env)
    process.spawn()
    try:
        wait_healthy(engine, timeout)
        yield engine
    finally:
        process.stop()
