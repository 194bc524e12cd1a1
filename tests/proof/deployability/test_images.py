"""image-published: an image pulled from the program's own registry is pushed there, in that region, first.

Planted defects the review did not name: a tag nothing pushes, a repository only in another region, a workload
that does not wait for its push. The shipped stacks (digest references taken from the build) are not flagged,
nor is a public image.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

from tests.proof.deployability.conftest import mutated, rendered, spec
from tokenplane.proof.deployability import Finding, images
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult

SERVING = "123456789012.dkr.ecr.eu-north-1.amazonaws.com/dev/tokenplane-serving"


def found(result: RenderResult, name: str = "dev") -> list[Finding]:
    return list(images.check(Graph(spec(name), result)))


def gateway_image(image: str, keep_wait: bool = True) -> Callable[[RenderedResource], RenderedResource]:
    """The AI gateway's Deployment pulling ``image``; without ``keep_wait``, no longer waiting for the builds."""

    def edit(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("kind") != "Deployment" or r.inputs["metadata"]["name"] != "ai-gateway":
            return r
        inputs = json.loads(json.dumps(r.inputs))
        inputs["spec"]["template"]["spec"]["containers"][0]["image"] = image
        deps = r.dependencies if keep_wait else [d for d in r.dependencies if "docker-build" not in d]
        props = r.property_dependencies
        if not keep_wait:
            props = {k: [u for u in v if "docker-build" not in u] for k, v in props.items()}
        return dataclasses.replace(r, inputs=inputs, dependencies=deps, property_dependencies=props)

    return edit


def test_the_shipped_stacks_pull_only_what_they_push_after_the_push() -> None:
    assert found(rendered("dev")) == []
    assert found(rendered("minimal"), "minimal") == []


def test_a_public_image_and_the_pushed_tag_are_not_flagged() -> None:
    assert found(mutated(rendered("dev"), gateway_image("nginxinc/nginx-unprivileged:1.27"))) == []
    assert found(mutated(rendered("dev"), gateway_image(f"{SERVING}:serving"))) == []


def test_a_tag_nothing_pushes_is_found() -> None:
    [finding] = found(mutated(rendered("dev"), gateway_image(f"{SERVING}:latest")))
    assert "nothing the program builds pushes that reference" in finding.message and ":latest" in finding.message


def test_a_repository_only_in_another_region_is_found() -> None:
    other = SERVING.replace("eu-north-1", "eu-west-1")
    [finding] = found(mutated(rendered("dev"), gateway_image(f"{other}:serving")))
    assert "only in eu-north-1, not in eu-west-1" in finding.message


def test_a_workload_that_does_not_wait_for_its_push_is_found() -> None:
    [finding] = found(mutated(rendered("dev"), gateway_image(f"{SERVING}:serving", keep_wait=False)))
    assert "does not wait for the push" in finding.message
