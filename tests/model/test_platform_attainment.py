"""A class's attainment over the whole platform, and the plan's verdict on it (tokenplane.model.platform_attainment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT
from tokenplane.load import load_spec_text
from tokenplane.model.planner import plan
from tokenplane.model.platform_attainment import over_platform
from tokenplane.model.traffic import PoolLoad, Spill, TrafficPlan, Unrouted, route
from tokenplane.spec import PlatformSpec, Tier, WorkloadClass

A = WorkloadClass.A
MINIMAL = (REPO_ROOT / "stacks" / "minimal.yaml").read_text()
DEV = (REPO_ROOT / "stacks" / "dev.yaml").read_text()
BYTEION = (REPO_ROOT / "stacks" / "byteion.yaml").read_text()


def _load(text: str, name: str) -> PlatformSpec:
    return load_spec_text(text, filename=name, base_dir=REPO_ROOT / "stacks")


def _spilling(share: float, ttft_ms: float) -> str:
    """minimal.yaml with ``share`` of its traffic in a large tier it has no pool for, sent to a provider."""
    mix = "  mix: {small: 1.0}\n"
    if mix not in MINIMAL:
        raise AssertionError("minimal.yaml's routing changed: update this test's spec")
    return MINIMAL.replace(
        mix,
        f"""  mix: {{small: {1 - share}, large: {share}}}
  fallbacks:
    large: [remote]
providers:
  - name: remote
    kind: openai
    base_url: https://api.example.com/v1
    api_key_secret: aws-sm://minimal/providers/remote
    jurisdictions: [US]
    models:
      large: {{model: big, input_usd_per_1m: 2.0, output_usd_per_1m: 8.0}}
    latency: {{ttft_ms: {ttft_ms}, tokens_per_second: 90}}
