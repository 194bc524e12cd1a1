"""Batch workers: class D jobs from the batch topic, run through the gateway's pipeline at batch priority.

``python -m tokenplane.serving.batch`` runs one worker configured from the environment;
``BatchWorker`` is the same worker for tests and ``tokenplane dev``.

It may import the core, ``serving``'s shared rooms and ``serving.gateway`` (whose pipeline it runs).
"""

from tokenplane.serving.batch.worker import LINE_CONCURRENCY, BatchWorker

__all__ = ["LINE_CONCURRENCY", "BatchWorker"]
