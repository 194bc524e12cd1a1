"""The simulator's gateway and the model gateway balance with one function, so they cannot drift apart."""

from __future__ import annotations

import numpy as np
import pytest

from tokenplane.model import balancing
from tokenplane.model.balancing import BalancePolicy, Load
from tokenplane.serving.modelgw import balancer as modelgw_balancer
from tokenplane.sim import gateway
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
