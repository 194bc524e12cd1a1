"""Shared fixtures: the dev spec as plain data, and helpers to load or reject a variant of it.

Tests mutate a deep copy of ``stacks/dev.yaml``'s data, so each one states the
single change it makes and what the loader or planner must say about it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.paths import REPO_ROOT
from tokenplane.errors import Issue, SpecLoadError
from tokenplane.load import load_spec_text
from tokenplane.spec import PlatformSpec

ROOT = REPO_ROOT
DEV_SPEC = ROOT / "stacks" / "dev.yaml"

SpecData = dict[str, Any]


@pytest.fixture(scope="session")
def dev_data_pristine() -> SpecData:
    """The dev spec as parsed YAML; never mutate it (hypothesis tests deep-copy it themselves)."""
    data = yaml.safe_load(DEV_SPEC.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise TypeError(f"{DEV_SPEC} does not hold a mapping")
    return data


@pytest.fixture
def dev_data(dev_data_pristine: SpecData) -> SpecData:
    """A private deep copy of the dev spec's data, free to mutate."""
    return copy.deepcopy(dev_data_pristine)


@pytest.fixture
def load_data() -> Callable[[SpecData], PlatformSpec]:
    """Load spec data through the real YAML path, as a file would be."""

    def load(data: SpecData) -> PlatformSpec:
        return load_spec_text(yaml.safe_dump(data), filename="good.yaml")

    return load


@pytest.fixture
def rejected() -> Callable[[SpecData], list[Issue]]:
    """Load spec data that must fail; return the issues the loader reports."""

    def reject(data: SpecData) -> list[Issue]:
        with pytest.raises(SpecLoadError) as info:
            load_spec_text(yaml.safe_dump(data), filename="bad.yaml")
        return info.value.issues

    return reject


def pool_index(data: SpecData, name: str) -> int:
    return next(i for i, p in enumerate(data["pools"]) if p["name"] == name)


def tenant_index(data: SpecData, name: str) -> int:
    return next(i for i, t in enumerate(data["tenants"]) if t["name"] == name)


@pytest.fixture
def pool_at() -> Callable[[SpecData, str], int]:
    """Index of a pool by name, so tests survive reordering of dev.yaml."""
    return pool_index


@pytest.fixture
def tenant_at() -> Callable[[SpecData, str], int]:
    """Index of a tenant by name."""
    return tenant_index


def only_issue(issues: list[Issue], path: str) -> Issue:
    """The one issue at ``path``; fails listing every issue otherwise."""
    found = [i for i in issues if i.path == path]
    if len(found) != 1:
        listing = "\n".join(str(i) for i in issues)
        pytest.fail(f"expected exactly one issue at {path}, got {len(found)} among:\n{listing}")
    return found[0]


@pytest.fixture
def issue_at() -> Callable[[list[Issue], str], Issue]:
    """Pick the single issue reported at a field path."""
    return only_issue


@pytest.hookimpl(tryfirst=True)  # before -m deselects: an unmarked slow test is caught in every tier's run
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    from tests.tiers import unmarked

    found = unmarked(
        (item.nodeid, getattr(item, "fixturenames", ()), (m.name for m in item.iter_markers())) for item in items
    )
    if found:
        raise pytest.UsageError(
            f"{len(found)} test(s) start a broker or other processes but are not marked slow: {', '.join(found[:5])}; "
            "add @pytest.mark.slow (or pytestmark = pytest.mark.slow for the module)"
        )
