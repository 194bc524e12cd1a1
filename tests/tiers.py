"""The test tiers, kept honest: a test that starts a broker or a stack must be in the slow tier.

The README's command runs the fast tier (``-m "not slow and not engine"``, pyproject's addopts) in a few
minutes; one unmarked end-to-end test that starts its own Kafka-protocol broker adds seconds to every
run of it. So collection fails, naming the test, when a test asks for one of these fixtures unmarked.
"""

from __future__ import annotations

from collections.abc import Iterable

# Fixtures that start processes per test: each costs seconds on a two-core machine.
PROCESS_FIXTURES = frozenset({"kafka", "durable_kafka", "s3_server", "supervisors"})
SLOW_MARKS = frozenset({"slow", "engine"})


def unmarked(items: Iterable[tuple[str, Iterable[str], Iterable[str]]]) -> list[str]:
    """The node ids of tests that use a process fixture without a slow or engine mark.

    Each item is (node id, its fixture names, its mark names).
    """
    return sorted(
        node for node, fixtures, marks in items if PROCESS_FIXTURES & set(fixtures) and not SLOW_MARKS & set(marks)
    )
