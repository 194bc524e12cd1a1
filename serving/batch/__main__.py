"""``python -m tokenplane.serving.batch``: one batch worker, configured from the environment the components set.

``TOKENPLANE_CONFIG`` (the spec), ``TOKENPLANE_REGION``, ``REDIS_URL``,
``KAFKA_BOOTSTRAP_SERVERS`` (with ``KAFKA_SASL_MECHANISM`` on MSK),
``KAFKA_TOPIC`` (default: the spec's batch topic), ``MODEL_GATEWAY_URL``,
``TOKENPLANE_SPOOL_DIR`` and the file store's (``TOKENPLANE_FILES_BUCKET`` and
``TOKENPLANE_FILES_PREFIX`` in a cloud region, else ``TOKENPLANE_FILES_DIR``;
see ``serving.gateway.runtime.file_store``). Prometheus scrapes ``tokenplane_batch_pending_jobs``
on ``TOKENPLANE_METRICS_PORT`` (9000); KEDA scales the workers on it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Mapping

from prometheus_client import start_http_server

from tokenplane.errors import SpecError
from tokenplane.runtime_env import RuntimeEnv, Var
from tokenplane.serving.batch.worker import BatchWorker
from tokenplane.serving.events.kafka import kafka_security_from_env
from tokenplane.serving.files.batch_store import BatchStore
from tokenplane.serving.gateway.runtime import file_store, gateway_from_env, topics
from tokenplane.spec import TopicPurpose


async def run(environ: Mapping[str, str]) -> None:
    """Build the gateway from ``environ``, then consume batch jobs until SIGTERM or SIGINT."""
    env = RuntimeEnv.parse(environ)
    bootstrap = env.required(Var.KAFKA_BOOTSTRAP_SERVERS, "the batch topic's brokers (host:port,...)")
    async with gateway_from_env(environ, env=env) as gateway:
        worker = BatchWorker(
            gateway,
            files=file_store(environ, env=env),
            jobs=BatchStore(gateway.redis),
            bootstrap=bootstrap,
            topic=env.kafka_topic or topics(gateway.spec)[TopicPurpose.BATCH],
            registry=gateway.metrics.registry,
            security=kafka_security_from_env(environ),
        )
        start_http_server(env.metrics_port, registry=gateway.metrics.registry)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            # Finish the lines in flight, leave the job uncommitted; the next worker skips what is done.
            loop.add_signal_handler(sig, lambda: asyncio.ensure_future(worker.stop()))
        await worker.run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokenplane.serving.batch", description=__doc__)
    parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(run(dict(os.environ)))
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
