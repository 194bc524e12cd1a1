"""``tokenplane plan --verify``: every example spec's plan reaches its SLO attainment in simulation."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.paths import REPO_ROOT
from tokenplane.commands.cli import app
from tokenplane.load import load_spec, load_spec_text
from tokenplane.model import capacity as cap
from tokenplane.model import planner as planner_module
from tokenplane.model import pool_performance
from tokenplane.model.backlog_chains import CHAINS, READ_ARRIVALS
from tokenplane.model.planner import Plan, plan
from tokenplane.model.pool_performance import ReplicaPerformance, class_mix
from tokenplane.model.scheduling import priority_levels, serves_several_levels
from tokenplane.model.traffic import route
from tokenplane.pool_model import PoolTiming, timing
from tokenplane.sim import verify as verify_module
from tokenplane.sim.verify import AGREEMENT, Verification, verify
from tokenplane.spec import PlatformSpec, Pool, WorkloadClass

ROOT = REPO_ROOT
SPECS = sorted((ROOT / "stacks").glob("*.yaml")) + sorted((ROOT / "examples").rglob("*.tokenplane.yaml"))
# The simulator's own spread from seed to seed (six seeds): its saturated mu within 1% (sd 0.2-0.7%), a class's
# TTFT P95 over ~10,000 judged requests within 1-1.5% (byteion's long-context pools: sd 1.4% and 0.2%). AGREEMENT
# is issue 28's 5%: the planner's worst class over eight simulator seeds is byteion's us-east long-context class C
# (-1.4% to -4.7%, mean -3.6%); every other class and pool is within 2.5%.
# Issue 28's target. With the server's per-request term on (issue 28 item 3) byteion's eu-west medium-rag class A
# was -5.2% while the planner priced the term on the batch a request found: the engine prices it on the batch of
# the iteration that finishes the prompt, which every prompt that queued ahead has joined by then. Priced there
# (``pool_performance.first_token_batch``), every mixed class of the stacks is within 2.5% on three simulator seeds
# (BENCHMARKS.md, plan_agreement).
MIXED_AGREEMENT = 0.05

Checked = tuple[str, Plan, Verification]


@pytest.fixture(scope="module", params=SPECS, ids=lambda p: p.name)
def checked(request: pytest.FixtureRequest) -> Checked:
    spec = load_spec(request.param)
    planned = plan(spec)
    return request.param.name, planned, verify(spec, planned)


@pytest.mark.slow
def test_every_example_spec_plans_ok_and_reaches_its_attainment_in_simulation(checked: Checked) -> None:
    name, planned, result = checked
    assert planned.ok, planned.violations
    missed = [(p.region, p.pool, c.name, c.attainment, c.target) for p in result.pools for c in p.classes if not c.met]
    assert result.ok and not missed, f"{name}: {missed}"


@pytest.mark.slow
def test_planner_and_simulator_agree_on_ttft_p95_and_rho(checked: Checked) -> None:
    name, _, result = checked
    for pool in result.pools:
        assert abs(pool.rho_agreement) <= AGREEMENT, f"{name} {pool.region}/{pool.pool}: {pool.rho_agreement:+.1%}"
        for cls in pool.classes:
            if cls.agreement is not None:
                where = f"{name} {pool.region}/{pool.pool} class {cls.name}"
                assert abs(cls.agreement) <= AGREEMENT, f"{where}: TTFT P95 {cls.agreement:+.1%}"


@pytest.mark.slow
def test_a_class_sent_at_several_priorities_gets_the_tail_of_their_mixture(checked: Checked) -> None:
    # dev's tenants are critical and normal, byteion's EU regions critical and high: each class is a mixture of
    # levels. Averaging the levels' TTFT samples (the planner before) priced dev's class B P95 6-8% short;
    # charging a started prompt's chunks for the higher levels that arrive meanwhile priced byteion's
    # eu-west long-context class C 25% long. Both now agree within MIXED_AGREEMENT.
    name, _, result = checked
    spec = load_spec(next(p for p in SPECS if p.name == name))
    mixed = 0
    for pool in result.pools:
        for cls in pool.classes:
            levels = priority_levels(spec, pool.region, WorkloadClass(cls.name))
            if sum(share > 0 for share in levels) < 2 or cls.agreement is None:
                continue
            mixed += 1
            where = f"{name} {pool.region}/{pool.pool} class {cls.name} at levels {levels}"
            assert abs(cls.agreement) <= MIXED_AGREEMENT, f"{where}: TTFT P95 {cls.agreement:+.1%}"
    assert mixed or name == "minimal.yaml", f"{name}: no class at several levels to check"


@pytest.mark.slow
def test_where_the_slo_decides_the_replicas_ten_percent_fewer_miss_it() -> None:
    spec = load_spec(ROOT / "stacks" / "byteion.yaml")
    planned = plan(spec)
    bound = {("us-east", "medium-rag"), ("us-east", "large-reasoning")}
    result = verify(spec, planned, only=bound)
    assert {(p.region, p.pool) for p in result.pools} == bound
    assert all(p.fewer_met is False for p in result.pools), [(p.pool, p.fewer_replicas) for p in result.pools]


@pytest.mark.slow
def test_cli_plan_verify_prints_attainment_and_json_carries_it(tmp_path: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["plan", str(ROOT / "stacks" / "minimal.yaml"), "--capacity-only", "--verify"])
    assert done.exit_code == 0, done.output
    assert "verify ok" in done.output and "fidelity:" in done.output
    done = runner.invoke(app, ["plan", str(ROOT / "stacks" / "minimal.yaml"), "--capacity-only", "--verify", "--json"])
    data = json.loads(done.stdout)  # stdout only: the progress lines go to stderr
    [pool] = data["verify"]["pools"]
    assert data["verify"]["ok"] and data["summary"]["ok"]
    assert pool["classes"][0]["attainment"] >= 0.99 - 0.005


@pytest.mark.slow
def test_a_stricter_slo_attainment_plans_more_replicas_and_still_verifies(tmp_path: Path) -> None:
    base = (ROOT / "stacks" / "minimal.yaml").read_text(encoding="utf-8")
    strict = base.replace("    ttft_p95_ms: 500\n", "    ttft_p95_ms: 500\n    slo_attainment: 0.9995\n")
    assert strict != base
    path = tmp_path / "strict.yaml"
    path.write_text(strict.replace("max_replicas: 4", "max_replicas: 20"), encoding="utf-8")
    spec = load_spec(path)
    planned = plan(spec)
    assert planned.pools[0].replicas_needed > plan(load_spec(ROOT / "stacks" / "minimal.yaml")).pools[0].replicas_needed
    result = verify(spec, planned)
    assert result.ok
    assert result.pools[0].classes[0].target == 0.9995


# One pool serving a cheap interactive class at critical priority and a long batch class at the batch level:
# the shape none of the example specs has (their batch tenants have a pool of their own).
MIXED_POOL = """\
platform: {name: mixed, environment: dev, peak_rps: 6}
budget: {max_usd_per_hour: 40}
regions:
  - name: us
    cloud_region: us-east-1
    azs: [us-east-1a, us-east-1b]
    jurisdiction: US
    traffic_share: 1.0
    pools: [{pool: chat, min_replicas: 1, max_replicas: 16}]
