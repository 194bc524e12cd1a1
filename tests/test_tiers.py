"""The tier guard: a test that starts a broker without the slow mark fails collection."""

from __future__ import annotations

from tests.tiers import unmarked


def test_a_broker_test_without_the_slow_mark_is_named() -> None:
    items = [
        ("tests/a.py::test_marked", ["kafka", "tmp_path"], ["slow"]),
        ("tests/a.py::test_unmarked", ["durable_kafka"], ["asyncio"]),
        ("tests/a.py::test_on_a_gpu", ["kafka"], ["engine"]),
        ("tests/a.py::test_pure", ["tmp_path"], []),
    ]
    assert unmarked(items) == ["tests/a.py::test_unmarked"]
