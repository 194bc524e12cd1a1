"""The simulator's gateway and the model gateway balance with one function, so they cannot drift apart."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import DEV_SPEC
from tokenplane.load import load_spec
from tokenplane.model import balancing
from tokenplane.model.balancing import BalancePolicy, Load, Sharing
from tokenplane.pool_model import timing
from tokenplane.serving.modelgw import balancer as modelgw_balancer
from tokenplane.sim import gateway
from tokenplane.sim.engine import Engine, RequestState
from tokenplane.sim.workload import Fidelity, SimConfig


def test_the_simulated_and_the_deployed_gateway_call_the_same_choose() -> None:
    assert gateway.choose is balancing.choose
    assert modelgw_balancer.choose is balancing.choose


def test_the_model_gateway_runs_the_deployed_policy() -> None:
    assert modelgw_balancer.Balancer(("http://r0",)).policy is balancing.DEPLOYED


def test_dealing_round_robin_is_choose_round_robin_turn_by_turn() -> None:
    replicas = np.array([7, 3, 5], dtype=np.int64)
    dealt, turn = gateway.deal(replicas, 7, 2)
    loads = [Load(0, 0)] * len(replicas)
    expected = [int(replicas[balancing.choose(loads, turn=t, policy=BalancePolicy.ROUND_ROBIN)]) for t in range(2, 9)]
    assert dealt.tolist() == expected and turn == 9 % 3


def test_a_per_request_policy_needs_every_replica_simulated() -> None:
    with pytest.raises(ValueError, match="fidelity='request'"):
        SimConfig(fidelity=Fidelity.SAMPLED, balance=BalancePolicy.PENDING_PREFILL)


def _engine(requests: int, replicas: int) -> Engine:
    """A pool of ``replicas`` idle replicas and ``requests`` short prompts arriving together at t=1."""
    spec = load_spec(DEV_SPEC)
    state = RequestState(
        arrival=[1.0] * requests,
        priority=[0] * requests,
        context=[100] * requests,
        prefill=[100] * requests,
        cached=[0] * requests,
        tokens=[10] * requests,
        max_wait=[math.inf] * requests,
    )
    engine = Engine([timing(spec, spec.pool("small"))], [replicas], state, np.array(state.arrival))
    for slot in range(replicas):
        engine.start(slot, 0.0)
    return engine


def _queued(engine: Engine, slot: int) -> list[int]:
    replica = engine.replicas[slot]
    return replica.fifo[replica.pos :]


def test_one_gateway_sends_simultaneous_arrivals_to_replicas_without_a_pending_prefill() -> None:
    engine = _engine(4, 4)
    ids = np.arange(4, dtype=np.int64)
    turns = [2]
    gateway.balance(engine, 0, ids, [(4, np.arange(4, dtype=np.int64))], turns, BalancePolicy.PENDING_PREFILL)
    assert [len(_queued(engine, s)) for s in range(4)] == [1, 1, 1, 1] and turns == [6]


def test_each_gateway_sees_only_the_prefills_it_sent_itself() -> None:
    # Two processes, two requests each, all at once: each spreads its own, and neither knows the other's,
    # so both start on the replica their own rotation names first: replica 0 gets one from each.
    engine = _engine(4, 3)
    ids = np.arange(4, dtype=np.int64)
    via = np.array([0, 1, 0, 1], dtype=np.int64)
    turns = [0, 0]
    replicas = np.arange(3, dtype=np.int64)
    gateway.balance(engine, 0, ids, [(4, replicas)], turns, BalancePolicy.PENDING_PREFILL, via)
    assert _queued(engine, 0) == [0, 1] and _queued(engine, 1) == [2, 3]
    assert engine.req.via == [0, 1, 0, 1] and turns == [2, 2]
    assert [load.pending for load in engine.loads([0, 1, 2], via=0)] == [1, 1, 0]
    assert [load.pending for load in engine.loads([0, 1, 2])] == [2, 2, 0]


def test_several_model_gateways_need_every_replica_simulated() -> None:
    with pytest.raises(ValueError, match="fidelity='request'"):
        SimConfig(fidelity=Fidelity.SAMPLED, model_gateways=3)


def test_partitioned_gateways_send_only_to_their_own_share_of_the_replicas() -> None:
    engine = _engine(8, 4)
    via = np.array([0, 1] * 4, dtype=np.int64)
    replicas = np.arange(4, dtype=np.int64)
    gateway.balance(
        engine,
        0,
        np.arange(8, dtype=np.int64),
        [(8, replicas)],
        [0, 0],
        BalancePolicy.PENDING_PREFILL,
        via,
        sharing=Sharing.STRIDE,
    )
    assert [sorted(engine.req.via[r] for r in _queued(engine, s)) for s in range(4)] == [[0, 0], [1, 1], [0, 0], [1, 1]]


def test_dealt_requests_reach_the_model_gateway_processes_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    # As the AI gateway's PeerDealer sends them (serving/modelgw/peers.py): each pool's k-th request to process k mod 3.
    from tokenplane.sim import simulate as simulate_module

    sent: dict[int, list[int]] = {}
    real = gateway.balance

    def recording(engine: Engine, pool: int, ids: np.ndarray, *args: object, **kwargs: object) -> None:
        via = args[3]
        sent.setdefault(pool, []).extend(np.asarray(via).tolist())
        real(engine, pool, ids, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(simulate_module.gateway, "balance", recording)
    config = SimConfig(duration_s=20, seed=0, fidelity=Fidelity.REQUEST, model_gateways=3, gateway_dealt=True)
    simulate_module.simulate(load_spec(DEV_SPEC), config)
    assert sent, "no pool's requests went through the gateway"
    for pool, via in sent.items():
        assert via == [i % 3 for i in range(len(via))], (pool, via[:12])


def test_dealing_takes_no_skew() -> None:
    with pytest.raises(ValueError, match="gateway_dealt"):
        SimConfig(fidelity=Fidelity.REQUEST, model_gateways=3, gateway_dealt=True, gateway_skew=30)
