"""``python -m tokenplane.serving.modelgw``: the model gateway process.

Reads ``TOKENPLANE_CONFIG``, ``TOKENPLANE_REGION`` and ``POOL_URL_<POOL>``
(see ``serving.modelgw.config``), and ``TOKENPLANE_MODEL_GATEWAY_PEERS`` with ``POD_IP`` where it
runs beside other model gateway processes (``serving.modelgw.discovery``), and serves on ``--host``/``--port``. A
missing or invalid config exits with status 2 and one line saying what to fix.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Mapping, Sequence

import aiohttp
import uvicorn
import uvloop
from prometheus_client import CollectorRegistry

from tokenplane.runtime_env import ConfigError, Var, load_spec_from_env
from tokenplane.serving.modelgw.app import create_app
from tokenplane.serving.modelgw.config import ModelGatewayConfig, load_modelgw_config
from tokenplane.serving.modelgw.discovery import ReplicaDiscovery
from tokenplane.serving.modelgw.gateway import FailoverUpstream

DEFAULT_PORT = 8080
# Connections kept to all replicas and providers together; vLLM handles hundreds of concurrent
# streams per replica, and a pool has a handful of replicas behind each model gateway.
CONNECTION_LIMIT = 1024
EXIT_CONFIG = 2


def _config(environ: Mapping[str, str]) -> ModelGatewayConfig:
    spec, region = load_spec_from_env(environ)
    return load_modelgw_config(spec, region, environ)


async def _serve(config: ModelGatewayConfig, host: str, port: int, peers: str = "", me: str = "") -> None:
    registry = CollectorRegistry()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CONNECTION_LIMIT)) as session:
        gateway = FailoverUpstream(config, session=session, registry=registry)
        urls = {name: pool.replicas for name, pool in config.pools.items()}
        discovery = ReplicaDiscovery(gateway.balancers, urls, peers=peers, me=me)
        refreshing: asyncio.Task[None] | None = None
        try:
            if (
                discovery.needed
            ):  # each pool's headless Service and the peers', read before the first request, kept fresh
                await discovery.refresh()
                refreshing = asyncio.create_task(discovery.run())
            app = create_app(gateway, registry=registry)
            server = uvicorn.Server(
                uvicorn.Config(app, host=host, port=port, http="httptools", access_log=False, log_level="info")
            )
            await server.serve()
        finally:
            if refreshing is not None:
                refreshing.cancel()
            await gateway.aclose()


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tokenplane.serving.modelgw", description="The model gateway process."
    )
    parser.add_argument("--host", default="0.0.0.0")  # the pod's port; the NetworkPolicy limits callers
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    env = os.environ if environ is None else environ
    try:
        config = _config(env)
    except (ConfigError, ValueError, RuntimeError) as e:
        print(f"tokenplane.serving.modelgw: {e}", file=sys.stderr)
        return EXIT_CONFIG
    # uvloop for the event loop; httptools parses HTTP (the Config above): both are the fast paths.
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(_serve(config, args.host, args.port, env.get(Var.MODEL_GATEWAY_PEERS, ""), env.get(Var.POD_IP, "")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
