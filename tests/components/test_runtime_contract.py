"""What the components write into serving pods is what the serving code reads (``tokenplane.runtime_env``)."""

from __future__ import annotations

import pytest

from tests.components.conftest import containers, k8s_objects, of_type, rendered, spec
from tokenplane.runtime_env import POOL_URL_PREFIX, Var
from tokenplane.serving.gateway.runtime import topics
from tokenplane.spec import TopicPurpose

SERVING_APPS = ("ai-gateway", "model-gateway", "batch-workers")


@pytest.mark.parametrize("name", ["dev", "byteion"])
def test_every_variable_a_serving_pod_gets_is_in_the_contract(name: str) -> None:
    # Besides the contract's names: the variables the spec's own env:// secret references name (a tenant's
    # or a provider's key), which the gateway pods get from their env Secret.
    platform = spec(name)
    references = [t.api_key_secret for t in platform.tenants] + [p.api_key_secret for p in platform.providers]
    known = {v.value for v in Var} | {r.removeprefix("env://") for r in references if r.startswith("env://")}
    for deployment in k8s_objects(rendered(name), "Deployment"):
        for container in containers(deployment):
            for item in container.get("env", []):
                env_name = item["name"]
                assert (
                    env_name in known or env_name.startswith(POOL_URL_PREFIX) or env_name in {"MODELS", "ARTIFACTS"}
                ), f"{deployment['_urn']} sets {env_name}, which tokenplane.runtime_env.Var does not define"


def test_a_spec_listing_no_topics_renders_every_topic_the_gateway_writes() -> None:
    minimal = spec("minimal")
    assert "topics" not in minimal.queues.model_fields_set, "stacks/minimal.yaml should list no topics"
    written = topics(minimal)
    assert set(written) == set(TopicPurpose)
    for region in minimal.regions:
        msk = {t.inputs["name"] for t in of_type(rendered("minimal"), "aws:msk/topic:Topic", region.name)}
        assert set(written.values()) <= msk, (
            f"region {region.name}: MSK has {sorted(msk)}, the gateway writes {written}"
        )
