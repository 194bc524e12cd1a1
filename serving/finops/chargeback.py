"""Chargeback: each pool-hour's node bill allocated to the tenants that used it, idle capacity on its own line.

A self-hosted replica costs the same per hour whether it serves one request or a thousand, so the bill of a
pool-hour (its replica-hours times the price) is split in two before anyone is charged:

- the *used* part, the bill times the pool-hour's utilization (tokens served over the tokens its replicas
  could have served), goes to the tenants in proportion to the tokens each was served there;
- the *idle* part, the rest, is a line of its own (``IDLE``): it is the platform's cost of headroom, warm
  pools and over-provisioning, and spreading it over the tenants silently would hide exactly the number a
  platform team has to act on.

The allocation is exact: every cell is computed as a fraction, and the period's bill, rounded to the cent
once, is handed out in whole cents by the largest-remainder method. So the tenants' cents plus the idle cents
equal the bill in cents, always (``tests/serving/finops/test_finops_chargeback.py`` holds it with hypothesis).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

IDLE = "(idle)"  # the tenant column's value for idle capacity: not a valid tenant name (spec names are [a-z0-9-])
CENTS = 100


@dataclass(frozen=True, slots=True)
class PoolHour:
    """What one pool cost and could serve in one hour of one region."""

    hour: int  # epoch seconds at the start of the hour
    region: str
    pool: str
    cost_usd: float  # replica-hours x $/replica-hour
    capacity_tokens: float  # tokens the replicas could have served flat out; 0 when unmeasured


@dataclass(frozen=True, slots=True)
class Use:
    """Tokens one tenant was served by one pool in one hour, of one model."""

    hour: int
    region: str
    pool: str
    tenant: str
    model: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Line:
    """One allocated cell of the bill, in whole cents."""

    hour: int
    region: str
    pool: str
    tenant: str  # IDLE for the idle capacity
    model: str  # '' for the idle line
    cents: int


def utilization(tokens: int, capacity_tokens: float) -> Fraction:
    """The share of the pool-hour that served tokens: tokens over capacity, at most 1.

    An unmeasured capacity (0) counts a pool-hour that served anything as fully used, and one that served
    nothing as fully idle: the bill is never lost, only its split is coarser.
    """
    if capacity_tokens <= 0:
        return Fraction(1 if tokens > 0 else 0)
    return min(Fraction(1), Fraction(tokens) / Fraction(capacity_tokens))


def exact_cells(
    hours: Iterable[PoolHour], uses: Iterable[Use]
) -> list[tuple[tuple[int, str, str, str, str], Fraction]]:
    """Every cell's exact dollars: (hour, region, pool, tenant or IDLE, model) -> share of that pool-hour's bill.

    Tokens served by a pool-hour with no capacity row are not in the bill and get no cell (``unbilled_uses``
    lists them).
    """
    by_hour: dict[tuple[int, str, str], list[Use]] = defaultdict(list)
    for use in uses:
        if use.tokens > 0:
            by_hour[(use.hour, use.region, use.pool)].append(use)
    cells: list[tuple[tuple[int, str, str, str, str], Fraction]] = []
    for ph in hours:
        bill = Fraction(ph.cost_usd)
        served = by_hour.get((ph.hour, ph.region, ph.pool), [])
        total = sum(u.tokens for u in served)
        used = bill * utilization(total, ph.capacity_tokens)
        cells.append(((ph.hour, ph.region, ph.pool, IDLE, ""), bill - used))
        for use in served:
            cells.append(((ph.hour, ph.region, ph.pool, use.tenant, use.model), used * use.tokens / total))
    return cells


def to_cents(cells: list[tuple[tuple[int, str, str, str, str], Fraction]]) -> list[Line]:
    """Whole cents per cell that add up to the cells' total rounded to the cent (largest remainder)."""
    total = sum((value for _, value in cells), Fraction(0))
    target = _round_half_up(total * CENTS)
    floors = [(key, (value * CENTS).__floor__(), value * CENTS) for key, value in cells]
    short = target - sum(f for _, f, _ in floors)
    # The cells whose cents were cut the most get the cents the floors left out; ties go in key order.
    order = sorted(range(len(floors)), key=lambda i: (-(floors[i][2] - floors[i][1]), floors[i][0]))
    bonus = set(order[:short])
    return [Line(*key, cents=floor + (1 if i in bonus else 0)) for i, (key, floor, _) in enumerate(floors)]


def _round_half_up(value: Fraction) -> int:
    return int((value + Fraction(1, 2)).__floor__())


def allocate(hours: Iterable[PoolHour], uses: Iterable[Use]) -> list[Line]:
    """The period's node bill in cents, per hour, region, pool, tenant (or IDLE) and model."""
    return to_cents(exact_cells(list(hours), list(uses)))


def bill_cents(hours: Iterable[PoolHour]) -> int:
    """The period's node bill, rounded to the cent once: what the lines add up to."""
    return _round_half_up(sum((Fraction(ph.cost_usd) for ph in hours), Fraction(0)) * CENTS)


def unbilled_uses(hours: Iterable[PoolHour], uses: Iterable[Use]) -> list[Use]:
    """Uses of a pool-hour the ledger has no capacity for (the replica counts never arrived): a gap to report."""
    known = {(ph.hour, ph.region, ph.pool) for ph in hours}
    return [u for u in uses if u.tokens > 0 and (u.hour, u.region, u.pool) not in known]
