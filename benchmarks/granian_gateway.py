"""The AI gateway's public app for granian, to weigh granian against uvicorn in ``deployed_bench.py --server granian``.

An evaluation only: the shipped process (``python -m serving.gateway``) serves on uvicorn with
``HeaderTimeoutProtocol`` and a metrics port, which this entry point does not reproduce (granian's
``--http1-header-read-timeout`` stands in for the first; the second is left out).
"""

from __future__ import annotations

from starlette.applications import Starlette

from serving.gateway.runtime import apps_from_env


def public() -> Starlette:
    """granian ``--factory`` target: the public app, its lifespan building the gateway from the environment."""
    return apps_from_env()[0]