models:
  - name: qwen-7b-chat
    version: v1
    preset: qwen2.5-7b
    uri: s3://mixed-models/qwen-7b-chat/v1/
    sha256: 5f1a9c0e2b7d4c38a6e1f0b9d2c7a4e6f8b1d3c5a7e9f0b2d4c6e8a0b1c3d5e7
    tokenizer: Qwen/Qwen2.5-7B-Instruct
    prompt_contract: chat-v1
pools:
  - {name: chat, tier: small, model: qwen-7b-chat, gpu: L4, classes: [A, D]}
workload_classes:
  A:
    share: 0.8
    prompt_tokens: {min: 50, max: 1000}
    output_tokens: {min: 20, max: 200}
    ttft_p95_ms: 800
  D:
    share: 0.2
    prompt_tokens: {min: 3000, max: 7000}
    output_tokens: {min: 200, max: 800}
    deadline_hours: 24
tenants:
  - {name: web, plan: enterprise, priority: critical, rpm: 600, tpm: 1000000, allowed_tiers: [small],
     api_key_secret: "env://TOKENPLANE_KEY_WEB"}
  - {name: nightly, plan: free, priority: batch, rpm: 60, tpm: 1000000, allowed_tiers: [small],
     api_key_secret: "env://TOKENPLANE_KEY_NIGHTLY"}
