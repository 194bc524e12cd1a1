"""A pool on its default node: the idle GPUs it pays for, and the node that would fit, said by the planner."""

from __future__ import annotations

import pytest

from tests.paths import REPO_ROOT
from tokenplane.catalog import INSTANCE_TYPES
from tokenplane.load import load_spec
from tokenplane.model.node_fit import idle_on_default_node, smallest_node
from tokenplane.model.planner import plan
from tokenplane.spec import PlatformSpec, Pool

ROOT = REPO_ROOT


@pytest.fixture(scope="module")
def minimal() -> PlatformSpec:
    return load_spec(ROOT / "stacks" / "minimal.yaml")


def chat(spec: PlatformSpec, **changes: object) -> Pool:
    return spec.pools[0].model_copy(update=changes)


def test_one_warm_l4_replica_on_the_default_four_gpu_node_leaves_three_idle(minimal: PlatformSpec) -> None:
    idle = idle_on_default_node(chat(minimal), replicas=1)
    assert idle is not None
    assert (idle.node.name, idle.idle_gpus, idle.smallest.name) == ("g6.12xlarge", 3, "g6.xlarge")
    assert idle.usd_per_hour == INSTANCE_TYPES["g6.12xlarge"].usd_per_hour
    assert idle.smallest_usd_per_hour == INSTANCE_TYPES["g6.xlarge"].usd_per_hour


def test_the_l40s_pool_of_the_issue_is_pointed_at_g6e_xlarge(minimal: PlatformSpec) -> None:
    idle = idle_on_default_node(chat(minimal, gpu="L40S"), replicas=1)
    assert idle is not None
    message = idle.message("us/chat", chat(minimal, gpu="L40S"))
    assert "default g6e.12xlarge (4 GPUs, $10.49/h a node)" in message
    assert "3 GPU(s) sit idle" in message and "Set instance_type: g6e.xlarge" in message


@pytest.mark.parametrize(
    ("changes", "replicas"),
    [
        ({"instance_type": "g6.12xlarge"}, 1),  # chosen on purpose: the spec says so
        ({}, 4),  # four replicas fill the default node
        ({"gpu": "H100"}, 1),  # H100 comes only in 8-GPU nodes: nothing smaller fits
    ],
)
def test_no_warning_where_nothing_is_idle_or_nothing_smaller_fits(
    minimal: PlatformSpec, changes: dict[str, object], replicas: int
) -> None:
    assert idle_on_default_node(chat(minimal, **changes), replicas=replicas) is None


def test_the_smallest_node_holds_a_whole_replica(minimal: PlatformSpec) -> None:
    pool = chat(minimal, tensor_parallel=2)
    assert (smallest_node(pool).name, pool.gpus_per_replica) == ("g6.12xlarge", 2)


def test_the_plan_warns_with_kind_cost_and_still_passes(minimal: PlatformSpec) -> None:
    result = plan(minimal)
    [warning] = [w for w in result.warnings if w.kind == "cost"]
    assert (warning.region, warning.pool) == ("us", "chat")
    assert result.ok
