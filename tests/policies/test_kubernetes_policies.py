"""Kubernetes resource policies, called directly with one passing and one failing fixture each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pulumi_policy import ResourceValidationArgs, ResourceValidationPolicy

from tests.policies.fixtures import collect, container, k8s, k8s_args, spec, workload
from tokenplane.components.gateway import runtime_config
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.policies import kubernetes

VLLM = "vllm/vllm-openai:v0.19.0"
DIGEST = "sha256:" + "4305978a8fcfe75ccd67a08e704d98021baa01f5c70a4cbdba008b491173f2df"
GATEWAY_LABELS = {"app.kubernetes.io/component": "gateway"}
HARDENED = {"runAsNonRoot": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False}
OPENAI_KEY = "sk-" + "Xq7vR2mT9pLw4nB8cK1dF6hJ3sZ0aY5e"  # "sk-" and 32 characters: the shape of a real key
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example access key ID
REQUESTS_ONLY = {"requests": {"cpu": "1", "memory": "1Gi"}}
PROMETHEUS = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"


def vllm_pool(name: str, args: list[str], gpus: str, requested_gpus: str | None = None) -> dict[str, Any]:
    """A vLLM Deployment whose limits ask for ``gpus`` and requests for ``requested_gpus`` (default: the same)."""
    vllm = container("vllm", VLLM, cpu="8", memory="64Gi", gpus=gpus, args=args)
    vllm["resources"]["requests"]["nvidia.com/gpu"] = requested_gpus or gpus
    return workload("Deployment", name, "llm-serving", [vllm])


def gateway(security: dict[str, Any], pod: dict[str, Any] | None = None) -> dict[str, Any]:
    image = f"123456789012.dkr.ecr.eu-west-1.amazonaws.com/tokenplane-serving@{DIGEST}"
    return workload(
        "Deployment",
        "ai-gateway",
        "llm-gateway",
        [container("ai-gateway", image, securityContext=security)],
        labels=GATEWAY_LABELS,
        pod=pod,
    )


def service(name: str, namespace: str, kind: str = "LoadBalancer") -> dict[str, Any]:
    return k8s(
        "Service",
        name,
        namespace,
        labels={"app.kubernetes.io/name": name},
        spec={"type": kind, "ports": [{"port": 443.0}]},
    )


def config_map(data: dict[str, str], name: str = "app-config") -> dict[str, Any]:
    return k8s("ConfigMap", name, "llm-gateway", data=data)


def scaled_object(target: str, *queries: str) -> dict[str, Any]:
    triggers = [
        {"type": "prometheus", "metadata": {"serverAddress": PROMETHEUS, "query": q, "threshold": "1"}} for q in queries
    ]
    return k8s("ScaledObject", target, "llm-serving", spec={"scaleTargetRef": {"name": target}, "triggers": triggers})


def deployment(image: str, name: str = "web") -> dict[str, Any]:
    return workload("Deployment", name, "apps", [container(name, image)])


@dataclass(frozen=True)
class Case:
    """A policy, an object it accepts, an object it rejects, and what the rejection must say."""

    policy: ResourceValidationPolicy
    passing: ResourceValidationArgs
    failing: ResourceValidationArgs
    mentions: tuple[str, ...]  # the object's name and the fix


CASES = [
    Case(
        kubernetes.containers_have_requests_and_limits,
        k8s_args(workload("Deployment", "web", "apps", [container("web", "nginx:1.27")])),
        k8s_args(workload("Deployment", "web", "apps", [container("web", "nginx:1.27", resources=REQUESTS_ONLY)])),
        ("Deployment apps/web", "'web'", "resources.limits for cpu, memory", "Set both requests and limits"),
    ),
    Case(
        kubernetes.vllm_gpus_match_parallelism,
        k8s_args(vllm_pool("vllm-large", ["--tensor-parallel-size", "2"], gpus="2")),
        k8s_args(vllm_pool("vllm-large", ["--tensor-parallel-size", "2"], gpus="2", requested_gpus="1")),
        ("llm-serving/vllm-large", "resources.requests asks for nvidia.com/gpu=1", "set it to 2"),
    ),
    Case(
        kubernetes.images_not_latest,
        k8s_args(deployment("nginx:1.27")),
        k8s_args(deployment("nginx:latest")),
        ("apps/web", "nginx:latest", "pin"),
    ),
    Case(
        kubernetes.images_pinned_by_digest,
        k8s_args(deployment(f"nginx@{DIGEST}")),
        k8s_args(deployment("nginx:1.27")),
        ("apps/web", "nginx:1.27", "Pin the digest"),
    ),
    Case(
        kubernetes.images_from_allowed_registries,
        k8s_args(deployment(f"123456789012.dkr.ecr.eu-west-1.amazonaws.com/web@{DIGEST}")),
        k8s_args(deployment("nginx:1.27")),
        ("apps/web", "docker.io/library/nginx", "allowedRegistries"),
    ),
    Case(
        kubernetes.gateways_non_root_read_only,
        k8s_args(gateway(HARDENED)),
        k8s_args(gateway({**HARDENED, "readOnlyRootFilesystem": False})),
        ("llm-gateway/ai-gateway", "readOnlyRootFilesystem: true", "'ai-gateway'"),
    ),
    Case(
        kubernetes.only_ai_gateway_load_balancer,
        k8s_args(service("ai-gateway", "llm-gateway")),
        k8s_args(service("grafana", "monitoring")),
        ("Service monitoring/grafana", "ClusterIP"),
    ),
    Case(
        kubernetes.no_secrets_in_configmaps,
        k8s_args(config_map({"OPENAI_API_KEY": "env://OPENAI_API_KEY"})),
        k8s_args(config_map({"OPENAI_API_KEY": OPENAI_KEY})),
        ("ConfigMap llm-gateway/app-config", "'OPENAI_API_KEY'", "Move it to a Secret"),
    ),
    Case(
        kubernetes.autoscaling_composite_signals,
        k8s_args(scaled_object("vllm-x", 'avg(vllm:kv_cache_usage_perc{pool="x"})')),
        k8s_args(scaled_object("vllm-x", 'avg(DCGM_FI_DEV_GPU_UTIL{pod=~"vllm-x-.*"})')),
        ("ScaledObject llm-serving/vllm-x", "queue wait, KV usage or TTFT"),
    ),
]


def test_every_kubernetes_policy_has_a_passing_and_a_failing_case() -> None:
    assert [c.policy.name for c in CASES] == [p.name for p in kubernetes.POLICIES]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.policy.name)
def test_policy_accepts_its_compliant_object(case: Case) -> None:
    assert collect(case.policy, case.passing) == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.policy.name)
def test_policy_rejects_its_bad_object_naming_it_and_the_fix(case: Case) -> None:
    messages = collect(case.policy, case.failing)
    assert len(messages) == 1, messages
    for fragment in case.mentions:
        assert fragment in messages[0], f"{fragment!r} missing from: {messages[0]}"


# --- requests and limits ----------------------------------------------------------------------


def test_init_containers_need_requests_and_limits_too() -> None:
    fetch = container("fetch-weights", "public.ecr.aws/aws-cli/aws-cli:2.22.35", cpu=None, memory=None)
    props = workload(
        "StatefulSet", "qdrant", "llm-data", [container("qdrant", "qdrant/qdrant:v1.13.4")], init_containers=[fetch]
    )
    messages = collect(kubernetes.containers_have_requests_and_limits, k8s_args(props))
    assert len(messages) == 2  # one for requests, one for limits
    assert all("StatefulSet llm-data/qdrant container 'fetch-weights'" in m for m in messages)
    assert "resources.requests for cpu, memory" in messages[0] and "resources.limits for cpu, memory" in messages[1]


def test_objects_that_run_no_pods_need_no_resources() -> None:
    props = service("qdrant", "llm-data", kind="ClusterIP")
    assert collect(kubernetes.containers_have_requests_and_limits, k8s_args(props)) == []


# --- vLLM GPUs --------------------------------------------------------------------------------


def test_vllm_gpus_are_tensor_times_pipeline_parallel_in_equals_form() -> None:
    args = ["--tensor-parallel-size=4", "--pipeline-parallel-size=2"]
    assert collect(kubernetes.vllm_gpus_match_parallelism, k8s_args(vllm_pool("vllm-xl", args, gpus="8"))) == []
    messages = collect(kubernetes.vllm_gpus_match_parallelism, k8s_args(vllm_pool("vllm-xl", args, gpus="4")))
    assert [("TP x PP = 8" in m, "set it to 8" in m) for m in messages] == [(True, True)] * 2  # requests and limits


def test_vllm_without_parallel_flags_needs_exactly_one_gpu() -> None:
    assert collect(kubernetes.vllm_gpus_match_parallelism, k8s_args(vllm_pool("vllm-small", [], gpus="1"))) == []
    assert len(collect(kubernetes.vllm_gpus_match_parallelism, k8s_args(vllm_pool("vllm-small", [], gpus="2")))) == 2


def test_non_vllm_containers_may_ask_for_any_number_of_gpus() -> None:
    props = workload("Deployment", "trainer", "ml", [container("trainer", "pytorch/pytorch:2.5.1", gpus="4")])
    assert collect(kubernetes.vllm_gpus_match_parallelism, k8s_args(props)) == []


# --- image pinning ----------------------------------------------------------------------------


def test_untagged_image_fails_images_not_latest() -> None:
    [message] = collect(kubernetes.images_not_latest, k8s_args(deployment("nginx")))
    assert "'nginx'" in message and "floats" in message and "pin" in message


def test_a_registry_port_is_not_mistaken_for_a_tag() -> None:
    [message] = collect(kubernetes.images_not_latest, k8s_args(deployment("registry.local:5000/team/nginx")))
    assert "registry.local:5000/team/nginx" in message


def test_digest_pinned_image_passes_both_image_policies() -> None:
    args = k8s_args(deployment(f"nginx@{DIGEST}"))
    assert collect(kubernetes.images_not_latest, args) == []
    assert collect(kubernetes.images_pinned_by_digest, args) == []


def test_latest_with_a_digest_is_pinned_by_the_digest() -> None:
    args = k8s_args(deployment(f"nginx:latest@{DIGEST}"))
    assert collect(kubernetes.images_not_latest, args) == []
    assert collect(kubernetes.images_pinned_by_digest, args) == []


def test_untagged_image_is_left_to_images_not_latest_by_the_digest_policy() -> None:
    assert collect(kubernetes.images_pinned_by_digest, k8s_args(deployment("nginx:latest"))) == []


def test_floating_init_container_image_is_caught() -> None:
    props = workload(
        "Job",
        "migrate",
        "llm-batch",
        [container("main", "busybox:1.37")],
        init_containers=[container("wait", "busybox")],
    )
    [message] = collect(kubernetes.images_not_latest, k8s_args(props))
    assert "llm-batch/migrate container 'wait'" in message


# --- gateway hardening ------------------------------------------------------------------------


def test_pod_level_run_as_non_root_satisfies_the_gateway_policy() -> None:
    container_ctx = {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False}
    props = gateway(container_ctx, pod={"securityContext": {"runAsNonRoot": True, "runAsUser": 10001.0}})
    assert collect(kubernetes.gateways_non_root_read_only, k8s_args(props)) == []


def test_gateway_without_any_security_context_lists_every_setting() -> None:
    [message] = collect(kubernetes.gateways_non_root_read_only, k8s_args(gateway({})))
    for setting in ("runAsNonRoot: true", "readOnlyRootFilesystem: true", "allowPrivilegeEscalation: false"):
        assert setting in message


def test_deployments_other_than_gateways_are_not_held_to_the_gateway_hardening() -> None:
    assert collect(kubernetes.gateways_non_root_read_only, k8s_args(deployment("nginx:1.27"))) == []


# --- load balancers ---------------------------------------------------------------------------


def test_cluster_ip_services_are_never_flagged() -> None:
    assert (
        collect(kubernetes.only_ai_gateway_load_balancer, k8s_args(service("qdrant", "llm-data", kind="ClusterIP")))
        == []
    )


def internal(
    svc: dict[str, Any], annotation: tuple[str, str] = (kubernetes.INTERNAL_SCHEME, "internal")
) -> dict[str, Any]:
    svc["metadata"]["annotations"] = dict([annotation])
    return svc


@pytest.mark.parametrize(
    "annotation", [(kubernetes.INTERNAL_SCHEME, "internal"), (kubernetes.INTERNAL_LEGACY, "true")], ids=str
)
def test_an_internal_load_balancer_for_a_tool_outside_the_serving_path_passes(annotation: tuple[str, str]) -> None:
    # Two blind held-out authors (sets 10 and 15) wrote staff docs behind an internal NLB as a correct program.
    docs = internal(service("docs", "llm-gateway"), annotation)
    docs["metadata"]["labels"]["app.kubernetes.io/part-of"] = "tokenplane"  # tokenplane's app_labels, as both sets did
    assert collect(kubernetes.only_ai_gateway_load_balancer, k8s_args(docs)) == []


def test_an_internet_facing_or_unnamed_scheme_is_still_refused_and_the_message_says_internal_is_the_way_out() -> None:
    facing = service("docs", "llm-gateway")
    facing["metadata"]["annotations"] = {kubernetes.INTERNAL_SCHEME: "internet-facing"}
    for svc in (facing, service("docs", "llm-gateway")):
        [message] = collect(kubernetes.only_ai_gateway_load_balancer, k8s_args(svc))
        assert "internet-facing LoadBalancer" in message and f"{kubernetes.INTERNAL_SCHEME}: internal" in message


def _for_the_controller(svc: dict[str, Any], how: str, **notes: str) -> dict[str, Any]:
    if how == "class":
        svc["spec"]["loadBalancerClass"] = kubernetes.LB_CONTROLLER_CLASS
    else:
        notes[kubernetes.LB_TYPE] = how
    svc["metadata"]["annotations"] = notes
    return svc


@pytest.mark.parametrize("how", ["external", "nlb-ip", "class"])
def test_a_load_balancer_controller_service_without_a_scheme_is_internal_its_default(how: str) -> None:
    # The controller provisions an internal NLB unless the Service says internet-facing (set 21's status page).
    docs = _for_the_controller(service("docs", "llm-gateway"), how)
    assert collect(kubernetes.only_ai_gateway_load_balancer, k8s_args(docs)) == []
    pool = _for_the_controller(service("vllm-chat", "llm-serving"), how)
    [message] = collect(kubernetes.only_ai_gateway_load_balancer, k8s_args(pool))
    assert "internal LoadBalancer to the platform's serving path" in message


@pytest.mark.parametrize(
    "notes",
    [{kubernetes.INTERNAL_SCHEME: "internet-facing"}, {kubernetes.INTERNAL_LEGACY: "false"}],
    ids=["scheme", "legacy"],
)
@pytest.mark.parametrize("how", ["external", "class"])
def test_a_load_balancer_controller_service_that_says_internet_facing_is_refused(
    how: str, notes: dict[str, str]
) -> None:
    docs = _for_the_controller(service("docs", "llm-gateway"), how, **notes)
    [message] = collect(kubernetes.only_ai_gateway_load_balancer, k8s_args(docs))
    assert "llm-gateway/docs is an internet-facing LoadBalancer" in message


def test_an_in_tree_service_without_a_scheme_stays_internet_facing() -> None:
    # No controller type or class: the in-tree provider's default scheme is internet-facing.
    nlb = service("docs", "llm-gateway")
    nlb["metadata"]["annotations"] = {kubernetes.LB_TYPE: "nlb"}
    [message] = collect(kubernetes.only_ai_gateway_load_balancer, k8s_args(nlb))
    assert "internet-facing LoadBalancer" in message


def test_an_internal_load_balancer_to_the_serving_path_is_refused_it_would_skip_the_gateways_auth() -> None:
    pool = internal(service("vllm-chat", "llm-serving"))
    own = internal(service("model-gateway", "llm-gateway"))
    own["metadata"]["labels"]["app.kubernetes.io/component"] = "gateway"
    for svc in (pool, own):
        [message] = collect(kubernetes.only_ai_gateway_load_balancer, k8s_args(svc))
        assert "internal LoadBalancer to the platform's serving path" in message and "auth, quotas" in message


def test_internal_load_balancers_can_be_refused_by_config() -> None:
    docs = internal(service("docs", "llm-gateway"))
    [message] = collect(kubernetes.only_ai_gateway_load_balancer, k8s_args(docs, {"allowInternal": False}))
    assert "llm-gateway/docs" in message


def test_allowed_load_balancers_come_from_config() -> None:
    config = {"allowed": ["ai-gateway", "grafana"]}
    assert collect(kubernetes.only_ai_gateway_load_balancer, k8s_args(service("grafana", "monitoring"), config)) == []
    [message] = collect(kubernetes.only_ai_gateway_load_balancer, k8s_args(service("qdrant", "llm-data"), config))
    assert "llm-data/qdrant" in message and "ai-gateway, grafana" in message


# --- secrets in ConfigMaps --------------------------------------------------------------------


def test_an_openai_key_in_a_configmap_is_flagged_without_echoing_it() -> None:
    props = config_map({"providers.yaml": f"openai:\n  base_url: https://api.openai.com/v1\n  key: {OPENAI_KEY}\n"})
    [message] = collect(kubernetes.no_secrets_in_configmaps, k8s_args(props))
    assert "'providers.yaml'" in message and "sk-" in message
    assert OPENAI_KEY not in message  # the report shows a prefix, never the whole credential


def test_an_aws_access_key_id_in_a_configmap_is_flagged() -> None:
    props = config_map({"AWS_ACCESS_KEY_ID": AWS_KEY_ID})
    [message] = collect(kubernetes.no_secrets_in_configmaps, k8s_args(props))
    assert "'AWS_ACCESS_KEY_ID'" in message and "Move it to a Secret" in message


def test_a_private_key_in_a_configmap_is_flagged() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
    assert len(collect(kubernetes.no_secrets_in_configmaps, k8s_args(config_map({"tls.key": pem})))) == 1


def test_a_literal_password_assignment_is_flagged() -> None:
    props = config_map({"redis.conf": "requirepass: x\npassword=hunter2hunter2\n"})
    assert len(collect(kubernetes.no_secrets_in_configmaps, k8s_args(props))) == 1


def test_one_report_per_key_however_many_patterns_match() -> None:
    props = config_map({"env": f"api_key={OPENAI_KEY} aws={AWS_KEY_ID}", "other": AWS_KEY_ID})
    messages = collect(kubernetes.no_secrets_in_configmaps, k8s_args(props))
    assert len(messages) == 2
    assert "'env'" in messages[0] and "'other'" in messages[1]


@pytest.mark.parametrize(
    "reference",
    ["aws-sm://byteion/providers/openai", "env://OPENAI_API_KEY", "vault://kv/openai", "k8s://llm-gateway/openai/key"],
)
def test_secret_references_are_not_credentials(reference: str) -> None:
    props = config_map({"providers.yaml": f"api_key: {reference}\npassword: {reference}\n"})
    assert collect(kubernetes.no_secrets_in_configmaps, k8s_args(props)) == []


def test_the_gateways_platform_json_with_aws_sm_references_passes() -> None:
    byteion = spec("byteion")
    data = runtime_config(GatewayConfig.from_spec(byteion, byteion.regions[0].name))
    assert "aws-sm://" in data["platform.json"]  # the fixture is the real thing: tenant and provider key references
    assert collect(kubernetes.no_secrets_in_configmaps, k8s_args(config_map(data, name="ai-gateway-config"))) == []


# --- autoscaling signals ----------------------------------------------------------------------


def test_gpu_utilization_alone_does_not_scale_a_vllm_pool() -> None:
    dcgm = 'avg(DCGM_FI_DEV_GPU_UTIL{pod=~"vllm-x-.*"})'
    [message] = collect(kubernetes.autoscaling_composite_signals, k8s_args(scaled_object("vllm-x", dcgm)))
    assert "llm-serving/vllm-x" in message and "GPU utilization alone" in message


@pytest.mark.parametrize(
    "query",
    [
        'sum(rate(vllm:request_queue_time_seconds_sum{pool="x"}[1m]))',
        'avg(vllm:gpu_cache_usage_perc{pool="x"})',
        'histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{pool="x"}[2m])))',
    ],
)
def test_any_composite_signal_next_to_gpu_utilization_satisfies_the_policy(query: str) -> None:
    props = scaled_object("vllm-x", 'avg(DCGM_FI_DEV_GPU_UTIL{pod=~"vllm-x-.*"})', query)
    assert collect(kubernetes.autoscaling_composite_signals, k8s_args(props)) == []


def test_scalers_of_non_vllm_workloads_may_use_any_signal() -> None:
    props = scaled_object("batch-workers", "sum(kafka_consumergroup_lag)")
    assert collect(kubernetes.autoscaling_composite_signals, k8s_args(props)) == []


def test_configmap_env_placeholders_are_references_not_secrets() -> None:
    from tests.policies.fixtures import collect, resource_args
    from tokenplane.policies.kubernetes import no_secrets_in_configmaps

    props = {
        "metadata": {"name": "otel", "namespace": "monitoring"},
        "data": {"config.yaml": "password: ${env:REDIS_PASSWORD}"},
    }
    assert collect(no_secrets_in_configmaps, resource_args("kubernetes:core/v1:ConfigMap", props)) == []


def test_gpu_limit_alone_counts_as_the_request() -> None:
    from tests.policies.fixtures import collect, resource_args
    from tokenplane.policies.kubernetes import vllm_gpus_match_parallelism

    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.19.0",
        "args": ["/m", "--tensor-parallel-size", "2"],
        "resources": {"limits": {"nvidia.com/gpu": "2"}},
    }
    props = {"metadata": {"name": "vllm-x"}, "spec": {"template": {"spec": {"containers": [container]}}}}
    assert collect(vllm_gpus_match_parallelism, resource_args("kubernetes:apps/v1:Deployment", props)) == []
