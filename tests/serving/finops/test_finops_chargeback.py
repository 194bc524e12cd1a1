"""Chargeback adds up: tenants plus idle equal the node bill, to the cent, whatever the usage."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenplane.serving.finops import chargeback
from tokenplane.serving.finops.chargeback import IDLE, Line, PoolHour, Use, allocate, bill_cents, exact_cells, to_cents

TENANTS = ("acme", "globex", "initech", "umbrella")
POOLS = ("small", "large")


@st.composite
def periods(draw: st.DrawFn) -> tuple[list[PoolHour], list[Use]]:
    hours = []
    for hour in range(draw(st.integers(1, 6))):
        for pool in POOLS:
            cost = draw(st.floats(0, 500, allow_nan=False, allow_infinity=False))
            capacity = draw(st.one_of(st.just(0.0), st.floats(1, 1e9, allow_nan=False, allow_infinity=False)))
            hours.append(PoolHour(hour * 3600, "us-east", pool, cost, capacity))
    uses = [
        Use(ph.hour, ph.region, ph.pool, tenant, model, draw(st.integers(0, 10**8)))
        for ph in hours
        for tenant in draw(st.lists(st.sampled_from(TENANTS), unique=True, max_size=4))
        for model in ("m1",)
    ]
    return hours, uses


def split_three_ways() -> tuple[list[PoolHour], list[Use]]:
    """$1.00 of fully used capacity served equally to three tenants: 33.33... cents each."""
    hours = [PoolHour(0, "r", "p", 1.00, 300.0)]
    return hours, [Use(0, "r", "p", t, "m", 100) for t in TENANTS[:3]]


@settings(max_examples=300, deadline=None)
@given(periods())
def test_tenants_plus_idle_equal_the_node_bill_to_the_cent(period: tuple[list[PoolHour], list[Use]]) -> None:
    hours, uses = period
    lines = allocate(hours, uses)
    assert sum(line.cents for line in lines) == bill_cents(hours)
    assert all(line.cents >= 0 for line in lines)


@settings(max_examples=200, deadline=None)
@given(periods())
def test_each_line_is_within_a_cent_of_its_exact_share(period: tuple[list[PoolHour], list[Use]]) -> None:
    hours, uses = period
    cells = exact_cells(hours, uses)
    for (key, exact), line in zip(cells, to_cents(cells), strict=True):
        assert abs(Fraction(line.cents) - exact * 100) < 1, f"{key}: {line.cents} cents for ${float(exact):.4f}"


def test_idle_capacity_is_its_own_line_and_a_tenant_pays_only_for_its_share_of_the_used_part() -> None:
    # $10 for a pool-hour that could serve 1,000 tokens and served 250 (acme 200, globex 50): 75% idle.
    hours = [PoolHour(0, "r", "small", 10.0, 1000.0)]
    uses = [Use(0, "r", "small", "acme", "m", 200), Use(0, "r", "small", "globex", "m", 50)]
    cents = {line.tenant: line.cents for line in allocate(hours, uses)}
    assert cents == {IDLE: 750, "acme": 200, "globex": 50}


def test_a_tenant_that_used_nothing_is_charged_nothing() -> None:
    hours = [PoolHour(0, "r", "small", 10.0, 1000.0)]
    lines = allocate(hours, [Use(0, "r", "small", "acme", "m", 0)])
    assert [(line.tenant, line.cents) for line in lines] == [(IDLE, 1000)]


def naive_cents(cells: list[tuple[tuple[int, str, str, str, str], Fraction]]) -> list[Line]:
    """The defect: each cell rounded on its own, so the cents drift from the bill."""
    return [Line(*key, cents=round(float(value) * 100)) for key, value in cells]


def test_the_sum_check_fires_when_cells_are_rounded_one_by_one() -> None:
    hours, uses = split_three_ways()
    assert sum(x.cents for x in allocate(hours, uses)) == bill_cents(hours) == 100
    naive = naive_cents(exact_cells(hours, uses))
    assert sum(x.cents for x in naive) != bill_cents(hours), "the naive rounding should lose a cent here"
    assert sorted(line.cents for line in allocate(hours, uses)) == [0, 33, 33, 34]


def test_module_exposes_the_idle_label_no_tenant_can_have() -> None:
    # Spec tenant names are [a-z0-9-]: the idle line can never collide with a real tenant.
    assert not chargeback.IDLE.replace("-", "").isalnum()
