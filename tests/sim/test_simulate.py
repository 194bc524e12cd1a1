"""The workbench simulator: agreement with the capacity model, determinism, bursts, autoscaling and shedding."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import yaml

from tokenplane.load import load_spec_text
from tokenplane.model import capacity as cap
from tokenplane.model.planner import plan
from tokenplane.pool_model import replica_model
from tokenplane.sim import gateway
from tokenplane.sim.engine import SERVED, SHED_DEADLINE, SHED_GATEWAY
from tokenplane.sim.metrics import queue_depth
from tokenplane.sim.simulate import SimConfig, SimResult, simulate
from tokenplane.sim.workload import Burst, Kind, Profile, rate_multiplier
from tokenplane.spec import PlatformSpec

LEVELS = ("critical", "high", "normal", "batch")
NO_SHEDDING = {
    level: {"max_queue_wait_ms": 3.6e9, "shed_at_utilization": 2.0, "shed_past_ttft_slo": False} for level in LEVELS
}


def one_pool(
    *,
    replicas: tuple[int, int] = (1, 1),
    prompt: tuple[int, int] = (2000, 6000),
    output: tuple[int, int] = (20, 60),
    max_num_seqs: int = 256,
    priorities: dict[str, Any] | None = None,
    autoscaling: dict[str, Any] | None = None,
    classes: dict[str, Any] | None = None,
    tenants: list[dict[str, Any]] | None = None,
) -> PlatformSpec:
    """A one-region, one-pool platform (Llama-3.1-8B on H100, no prefix caching) to test one behaviour at a time."""
    workload = classes or {
        "A": {
            "share": 1.0,
            "prompt_tokens": {"min": prompt[0], "max": prompt[1]},
            "output_tokens": {"min": output[0], "max": output[1]},
            "ttft_p95_ms": 2000,
        }
    }
    data: dict[str, Any] = {
        "platform": {"name": "bench", "environment": "dev", "peak_rps": 10.0},
        "budget": {"max_usd_per_hour": 100_000},
        "regions": [
            {
                "name": "us",
                "cloud_region": "us-east-1",
                "azs": ["us-east-1a", "us-east-1b"],
                "jurisdiction": "US",
                "traffic_share": 1.0,
                "pools": [{"pool": "chat", "min_replicas": replicas[0], "max_replicas": replicas[1]}],
            }
        ],
        "models": [
            {
                "name": "m",
                "version": "v1",
                "preset": "llama-3.1-8b",
                "uri": "s3://m/v1/",
                "sha256": "0" * 64,
                "tokenizer": "t",
                "prompt_contract": "c",
            }
        ],
        "pools": [
            {
                "name": "chat",
                "tier": "small",
                "model": "m",
                "gpu": "H100",
                "classes": sorted(workload),
                "engine": {"max_num_seqs": max_num_seqs, "max_model_len": 16384, "enable_prefix_caching": False},
                "autoscaling": autoscaling or {},
            }
        ],
        "workload_classes": workload,
        "routing": {"mix": {"small": 1.0}},
        "tenants": tenants or [],
    }
    if priorities:
        data["queues"] = {"priorities": priorities}
    return load_spec_text(yaml.safe_dump(data), filename="test.yaml")


def served(result: SimResult) -> np.ndarray:
    out, reqs = result.outcome, result.requests
    return np.flatnonzero((out.shed == SERVED) & np.isfinite(out.done) & (reqs.kind == int(Kind.POOL)))


# --- agreement with tokenplane.model.capacity ---------------------------------------------------------


def test_mean_ttft_at_low_load_matches_the_capacity_models_prefill_time_within_5_percent() -> None:
    spec = one_pool(replicas=(4, 4))
    result = simulate(spec, SimConfig(rps=1.0, duration_s=300, seed=1, trace=True))
    rows = served(result)
    model = replica_model(spec, spec.pools[0])
    # At an empty replica the first token comes out of the prefill iteration and reaches the client the
    # server's floor later: capacity's ttft_seconds.
    predicted = np.mean([cap.ttft_seconds(model, int(p)) for p in result.requests.prompt[rows]])
    measured = np.mean(result.outcome.first[rows] - result.requests.arrival[rows])
    assert len(rows) > 200
    assert measured == pytest.approx(predicted, rel=0.05)


def test_throughput_at_low_load_is_the_offered_load_within_5_percent() -> None:
    spec = one_pool(replicas=(4, 4), prompt=(200, 1000), output=(20, 100))
    result = simulate(spec, SimConfig(rps=20.0, duration_s=300, seed=2, trace=True))
    completed = np.count_nonzero(result.outcome.done[served(result)] <= 300)
    assert completed / 300 == pytest.approx(20.0, rel=0.05)


def test_a_saturated_replica_completes_requests_at_the_capacity_models_service_rate_within_5_percent() -> None:
    spec = one_pool(prompt=(200, 600), output=(50, 150), max_num_seqs=64, priorities=NO_SHEDDING)
    mu = plan(spec).pools[0].service_rps_per_replica
    result = simulate(spec, SimConfig(rps=1.5 * mu, duration_s=120, seed=3, trace=True))
    done = result.outcome.done[served(result)]
    rate = np.count_nonzero((done > 30) & (done <= 120)) / 90
    assert rate == pytest.approx(mu, rel=0.05)


def test_queue_grows_at_lambda_minus_mu_when_500_req_s_meet_300_req_s_of_capacity() -> None:
    one = one_pool(prompt=(200, 600), output=(50, 150), max_num_seqs=64, priorities=NO_SHEDDING)
    per_replica = plan(one).pools[0].service_rps_per_replica
    n = round(300 / per_replica)
    spec = one_pool(replicas=(n, n), prompt=(200, 600), output=(50, 150), max_num_seqs=64, priorities=NO_SHEDDING)
    mu = n * per_replica
    assert 250 < mu < 350
    result = simulate(spec, SimConfig(rps=500, duration_s=30, seed=4, trace=True))
    depth = queue_depth(result, result.pools[0].requests, np.array([10.0, 30.0]))
    growth = (depth[1] - depth[0]) / 20
    assert growth == pytest.approx(500 - mu, rel=0.1)
    assert depth[1] == pytest.approx(cap.backlog(500, mu, 30), rel=0.1)


# --- determinism ----------------------------------------------------------------------------------


def _without_wall(summary: dict[str, Any]) -> str:
    summary = dict(summary)
    summary.pop("wall_seconds")
    summary["requests"] = {k: v for k, v in summary["requests"].items() if k != "simulated_per_wall_second"}
    return json.dumps(summary, sort_keys=True)


def test_the_same_seed_gives_the_same_run(dev_spec: PlatformSpec) -> None:
    config = SimConfig(duration_s=45, seed=7, bursts=(Burst(0, 3, 30),))
    first = _without_wall(simulate(dev_spec, config).summary())
    second = _without_wall(simulate(dev_spec, config).summary())
    assert first == second


def test_another_seed_gives_another_run(dev_spec: PlatformSpec) -> None:
    first = _without_wall(simulate(dev_spec, SimConfig(duration_s=30, seed=1)).summary())
    second = _without_wall(simulate(dev_spec, SimConfig(duration_s=30, seed=2)).summary())
    assert first != second


@pytest.fixture
def dev_spec(dev_data: dict[str, Any]) -> PlatformSpec:
    return load_spec_text(yaml.safe_dump(dev_data), filename="dev.yaml")


# --- traffic ----------------------------------------------------------------------------------


def test_a_burst_multiplies_the_rate_only_inside_its_window() -> None:
    burst = Burst.parse("09:00x3/15m")
    clock = np.array([8 * 3600 + 3599, 9 * 3600, 9 * 3600 + 899, 9 * 3600 + 900], dtype=np.float64)
    assert rate_multiplier(Profile.FLAT, (burst,), clock).tolist() == [1.0, 3.0, 3.0, 1.0]


def test_the_diurnal_profile_peaks_in_the_working_day_and_dips_at_night() -> None:
    clock = np.array([3 * 3600, 10 * 3600], dtype=np.float64)
    night, day = rate_multiplier(Profile.DIURNAL, (), clock)
    assert day == 1.0
    assert night < 0.2


def test_a_burst_builds_a_queue_that_flat_traffic_does_not() -> None:
    spec = one_pool(replicas=(2, 2), prompt=(200, 600), output=(50, 150), max_num_seqs=64, priorities=NO_SHEDDING)
    mu = 2 * plan(spec).pools[0].service_rps_per_replica
    flat = simulate(spec, SimConfig(rps=0.6 * mu, duration_s=60, seed=5, trace=True))
    burst = simulate(spec, SimConfig(rps=0.6 * mu, duration_s=60, seed=5, bursts=(Burst(15, 3, 30),), trace=True))
    times = np.linspace(0, 60, 61)
    assert queue_depth(burst, burst.pools[0].requests, times).max() > 10 * max(
        1, queue_depth(flat, flat.pools[0].requests, times).max()
    )
    assert burst.summary()["classes"]["A"]["queue_p95_ms"] > flat.summary()["classes"]["A"]["queue_p95_ms"]


# --- autoscaling ------------------------------------------------------------------------------


def test_autoscaling_adds_replicas_under_a_burst_that_serve_only_after_the_cold_start() -> None:
    spec = one_pool(
        replicas=(1, 6),
        prompt=(200, 600),
        output=(50, 150),
        max_num_seqs=64,
        priorities=NO_SHEDDING,
        autoscaling={"cold_start_seconds": 120, "warm_pool": 0, "signals": {"queue_wait_ms": 500}},
    )
    mu = plan(spec).pools[0].service_rps_per_replica
    result = simulate(spec, SimConfig(rps=0.7 * mu, duration_s=300, seed=6, bursts=(Burst(30, 3, 240),)))
    timeline = result.pools[0].timeline
    # A period's record shows what its autoscaler asked for at the end of the period before.
    first = next(i for i, r in enumerate(timeline) if r.starting > 0)
    asked = timeline[first - 1].t_s
    assert max(r.ready for r in timeline) > 1
    for record in timeline:
        if record.t_s < asked + 120:
            assert record.ready == 1, f"a replica served at {record.t_s} s, before the 120 s cold start ended"


def test_a_warm_pool_brings_replicas_up_after_the_warm_start() -> None:
    spec = one_pool(
        replicas=(1, 4),
        prompt=(200, 600),
        output=(50, 150),
        max_num_seqs=64,
        priorities=NO_SHEDDING,
        autoscaling={"warm_pool": 1, "warm_start_seconds": 20, "cold_start_seconds": 900},
    )
    mu = plan(spec).pools[0].service_rps_per_replica
    result = simulate(spec, SimConfig(rps=0.7 * mu, duration_s=120, seed=6, bursts=(Burst(0, 3, 120),)))
    assert max(r.ready for r in result.pools[0].timeline) > 1


def test_a_predictive_window_raises_the_floor_before_the_surge() -> None:
    spec = one_pool(
        replicas=(1, 5),
        autoscaling={"predictive": [{"cron": "45 7 * * 1-5", "min_replicas": 4, "duration_minutes": 60}]},
    )
    scaler_floor = simulate(spec, SimConfig(rps=0.1, duration_s=15, start_s=8 * 3600)).pools[0].scaler
    assert scaler_floor.floor(8 * 3600) == 4
    assert scaler_floor.floor(7 * 3600) == 1
    assert scaler_floor.floor(5 * 86_400 + 8 * 3600) == 1  # day 5 is a Saturday


# --- admission and shedding -------------------------------------------------------------------


def test_overload_sheds_batch_before_interactive() -> None:
    classes = {
        "A": {"share": 0.5, "prompt_tokens": {"min": 200, "max": 600}, "output_tokens": {"min": 50, "max": 150}},
        "D": {"share": 0.5, "prompt_tokens": {"min": 200, "max": 600}, "output_tokens": {"min": 50, "max": 150}},
    }
    tenants = [
        {
            "name": "web",
            "priority": "high",
            "rpm": 1000,
            "tpm": 10**9,
            "allowed_tiers": ["small"],
            "api_key_secret": "env://K",
        }
    ]
    spec = one_pool(max_num_seqs=64, classes=classes, tenants=tenants)
    mu = plan(spec).pools[0].service_rps_per_replica
    result = simulate(spec, SimConfig(rps=1.6 * mu, duration_s=60, seed=8))
    classes_out = result.summary()["classes"]
    shed_a = classes_out["A"]["shed_gateway"] / classes_out["A"]["requests"]
    shed_d = classes_out["D"]["shed_gateway"] / classes_out["D"]["requests"]
    assert shed_d > 0.5
    assert shed_a < 0.1
    assert shed_d > 5 * shed_a


def test_admission_keeps_higher_levels_whole_and_trims_the_lowest() -> None:
    arrivals = np.array([[50.0], [50.0]])  # high, batch: 100 req/s against 100 req/s of service
    fractions = gateway.admit_fractions(arrivals, np.array([100.0]), np.array([0.97, 0.85]))
    assert fractions[0, 0] == 1.0
    assert fractions[1, 0] == pytest.approx(0.7)  # batch gets 85 - 50 = 35 of its 50 req/s


def test_the_balancer_deals_every_replica_every_nth_arrival_across_calls() -> None:
    replicas = np.array([7, 3, 5])
    first, turn = gateway.deal(replicas, 4, 0)
    second, turn = gateway.deal(replicas, 5, turn)
    dealt = np.concatenate([first, second])
    assert dealt.tolist() == [7, 3, 5] * 3  # the rotation carries over from one call to the next
    assert turn == 0


def test_gateway_sheds_are_counted_and_never_served(dev_spec: PlatformSpec) -> None:
    result = simulate(dev_spec, SimConfig(rps=40, duration_s=30, seed=9, trace=True))
    shed = result.outcome.shed == SHED_GATEWAY
    assert shed.any()
    assert np.isnan(result.outcome.first[shed & ~result.outcome.failover]).all()


def test_an_overloaded_us_pool_fails_over_to_an_allowed_provider() -> None:
    data = yaml.safe_load(
        yaml.safe_dump(
            {
                "name": "openai",
                "kind": "openai",
                "base_url": "https://api.openai.com/v1",
                "api_key_secret": "env://OPENAI",
                "jurisdictions": ["US"],
                "models": {"small": {"model": "gpt-4.1-nano", "input_usd_per_1m": 0.1, "output_usd_per_1m": 0.4}},
            }
        )
    )
    base = one_pool(max_num_seqs=64, prompt=(200, 600), output=(50, 150))
    raw = base.model_dump(mode="json", exclude_none=True)
    raw["providers"] = [data]
    raw["routing"]["fallbacks"] = {"small": ["openai"]}
    spec = load_spec_text(yaml.safe_dump(raw), filename="failover.yaml")
    mu = plan(spec).pools[0].service_rps_per_replica
    summary = simulate(spec, SimConfig(rps=2 * mu, duration_s=30, seed=10)).summary()
    assert summary["requests"]["failover"] > 0
    assert summary["providers"][0]["usd"] > 0
    assert summary["cost"]["providers_usd_per_hour"] > 0


# --- the capacity helpers the engine prices iterations with ----------------------------------


@pytest.mark.parametrize("batch", [1, 7, 64, 256])
def test_decode_step_terms_reproduce_decode_step_seconds(batch: int) -> None:
    spec = one_pool()
    model = replica_model(spec, spec.pools[0])
    terms = cap.decode_step_terms(model, batch)
    assert terms.seconds(batch * 1234.5) == pytest.approx(
        cap.decode_step_seconds(model, batch, mean_context=1234.5), rel=1e-12
    )


def test_prefill_cost_in_chunks_adds_up_to_one_pass() -> None:
    spec = one_pool()
    model = replica_model(spec, spec.pools[0])
    cost = cap.prefill_cost(model)
    chunks = cost.seconds(3000) + cost.seconds(3000, 3000) + cost.seconds(2000, 6000)
    assert chunks == pytest.approx(cap.prefill_compute_seconds(model, 8000), rel=1e-12)
    assert cap.prefill_seconds(model, 8000) == pytest.approx(
        cost.seconds(8000) + cap.step_overhead_seconds(model), rel=1e-12
    )


@pytest.mark.parametrize("past_slo", [True, False])
def test_a_request_queued_past_its_classs_ttft_slo_is_shed_as_the_gateway_sheds_it(past_slo: bool) -> None:
    """Twice the capacity, utilization shedding off: only queue deadlines shed, at the SLO or at max_queue_wait_ms."""
    levels = {
        level: {"max_queue_wait_ms": 30_000, "shed_at_utilization": 2.0, "shed_past_ttft_slo": past_slo}
        for level in LEVELS
    }
    spec = one_pool(prompt=(200, 600), output=(50, 150), max_num_seqs=64, priorities=levels)
    mu = plan(spec).pools[0].service_rps_per_replica
    result = simulate(spec, SimConfig(rps=2 * mu, duration_s=60, seed=5, trace=True))
    out, reqs = result.outcome, result.requests
    rows = served(result)
    waited = out.admitted[rows] - reqs.arrival[rows]
    slo_s = 2.0  # one_pool's class A
    if past_slo:
        assert np.count_nonzero(out.shed == SHED_DEADLINE) > 0.2 * len(reqs)
        assert waited.max() <= slo_s
    else:  # only max_queue_wait_ms bounds the wait: served requests queue far past the SLO
        assert waited.max() > slo_s
