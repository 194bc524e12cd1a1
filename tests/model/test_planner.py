"""The capacity plan: lambda < mu, replicas, quota and budget; and ``tokenplane plan`` on top of it."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.paths import REPO_ROOT
from tokenplane.commands.cli import app
from tokenplane.errors import SpecLoadError
from tokenplane.load import load_spec
from tokenplane.model.planner import Plan, PoolPlan, plan
from tokenplane.spec import PlatformSpec

SpecData = dict[str, Any]
Load = Callable[[SpecData], PlatformSpec]
ROOT = REPO_ROOT


def _pool(result: Plan, name: str) -> PoolPlan:
    return next(p for p in result.pools if p.name == name)


def _placement(data: SpecData, pool: str) -> dict[str, Any]:
    return next(pl for pl in data["regions"][0]["pools"] if pl["pool"] == pool)


def _kinds(result: Plan) -> set[str]:
    return {v.kind for v in result.violations}


def _uncapped(data: SpecData, peak: float) -> SpecData:
    """The dev spec at ``peak`` req/s, with max_replicas high enough never to bind."""
    data = copy.deepcopy(data)
    data["platform"]["peak_rps"] = peak
    data["budget"]["max_usd_per_hour"] = 1e9
    for placement in data["regions"][0]["pools"]:
        placement["max_replicas"] = 100_000
    return data


def test_dev_spec_plan_is_ok() -> None:
    result = plan(load_spec(ROOT / "stacks" / "dev.yaml"))
    assert result.ok, [v.message for v in result.violations]
    assert {p.name for p in result.pools} == {"small", "medium", "large", "embed"}


def test_pool_below_its_arrival_rate_is_a_stability_violation(dev_data: SpecData, load_data: Load) -> None:
    _placement(dev_data, "small").update(min_replicas=1, max_replicas=1)
    dev_data["platform"]["peak_rps"] = 20
    result = plan(load_data(dev_data))
    [stability] = [v for v in result.violations if v.kind == "stability"]
    assert (stability.region, stability.pool) == ("local", "small")
    assert "lambda=" in stability.message
    assert "mu=" in stability.message
    assert "max_replicas=1" in stability.message


def test_stability_violation_names_replicas_that_make_the_pool_stable(dev_data: SpecData, load_data: Load) -> None:
    _placement(dev_data, "small").update(min_replicas=1, max_replicas=1)
    dev_data["platform"]["peak_rps"] = 20
    result = plan(load_data(dev_data))
    small = _pool(result, "small")
    [stability] = [v for v in result.violations if v.kind == "stability"]
    assert f"Raise max_replicas to at least {small.replicas_needed}" in stability.message
    assert small.arrival_rps < small.service_rps_per_replica * small.replicas_needed


def test_tiny_budget_is_a_budget_violation(dev_data: SpecData, load_data: Load) -> None:
    dev_data["budget"]["max_usd_per_hour"] = 1
    result = plan(load_data(dev_data))
    [budget] = [v for v in result.violations if v.kind == "budget"]
    assert "exceeds budget.max_usd_per_hour=$1" in budget.message
    assert _kinds(result) == {"budget"}


def test_budget_is_checked_against_spend_at_max_replicas(dev_data: SpecData, load_data: Load) -> None:
    spend_at_max = sum(p.usd_per_hour_max for p in plan(load_data(dev_data)).pools)
    dev_data["budget"]["max_usd_per_hour"] = spend_at_max * 1.001
    assert plan(load_data(dev_data)).ok
    dev_data["budget"]["max_usd_per_hour"] = spend_at_max * 0.999
    assert _kinds(plan(load_data(dev_data))) == {"budget"}


def test_tiny_gpu_quota_is_a_quota_violation(dev_data: SpecData, load_data: Load) -> None:
    dev_data["regions"][0]["gpu_quota"] = 1
    result = plan(load_data(dev_data))
    [quota] = [v for v in result.violations if v.kind == "quota"]
    gpus_max = sum(p.gpus_max for p in result.pools)
    assert quota.region == "local"
    assert f"{gpus_max} GPUs at max replicas exceed gpu_quota=1" in quota.message


def test_gpu_quota_equal_to_gpus_at_max_replicas_passes(dev_data: SpecData, load_data: Load) -> None:
    gpus_max = sum(p.gpus_max for p in plan(load_data(dev_data)).pools)
    dev_data["regions"][0]["gpu_quota"] = gpus_max
    assert plan(load_data(dev_data)).ok


@pytest.mark.slow
@settings(deadline=None, max_examples=20)
@given(low=st.floats(min_value=0.5, max_value=200), factor=st.floats(min_value=1.0, max_value=5.0))
def test_replicas_needed_never_fall_as_peak_rps_rises(dev_data_pristine: SpecData, low: float, factor: float) -> None:
    before = plan(PlatformSpec.model_validate(_uncapped(dev_data_pristine, low)))
    after = plan(PlatformSpec.model_validate(_uncapped(dev_data_pristine, low * factor)))
    for p in before.pools:
        assert p.replicas_needed <= _pool(after, p.name).replicas_needed, p.name


def test_replicas_needed_grow_with_a_large_rise_in_peak_rps(dev_data_pristine: SpecData) -> None:
    low = plan(PlatformSpec.model_validate(_uncapped(dev_data_pristine, 4)))
    high = plan(PlatformSpec.model_validate(_uncapped(dev_data_pristine, 400)))
    assert _pool(high, "small").replicas_needed > _pool(low, "small").replicas_needed


def test_utilization_is_arrival_over_service_at_max_replicas(dev_data: SpecData, load_data: Load) -> None:
    dev_data["platform"]["peak_rps"] = 12
    result = plan(load_data(dev_data))
    for p in result.pools:
        assert math.isclose(p.utilization, p.arrival_rps / (p.service_rps_per_replica * p.max_replicas)), p.name
        assert math.isclose(p.service_rps, p.service_rps_per_replica * p.max_replicas), p.name


def test_replicas_needed_keep_utilization_under_target(dev_data: SpecData, load_data: Load) -> None:
    dev_data["platform"]["peak_rps"] = 40
    for placement in dev_data["regions"][0]["pools"]:
        placement["max_replicas"] = 1000
    spec = load_data(dev_data)
    for p in plan(spec).pools:
        target = spec.pool(p.name).autoscaling.target_utilization
        assert p.arrival_rps / (p.service_rps_per_replica * p.replicas_needed) <= target + 1e-9, p.name


def test_tier_with_no_pool_and_no_fallback_is_an_unrouted_violation(dev_data: SpecData, load_data: Load) -> None:
    dev_data["pools"] = [p for p in dev_data["pools"] if p["name"] != "large"]
    dev_data["regions"][0]["pools"] = [pl for pl in dev_data["regions"][0]["pools"] if pl["pool"] != "large"]
    next(t for t in dev_data["tenants"] if t["name"] == "acme-eu")["allowed_tiers"] = ["small", "medium"]
    del dev_data["routing"]["fallbacks"]["large"]
    result = plan(load_data(dev_data))
    unrouted = [v for v in result.violations if v.kind == "unrouted"]
    assert {v.region for v in unrouted} == {"local"}
    assert all("tier large" in v.message and "routing.fallbacks.large" in v.message for v in unrouted)
    assert len(unrouted) == 2  # classes A and B; D is pinned to small


def test_plan_spills_reach_the_summary(dev_data: SpecData, load_data: Load) -> None:
    dev_data["pools"] = [p for p in dev_data["pools"] if p["name"] != "large"]
    dev_data["regions"][0]["pools"] = [pl for pl in dev_data["regions"][0]["pools"] if pl["pool"] != "large"]
    next(t for t in dev_data["tenants"] if t["name"] == "acme-eu")["allowed_tiers"] = ["small", "medium"]
    result = plan(load_data(dev_data))
    assert result.ok
    assert result.summary()["peak_rps_to_providers"] == round(sum(s.rps for s in result.spills), 3) > 0
    assert {s.provider for s in result.spills} == {"openai"}


# --- the CLI's plan command ------------------------------------------------------------------


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(ROOT)  # the quickstart's relative path, stacks/dev.yaml
    return CliRunner()


@pytest.mark.slow
def test_cli_plan_of_the_dev_spec_exits_zero(runner: CliRunner) -> None:
    result = runner.invoke(app, ["plan", "stacks/dev.yaml"])
    assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_cli_plan_json_has_summary_pools_and_violations(runner: CliRunner) -> None:
    result = runner.invoke(app, ["plan", "stacks/dev.yaml", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"summary", "pools", "violations"} <= set(data)
    assert data["violations"] == []
    for pool in data["pools"]:
        assert {"name", "region", "replicas_needed", "utilization", "ttft_p95_ms"} <= set(pool), pool.get("name")


@pytest.mark.slow
def test_cli_plan_json_matches_the_planner(runner: CliRunner) -> None:
    result = runner.invoke(app, ["plan", "stacks/dev.yaml", "--json"])
    expected = plan(load_spec(ROOT / "stacks" / "dev.yaml"))
    pools = {p["name"]: p for p in json.loads(result.stdout)["pools"]}
    for p in expected.pools:
        assert pools[p.name]["replicas_needed"] == p.replicas_needed
        assert math.isclose(pools[p.name]["utilization"], p.utilization)


@pytest.mark.slow
def test_cli_plan_exits_one_when_the_plan_has_violations(runner: CliRunner, dev_data: SpecData, tmp_path: Path) -> None:
    dev_data["budget"]["max_usd_per_hour"] = 1
    path = tmp_path / "over-budget.json"
    path.write_text(json.dumps(dev_data), encoding="utf-8")
    result = runner.invoke(app, ["plan", str(path), "--json"])
    assert result.exit_code == 1, result.output
    assert [v["kind"] for v in json.loads(result.stdout)["violations"]] == ["budget"]


def test_cli_plan_of_a_bad_spec_exits_two_with_its_location(runner: CliRunner, tmp_path: Path) -> None:
    text = (ROOT / "stacks" / "minimal.yaml").read_text(encoding="utf-8")
    lines = text.splitlines()
    line = lines.index("    tier: small") + 1
    lines[line - 1] = "    teir: small"
    path = tmp_path / "bad.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}:5: pools[0].teir: unknown field 'teir'" in result.output


def test_cli_plan_prints_spec_errors_verbatim(runner: CliRunner, tmp_path: Path) -> None:
    # A bad routing.mix key yields a path with a bracketed part; it must not be eaten as console markup.
    text = (
        (ROOT / "stacks" / "minimal.yaml").read_text(encoding="utf-8").replace("mix: {small: 1.0}", "mix: {smal: 1.0}")
    )
    path = tmp_path / "bad-mix.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecLoadError) as info:
        load_spec(path)
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 2, result.output
    for issue in info.value.issues:
        assert str(issue) in result.output


def test_cli_plan_of_a_spec_with_a_markup_like_key_exits_two(runner: CliRunner, tmp_path: Path) -> None:
    text = (ROOT / "stacks" / "minimal.yaml").read_text(encoding="utf-8") + '"[/bold]": 1\n'
    path = tmp_path / "bad-key.yaml"
    path.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 2, repr(result.exception)
    assert "unknown field '[/bold]'" in result.output


def test_cli_plan_of_a_missing_file_exits_two(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "no such file" in result.output


def test_cli_schema_prints_the_spec_json_schema(runner: CliRunner) -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    assert {"platform", "pools", "regions", "routing"} <= set(schema["properties"])


def test_kv_cache_full_at_peak_warns_that_the_autoscaler_will_not_settle(dev_data: SpecData, load_data: Load) -> None:
    # A small KV budget near saturation: the running batch holds more KV than the scale-out signal allows
    # (at 5 replicas this pool is past its KV-bounded mu; at 7 it runs at rho ~0.8 with its KV cache ~75% full).
    pool = next(p for p in dev_data["pools"] if p["name"] == "small")
    pool["engine"]["gpu_memory_utilization"] = 0.45
    pool["autoscaling"] = {"signals": {"kv_cache_usage": 0.6}}
    dev_data["platform"]["peak_rps"] = 12
    _placement(dev_data, "small")["max_replicas"] = 7
    result = plan(load_data(dev_data))
    small = _pool(result, "small")
    [warning] = [w for w in result.warnings if w.kind == "memory" and w.pool == "small"]
    assert small.kv_usage > 0.6
    assert f"{small.kv_usage:.0%} of the KV cache" in warning.message
    assert "kv_cache_dtype: fp8" in warning.message
    pool["autoscaling"] = {"signals": {"kv_cache_usage": 0.98}}  # 96% full at peak under 0.32's accounting
    assert not [w for w in plan(load_data(dev_data)).warnings if w.kind == "memory"]


def test_budget_cap_is_checked_against_the_worst_failover_scenario() -> None:
    spec = load_spec(ROOT / "stacks" / "byteion.yaml")
    result = plan(spec)
    by_key = {(p.region, p.name): p for p in result.pools}
    primaries = [r.name for r in spec.regions if r.role.value == "primary"]
    normal = sum(p.usd_per_hour_max if p.region in primaries else p.usd_per_hour_min for p in result.pools)
    # Losing us-east stops its spend and lets us-west scale to its maximum.
    us_east_failed = sum(
        p.usd_per_hour_max if p.region in primaries or p.region == "us-west" else p.usd_per_hour_min
        for (region, _), p in by_key.items()
        if region != "us-east"
    )
    assert result.worst_case_usd_per_hour == pytest.approx(max(normal, us_east_failed, result.worst_case_usd_per_hour))
    assert result.worst_case_usd_per_hour >= normal
    assert result.summary()["usd_per_hour_max"] == pytest.approx(result.worst_case_usd_per_hour, abs=0.01)


def test_end_to_end_slo_is_checked_against_the_decode_speed(dev_data: SpecData, load_data: Load) -> None:
    dev_data["workload_classes"]["A"]["e2e_p95_ms"] = 50  # 300 output tokens cannot stream in 50 ms
    result = plan(load_data(dev_data))
    slo = [v for v in result.violations if v.kind == "slo" and "end-to-end" in v.message]
    assert slo, [v.message for v in result.violations]
    assert "class A" in slo[0].message and "SLO of 50 ms" in slo[0].message
    dev_data["workload_classes"]["A"]["e2e_p95_ms"] = 600_000
    assert not [v for v in plan(load_data(dev_data)).violations if "end-to-end" in v.message]


def test_an_slo_that_no_replica_count_reaches_is_not_sized_by_adding_replicas(
    dev_data: SpecData, load_data: Load
) -> None:
    # Class B's 2,000-8,000-token prompts take longer than 50 ms to prefill on any idle replica.
    dev_data["workload_classes"]["B"]["ttft_p95_ms"] = 50
    for placement in dev_data["regions"][0]["pools"]:
        placement["max_replicas"] = 50
    dev_data["budget"]["max_usd_per_hour"] = 1e6
    result = plan(load_data(dev_data))
    small = _pool(result, "small")
    assert small.replicas_needed < 10  # what utilization and KV headroom need, not the search's ceiling
    [slo] = [v for v in result.violations if v.kind == "slo" and v.pool == "small" and "class B" in v.message]
    assert "queueing is not the cause" in slo.message