routing:
  mix: {small: 1.0}
"""
# The target. Measured -1.1%, with both sides running vLLM's priority policy, which the pool renders
# (it serves the critical and the batch level); -0.3% when both ran FCFS. The simulator's mu spread is under 1%.
MIXED_RHO_AGREEMENT = 0.05


def test_verify_measures_mu_on_the_mix_a_batch_and_interactive_pool_serves() -> None:
    spec = load_spec_text(MIXED_POOL, filename="mixed.yaml")
    planned = plan(spec)
    assert planned.ok, planned.violations
    [pool] = verify(spec, planned).pools
    assert abs(pool.rho_agreement) <= MIXED_RHO_AGREEMENT, f"rho {pool.rho_agreement:+.1%}, mu {pool.mu:.3f}"
    assert pool.met, [(c.name, c.attainment, c.target) for c in pool.classes]
    for cls in pool.classes:  # measured: class A +0.04%, class D -0.2%
        assert cls.agreement is not None and abs(cls.agreement) <= MIXED_RHO_AGREEMENT, (cls.name, cls.agreement)


# Other mixed-priority shapes of the same pool: a rare batch level (often absent from the batch, so the next level
# is preempted), a batch half of the traffic, and two interactive levels (critical and normal) with no batch.
MIXED_VARIANTS = {
    "rare-batch": MIXED_POOL.replace("share: 0.8", "share: 0.98").replace("share: 0.2", "share: 0.02"),
    "heavy-batch": MIXED_POOL.replace("share: 0.8", "share: 0.5").replace("share: 0.2", "share: 0.5"),
    "two-interactive": MIXED_POOL.replace("classes: [A, D]", "classes: [A, B]")
    .replace("  D:\n    share: 0.2", "  B:\n    share: 0.2")
    .replace("deadline_hours: 24", "ttft_p95_ms: 4000")
    .replace("priority: batch, rpm: 60", "priority: normal, rpm: 300"),
}


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(MIXED_VARIANTS))
def test_planner_and_simulator_agree_on_other_mixed_priority_pools(variant: str) -> None:
    # Measured: rho +0.1%, -1.9%, -1.8% (rare, heavy, two-interactive); every class's TTFT P95 within 0.6%. With
    # the planner at FCFS: -26.9%, -3.8%, -1.8%: a rare batch request, once admitted, is the victim of every
    # preemption while it runs (recomputed again and again), which FCFS's newest victim spreads over the mix.
    spec = load_spec_text(MIXED_VARIANTS[variant], filename=f"{variant}.yaml")
    assert serves_several_levels(spec, spec.pool("chat"))
    [pool] = verify(spec, plan(spec)).pools
    assert abs(pool.rho_agreement) <= MIXED_RHO_AGREEMENT, f"rho {pool.rho_agreement:+.1%}"
    assert pool.met, [(c.name, c.attainment, c.target) for c in pool.classes]
    for cls in pool.classes:
        assert cls.agreement is not None and abs(cls.agreement) <= MIXED_RHO_AGREEMENT, (cls.name, cls.agreement)


def _fcfs(spec: PlatformSpec, pool: Pool, **kwargs: Any) -> PoolTiming:
    """The pool's timing under FCFS whatever it renders: the scheduling rule switched off on one side."""
    return timing(spec, pool, **{**kwargs, "priority_scheduling": False})


