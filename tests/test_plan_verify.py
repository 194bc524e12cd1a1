"""``tokenplane plan --verify``: every example spec's plan reaches its SLO attainment in simulation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokenplane.cli import app
from tokenplane.load import load_spec
from tokenplane.planner import Plan, plan
from tokenplane.pool_performance import priority_levels
from tokenplane.sim.verify import AGREEMENT, Verification, verify
from tokenplane.spec import WorkloadClass

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted((ROOT / "stacks").glob("*.yaml")) + sorted((ROOT / "examples").rglob("*.tokenplane.yaml"))
# The simulator's own spread from seed to seed (six seeds): its saturated mu within 1% (sd 0.2-0.7%), a class's
# TTFT P95 over ~10,000 judged requests within 1-1.5% (byteion's long-context pools: sd 1.4% and 0.2%). The
# planner agrees within 3% on every pool and class of the example specs, so AGREEMENT (10%) leaves room for
# the other issue-15 work on the latency terms, not for the noise.
MIXED_AGREEMENT = 0.04  # about three of the simulator's P95 spreads from seed to seed

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


def test_a_stricter_slo_attainment_plans_more_replicas_and_still_verifies(tmp_path: Path) -> None:
    base = (ROOT / "stacks" / "minimal.yaml").read_text(encoding="utf-8")
    strict = base.replace("    ttft_p95_ms: 500\n", "    ttft_p95_ms: 500\n    slo_attainment: 0.9995\n")
    assert strict != base
    path = tmp_path / "strict.yaml"
    path.write_text(strict.replace("max_replicas: 3", "max_replicas: 20"), encoding="utf-8")
    spec = load_spec(path)
    planned = plan(spec)
    assert planned.pools[0].replicas_needed > plan(load_spec(ROOT / "stacks" / "minimal.yaml")).pools[0].replicas_needed
    result = verify(spec, planned)
    assert result.ok
    assert result.pools[0].classes[0].target == 0.9995
