"""``python -m tokenplane.serving.gateway``: the AI gateway, configured from the environment.

The public API listens on ``--port`` (8080); Prometheus scrapes ``/metrics`` on
``--metrics-port`` (``TOKENPLANE_METRICS_PORT``, default 9000), which the load
balancer never reaches.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

import uvloop

from tokenplane.errors import SpecError
from tokenplane.runtime_env import RuntimeEnv, Var
from tokenplane.serving.gateway.runtime import apps_from_env
from tokenplane.serving.gateway.server import DRAIN_TIMEOUT_S, metrics_server, public_server, serve_both

PORT = 8080  # components/gateway.py GATEWAY_PORT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokenplane.serving.gateway", description=__doc__)
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--metrics-port", type=int, default=None, help=f"default: ${Var.METRICS_PORT.value} or 9000")
    parser.add_argument(
        "--drain-timeout",
        type=int,
        default=DRAIN_TIMEOUT_S,
        help=f"on SIGTERM, seconds responses in flight may finish before they are cut and metered (default {DRAIN_TIMEOUT_S:g})",
    )
    args = parser.parse_args(argv)
    if not args.drain_timeout >= 0:
        parser.error(f"--drain-timeout must be a number of seconds >= 0, got {args.drain_timeout}")
    try:
        env = RuntimeEnv.parse(os.environ)  # once: the gateway's parts all read this
        metrics_port = args.metrics_port or env.metrics_port
        public, metrics = apps_from_env(env=env, freeze_heap=True)
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    servers = serve_both(
        public_server(public, host=args.host, port=args.port, drain_timeout_s=args.drain_timeout),
        metrics_server(metrics, host=args.host, port=metrics_port),
    )
    # uvloop and httptools: the gateway's budget is a couple of milliseconds per request.
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(servers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
