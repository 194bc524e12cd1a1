"""The AI gateway's public app for granian, to weigh granian against uvicorn in ``deployed_bench.py --server granian``.

An evaluation only: the shipped process (``python -m tokenplane.serving.gateway``) serves on uvicorn with
``HeaderTimeoutProtocol`` and a metrics port, which this entry point does not reproduce (granian's
``--http1-header-read-timeout`` stands in for the first; the second is left out).

Measured on 2026-12-03 (deployed shape, 150 req/s, 3 rounds, 2 shared cores at load ~2): granian 203
(197-221) requests per gateway CPU-second and +P99 119 ms (47-293), uvicorn 183 (182-210) and 40 ms
(11-51). No clear win within the noise, and a worse tail, so the gateway stays on uvicorn, whose
``HeaderTimeoutProtocol`` and metrics port are already proven (tests/serving/gateway/test_gateway_edge.py).
"""

from __future__ import annotations

from starlette.applications import Starlette

from tokenplane.serving.gateway.runtime import apps_from_env


def public() -> Starlette:
    """granian ``--factory`` target: the public app, its lifespan building the gateway from the environment."""
    return apps_from_env()[0]
