"""VllmPool: each placement's vLLM Deployment, its weights, its neighbours, and its autoscaler."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.components.conftest import containers, k8s_objects, mock_output, named, of_type, placements, rendered, spec
from tokenplane.components.pins import VLLM_IMAGE
from tokenplane.components.wiring import embedding_pool
from tokenplane.model.scheduling import serves_several_levels
from tokenplane.proof.render import ACCOUNT_ID
from tokenplane.schedule import cron_window
from tokenplane.spec import PlatformSpec, RegistryModel
from tokenplane.vllm_args import vllm_args

NS = "llm-serving"
POOLS = [(name, region, pool) for name in ("dev", "byteion") for region, pool in placements(spec(name))]
IDS = [f"{name}-{region}-{pool}" for name, region, pool in POOLS]
parametrize_pools = pytest.mark.parametrize(("name", "region", "pool"), POOLS, ids=IDS)


def obj(name: str, region: str, kind: str, object_name: str) -> dict[str, Any]:
    return named(
        (o for o in k8s_objects(rendered(name), kind, region) if o["metadata"].get("namespace") == NS), object_name
    )


def deployment(name: str, region: str, pool: str) -> dict[str, Any]:
    return obj(name, region, "Deployment", f"vllm-{pool}")


def vllm(name: str, region: str, pool: str) -> dict[str, Any]:
    [container] = [c for c in containers(deployment(name, region, pool)) if c["name"] == "vllm"]
    return container


def scaled_object(name: str, region: str, pool: str) -> dict[str, Any]:
    return obj(name, region, "ScaledObject", f"vllm-{pool}")


def artifacts(platform: PlatformSpec, pool: str) -> list[RegistryModel]:
    """The model a pool serves, and its speculative draft model if it has one."""
    p = platform.pool(pool)
    draft = p.engine.speculative.draft_model if p.engine.speculative else None
    return [platform.model(p.model), *([platform.model(draft)] if draft else [])]


def flag_value(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else None


@parametrize_pools
def test_each_placement_has_a_vllm_deployment_in_the_serving_namespace(name: str, region: str, pool: str) -> None:
    d = deployment(name, region, pool)
    assert d["metadata"]["labels"].get("tokenplane.io/pool") == pool, f"{d['_urn']} is not labelled with its pool"


@parametrize_pools
def test_vllm_runs_the_pinned_release_from_its_own_regions_ecr_by_digest(name: str, region: str, pool: str) -> None:
    image = vllm(name, region, pool)["image"]
    urn = deployment(name, region, pool)["_urn"]
    platform = spec(name)
    cloud = next(r.cloud_region for r in platform.regions if r.name == region)
    [mirror] = [r for r in of_type(rendered(name), "docker-build:index:Image") if r.name.endswith("-vllm")]
    assert mirror.inputs["dockerfile"]["location"].endswith("serving/images/vllm.Dockerfile")  # FROM VLLM_IMAGE
    expected = f"{ACCOUNT_ID}.dkr.ecr.{cloud}.amazonaws.com/{platform.platform.name}/vllm-openai@{mock_output(mirror, 'digest')}"
    assert image == expected, f"{urn} runs {image}, not the {VLLM_IMAGE} mirrored into {cloud} ({expected})"


@parametrize_pools
def test_vllm_args_are_the_pools_engine_command_line(name: str, region: str, pool: str) -> None:
    platform = spec(name)
    args = vllm(name, region, pool)["args"]
    several = serves_several_levels(platform, platform.pool(pool))
    assert args == vllm_args(platform, platform.pool(pool), models_dir="/models", priority_scheduling=several), (
        f"{deployment(name, region, pool)['_urn']} runs vllm serve {args}"
    )


@parametrize_pools
def test_vllm_args_carry_every_engine_setting_of_the_pool(name: str, region: str, pool: str) -> None:
    p = spec(name).pool(pool)
    args = vllm(name, region, pool)["args"]
    urn = deployment(name, region, pool)["_urn"]
    expected = {
        "--tensor-parallel-size": str(p.tensor_parallel),
        "--pipeline-parallel-size": str(p.pipeline_parallel),
        "--max-num-seqs": str(p.engine.max_num_seqs),
        "--max-num-batched-tokens": str(p.engine.max_num_batched_tokens),
        "--gpu-memory-utilization": str(p.engine.gpu_memory_utilization),
        "--kv-cache-dtype": p.engine.kv_cache_dtype.value,
    }
    assert {flag: flag_value(args, flag) for flag in expected} == expected, f"{urn} runs vllm serve {args}"
    cached = p.engine.enable_prefix_caching and not spec(name).is_embedding(p)  # an encoder has no KV cache
    caching = "--enable-prefix-caching" if cached else "--no-enable-prefix-caching"
    assert caching in args, f"{urn} lacks {caching}: {args}"


@parametrize_pools
def test_vllm_serves_the_registry_version_name(name: str, region: str, pool: str) -> None:
    model = spec(name).model(spec(name).pool(pool).model)
    args = vllm(name, region, pool)["args"]
    assert flag_value(args, "--served-model-name") == f"{model.name}-{model.version}", (
        f"{deployment(name, region, pool)['_urn']} serves {flag_value(args, '--served-model-name')}, "
        f"not {model.name}-{model.version}"
    )


@pytest.mark.parametrize("region", [r for n, r, p in POOLS if n == "byteion" and p == "large-reasoning"])
def test_large_reasoning_decodes_speculatively_with_its_draft_model(region: str) -> None:
    args = vllm("byteion", region, "large-reasoning")["args"]
    config = json.loads(flag_value(args, "--speculative-config") or "null")
    draft = spec("byteion").model("byteion-draft")
    assert config == {"model": f"/models/{draft.ref}", "num_speculative_tokens": 4}, (
        f"{deployment('byteion', region, 'large-reasoning')['_urn']} speculates with {config}"
    )


@parametrize_pools
def test_vllm_pod_is_guaranteed_its_pools_gpus(name: str, region: str, pool: str) -> None:
    p = spec(name).pool(pool)
    resources = vllm(name, region, pool)["resources"]
    urn = deployment(name, region, pool)["_urn"]
    assert resources["requests"] == resources["limits"], f"{urn} requests {resources['requests']} but limits differ"
    gpus = str(p.tensor_parallel * p.pipeline_parallel)
    assert resources["limits"].get("nvidia.com/gpu") == gpus, f"{urn} asks for {resources['limits']}, not {gpus} GPUs"


@parametrize_pools
def test_vllm_pod_tolerates_the_gpu_taint(name: str, region: str, pool: str) -> None:
    d = deployment(name, region, pool)
    tolerations = d["spec"]["template"]["spec"].get("tolerations", [])
    assert any(t.get("key") == "nvidia.com/gpu" and t.get("effect") == "NoSchedule" for t in tolerations), (
        f"{d['_urn']} tolerates {tolerations}"
    )


@parametrize_pools
def test_vllm_pod_requires_its_pools_nodes(name: str, region: str, pool: str) -> None:
    d = deployment(name, region, pool)
    required = d["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    expressions = [e for term in required["nodeSelectorTerms"] for e in term["matchExpressions"]]
    assert {"key": "tokenplane.io/pool", "operator": "In", "values": [pool]} in expressions, (
        f"{d['_urn']} requires nodes matching {expressions}"
    )


@parametrize_pools
def test_fetch_weights_checks_each_artifacts_sha256(name: str, region: str, pool: str) -> None:
    d = deployment(name, region, pool)
    [fetch] = [c for c in d["spec"]["template"]["spec"]["initContainers"] if c["name"] == "fetch-weights"]
    script = " ".join(fetch["command"])
    assert "sha256sum" in script and '"$actual" != "$sha"' in script, f"{d['_urn']} fetches without verifying"
    env = {e["name"]: e.get("value", "") for e in fetch["env"]}
    for model in artifacts(spec(name), pool):
        assert f"{model.ref}={model.sha256}@s3://" in env["ARTIFACTS"], (
            f"{d['_urn']} does not pin {model.ref} to sha256 {model.sha256}: ARTIFACTS={env['ARTIFACTS']}"
        )


@parametrize_pools
def test_weights_come_from_the_registry_bucket_of_the_pools_region(name: str, region: str, pool: str) -> None:
    d = deployment(name, region, pool)
    [fetch] = [c for c in d["spec"]["template"]["spec"]["initContainers"] if c["name"] == "fetch-weights"]
    artifacts_env = next(e["value"] for e in fetch["env"] if e["name"] == "ARTIFACTS")
    [bucket] = [
        b
        for b in of_type(rendered(name), "aws:s3/bucket:Bucket")
        if b.name == f"{spec(name).platform.name}-registry-{region}"
    ]
    sources = {entry.split("@", 1)[1].split("/")[2] for entry in artifacts_env.split()}
    assert sources == {mock_output(bucket, "bucket")}, f"{d['_urn']} pulls weights from {sources}, not {bucket.urn}"


@parametrize_pools
def test_vllm_probes_check_the_health_endpoint(name: str, region: str, pool: str) -> None:
    container = vllm(name, region, pool)
    paths = {
        p: container.get(p, {}).get("httpGet", {}).get("path")
        for p in ("startupProbe", "readinessProbe", "livenessProbe")
    }
    assert set(paths.values()) == {"/health"}, f"{deployment(name, region, pool)['_urn']} probes {paths}"


@parametrize_pools
def test_grace_period_outlasts_the_slowest_class_slo(name: str, region: str, pool: str) -> None:
    platform = spec(name)
    slos = [platform.workload_classes[c].e2e_p95_ms or 0 for c in platform.pool(pool).classes]
    d = deployment(name, region, pool)
    grace = d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= max(slos) / 1000, f"{d['_urn']} gives streams {grace}s; its slowest class has {max(slos)} ms"


@parametrize_pools
def test_each_pool_has_a_service_selecting_its_pods(name: str, region: str, pool: str) -> None:
    service = obj(name, region, "Service", f"vllm-{pool}")
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": f"vllm-{pool}"}, (
        f"{service['_urn']} selects {service['spec']['selector']}"
    )


@parametrize_pools
def test_the_model_gateway_reaches_each_replica_through_a_headless_service(name: str, region: str, pool: str) -> None:
    # Through the ClusterIP, kube-proxy would choose a pod per connection at random, not the balancer per request.
    service = obj(name, region, "Service", f"vllm-{pool}-replicas")
    assert service["spec"].get("clusterIP") == "None", f"{service['_urn']} is not headless: {service['spec']}"
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": f"vllm-{pool}"}, f"{service['_urn']}"
    gateway = named(
        (
            o
            for o in k8s_objects(rendered(name), "Deployment", region)
            if o["metadata"].get("namespace") == "llm-gateway"
        ),
        "model-gateway",
    )
    env = {e["name"]: e.get("value") for c in containers(gateway) for e in c.get("env", [])}
    url = env[f"POOL_URL_{pool.upper().replace('-', '_')}"]
    assert url.startswith(f"http://vllm-{pool}-replicas."), f"{gateway['_urn']} calls pool {pool} at {url}"


@parametrize_pools
def test_each_pool_has_a_disruption_budget(name: str, region: str, pool: str) -> None:
    pdb = obj(name, region, "PodDisruptionBudget", f"vllm-{pool}")
    assert pdb["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": f"vllm-{pool}"}, f"{pdb['_urn']}"


@parametrize_pools
def test_only_the_model_gateway_monitoring_and_the_semantic_caches_gateway_reach_a_pool(
    name: str, region: str, pool: str
) -> None:
    policy = obj(name, region, "NetworkPolicy", f"vllm-{pool}-ingress")
    peers = [peer for rule in policy["spec"]["ingress"] for peer in rule.get("from", [None])]
    gateway = "llm-gateway"
    expected = [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": gateway}},
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "model-gateway"}},
        },
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
    ]
    if pool == embedding_pool(spec(name), spec(name).region(region)):
        # The AI gateway's semantic cache embeds prompts with this pool, calling it directly.
        expected.append(
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": gateway}},
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "ai-gateway"}},
            }
        )
    assert peers == expected, f"{policy['_urn']} admits {peers}"


@parametrize_pools
def test_scaled_object_bounds_are_the_placements_bounds(name: str, region: str, pool: str) -> None:
    placement = next(p for p in spec(name).region(region).pools if p.pool == pool)
    so = scaled_object(name, region, pool)
    bounds = (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"])
    assert bounds == (placement.min_replicas, placement.max_replicas), f"{so['_urn']} scales {bounds}"
    assert so["spec"]["scaleTargetRef"]["name"] == f"vllm-{pool}", (
        f"{so['_urn']} targets {so['spec']['scaleTargetRef']}"
    )


@parametrize_pools
def test_scaled_object_has_a_prometheus_trigger_per_configured_signal(name: str, region: str, pool: str) -> None:
    signals = spec(name).pool(pool).autoscaling.signals
    metrics = {
        "queue-wait-ms": (signals.queue_wait_ms, "vllm:request_queue_time_seconds"),
        "kv-cache-usage": (signals.kv_cache_usage, "vllm:kv_cache_usage_perc"),
        "ttft-p95-ms": (signals.ttft_p95_ms, "vllm:time_to_first_token_seconds"),
    }
    so = scaled_object(name, region, pool)
    triggers = {t["name"]: t for t in so["spec"]["triggers"] if t["type"] == "prometheus"}
    for trigger, (threshold, metric) in metrics.items():
        if threshold is None:
            assert trigger not in triggers, f"{so['_urn']} scales on {trigger}, which the pool does not configure"
            continue
        assert trigger in triggers, f"{so['_urn']} has no {trigger} trigger: {sorted(triggers)}"
        meta = triggers[trigger]["metadata"]
        assert meta["threshold"] == f"{threshold:g}", f"{so['_urn']} {trigger} threshold {meta['threshold']}"
        assert metric in meta["query"] and f'pool="{pool}"' in meta["query"], f"{so['_urn']} {trigger}: {meta['query']}"


@pytest.mark.parametrize("region", [r for n, r, p in POOLS if n == "byteion" and p == "small-chat"])
def test_small_chat_scales_up_ahead_of_its_predictive_window(region: str) -> None:
    [window] = spec("byteion").pool("small-chat").autoscaling.predictive
    start, end = cron_window(window.cron, window.duration_minutes)
    so = scaled_object("byteion", region, "small-chat")
    ceiling = next(pl.max_replicas for pl in spec("byteion").region(region).pools if pl.pool == "small-chat")
    desired = str(min(window.min_replicas, ceiling))  # a window never lifts a region above its max_replicas
    crons = [t for t in so["spec"]["triggers"] if t["type"] == "cron"]
    assert [t["metadata"] for t in crons] == [
        {"timezone": window.timezone, "start": start, "end": end, "desiredReplicas": desired}
    ], f"{so['_urn']} has cron triggers {crons}"


@parametrize_pools
def test_no_pool_scales_on_gpu_utilisation_alone(name: str, region: str, pool: str) -> None:
    so = scaled_object(name, region, pool)
    others = [t for t in so["spec"]["triggers"] if "DCGM_FI_DEV_GPU_UTIL" not in t.get("metadata", {}).get("query", "")]
    assert others, f"{so['_urn']} scales on GPU utilisation only, which stays high while queues grow"
