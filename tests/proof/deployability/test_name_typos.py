"""Names written out by hand that are a typo of one the program makes (literal-name-resolves; a chart's watched
namespace, namespace-exists), found by the reference-mutation benchmark (benchmarks/reference_mutations.py) where no
rule saw them; and when an object must wait for its namespace (within the provider's retries it need not). The
shipped stacks, and names that are not typos of the program's own, are not flagged."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, rendered, with_inputs
from tokenplane.proof.deployability import literal_names, namespaces
from tokenplane.proof.render import RenderedResource, RenderResult

ADDON = "aws:eks/addon:Addon"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
PROMETHEUS = "kube-prometheus-stack"


def edited(typ: str, edit: Any, name_has: str = "") -> RenderResult:
    """dev with ``edit`` applied to the inputs of each resource of type ``typ`` (whose name has ``name_has``)."""

    def change(r: RenderedResource) -> RenderedResource:
        return with_inputs(r, edit) if r.type == typ and name_has in r.name else r

    return mutated(rendered("dev"), change)


def rule(result: RenderResult, name: str) -> list[str]:
    return [f.message for f in findings("dev", result, name)]


@pytest.mark.parametrize("typ", [ADDON, NODE_GROUP])
def test_a_cluster_name_one_edit_from_the_programs_cluster_is_found(typ: str) -> None:
    messages = rule(edited(typ, lambda i: i.update(clusterName="dev-locla")), literal_names.RULE)
    assert messages and all("'dev-locla'" in m and "'dev-local'" in m for m in messages), messages


def test_a_cluster_made_elsewhere_is_not_judged() -> None:
    # A name nothing like the program's own is an existing cluster, which an offline check cannot know.
    assert rule(edited(NODE_GROUP, lambda i: i.update(clusterName="platform-shared")), literal_names.RULE) == []


def test_a_value_near_a_name_of_another_kind_is_not_a_typo() -> None:
    # 'dev-locla' is two edits from the cluster 'dev-local', but a role input names roles only.
    def role(inputs: dict[str, Any]) -> None:
        inputs["nodeRoleArn"] = "arn:aws:iam::123456789012:role/dev-locla"

    assert rule(edited(NODE_GROUP, role), literal_names.RULE) == []


def test_the_shipped_stacks_have_no_typos() -> None:
    for name in ("dev", "byteion", "minimal"):
        assert findings(name, rule=literal_names.RULE) == []
        assert findings(name, rule=namespaces.RULE) == []


def test_a_chart_watching_a_typo_of_a_namespace_is_found() -> None:
    def typo(inputs: dict[str, Any]) -> None:
        inputs["values"]["grafana"]["sidecar"]["dashboards"]["searchNamespace"] = "monitorign"

    [message] = rule(edited("kubernetes:helm.sh/v3:Release", typo, PROMETHEUS), namespaces.RULE)
    assert "values.grafana.sidecar.dashboards.searchNamespace names namespace 'monitorign'" in message
    assert "'monitoring'" in message


@pytest.mark.parametrize("value", ["ALL", "monitoring", "kube-system", "observability-shared"])
def test_a_chart_watching_a_namespace_that_exists_or_is_not_a_typo_is_not_judged(value: str) -> None:
    def watch(inputs: dict[str, Any]) -> None:
        inputs["values"]["grafana"]["sidecar"]["dashboards"]["searchNamespace"] = value

    assert rule(edited("kubernetes:helm.sh/v3:Release", watch, PROMETHEUS), namespaces.RULE) == []


def _retimed(object_name: str, namespace_waits_for: str | None) -> RenderResult:
    """dev with ``object_name`` no longer waiting for namespace llm-data, which waits for ``namespace_waits_for``."""
    result = rendered("dev")
    by_name = {r.name: r for r in result.resources}
    namespace = by_name["dev-local-ns-llm-data"]

    def change(r: RenderedResource) -> RenderedResource:
        if r.name == object_name:
            return dataclasses.replace(r, dependencies=[d for d in r.dependencies if d != namespace.urn])
        if r.name == namespace.name and namespace_waits_for is not None:
            return dataclasses.replace(r, dependencies=[*r.dependencies, by_name[namespace_waits_for].urn])
        return r

    return mutated(result, change)


def test_an_object_sent_with_its_namespace_is_within_the_providers_retries() -> None:
    # The namespace waits for nothing the Service does not: both are sent together, and pulumi-kubernetes retries a
    # NotFound create five times, so the Service is created once the namespace is.
    assert rule(_retimed("dev-local-qdrant-service", None), namespaces.RULE) == []


def test_an_object_sent_long_before_its_namespace_is_found() -> None:
    [message] = rule(_retimed("dev-local-qdrant-service", "dev-local-gpu-small-ng"), namespaces.RULE)
    assert "does not wait for namespace llm-data, which waits for" in message and "dev-local-gpu-small-ng" in message
