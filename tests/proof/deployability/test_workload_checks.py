"""Part 1 blockers 5 and 6 put back: weights that never reach the registry, secrets nothing creates."""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.proof.deployability.conftest import findings, mutated, rendered, spec, with_inputs
from tokenplane.contract import VLLM_VERSION_ANNOTATION
from tokenplane.proof import deployability as deploy
from tokenplane.proof.render import RenderedResource
from tokenplane.runtime_env import env_variables

JOB = "kubernetes:batch/v1:Job"
OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"


def test_a_manifest_inside_the_hashed_prefix_is_reported() -> None:
    def manifest_back(r: RenderedResource) -> RenderedResource:
        if r.type != OBJECT:
            return r
        name, version = r.inputs["key"].removeprefix("manifests/").removesuffix(".json").split("/")
        return with_inputs(r, lambda i: i.update(key=f"models/{name}/{version}/MANIFEST.json"))

    found = findings("minimal", mutated(rendered("minimal"), manifest_back), rule="weights-published")
    assert len(found) == 1 and found[0].urn.endswith("-manifest-qwen-7b-chat-v1"), found
    assert "never matches" in found[0].message and "manifests/NAME/VERSION.json" in found[0].fix


def test_weights_that_nothing_publishes_are_reported_on_the_pools() -> None:
    found = findings("dev", mutated(rendered("dev"), lambda r: None if r.type == JOB else r), rule="weights-published")
    pools = {r.urn for r in rendered("dev").resources if r.inputs.get("kind") in ("Deployment", "DaemonSet")}
    assert found and {f.urn for f in found} <= pools, found
    assert "nothing in the stack publishes" in found[0].message and "publish Job" in found[0].fix


def test_a_pool_that_does_not_wait_for_its_publish_job_is_reported() -> None:
    jobs = {r.urn for r in rendered("minimal").resources if r.type == JOB}

    def forget(r: RenderedResource) -> RenderedResource:
        return dataclasses.replace(r, dependencies=[d for d in r.dependencies if d not in jobs])

    found = findings("minimal", mutated(rendered("minimal"), forget), rule="weights-published")
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["minimal-us-pool-chat-deployment"], found
    assert "depends_on" in found[0].fix


def test_publish_job_copies_the_models_source_into_the_prefix_the_pool_verifies() -> None:
    result = rendered("minimal")
    job = next(r for r in result.resources if r.type == JOB)
    env = {e["name"]: e["value"] for e in job.inputs["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["SOURCE"] == spec("minimal").models[0].uri
    pool = next(r for r in result.resources if r.name == "minimal-us-pool-chat-deployment")
    fetch = pool.inputs["spec"]["template"]["spec"]["initContainers"][0]
    artifacts = next(e["value"] for e in fetch["env"] if e["name"] == "ARTIFACTS")
    assert artifacts.endswith("@" + env["DEST"]), (artifacts, env["DEST"])
    assert job.custom_timeouts.get("create"), f"{job.urn}: a large model outlasts the default Job await"


def test_a_tenant_key_missing_from_the_gateway_env_is_reported() -> None:
    def drop_key(r: RenderedResource) -> RenderedResource:
        if not r.name.endswith("-ai-gateway-deployment"):
            return r

        def edit(inputs: dict[str, Any]) -> None:
            container = inputs["spec"]["template"]["spec"]["containers"][0]
            container["env"] = [e for e in container["env"] if e["name"] != "TOKENPLANE_KEY_DEMO"]

        return with_inputs(r, edit)

    found = findings("dev", mutated(rendered("dev"), drop_key), rule="references-exist")
    assert len(found) == 1 and found[0].urn.endswith("-ai-gateway-deployment"), found
    assert "env://TOKENPLANE_KEY_DEMO" in found[0].message and "503" in found[0].message


def test_a_secret_the_pod_reads_that_is_neither_created_nor_declared_is_reported() -> None:
    def drop(r: RenderedResource) -> RenderedResource | None:
        return None if r.name.endswith("-ai-gateway-env-secrets") else r

    found = findings("dev", mutated(rendered("dev"), drop), rule="references-exist")
    assert [f.message.split(" needs ")[1].split(",")[0] for f in found] == ["secret ai-gateway-env-secrets"], found


def test_a_created_secret_removed_from_the_graph_is_reported_for_every_pod_that_reads_it() -> None:
    found = findings(
        "minimal",
        mutated(rendered("minimal"), lambda r: None if r.name.endswith("-model-gateway-secret") else r),
        rule="references-exist",
    )
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["minimal-us-model-gateway-deployment"], found


def test_plan_lists_the_secrets_each_region_needs_before_pulumi_up() -> None:
    prerequisites = deploy.prerequisites_of(spec("byteion"), rendered("byteion"))
    secrets = {(p.region, p.name) for p in prerequisites if p.kind == "secret"}
    assert ("eu-central-1", "byteion/tenants/acme-eu/api-key") in secrets, sorted(secrets)
    assert len(secrets) == 7 * len(spec("byteion").regions), sorted(secrets)  # 5 tenants + 2 providers each
    dev = deploy.prerequisites_of(spec("dev"), rendered("dev"))
    assert not [p for p in dev if p.kind == "kubernetes-secret"], "the stack creates the env Secrets itself"
    config = sorted(p.name for p in dev if p.kind == "stack-config")
    assert config == [f"tokenplane:env_secrets.{v}" for v in sorted(env_variables(spec("dev")))], config
    assert "tokenplane:env_secrets.OPENAI_API_KEY" in config, config  # the fallback's key, for the model gateway


def test_a_vllm_pod_whose_version_cannot_be_told_is_reported_not_skipped() -> None:
    """The pools run a regional mirror by digest; without the version annotation the argv check would vanish."""

    def unversioned(r: RenderedResource) -> RenderedResource:
        if not r.name.endswith("-pool-embed-deployment"):
            return r
        return with_inputs(r, lambda i: i["spec"]["template"]["metadata"]["annotations"].pop(VLLM_VERSION_ANNOTATION))

    found = findings("dev", mutated(rendered("dev"), unversioned), rule="vllm-argv")
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["dev-local-pool-embed-deployment"], found
    assert "cannot be told" in found[0].message


def test_the_removed_task_flag_in_a_rendered_vllm_pod_is_reported() -> None:
    def task_back(r: RenderedResource) -> RenderedResource:
        if not r.name.endswith("-pool-embed-deployment"):
            return r

        def edit(inputs: dict[str, Any]) -> None:
            args = inputs["spec"]["template"]["spec"]["containers"][0]["args"]
            i = args.index("--runner")
            args[i : i + 2] = ["--task", "embed"]

        return with_inputs(r, edit)

    found = findings("dev", mutated(rendered("dev"), task_back), rule="vllm-argv")
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["dev-local-pool-embed-deployment"], found
    assert "--task is not an option of vllm serve 0.32.0" in found[0].message and "crash-loops" in found[0].message
