"""A simulated vLLM engine: one GPU replica of one pool, for laptops and tests.

It speaks vLLM's OpenAI-compatible API and metrics, schedules like vLLM V1
(continuous batching, chunked prefill, paged KV blocks with a prefix cache,
preemption by recompute) and takes as long as the capacity model says one
replica of the pool would, divided by ``speed``. Its output is synthetic but
deterministic, and its token counts are exact.

    config = EngineConfig.from_spec(load_spec("stacks/dev.yaml"), "small", speed=math.inf)
    app = create_app(config)  # an ASGI app; or: python -m tokenplane.serving.engine --pool small

It may import the core (its timing comes from ``tokenplane.pool_model``) and
``serving``'s shared modules; never another process package.
"""

from __future__ import annotations

from tokenplane.serving.engine.app import create_app
from tokenplane.serving.engine.config import EngineConfig

__all__ = ["EngineConfig", "create_app"]
