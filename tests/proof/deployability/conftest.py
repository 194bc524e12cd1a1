"""Helpers to put a Part 1 defect back into a rendered graph and see which checks fire.

The example stacks are rendered once per session (tests/components/conftest.py).
A defect is put back by changing the recorded resources (what the engine would
have been sent) rather than the components, so each test isolates one rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tests.components.conftest import rendered, spec
from tests.paths import REPO_ROOT
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult

__all__ = ["ROOT_STACKS", "dev_with", "findings", "mutated", "planted", "rendered", "spec", "with_inputs"]
ROOT_STACKS = REPO_ROOT / "stacks"


def planted(
    stack: str,
    type_token: str,
    name: str,
    inputs: dict[str, Any],
    *,
    region: str = "us",
    provider: str | None = None,
    dependencies: list[str] | None = None,
    property_dependencies: dict[str, list[str]] | None = None,
) -> RenderedResource:
    """A resource as the render records it, for a test to add to a graph: ``type_token`` named ``name`` in ``stack``."""
    return RenderedResource(
        urn=f"urn:pulumi:{stack}::tokenplane::{type_token}::{name}",
        type=type_token,
        name=name,
        parent=None,
        provider=provider,
        region=region,
        inputs=inputs,
        custom=True,
        dependencies=dependencies or [],
        property_dependencies=property_dependencies or {},
    )


def findings(name: str, result: RenderResult | None = None, rule: str | None = None) -> list[Finding]:
    out = deploy.run(spec(name), result or rendered(name))
    return [f for f in out if rule is None or f.rule == rule]


def mutated(
    result: RenderResult,
    change: Callable[[RenderedResource], RenderedResource | None],
    *,
    extra: list[RenderedResource] | None = None,
) -> RenderResult:
    """A copy of ``result`` with ``change`` applied to every resource (None drops it), plus ``extra`` ones."""
    resources = [r2 for r in result.resources if (r2 := change(r)) is not None]
    return dataclasses.replace(result, resources=[*resources, *(extra or [])], issues=list(result.issues))


def dev_with(
    *changes: Callable[[RenderedResource], RenderedResource | None], extra: list[RenderedResource] | None = None
) -> RenderResult:
    """dev's rendered graph with each of ``changes`` applied in turn, plus ``extra`` resources."""
    result = rendered("dev")
    for change in changes:
        result = mutated(result, change)
    return mutated(result, lambda r: r, extra=extra or [])


def with_inputs(resource: RenderedResource, edit: Callable[[dict[str, Any]], None]) -> RenderedResource:
    inputs = _deep_copy(resource.inputs)
    edit(inputs)
    return dataclasses.replace(resource, inputs=inputs)


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def planted_findings(check: Callable[[Graph], Any], *extra: RenderedResource, stack: str = "dev") -> list[Finding]:
    """What ``check`` finds on ``stack``'s render with ``extra`` planted beside it, on the planted resources only."""
    graph = Graph(spec(stack), mutated(rendered(stack), lambda r: r, extra=list(extra)))
    return [f for f in check(graph) if "planted" in f.urn]
