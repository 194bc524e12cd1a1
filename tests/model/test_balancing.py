"""``choose``: the one balancing rule that the model gateway runs and the simulator's gateway models."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenplane.model.balancing import AFFINITY_SLACK_PREFILLS, BalancePolicy, Load, choose, owned, owners

loads_st = st.lists(st.builds(Load, st.integers(0, 5), st.integers(0, 10_000)), min_size=1, max_size=8)


def test_pending_prefill_picks_the_fewest_pending_whatever_the_tokens() -> None:
    loads = [Load(2, 0), Load(0, 50_000), Load(1, 10)]
    assert choose(loads, turn=0, policy=BalancePolicy.PENDING_PREFILL) == 1


def test_pending_prefill_breaks_ties_by_rotation_not_by_tokens() -> None:
    # Fewest tokens would herd arrivals onto the replicas whose decodes just ended (see the module docstring).
    loads = [Load(1, 300), Load(1, 900), Load(2, 0)]
    assert choose(loads, turn=1, policy=BalancePolicy.PENDING_PREFILL) == 1


def test_least_tokens_ignores_pending_prefills() -> None:
    loads = [Load(3, 100), Load(0, 5_000)]
    assert choose(loads, turn=1, policy=BalancePolicy.LEAST_TOKENS) == 0


def test_round_robin_follows_the_turn_whatever_the_loads() -> None:
    loads = [Load(9, 9_000), Load(0, 0), Load(0, 0)]
    assert [choose(loads, turn=t, policy=BalancePolicy.ROUND_ROBIN) for t in range(5)] == [0, 1, 2, 0, 1]


@pytest.mark.parametrize("policy", [BalancePolicy.PENDING_PREFILL, BalancePolicy.LEAST_TOKENS])
def test_equal_loads_rotate_from_the_turn(policy: BalancePolicy) -> None:
    loads = [Load(1, 100)] * 4
    assert [choose(loads, turn=t, policy=policy) for t in range(6)] == [0, 1, 2, 3, 0, 1]


def test_ties_go_to_the_first_tied_candidate_at_or_after_the_turn() -> None:
    loads = [Load(0, 0), Load(1, 0), Load(0, 0), Load(1, 0)]
    assert choose(loads, turn=1) == 2
    assert choose(loads, turn=3) == 0


def test_the_preferred_replica_wins_within_the_slack_and_yields_beyond_it() -> None:
    within = [Load(AFFINITY_SLACK_PREFILLS, 0), Load(0, 0)]
    beyond = [Load(AFFINITY_SLACK_PREFILLS + 1, 0), Load(0, 0)]
    assert choose(within, turn=1, preferred=0) == 0
    assert choose(beyond, turn=0, preferred=0) == 1


def test_least_tokens_measures_its_slack_in_tokens() -> None:
    loads = [Load(0, 1_000), Load(0, 0)]
    assert choose(loads, turn=0, preferred=0, policy=BalancePolicy.LEAST_TOKENS, slack=1_000) == 0
    assert choose(loads, turn=0, preferred=0, policy=BalancePolicy.LEAST_TOKENS, slack=999) == 1


def test_no_candidate_is_the_callers_case() -> None:
    with pytest.raises(ValueError, match="at least one candidate"):
        choose([], turn=0)


@given(loads_st, st.integers(0, 100))
def test_pending_prefill_never_picks_a_replica_with_more_pending_than_another(loads: list[Load], turn: int) -> None:
    chosen = choose(loads, turn=turn, policy=BalancePolicy.PENDING_PREFILL)
    assert loads[chosen].pending == min(load.pending for load in loads)


@given(loads_st, st.integers(0, 100), st.data())
def test_affinity_never_costs_more_than_the_slack(loads: list[Load], turn: int, data: st.DataObject) -> None:
    preferred = data.draw(st.integers(0, len(loads) - 1))
    chosen = choose(loads, turn=turn, preferred=preferred)
    assert loads[chosen].pending - min(load.pending for load in loads) <= AFFINITY_SLACK_PREFILLS


# Several model gateway processes: each owns a share of the replicas (``owners``) and spills over all of them.
REPLICAS = [f"http://10.0.{i // 200}.{i % 200}:8000" for i in range(128)]
PEERS = [f"10.1.0.{j}" for j in range(8)]


def test_owners_give_every_peer_an_equal_share_within_one() -> None:
    owner = owners(REPLICAS, PEERS)
    counts = Counter(owner)
    assert set(counts) == set(PEERS) and max(counts.values()) - min(counts.values()) <= 1, counts


def test_owners_do_not_depend_on_the_order_the_lookup_answered_in() -> None:
    shuffled = list(reversed(PEERS))
    assert owners(REPLICAS, PEERS) == owners(REPLICAS, shuffled)
    back = {r: o for r, o in zip(reversed(REPLICAS), owners(list(reversed(REPLICAS)), PEERS), strict=True)}
    assert [back[r] for r in REPLICAS] == owners(REPLICAS, PEERS)


@pytest.mark.parametrize("change", ["leaves", "joins"])
def test_a_peer_joining_or_leaving_moves_few_replicas(change: str) -> None:
    before = owners(REPLICAS, PEERS)
    after = owners(REPLICAS, PEERS[:-1] if change == "leaves" else [*PEERS, "10.1.0.99"])
    moved = sum(a != b for a, b in zip(before, after, strict=True))
    # At least a share must move (128 / 8 = 16 leaving, 128 / 9 ~ 14 joining); a re-deal of all would move ~7/8.
    assert moved <= 2 * len(REPLICAS) // len(PEERS), f"{moved} of {len(REPLICAS)} replicas moved when a peer {change}"


@pytest.mark.parametrize(
    "peers", [[], ["10.1.0.1"], ["10.1.0.2", "10.1.0.3"]], ids=["none", "only itself", "not listed"]
)
def test_a_lone_process_or_one_not_among_its_peers_owns_every_replica(peers: list[str]) -> None:
    assert owned(REPLICAS, peers, "10.1.0.1") == [True] * len(REPLICAS)


def test_each_replica_has_exactly_one_owner_among_the_peers() -> None:
    masks = [owned(REPLICAS, PEERS, me) for me in PEERS]
    assert all(sum(column) == 1 for column in zip(*masks, strict=True))


def test_a_process_stays_on_its_own_replicas_while_one_has_no_pending_prefill() -> None:
    loads = [Load(0, 0), Load(1, 0), Load(0, 0), Load(0, 0)]
    own = [False, True, False, True]
    assert choose(loads, turn=0, own=own) == 3  # replica 0 and 2 have none pending either, but are not its own


def test_a_process_spills_over_every_replica_when_each_of_its_own_has_a_pending_prefill() -> None:
    loads = [Load(0, 0), Load(1, 0), Load(0, 0), Load(2, 0)]
    own = [False, True, False, True]
    assert choose(loads, turn=1, own=own) == 2  # the fewest pending over all, from the rotation's turn
    assert choose(loads, turn=1) == 2  # the same as without ownership


def test_affinity_stays_within_the_own_replicas() -> None:
    loads = [Load(0, 0), Load(0, 0), Load(0, 0)]
    assert choose(loads, turn=0, own=[True, False, True], preferred=2) == 2
    assert choose(loads, turn=0, own=[True, False, True], preferred=1) == 0  # not its own: its own rotation wins
