"""``python -m tokenplane.serving.finops``: the metering consumer, configured from the environment the components set.

``TOKENPLANE_CONFIG`` (the spec), ``TOKENPLANE_REGION``, ``KAFKA_BOOTSTRAP_SERVERS`` (with
``KAFKA_SASL_MECHANISM`` on MSK), ``TOKENPLANE_FINOPS_STORE`` (a ClickHouse URL, with its password in the
file ``CLICKHOUSE_PASSWORD_FILE`` names, or in ``CLICKHOUSE_PASSWORD``; or a chDB directory on one machine) and
where replica counts come from (``TOKENPLANE_PROMETHEUS_URL`` in the cluster, else the ``POOL_URL_<POOL>`` lists). ``/metrics`` (the lag:
KEDA scales on it) is served on ``--port``; with a chDB ledger, the same port answers ClickHouse's HTTP SQL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Mapping

import uvicorn
from prometheus_client import CollectorRegistry

from tokenplane.errors import SpecError
from tokenplane.runtime_env import DEFAULT_METRICS_PORT, RuntimeEnv, Var, load_spec_from_env
from tokenplane.serving.events.kafka import kafka_security_from_env
from tokenplane.serving.finops.budgets import BUDGET_INTERVAL_SECONDS, BudgetMetrics, watch_budgets
from tokenplane.serving.finops.capacity import PoolUrlReplicas, PrometheusReplicas, ReplicaSource, record_replicas
from tokenplane.serving.finops.consumer import MeteringConsumer
from tokenplane.serving.finops.errors import StoreError
from tokenplane.serving.finops.rates import pool_rates
from tokenplane.serving.finops.server import SerializedStore, create_app
from tokenplane.serving.finops.store import open_store


async def run(environ: Mapping[str, str], *, host: str, port: int) -> None:
    """Consume the metering topics into the ledger until SIGTERM or SIGINT."""
    env = RuntimeEnv.parse(environ)
    spec, region = load_spec_from_env(environ)
    bootstrap = env.required(Var.KAFKA_BOOTSTRAP_SERVERS, "the metering topics' brokers (host:port,...)")
    where = env.required(Var.FINOPS_STORE, "the ledger: a ClickHouse URL, or a chDB directory")
    local = not where.startswith(("http://", "https://"))
    store = SerializedStore(open_store(where, password=env.ledger_password()))
    pools = [p.pool for p in spec.region(region).pools]
    prometheus = env.prometheus_url
    source: ReplicaSource = PrometheusReplicas(prometheus, pools) if prometheus else PoolUrlReplicas(pools, environ)
    registry = CollectorRegistry()
    consumer = MeteringConsumer(
        bootstrap, spec.queues.topic_names(), store, registry=registry, security=kafka_security_from_env(environ)
    )
    server = uvicorn.Server(
        uvicorn.Config(create_app(registry, store=store if local else None), host=host, port=port, log_level="warning")
    )
    stop = asyncio.Event()

    def shutdown() -> None:
        stop.set()
        consumer.stop()
        server.should_exit = True

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, shutdown)
    rates = await asyncio.to_thread(pool_rates, spec)
    tasks = [
        asyncio.create_task(server.serve(), name="finops-http"),
        asyncio.create_task(record_replicas(store, source, rates, region, stop), name="finops-replicas"),
        asyncio.create_task(
            watch_budgets(store, spec, BudgetMetrics(registry), stop, BUDGET_INTERVAL_SECONDS), name="finops-budgets"
        ),
    ]
    try:
        await consumer.run()
    finally:
        shutdown()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks)
        store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokenplane.serving.finops", description=__doc__)
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=DEFAULT_METRICS_PORT)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(run(dict(os.environ), host=args.host, port=args.port))
    except (SpecError, StoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
