"""Issue 27's N5 and its kind: a pool's rollout without room or time, and budgets that block drains.

The arithmetic (tokenplane.model.rollout) is checked over every pool size; the rule (rollout-room) over the shipped
stacks with the old one-at-a-time strategy put back, and with defects of the same kind the review did not name.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, rendered, with_inputs
from tokenplane.model.rollout import plan_rollout, waves_at, worst_waves
from tokenplane.model.startup import TIMEOUT_MARGIN
from tokenplane.proof.deployability import rollouts
from tokenplane.proof.render import RenderedResource, RenderResult

RULE = rollouts.RULE
OLD_STRATEGY = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


def _pool(result: RenderResult, pool: str, edit: Any, *, timeouts: dict[str, str] | None = None) -> RenderResult:
    """``result`` with pool Deployments whose name holds ``-pool-<pool>-`` edited (and their timeouts replaced)."""

    def change(r: RenderedResource) -> RenderedResource:
        if not (r.is_kubernetes_object and r.inputs.get("kind") == "Deployment" and f"-pool-{pool}-" in r.name):
            return r
        r = with_inputs(r, edit)
        return dataclasses.replace(r, custom_timeouts=timeouts) if timeouts is not None else r

    return mutated(result, change)


def _strategy(strategy: dict[str, Any]) -> Any:
    return lambda i: i["spec"].update(strategy=strategy)


# --- the arithmetic ------------------------------------------------------------------------------


@pytest.mark.parametrize("most", [1, 2, 3, 5, 7, 16, 45, 134])
@pytest.mark.parametrize("spare", [0, 1, 3, 50])
def test_a_planned_rollout_always_progresses_and_its_timeout_covers_every_wave(most: int, spare: int) -> None:
    plan = plan_rollout(most, spare, time_to_ready_seconds=24 * 60)
    for replicas in range(1, most + 1):
        waves = waves_at(replicas, plan.max_surge, plan.max_unavailable, most + spare)
        assert waves > 0, (most, spare, replicas, plan)
        assert waves * 24 * TIMEOUT_MARGIN <= plan.timeout_minutes, (most, spare, replicas, plan)
    assert plan.waves <= 5, plan  # a third per wave; rounding down at small counts (5 replicas: 1) costs two more


def test_byteions_small_chat_rolls_in_hours_one_at_a_time_and_in_minutes_by_thirds() -> None:
    """The review's figure: 134 replicas one at a time at 24 min each is over two days; a third per wave, 3."""
    assert worst_waves(134, 1, 0, 134 + 16) == 134
    assert plan_rollout(134, 16, 24 * 60).waves == 3


def test_a_surge_without_a_free_slot_never_finishes() -> None:
    assert waves_at(1, 1, 0, slots=1) == 0  # dev's embed pool: one node, one replica, nowhere to surge
    assert waves_at(1, 1, 0, slots=2) == 1
    assert waves_at(4, "25%", 0, slots=4) == 0


def test_both_knobs_resolving_to_zero_roll_one_at_a_time_as_the_controller_does() -> None:
    assert waves_at(2, "10%", "10%", slots=None) == 2


# --- N5 put back ---------------------------------------------------------------------------------


def test_the_old_one_at_a_time_strategy_outlasts_byteions_update_timeout() -> None:
    result = _pool(
        rendered("byteion"), "small-chat", _strategy(OLD_STRATEGY), timeouts={"create": "24m", "update": "24m"}
    )
    found = [f for f in findings("byteion", result, rule=RULE) if "small-chat" in f.urn]
    assert found and all("pulumi up waits 24 min" in f.message for f in found), found
    assert "customTimeouts update" in found[0].fix


def test_the_old_strategy_can_never_roll_devs_embed_pool() -> None:
    found = findings("dev", _pool(rendered("dev"), "embed", _strategy(OLD_STRATEGY)), rule=RULE)
    assert len(found) == 1 and "can never roll at 1 replicas" in found[0].message, found


# --- the same kind, not named by the review ------------------------------------------------------


def test_a_percentage_surge_with_no_warm_node_never_rolls() -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}
    found = findings("dev", _pool(rendered("dev"), "small", _strategy(strategy)), rule=RULE)
    assert len(found) == 1 and "can never roll" in found[0].message, found


def test_a_pulumi_timeout_annotation_shorter_than_the_rollout_is_reported() -> None:
    def annotate(inputs: dict[str, Any]) -> None:
        inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] = "1800"

    found = findings("dev", _pool(rendered("dev"), "small", annotate), rule=RULE)
    assert len(found) == 1 and "waits 30 min for the update" in found[0].message, found


def test_the_default_strategy_on_a_full_node_group_is_too_slow_for_the_create_timeout() -> None:
    result = _pool(
        rendered("dev"), "small", lambda i: i["spec"].pop("strategy"), timeouts={"create": "21m", "update": "21m"}
    )
    found = findings("dev", result, rule=RULE)
    assert len(found) == 1 and "maxSurge 25%" in found[0].message, found


@pytest.mark.parametrize("budget", [{"minAvailable": 1}, {"maxUnavailable": 0}, {"minAvailable": "100%"}])
def test_a_budget_that_allows_no_disruption_blocks_every_drain(budget: dict[str, Any]) -> None:
    def tighten(r: RenderedResource) -> RenderedResource:
        if not (r.is_kubernetes_object and r.inputs.get("kind") == "PodDisruptionBudget" and "-pool-embed-" in r.name):
            return r

        def edit(inputs: dict[str, Any]) -> None:
            inputs["spec"].pop("maxUnavailable", None)
            inputs["spec"].update(budget)

        return with_inputs(r, edit)

    found = findings("dev", mutated(rendered("dev"), tighten), rule="drain-blocked")
    assert len(found) == 1 and "allows no disruption" in found[0].message, found
    assert found[0].urn.endswith("-pool-embed-pdb"), found[0].urn


# --- correct programs ----------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["minimal", "dev", "byteion"])
def test_the_shipped_stacks_roll_with_room_and_time(stack: str) -> None:
    assert not findings(stack, rule=RULE)


def test_recreate_is_one_wave_and_not_a_rollout_finding() -> None:
    found = findings("dev", _pool(rendered("dev"), "embed", _strategy({"type": "Recreate"})), rule=RULE)
    assert not found, found
