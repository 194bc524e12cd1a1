"""Pools planned above a priority level's shed threshold: the planner says the gateway sheds it (model.admission)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.paths import REPO_ROOT
from tokenplane.load import load_spec_text
from tokenplane.model.admission import shed_at_peak
from tokenplane.model.planner import plan
from tokenplane.model.pool_performance import ClassMix
from tokenplane.sim import gateway
from tokenplane.spec import PlatformSpec, Priority

BYTEION = (REPO_ROOT / "stacks" / "byteion.yaml").read_text()
BATCH_TARGET = "target_utilization: 0.9\n"


def _byteion(text: str = BYTEION) -> PlatformSpec:
    return load_spec_text(text, filename="byteion.yaml", base_dir=REPO_ROOT / "stacks")


def _capacity_warnings(spec: PlatformSpec) -> list[str]:
    return [w.message for w in plan(spec).warnings if w.kind == "capacity"]


def test_byteion_batch_pools_planned_over_the_batch_shed_threshold_are_named() -> None:
    # Planned at rho 0.90 while batch sheds above 0.85: `simulate` served 93.5-93.9% of class D at peak.
    found = _capacity_warnings(_byteion())
    assert sorted(m.split(":")[0] for m in found) == [
        "ap-southeast/batch-catalog",
        "eu-west/batch-catalog",
        "us-east/batch-catalog",
    ]
    assert all("shed_at_utilization 0.85" in m and "5.1% of its batch requests (class D)" in m for m in found)


def test_a_batch_pool_planned_under_the_threshold_is_not_named() -> None:
    assert BYTEION.count(BATCH_TARGET) == 1
    assert _capacity_warnings(_byteion(BYTEION.replace(BATCH_TARGET, "target_utilization: 0.8\n"))) == []


def test_the_planner_and_the_simulated_gateway_shed_by_one_formula() -> None:
    mix = [ClassMix("D", 90.0, (1, 2), (1, 2), None, 0.99, levels=(0.0, 0.0, 0.0, 1.0))]
    # 90 req/s of batch against 100 req/s of service: 85 admitted, 5 of 90 turned away.
    shed = shed_at_peak(_byteion(), mix, 100.0)
    assert shed == {Priority.BATCH: pytest.approx(5 / 90)}
    fractions = gateway.admit_fractions(
        np.array([[0.0], [0.0], [0.0], [90.0]]), np.array([100.0]), np.array([1.0, 0.97, 0.93, 0.85])
    )
    assert fractions[3, 0] == pytest.approx(1 - 5 / 90)