""",
    )


def test_a_provider_slower_than_the_slo_taking_enough_of_a_class_fails_the_plan() -> None:
    result = plan(_load(_spilling(0.05, 600), "slow.yaml"))
    assert not result.ok
    over = result.platform_attainment[A]
    assert not over.met
    # The provider's 5% all miss: the class attains the pools' attainment on the other 95%.
    assert over.share(over.provider_missed_rps) == pytest.approx(0.05)
    assert over.pooled_attainment is not None and over.pooled_attainment >= over.target
    assert over.attainment == pytest.approx(0.95 * over.pooled_attainment)
    assert over.ceiling == pytest.approx(0.95)
    [violation] = [v for v in result.violations if v.kind == "slo"]
    message = violation.message
    assert message.startswith(f"class A meets its SLO for {over.attainment:.2%} of its requests over the platform")
    assert "remote (stated TTFT 600 ms > class A's ttft_p95_ms 500 ms, from us tier large) serves 5.00%" in message
    assert "No replica count fixes" in message and "at most 95.00%" in message
    assert "first in routing.fallbacks.large or add a large pool serving class A in us" in message
    assert "relax workload_classes.A.ttft_p95_ms or slo_attainment" in message


def test_a_provider_within_the_slo_passes_the_plan() -> None:
    result = plan(_load(_spilling(0.05, 450), "fast.yaml"))
    assert result.ok, [v.message for v in result.violations]
    assert result.platform_attainment[A].met
    assert result.platform_attainment[A].provider_missed_rps == 0
    assert [w for w in result.warnings if w.kind == "slo"] == []


def test_a_small_share_at_a_slow_provider_passes_the_plan_with_a_warning() -> None:
    result = plan(_load(_spilling(0.002, 600), "small.yaml"))
    assert result.ok, [v.message for v in result.violations]
    over = result.platform_attainment[A]
    assert over.met and over.share(over.provider_missed_rps) == pytest.approx(0.002)
    [warning] = [w.message for w in result.warnings if w.kind == "slo"]
    assert warning.startswith("class A meets its SLO") and "remote (stated TTFT 600 ms" in warning


def test_the_plan_command_exits_1_and_reports_the_class_over_the_platform(tmp_path: Path) -> None:
    spec = tmp_path / "slow.yaml"
    spec.write_text(_spilling(0.05, 600))
    environ = os.environ | {"TOKENPLANE_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-m", "tokenplane", "plan", str(spec), "--capacity-only", "--json"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )
    assert run.returncode == 1, run.stderr
    data = json.loads(run.stdout)
    [a] = data["platform_attainment"]
    assert a["cls"] == "A" and a["met"] is False and a["attainment"] < a["target"]
    assert a["providers"] == [
        {
            "provider": "remote",
            "ttft_ms": 600.0,
            "slo_ttft_ms": 500.0,
            "share": pytest.approx(0.05),
            "missed_share": pytest.approx(0.05),
            "routes": [{"region": "us", "tier": "large"}],
        }
    ]
    assert not data["summary"]["ok"]


# --- the weighing, on hand-made traffic ------------------------------------------------------


def _dev() -> PlatformSpec:
    large = "      large: {model: gpt-4.1, input_usd_per_1m: 2.00, output_usd_per_1m: 8.00}\n"
    if large not in DEV:
        raise AssertionError("dev.yaml's openai changed: update this test's spec")
    return _load(DEV.replace(large, large + "    latency: {ttft_ms: 600, tokens_per_second: 90}\n"), "dev.yaml")


def _traffic(spec: PlatformSpec, per_pool: dict[str, float], spill: float, unrouted: float) -> TrafficPlan:
    region = spec.regions[0]
    loads = {(region.name, name): PoolLoad(region, spec.pool(name), {A: rps}) for name, rps in per_pool.items()}
    spills = [Spill(region.name, A, Tier.LARGE, "openai", spill)] if spill else []
    lost = [Unrouted(region.name, A, Tier.LARGE, unrouted, ("large",))] if unrouted else []
    return TrafficPlan(loads, spills, lost)


def test_pools_weigh_by_their_requests_and_providers_and_unrouted_count_as_missed() -> None:
    spec = _dev()
    traffic = _traffic(spec, {"small": 30.0, "medium": 10.0}, spill=10.0, unrouted=5.0)
    over = over_platform(spec, traffic, {("local", "small"): {"A": 0.99}, ("local", "medium"): {"A": 0.95}})[A]
    assert over.rps == pytest.approx(55.0)
    assert over.pooled_attainment == pytest.approx((30 * 0.99 + 10 * 0.95) / 40)
    # openai's 600 ms misses class A's 500 ms: its 10 req/s and the 5 nowhere are all missed.
    assert over.attainment == pytest.approx((30 * 0.99 + 10 * 0.95) / 55)
    assert over.ceiling == pytest.approx(40 / 55)
    assert "9.09% reach no pool and no provider" in over.message()


def test_an_embedding_pool_is_not_one_of_the_class_requests() -> None:
    spec = _dev()
    assert spec.is_embedding(spec.pool("embed"))
    traffic = _traffic(spec, {"small": 30.0, "embed": 100.0}, spill=0.0, unrouted=0.0)
    attained = {("local", "small"): {"A": 0.99}, ("local", "embed"): {"A": 0.0}}
    over = over_platform(spec, traffic, attained)[A]
    assert over.rps == pytest.approx(30.0) and over.attainment == pytest.approx(0.99)


def test_a_class_a_pool_does_not_judge_counts_as_met_and_a_pool_left_out_is_an_error() -> None:
    spec = _dev()
    traffic = _traffic(spec, {"small": 30.0, "medium": 10.0}, spill=0.0, unrouted=0.0)
    over = over_platform(spec, traffic, {("local", "small"): {"A": 0.9}, ("local", "medium"): {}})[A]
    assert over.attainment == pytest.approx((30 * 0.9 + 10) / 40)
    with pytest.raises(KeyError):
        over_platform(spec, traffic, {("local", "small"): {"A": 0.9}})


def test_a_class_without_a_ttft_slo_is_not_weighed() -> None:
    spec = _dev()
    assert spec.workload_classes[WorkloadClass.D].ttft_p95_ms is None
    traffic = route(spec)
    assert WorkloadClass.D not in over_platform(spec, traffic, {key: {} for key in traffic.loads})


# --- the shipped spec ------------------------------------------------------------------------


def test_byteion_with_anthropic_first_caps_class_a_below_its_target_and_as_shipped_does_not() -> None:
    shipped = "    large: [openai, anthropic]\n"
    assert shipped in BYTEION
    # APAC has no large pool: its large tier goes to the first provider; anthropic's 600 ms misses A's 500 ms.
    for text, ceiling in ((BYTEION.replace(shipped, "    large: [anthropic, openai]\n"), 0.98), (BYTEION, 1.0)):
        spec = _load(text, "byteion.yaml")
        traffic = route(spec)
        over = over_platform(spec, traffic, {key: {} for key in traffic.loads})  # every pool's request met
        assert over[A].ceiling == pytest.approx(ceiling, abs=5e-4)
        assert all(c.ceiling == 1.0 for cls, c in over.items() if cls is not A)


# --- plan --verify: the same weighing, with the simulated pools ------------------------------


def test_verify_weighs_the_simulated_pools_as_the_plan_weighs_the_modelled_ones() -> None:
    from tokenplane.sim.verify import verify

    spec = _load(_spilling(0.05, 600), "slow.yaml")
    planned = plan(spec)
    checked = verify(spec, planned)
    [pool] = checked.pools
    [simulated] = pool.classes
    assert simulated.attainment is not None
    over = checked.platform_attainment[A]
    assert over.pooled_attainment == pytest.approx(simulated.attainment)
    assert over.attainment == pytest.approx(0.95 * simulated.attainment)
    assert over.providers == planned.platform_attainment[A].providers  # at their stated latency, in both
    # A pool not simulated keeps the model's attainment: nothing simulated, the plan's own figures.
    assert verify(spec, planned, only=set()).platform_attainment == planned.platform_attainment


def test_plan_verify_prints_and_writes_the_class_over_the_platform(tmp_path: Path) -> None:
    spec = tmp_path / "slow.yaml"
    spec.write_text(_spilling(0.05, 600))
    environ = os.environ | {"TOKENPLANE_CACHE_DIR": str(tmp_path / "cache")}
    runs = [
        subprocess.run(
            [sys.executable, "-m", "tokenplane", "plan", str(spec), "--capacity-only", "--verify", *args],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            env=environ,
            check=False,
        )
        for args in ((), ("--json",))
    ]
    assert [r.returncode for r in runs] == [1, 1], [r.stderr for r in runs]
    assert "verify: SLO attainment per class over the platform" in runs[0].stdout
    data = json.loads(runs[1].stdout)
    [planned], [simulated] = data["platform_attainment"], data["verify"]["platform_attainment"]
    assert planned["cls"] == simulated["cls"] == "A"
    assert simulated["provider_missed_share"] == planned["provider_missed_share"] == pytest.approx(0.05)
    assert simulated["attainment"] < simulated["target"]
