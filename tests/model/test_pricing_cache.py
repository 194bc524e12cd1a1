"""The pool model's pricing cache: a plan read back from it is the plan computed, number for number."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from tests.paths import REPO_ROOT
from tokenplane.commands.plan_report import plan_json
from tokenplane.load import load_spec
from tokenplane.model import pool_performance, pricing_cache
from tokenplane.model.planner import plan
from tokenplane.model.pool_performance import Operating
from tokenplane.model.pricing_cache import PricingCache

ROOT = REPO_ROOT
DEV = ROOT / "stacks" / "dev.yaml"


def _numbers(cache: PricingCache | None) -> str:
    return json.dumps(plan_json(plan(load_spec(DEV), cache=cache)), sort_keys=True)


def test_a_plan_read_back_from_the_cache_is_the_plan_computed(tmp_path: Path) -> None:
    computed = _numbers(None)
    first = PricingCache(tmp_path)
    assert _numbers(first) == computed
    assert first.misses > 0 and first.hits == 0
    again = PricingCache(tmp_path)
    assert _numbers(again) == computed
    assert again.misses == 0 and again.hits == first.misses


def test_a_key_that_leaves_out_the_operating_point_changes_the_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The defect the equality above guards against: two replica counts' pricings sharing one entry.
    computed = _numbers(None)
    keyer = PricingCache.keyer

    def without_operating_point(self: PricingCache, *fixed: object) -> Callable[..., str]:
        key = keyer(self, *fixed)
        return lambda *rest: key(*(x for x in rest if not isinstance(x, Operating | int) or isinstance(x, bool)))

    monkeypatch.setattr(PricingCache, "keyer", without_operating_point)
    assert _numbers(PricingCache(tmp_path)) != computed


@pytest.mark.parametrize("rest", [("fluid",), (1.5, Operating, 3), ([0.1, 2.0], None)])
def test_a_pools_keyer_gives_the_key_of_all_its_inputs(tmp_path: Path, rest: tuple[object, ...]) -> None:
    cache = PricingCache(tmp_path)
    fixed = ({"memory_s": [0.1, 0.2]}, ["class-a", "class-b"], 0.75)
    assert cache.keyer(*fixed)(*rest) == cache.key(*fixed, *rest)
    assert cache.keyer(*fixed)(*rest) != cache.keyer(*fixed[:2], 0.5)(*rest)


def test_a_keyer_asked_with_nothing_more_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one input"):
        PricingCache(tmp_path).keyer("timing")()


def test_a_changed_pool_model_does_not_read_the_old_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _numbers(PricingCache(tmp_path))
    monkeypatch.setattr(pricing_cache, "_code_digest", lambda: "another pool model")
    changed = PricingCache(tmp_path)
    _numbers(changed)
    assert changed.hits == 0 and changed.misses > 0


def test_every_model_module_the_pool_model_draws_on_is_in_the_digest() -> None:
    # A module that computes part of a cached answer but is left out of the digest would serve stale answers
    # after it changes (``kv_stall`` feeds ``_ttft``). ``preemption`` is priced outside the cache; the cache
    # itself computes nothing.
    uncached = {"preemption", "pricing_cache"}
    drawn_on = {
        name
        for name, value in vars(pool_performance).items()
        if isinstance(value, ModuleType) and value.__name__.startswith("tokenplane.model.")
    }
    priced = {source.removesuffix(".py") for source in pricing_cache.PRICED_SOURCES}
    assert "pool_performance" in priced
    assert drawn_on - uncached <= priced, drawn_on - uncached - priced


def test_a_damaged_entry_is_recomputed_not_trusted(tmp_path: Path) -> None:
    computed = _numbers(PricingCache(tmp_path))
    for entry in (tmp_path / "pricing").glob("*.json"):
        entry.write_text("{not json", encoding="utf-8")
    assert _numbers(PricingCache(tmp_path)) == computed


def test_the_cache_keeps_at_most_max_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pricing_cache, "MAX_ENTRIES", 8)
    monkeypatch.setattr(pricing_cache, "PRUNE_EVERY", 1)
    cache = PricingCache(tmp_path)
    for n in range(20):
        cache.get_or_compute(cache.key(n), functools.partial(float, n))
    assert len(list((tmp_path / "pricing").glob("*.json"))) <= 8


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(pricing_cache.ENV, "off")
    assert pricing_cache.default_dir() is None
    monkeypatch.setenv(pricing_cache.ENV, str(tmp_path))
    assert pricing_cache.default_dir() == tmp_path
