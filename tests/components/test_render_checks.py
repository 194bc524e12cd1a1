"""The offline render: the example specs render cleanly, and the checks catch what the engine would reject."""

from __future__ import annotations

import importlib
import re
from collections import Counter
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from tests.components.conftest import rendered, spec
from tokenplane.proof.render import RenderResult, render, render_program

EXAMPLES = ["dev", "byteion", "minimal"]
PLATFORM_TYPE = "tokenplane:platform:LlmPlatform"
COMPONENT_TYPE = re.compile(r"^tokenplane:(?P<module>[a-z][a-z0-9_]*):(?P<name>[A-Z][A-Za-z0-9]*)$")
REGIONS = {"us-east-1": "use1"}
RACE_REPEATS = 12  # a check that races its threads misses in about a third of renders; 12 in a row all but rule it out


def urn_and_inputs(result: RenderResult) -> dict[str, Any]:
    return {r.urn: r.inputs for r in result.resources}


def one_bucket_twice() -> None:
    provider = aws.Provider("use1", region="us-east-1")
    box = pulumi.ComponentResource("test:index:Box", "box")
    for _ in range(2):
        aws.s3.Bucket("same", opts=pulumi.ResourceOptions(parent=box, provider=provider))


def invalid_deployment() -> None:
    aws.Provider("use1", region="us-east-1")
    cluster = k8s.Provider("k8s", kubeconfig="{}")
    pod = {"containers": [{"name": "app", "image": "nginx:1.27", "imagePullPolcy": "Always"}]}  # a typo
    k8s.apps.v1.Deployment(
        "web",
        metadata={"name": "web", "namespace": "default"},
        spec={
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod},
        },
        opts=pulumi.ResourceOptions(provider=cluster),
    )


def config_maps(objects: list[tuple[str, str]]) -> None:
    """A ConfigMap ``default/settings`` per (cluster, logical name); each cluster lives in the cloud region it names."""
    boxes: dict[str, pulumi.ComponentResource] = {}
    for cluster, logical in objects:
        if cluster not in boxes:
            providers = [
                aws.Provider(f"aws-{cluster}", region=cluster),
                k8s.Provider(f"k8s-{cluster}", kubeconfig="{}"),
            ]
            boxes[cluster] = pulumi.ComponentResource(
                "test:index:Box", f"box-{cluster}", opts=pulumi.ResourceOptions(providers=providers)
            )
        k8s.core.v1.ConfigMap(
            logical,
            metadata={"name": "settings", "namespace": "default"},
            data={"source": logical},
            opts=pulumi.ResourceOptions(parent=boxes[cluster]),
        )


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_spec_renders_without_issues(name: str) -> None:
    result = rendered(name)
    assert result.ok, "\n".join(str(issue) for issue in result.issues)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_spec_registers_every_urn_once(name: str) -> None:
    counts = Counter(r.urn for r in rendered(name).resources)
    assert not [urn for urn, n in counts.items() if n > 1], (
        f"registered more than once: {[u for u, n in counts.items() if n > 1]}"
    )


@pytest.mark.parametrize("name", EXAMPLES)
def test_component_types_name_the_module_that_defines_them(name: str) -> None:
    for r in rendered(name).resources:
        if r.custom:
            continue
        match = COMPONENT_TYPE.match(r.type)
        assert match, f"{r.urn} has type {r.type}, not tokenplane:<module>:<Name>"
        module = importlib.import_module(f"components.{match['module']}")
        cls = getattr(module, match["name"], None)
        assert cls is not None and cls.__module__ == module.__name__, (
            f"{r.urn}: {r.type} names components.{match['module']}, which does not define {match['name']}"
        )


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_custom_resource_descends_from_the_platform(name: str) -> None:
    result = rendered(name)
    by_urn = {r.urn: r for r in result.resources}
    for r in result.resources:
        if not r.custom:
            continue
        chain, current = [], by_urn.get(r.parent or "")
        while current is not None and current.type != PLATFORM_TYPE:
            chain.append(current.type)
            current = by_urn.get(current.parent or "")
        assert current is not None, f"{r.urn} is not under the LlmPlatform component (ancestors: {chain})"


@pytest.mark.slow
def test_rendering_twice_gives_identical_resources(dev: RenderResult) -> None:
    again = render(spec("dev"))
    first, second = urn_and_inputs(dev), urn_and_inputs(again)
    assert first.keys() == second.keys(), f"URNs differ: {sorted(first.keys() ^ second.keys())}"
    changed = [urn for urn in first if first[urn] != second[urn]]
    assert not changed, f"inputs differ between renders: {changed}"


def test_render_program_reports_a_urn_registered_twice_on_every_render() -> None:
    """The mock monitor registers from several threads, so the check must not depend on their timing."""
    urn = "urn:pulumi:render::tokenplane::test:index:Box$aws:s3/bucket:Bucket::same"
    reported = [
        [(i.kind, i.urn) for i in render_program(one_bucket_twice, regions=REGIONS).issues] for _ in range(RACE_REPEATS)
    ]
    missed = sum(1 for issues in reported if issues != [("duplicate-urn", urn)])
    assert not missed, f"{urn} registered twice went unreported in {missed} of {RACE_REPEATS} renders: {reported}"


def test_render_program_reports_a_schema_error_at_its_field_path() -> None:
    result = render_program(invalid_deployment, regions=REGIONS)
    [issue] = result.issues
    assert (issue.kind, issue.urn.rsplit("::", 1)[-1]) == ("schema", "web"), str(issue)
    assert "spec.template.spec.containers.0" in issue.message and "imagePullPolcy" in issue.message, str(issue)
    assert issue.urn in str(issue), str(issue)


def test_render_program_reports_two_objects_with_one_name_in_one_region() -> None:
    result = render_program(lambda: config_maps([("us-east-1", "first"), ("us-east-1", "second")]), regions=REGIONS)
    [issue] = result.issues
    names = {issue.urn.rsplit("::", 1)[-1], issue.message.rsplit("::", 1)[-1].split(";")[0]}
    assert (issue.kind, names) == ("duplicate-object", {"first", "second"}), str(issue)


def test_render_program_allows_one_name_on_clusters_in_two_regions() -> None:
    regions = {"us-east-1": "use1", "eu-west-1": "euw1"}
    result = render_program(lambda: config_maps([("us-east-1", "first"), ("eu-west-1", "second")]), regions=regions)
    assert result.ok, "\n".join(str(issue) for issue in result.issues)
