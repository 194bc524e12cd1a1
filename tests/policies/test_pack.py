"""The pack as a whole: where it is constructed, and what every policy declares."""

from __future__ import annotations

import re

import pytest
from pulumi_policy import EnforcementLevel, Policy

from tests.paths import REPO_ROOT
from tokenplane.policies import ALL

POLICIES_DIR = REPO_ROOT / "policies"
KEBAB_CASE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def test_only_policies_main_constructs_the_policy_pack() -> None:
    # Constructing a PolicyPack starts the policy server and never returns; importing policies must not do it.
    constructing = sorted(p.name for p in POLICIES_DIR.rglob("*.py") if "PolicyPack(" in p.read_text(encoding="utf-8"))
    assert constructing == ["__main__.py"]


def test_the_pack_has_at_least_twenty_policies_with_unique_names() -> None:
    names = [p.name for p in ALL]
    assert len(names) >= 20
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("policy", ALL, ids=lambda p: p.name)
def test_every_policy_declares_a_kebab_case_name_a_description_and_a_level(policy: Policy) -> None:
    assert KEBAB_CASE.match(policy.name), policy.name
    assert policy.description.strip()
    assert policy.enforcement_level in (EnforcementLevel.ADVISORY, EnforcementLevel.MANDATORY)
