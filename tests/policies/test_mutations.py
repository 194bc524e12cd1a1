"""The mutation suite: every policy catches its minimal violating program and passes its fixed twin.

The cases are in ``mutations.py``. Each runs through ``run_checks`` with the
pack's default settings (tokenplane's own exceptions included), as
``tokenplane check`` would; the per-policy detection is printed in the test
summary (``policy mutation detection``).
"""

from __future__ import annotations

import pytest
from pulumi_policy import Policy

from tests.policies.mutations import MUTATIONS, Mutation
from tokenplane.policies import ALL
from tokenplane.proof.check import PolicySettings, run_checks, settings_for

# policy -> (violating program flagged, passing program clean); read by conftest's summary hook.
DETECTION: dict[str, tuple[bool, bool]] = {}


def _violations(policy: Policy, case: Mutation, *, bad: bool) -> list[str]:
    graph = case.build(bad)
    assert graph.ok, (
        f"{case.policy} ({'bad' if bad else 'good'}): the fixture itself does not render cleanly: {graph.issues}"
    )
    settings = settings_for({policy.name: case.config} if bad and case.config else {}, [policy])
    # Advisory policies report too; detection is about finding the violation, not about its level.
    settings = {policy.name: PolicySettings("mandatory", settings[policy.name].config)}
    [outcome] = run_checks(graph, [policy], settings).outcomes
    return [v.message for v in outcome.violations]


def test_every_policy_in_the_pack_has_a_mutation_case() -> None:
    assert sorted(MUTATIONS) == sorted(p.name for p in ALL)


@pytest.mark.parametrize("policy", ALL, ids=lambda p: p.name)
def test_policy_flags_its_mutation_and_passes_the_fixed_program(policy: Policy) -> None:
    case = MUTATIONS[policy.name]
    flagged = _violations(policy, case, bad=True)
    clean = _violations(policy, case, bad=False)
    DETECTION[policy.name] = (bool(flagged), not clean)
    assert flagged, f"{policy.name} missed its mutation: {case.mutation}"
    assert clean == [], f"{policy.name} flagged the fixed program: {clean}"
