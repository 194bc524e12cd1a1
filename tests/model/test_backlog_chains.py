"""Several operating points' backlog chains in one loop: each point's TTFT is the one it gets alone, to the bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.paths import REPO_ROOT
from tokenplane.load import load_spec
from tokenplane.model import backlog_chains
from tokenplane.model.backlog_chains import F64
from tokenplane.model.capacity import PrefillBeside
from tokenplane.model.pool_performance import Operating, ReplicaPerformance, for_pool
from tokenplane.model.pricing_cache import PricingCache
from tokenplane.model.traffic import route
from tokenplane.spec import PlatformSpec


@pytest.fixture(scope="module")
def byteion() -> PlatformSpec:
    return load_spec(REPO_ROOT / "stacks" / "byteion.yaml")


def _pool(
    spec: PlatformSpec, region: str, name: str, cache: PricingCache | None = None
) -> tuple[ReplicaPerformance, float]:
    load = route(spec).loads[(region, name)]
    perf = for_pool(spec, region, spec.pool(name), load.per_class, cache=cache)
    assert perf is not None
    return perf, sum(load.per_class.values())


@pytest.mark.parametrize(
    ("region", "name", "counts"),
    [
        ("us-east", "small-chat", [400, 384, 390]),  # a decoding pool, its first two questions and one more
        ("eu-west", "long-context", [60, 45]),  # long prompts: the chains run several rounds an arrival
        ("us-east", "embed", [42, 18]),  # an encoder: the chains never decode
    ],
)
def test_points_priced_together_get_the_answers_each_gets_alone(
    byteion: PlatformSpec, region: str, name: str, counts: list[int]
) -> None:
    perf, lam = _pool(byteion, region, name)
    points = [(perf.operating(lam / n), n) for n in counts]
    assert all(op.feasible for op, _ in points)
    alone = [perf._ttft(op, n) for op, n in points]
    assert repr(perf._ttft_many(points)) == repr(alone)
    assert repr(perf._ttft_many(points[::-1])) == repr(alone[::-1])


def test_points_that_share_one_stream_would_be_seen(byteion: PlatformSpec) -> None:
    """The check above can fail: chains of two points drawing from one stream are not the points' own chains."""
    perf, lam = _pool(byteion, "us-east", "small-chat")
    alone = backlog_chains.run([_point(perf, lam, 400, np.random.default_rng(7))], *_grids(perf, 1), decoding=True)
    shared = np.random.default_rng(7)
    together = backlog_chains.run(
        [_point(perf, lam, 400, shared), _point(perf, lam, 384, shared)], *_grids(perf, 2), decoding=True
    )
    assert not np.array_equal(alone[0].residual, together[0].residual)
    apart = backlog_chains.run(
        [_point(perf, lam, 400, np.random.default_rng(7)), _point(perf, lam, 384, np.random.default_rng(8))],
        *_grids(perf, 2),
        decoding=True,
    )
    assert np.array_equal(alone[0].residual, apart[0].residual)
    assert alone[0].decode_only == apart[0].decode_only
    assert np.array_equal(alone[0].lengths, apart[0].lengths)


def _point(perf: ReplicaPerformance, lam: float, n: int, rng: np.random.Generator) -> backlog_chains.Point:
    decode = np.full(backlog_chains.CHAINS, 0.02)
    return backlog_chains.Point(rng, lam / n, n, decode, np.full(backlog_chains.CHAINS, 2048.0))


def _grids(perf: ReplicaPerformance, k: int) -> tuple[PrefillBeside, F64, F64]:
    grid, grid_s = perf._prefill_grid
    return perf.timing.prefill.beside(np.full(k * backlog_chains.CHAINS, 30.0)), grid, grid_s


def test_points_that_disagree_on_decoding_are_refused(byteion: PlatformSpec) -> None:
    perf, lam = _pool(byteion, "us-east", "small-chat")
    op = perf.operating(lam / 400)
    idle = op.__class__(**{**op.__dict__, "batch": 0.0})
    with pytest.raises(ValueError, match="all decode, or none"):
        perf._ttft_many([(op, 400), (idle, 400)])


def test_prefetched_answers_are_the_health_asked_alone(byteion: PlatformSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    perf, lam = _pool(byteion, "eu-west", "medium-rag")
    fresh, _ = _pool(byteion, "eu-west", "medium-rag")
    expected = [repr(fresh.health(lam / n, replicas=n)) for n in (60, 48)]
    perf.prefetch([(lam / 60, 60), (lam / 48, 48)])
    monkeypatch.setattr(ReplicaPerformance, "_ttft", _never)  # what was prefetched must not be priced again
    assert [repr(perf.health(lam / n, replicas=n)) for n in (60, 48)] == expected


def _never(self: ReplicaPerformance, *args: object) -> object:
    raise AssertionError("a prefetched point was priced again")


def test_a_point_the_cache_holds_is_not_priced_again(
    byteion: PlatformSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, lam = _pool(byteion, "us-east", "small-chat", PricingCache(tmp_path))
    first.health(lam / 400, replicas=400)
    again, _ = _pool(byteion, "us-east", "small-chat", PricingCache(tmp_path))
    asked: list[int] = []
    real = ReplicaPerformance._ttft_many

    def counted(self: ReplicaPerformance, points: list[tuple[Operating, int]]) -> object:
        asked.extend(n for _, n in points)
        return real(self, points)

    monkeypatch.setattr(ReplicaPerformance, "_ttft_many", counted)
    again.prefetch([(lam / 400, 400), (lam / 384, 384)])
    assert asked == [384]
    assert repr(again.health(lam / 400, replicas=400)) == repr(first.health(lam / 400, replicas=400))
