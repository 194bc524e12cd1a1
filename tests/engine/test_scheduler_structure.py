"""The scheduler our model assumes against vLLM's own, in counts; and priority under load (issue 26 items 6, 3).

One engine for the module: the dev spec's ``small`` pool, its rendered argv (which carries
``--scheduling-policy priority``: the pool serves several levels) with a KV cache of 40 blocks
(``benchmarks.scheduler_structure.ENGINE_FLAGS``). The arrival script runs once; the tests read its
outcome. ``python benchmarks/scheduler_structure.py --update BENCHMARKS.md`` writes the same table.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import scheduler_structure as bench
from tokenplane.dev.real_engine import RealEngine, running_engine
from tokenplane.spec import PlatformSpec


@pytest.fixture(scope="module")
def small_cache_engine(
    engine_version: str, dev_spec: PlatformSpec, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealEngine]:
    work = tmp_path_factory.mktemp("small-cache-engine")
    with running_engine(
        dev_spec, dev_spec.pool(bench.POOL), Path(work), extra=bench.ENGINE_FLAGS, env=bench.ENGINE_ENV
    ) as engine:
        yield engine


@pytest.fixture(scope="module")
def result(small_cache_engine: RealEngine, dev_spec: PlatformSpec) -> dict[str, Any]:
    pool = dev_spec.pool(bench.POOL)
    model = bench.predict(dev_spec, pool)
    engine = bench.measure(small_cache_engine.base_url, dev_spec.model(pool.model).ref)
    outcome = bench.compare(model, engine, bench.predict(dev_spec, pool, priority_scheduling=False))
    print("\n".join(bench.lines(outcome)))  # the table, for the tier's log
    return outcome


def test_the_engine_runs_the_rendered_priority_policy(small_cache_engine: RealEngine) -> None:
    argv = small_cache_engine.argv
    assert argv[argv.index("--scheduling-policy") + 1] == "priority"


def test_the_script_overflows_the_cache_and_the_engine_preempts(result: dict[str, Any]) -> None:
    """Else the comparison below compares nothing: the script must make the KV cache bind."""
    assert result["demand_tokens"] > 2 * result["kv_tokens"]
    assert result["engine"]["preemptions"] > 0
    assert 1 < result["engine"]["max_running"] < result["requests"]


def test_the_models_scheduler_structure_matches_vllms_within_tolerance(result: dict[str, Any]) -> None:
    """Peak running, preemptions and first-token order: ``bench.TOLERANCE`` says how far apart they may be."""
    assert result["failures"] == [], result


def test_critical_requests_get_their_first_token_before_waiting_batch_ones(result: dict[str, Any]) -> None:
    """Issue 26 item 3 on the real engine: under load the high level's TTFT is below the low level's.

    In order first (no critical request's first token after that of a batch request that was still
    waiting when the critical one arrived), then the medians, which follow from it here.
    """
    assert result["high_after_waiting_low"]["engine"] == 0
    ttft = result["median_ttft_s"]
    assert ttft["engine_high"] < ttft["engine_low"]