@pytest.mark.parametrize("side", ["planner", "simulator"])
def test_the_mixed_pool_disagrees_when_one_side_alone_schedules_fcfs(
    side: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pool renders ``--scheduling-policy priority``: a saturated replica preempts the batch class's latest
    # arrival (a 3,000-7,000-token prompt and what it has decoded), not the newest sequence (mostly a short
    # interactive one), and recomputes more: the simulator's mu is 9% under FCFS's. With the rule on one side
    # only, measured: the planner FCFS -9.5%, the simulator FCFS +8.4% (both sides: -1.1%).
    spec = load_spec_text(MIXED_POOL, filename="mixed.yaml")
    assert serves_several_levels(spec, spec.pool("chat"))
    monkeypatch.setattr(planner_module if side == "planner" else verify_module, "timing", _fcfs)
    [pool] = verify(spec, plan(spec)).pools
    assert abs(pool.rho_agreement) > MIXED_RHO_AGREEMENT, f"rho {pool.rho_agreement:+.1%}: the check cannot see it"


def test_the_saturated_queues_arrivals_are_distinct_and_in_the_order_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    # The saturated queue once put every arrival at t = 0: the priority rule's "latest arrival" then tied, and the
    # tie went to the oldest running sequence, the costliest recompute (rho -9.6% on the mixed pool with its levels
    # flattened, -2.3% with them kept, against -1.1%). The engine is caught as it is built: no run needed.
    spec = load_spec_text(MIXED_POOL, filename="mixed.yaml")
    pool = spec.pool("chat")
    mix = class_mix(spec, "us", pool, route(spec).loads[("us", "chat")].per_class)
    shares = np.array([c.rps for c in mix]) / sum(c.rps for c in mix)
    seen: list[tuple[Any, Any]] = []

    class Caught(Exception):
        pass

    def engine(pools: list[PoolTiming], slots: list[int], reqs: Any, arrival: Any, **_: Any) -> None:
        seen.append((reqs, arrival))
        raise Caught

    monkeypatch.setattr(verify_module, "Engine", engine)
    with pytest.raises(Caught):
        verify_module._saturated_mu(spec, timing(spec, pool), mix, shares, 1.0, 1.0, np.random.default_rng(0))
    [(reqs, arrival)] = seen
    assert len(arrival) > 1000 and bool(np.all(np.diff(arrival) > 0))
    assert arrival[-1] < 1e-3  # all queued at once: a queue that never empties
    assert set(reqs.priority) == {0, 3}  # each request keeps its level: the victims are chosen by it


def test_a_saturated_queue_drained_by_priority_measures_another_mix(monkeypatch: pytest.MonkeyPatch) -> None:
    # The method before: the queue drained by priority serves the interactive class during the warm-up and
    # leaves the window the batch class alone, so "mu" is the batch class's (-76% here, not -0.3%).
    spec = load_spec_text(MIXED_POOL, filename="mixed.yaml")
    planned = plan(spec)
    monkeypatch.setattr(verify_module, "_saturated_mu", partial(verify_module._saturated_mu, priorities=True))
    [pool] = verify(spec, planned).pools
    assert abs(pool.rho_agreement) > AGREEMENT, f"rho {pool.rho_agreement:+.1%}: the check cannot see the defect"


# The issue-28 RAG shape: a 32B FP8 model on one H100 keeps 152,864 KV tokens, and class B's prompts run to 12k.
RAG_POOL = """\
platform: {name: rag, environment: dev, peak_rps: 40}
budget: {max_usd_per_hour: 2000}
regions:
  - name: us
    cloud_region: us-east-1
    azs: [us-east-1a, us-east-1b]
    jurisdiction: US
    traffic_share: 1.0
    pools: [{pool: rag, min_replicas: 1, max_replicas: 200}]
models:
  - name: rag-32b
    version: v1
    preset: qwen2.5-32b
    quantization: fp8
    uri: s3://rag-models/rag-32b/v1/
    sha256: 5f1a9c0e2b7d4c38a6e1f0b9d2c7a4e6f8b1d3c5a7e9f0b2d4c6e8a0b1c3d5e7
    tokenizer: Qwen/Qwen2.5-32B-Instruct
    prompt_contract: chat-v1
pools:
  - {name: rag, tier: medium, model: rag-32b, gpu: H100, classes: [A, B], engine: {max_model_len: 16384}}
workload_classes:
  A: {share: 0.6, prompt_tokens: {min: 200, max: 2000}, output_tokens: {min: 50, max: 400}, ttft_p95_ms: 1000}
  B: {share: 0.4, prompt_tokens: {min: 4000, max: 12000}, output_tokens: {min: 100, max: 800}, ttft_p95_ms: 3000}
tenants:
  - {name: web, plan: enterprise, priority: high, rpm: 6000, tpm: 100000000, allowed_tiers: [medium],
     api_key_secret: "env://TOKENPLANE_KEY_WEB"}
routing:
  mix: {medium: 1.0}
"""


PLANNER_SAMPLES = CHAINS * READ_ARRIVALS  # the pool model's TTFT samples per class
RAG_SEEDS = 6  # the simulator's attainment on this pool moves 0.1-0.2 points from seed to seed (stalls miss in bursts)


def _rag_disagreement(spec: PlatformSpec, planned: Plan) -> list[tuple[str, float, float, float]]:
    """Classes whose planned attainment is off the simulator's mean over ``RAG_SEEDS`` seeds by more than it can tell.

    Allowed: the judged window's own tolerance (two binomial standard errors at the target), two
    standard errors of the seeds' mean (a stall misses every request that queues behind it, so the
    seeds spread wider than the binomial), and two of the planner's own estimate (a share of its
    ``PLANNER_SAMPLES`` TTFT samples). Each entry: (class, planned, simulated mean, allowed).
    """
    runs = [verify(spec, planned, seed=seed).pools[0] for seed in range(RAG_SEEDS)]
    off = []
    for index, cls in enumerate(runs[0].classes):
        measured = [run.classes[index].attainment for run in runs]
        assert cls.planned_attainment is not None and all(m is not None for m in measured)
        values = [float(m) for m in measured if m is not None]
        mean = statistics.fmean(values)
        planned_se = math.sqrt(cls.planned_attainment * (1 - cls.planned_attainment) / PLANNER_SAMPLES)
        allowed = cls.tolerance + 2 * statistics.stdev(values) / math.sqrt(len(values)) + 2 * planned_se
        if abs(cls.planned_attainment - mean) > allowed:
            off.append((cls.name, cls.planned_attainment, mean, allowed))
    return off


@pytest.mark.slow
def test_the_planner_prices_the_queue_a_kv_filling_rag_mix_builds() -> None:
    # Issue 28 item 2: before ``kv_stall`` the planner sized this pool at 30 replicas predicting 99.99% for
    # class A; the simulator gave 98.94% there (122 of its ~160 misses shed at the queue deadline, behind a
    # 12k prompt that did not fit the cache). Now it plans 32 (31 before prefill paid its all-reduces and BF16
    # attention), predicting 99.57% and 99.66%, and the simulator's mean over six seeds is 99.37% and 99.65%
    # (sd 0.2); at 30 the planner says 98.32% and 98.62% against 98.15% and 98.91%.
    spec = load_spec_text(RAG_POOL, filename="rag.yaml")
    planned = plan(spec)
    assert planned.ok, planned.violations
    [pool] = verify(spec, planned).pools
    assert pool.met, [(c.name, c.attainment, c.target) for c in pool.classes]
    for cls in pool.classes:
        assert cls.agreement is not None and abs(cls.agreement) <= AGREEMENT, (cls.name, cls.agreement)
    assert not _rag_disagreement(spec, planned)


@pytest.mark.slow
def test_without_the_kv_stall_the_rag_plan_disagrees_with_the_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    # The defect put back: with no stall priced, the planner is a point optimistic and the check above fires.
    monkeypatch.setattr(ReplicaPerformance, "_stall_states", lambda *_: None)
    spec = load_spec_text(RAG_POOL, filename="rag.yaml")
    planned = plan(spec)
    off = _rag_disagreement(spec, planned)
    assert [name for name, *_ in off] == ["A", "B"], off  # measured: 99.99% and 100% against 98.95% and 99.48%


# Issue 28 item 3: the API server's per-stream term is on in both the planner and the simulator. On minimal's chat
# pool it adds 0.3 ms for each of the ~15 sequences decoding beside a first token: too little for the agreement
# check to see it missing, so the structure is shown with the arrival rate (2.3 ms a sequence, the single term this
# one was split from), which is: class A's TTFT P95 agrees with it on both sides; priced on one side only, the gap
# is the term.
SERVER_TERM_AGREEMENT = 0.05  # issue 28's target
STRUCTURE_TERM_S = cap.API_PER_REQUEST_S


def _with_server_term(rate_s: float) -> Any:
    def build(spec: PlatformSpec, pool: Pool, **kwargs: Any) -> PoolTiming:
        return dataclasses.replace(timing(spec, pool, **kwargs), api_per_stream_s=rate_s)

    return build


_no_server_term = _with_server_term(0.0)


@pytest.mark.parametrize("rate_s", [cap.API_PER_STREAM_S, STRUCTURE_TERM_S], ids=["default", "arrival-rate"])
def test_with_the_server_term_on_both_sides_minimal_agrees(rate_s: float, monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (planner_module, verify_module):
        monkeypatch.setattr(module, "timing", _with_server_term(rate_s))
    spec = load_spec(ROOT / "stacks" / "minimal.yaml")
    [pool] = verify(spec, plan(spec)).pools
    [cls] = pool.classes
    assert cls.agreement is not None and abs(cls.agreement) <= SERVER_TERM_AGREEMENT, cls.agreement


@pytest.mark.parametrize("side", ["planner", "simulator"])
def test_the_server_term_on_one_side_only_shows_as_disagreement(side: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        planner_module if side == "planner" else verify_module, "timing", _with_server_term(STRUCTURE_TERM_S)
    )
    spec = load_spec(ROOT / "stacks" / "minimal.yaml")
    [pool] = verify(spec, plan(spec)).pools
    [cls] = pool.classes
    assert cls.agreement is not None and abs(cls.agreement) > SERVER_TERM_AGREEMENT, cls.agreement


# The server's per-request term is most of a short class's TTFT on byteion's busy pools (~85 ms of eu-west
# medium-rag class A's ~310 ms P95). Its part of the P95 (the term on less the term off, the same plan and seed on
# each side) measured: the simulator 85.9 and 90.8 ms (classes A and B), the planner 84.3 and 86.7 ms; priced on
# the batch a request found (the defect put back), 77.3 and 81.0 ms (-10%, -11%).
SERVER_PART_AGREEMENT = 0.07


def _server_part(spec: PlatformSpec, planned: Plan, region: str, pool_name: str) -> dict[str, tuple[float, float]]:
    """Each class's TTFT P95 the server term adds, (planner, simulator), at the planned count: on less off."""
    key = (region, pool_name)
    [on] = verify(spec, planned, only={key}).pools
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(verify_module, "timing", _no_server_term)
        [off] = verify(spec, planned, only={key}).pools
    [pp] = [p for p in planned.pools if (p.region, p.name) == key]
    pool = spec.pool(pool_name)
    perf = pool_performance.for_pool(
        spec, region, pool, route(spec).loads[key].per_class, pool_timing=_no_server_term(spec, pool)
    )
    assert perf is not None
    n = pp.replicas_needed
    planner_off = perf.health(pp.arrival_rps / n, replicas=n).classes
    parts = {}
    for c_on, c_off in zip(on.classes, off.classes, strict=True):
        assert c_on.ttft_p95_ms is not None and c_off.ttft_p95_ms is not None
        planner = c_on.planned_ttft_p95_ms - planner_off[c_on.name].ttft_p95_s * 1000
        parts[c_on.name] = (planner, c_on.ttft_p95_ms - c_off.ttft_p95_ms)
    return parts


@pytest.mark.slow
@pytest.mark.parametrize("defect", [False, True], ids=["first-token-batch", "batch-as-found"])
def test_the_server_term_follows_the_batch_a_queue_grew(defect: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if defect:
        monkeypatch.setattr(pool_performance, "first_token_batch", lambda found, joined, ended: found)
    for module in (planner_module, verify_module):  # a term large enough to stand above the simulator's noise
        monkeypatch.setattr(module, "timing", _with_server_term(STRUCTURE_TERM_S))
    spec = load_spec(ROOT / "stacks" / "byteion.yaml")
    parts = _server_part(spec, plan(spec), "eu-west", "medium-rag")
    apart = {name: planner / sim - 1 for name, (planner, sim) in parts.items()}
    assert set(apart) == {"A", "B"}
    if defect:
        assert all(gap < -SERVER_PART_AGREEMENT for gap in apart.values()), apart
    else:
        assert all(abs(gap) <= SERVER_PART_AGREEMENT for gap in apart.values()), apart
