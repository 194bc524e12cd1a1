"""Every flow the platform needs is allowed, and no data store is reachable from outside its VPC.

Each planted defect is a kind the review did not name; each must be caught by ``flow-allowed`` or
``store-private`` for its own reason (the message names the object that blocks or exposes), and the shipped
stacks and examples/single-region must give no finding at all.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec, with_inputs
from tests.proof.deployability.test_single_region_example import example
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import Finding, endpoints, flows
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import (
    RenderedResource,
    RenderResult,
    cluster_security_group_id,
    kubernetes_manifest,
    physical_id,
)
from tokenplane.serving.types import Endpoint

RULES = (flows.FLOW, flows.EXPOSED)


def found(result: RenderResult, name: str | None = "dev") -> list[Finding]:
    graph = Graph(spec(name) if name else None, result)
    return [f for rule in RULES for f in deploy.CHECKS[rule](graph)]


def edit(
    kind: str, name: str, change: Callable[[dict[str, Any]], None]
) -> Callable[[RenderedResource], RenderedResource]:
    """Apply ``change`` to the inputs of the one Kubernetes object (or AWS resource) named ``name``."""

    def apply(r: RenderedResource) -> RenderedResource:
        if r.is_kubernetes_object:
            manifest = kubernetes_manifest(r)
            if manifest.get("kind") == kind and manifest.get("metadata", {}).get("name") == name:
                return with_inputs(r, change)
        elif r.type == kind and r.name == name:
            return with_inputs(r, change)
        return r

    return apply


def one(findings: list[Finding], rule: str, *words: str) -> Finding:
    matching = [f for f in findings if f.rule == rule and all(w in str(f) for w in words)]
    assert matching, f"no {rule} finding naming {words}; found:\n" + "\n".join(str(f) for f in findings)
    return matching[0]


@pytest.mark.parametrize("name", ["minimal", "dev"])
def test_shipped_stacks_need_no_flow_they_block_and_expose_no_store(name: str) -> None:
    assert found(rendered(name), name) == []


@pytest.mark.slow
def test_byteion_needs_no_flow_it_blocks_and_exposes_no_store() -> None:
    assert found(rendered("byteion"), "byteion") == []


def test_single_region_example_needs_no_flow_it_blocks_and_exposes_no_store() -> None:
    assert found(example().result, None) == []


# The embedding pool: the fix of the known defect is seen by the rule -----------------------------------------------
def test_the_ai_gateway_is_given_the_embedding_pools_service_and_the_pool_admits_it() -> None:
    gateway = next(o for o in Graph(spec("dev"), rendered("dev")).workloads("local") if o.name == "ai-gateway")
    env = {e["name"]: e.get("value") for e in gateway.pod_spec()["containers"][0]["env"]}
    assert env["POOL_URL_EMBED"] == "http://vllm-embed.llm-serving.svc:8000"


def test_without_the_embedding_pools_url_the_gateway_is_found_to_fall_back_to_lexical() -> None:
    def drop_url(inputs: dict[str, Any]) -> None:
        container = inputs["spec"]["template"]["spec"]["containers"][0]
        container["env"] = [e for e in container["env"] if e["name"] != "POOL_URL_EMBED"]

    finding = one(found(mutated(rendered("dev"), edit("Deployment", "ai-gateway", drop_url))), flows.FLOW, "embed")
    assert "no POOL_URL_EMBED" in finding.message and "lexical" in finding.message
    assert finding.urn.endswith("ai-gateway-deployment")


def test_an_embedding_pool_policy_without_the_ai_gateway_blocks_the_semantic_cache() -> None:
    # The old wiring: the pool admits the model gateway and Prometheus only.
    def old_peers(inputs: dict[str, Any]) -> None:
        rule = inputs["spec"]["ingress"][0]
        rule["from"] = [
            p
            for p in rule["from"]
            if p.get("podSelector", {}).get("matchLabels") != {"app.kubernetes.io/name": "ai-gateway"}
        ]

    result = mutated(rendered("dev"), edit("NetworkPolicy", "vllm-embed-ingress", old_peers))
    finding = one(found(result), flows.FLOW, "ai-gateway (llm-gateway) -> vllm-embed (llm-serving):8000")
    assert "POOL_URL_EMBED" in finding.message and "llm-serving/vllm-embed-ingress" in finding.message


def test_a_prometheus_policy_for_keda_alone_blocks_the_metering_consumers_capacity_reads() -> None:
    # The old policy: only KEDA's namespace may query Prometheus.
    def keda_only(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ingress"][0]["from"] = inputs["spec"]["ingress"][0]["from"][:1]

    result = mutated(rendered("dev"), edit("NetworkPolicy", "prometheus-clients", keda_only))
    finding = one(found(result), flows.FLOW, "finops-consumer (llm-data) -> kube-prometheus-stack (monitoring):9090")
    assert "TOKENPLANE_PROMETHEUS_URL" in finding.message and "monitoring/prometheus-clients" in finding.message


def test_an_autoscaler_querying_a_prometheus_the_program_never_installs_is_found() -> None:
    # examples/single-region before it installed kube-prometheus-stack: KEDA asks a Service no one creates.
    def no_prometheus(r: RenderedResource) -> RenderedResource | None:
        return None if r.inputs.get("chart") == "kube-prometheus-stack" else r

    finding = one(
        found(mutated(example().result, no_prometheus), None), flows.FLOW, "ScaledObject llm-serving/vllm-chat"
    )
    assert "no Service kube-prometheus-stack-prometheus in namespace monitoring" in finding.message


def test_service_urls_do_not_double_the_openai_prefix() -> None:
    # The clients append /v1/...: a base URL ending in /v1 would call /v1/v1/chat/completions, a 404 on vLLM.
    for workload in Graph(spec("dev"), rendered("dev")).workloads("local"):
        for container in workload.pod_spec()["containers"]:
            for e in container.get("env") or []:
                if e["name"] == "MODEL_GATEWAY_URL" or e["name"].startswith("POOL_URL_"):
                    assert urlparse(e["value"] + Endpoint.CHAT.value).path == Endpoint.CHAT.value, (workload.urn, e)


# Planted defects of kinds the review did not name ----------------------------------------------------------------
def test_a_redis_security_group_on_the_wrong_port_blocks_the_gateways() -> None:
    def wrong_port(inputs: dict[str, Any]) -> None:
        inputs["ingress"][0].update(fromPort=6380, toPort=6380)

    result = mutated(rendered("dev"), edit("aws:ec2/securityGroup:SecurityGroup", "dev-local-redis-sg", wrong_port))
    finding = one(found(result), flows.FLOW, "ai-gateway", "ElastiCache dev-local-redis-rg:6379")
    assert "security group dev-local-redis-sg has no ingress rule for TCP 6379" in finding.message


def test_a_model_gateway_policy_whose_pod_selector_misses_the_ai_gateway_blocks_it() -> None:
    def typo(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"] = "ai-gatway"

    findings = found(mutated(rendered("dev"), edit("NetworkPolicy", "model-gateway-ingress", typo)))
    finding = one(findings, flows.FLOW, "ai-gateway (llm-gateway) -> model-gateway (llm-gateway):8080")
    assert "app.kubernetes.io/name=ai-gatway" in finding.message
    assert not [f for f in findings if f.urn.endswith("batch-deployment")]  # its own peer is untouched


def test_a_redis_security_group_open_to_the_internet_is_found() -> None:
    def open_world(inputs: dict[str, Any]) -> None:
        inputs["ingress"].append({"protocol": "tcp", "fromPort": 6379, "toPort": 6379, "cidrBlocks": ["0.0.0.0/0"]})

    findings = found(
        mutated(rendered("dev"), edit("aws:ec2/securityGroup:SecurityGroup", "dev-local-redis-sg", open_world))
    )
    finding = one(findings, flows.EXPOSED, "0.0.0.0/0")
    assert finding.urn.endswith("dev-local-redis-sg") and "outside its VPC 10.0.0.0/16" in finding.message
    assert not [f for f in findings if f.rule == flows.FLOW]  # the flow itself still gets through


def test_a_namespace_selector_typo_on_qdrant_cuts_the_semantic_cache_off() -> None:
    def typo(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] = (
            "llm-gateways"
        )

    findings = found(mutated(rendered("dev"), edit("NetworkPolicy", "qdrant-ingress", typo)))
    one(findings, flows.FLOW, "ai-gateway (llm-gateway) -> qdrant (llm-data):6333", "QDRANT_URL")
    one(findings, flows.FLOW, "model-gateway (llm-gateway) -> qdrant (llm-data):6333")
    assert not [f for f in findings if f.urn.endswith("batch-deployment")]  # llm-batch's peer is untouched


def test_a_service_whose_target_port_names_no_container_port_is_service_target_ports_finding_alone() -> None:
    """One root cause, one finding: the flows through the Service are not judged again (issue 27)."""

    def typo(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ports"][0]["targetPort"] = "htp"

    result = mutated(rendered("dev"), edit("Service", "model-gateway", typo))
    assert found(result) == []
    [finding] = endpoints.check_target_ports(Graph(spec("dev"), result))
    assert "'htp'" in finding.message and finding.urn.endswith("model-gateway-service")


def test_a_called_service_whose_selector_matches_no_pod_is_service_selects_finding_alone() -> None:
    def typo(inputs: dict[str, Any]) -> None:
        inputs["spec"]["selector"] = {"app.kubernetes.io/name": "vllm-smal"}

    result = mutated(rendered("dev"), edit("Service", "vllm-small", typo))
    assert found(result) == []  # the gateway's POOL_URL_SMALL flow goes nowhere: service-selects says why
    [finding] = endpoints.check_selects(Graph(spec("dev"), result))
    assert "vllm-smal" in finding.message and finding.urn.endswith("pool-small-service")


def test_a_kafka_security_group_that_admits_only_the_public_subnets_blocks_the_pods() -> None:
    def public_only(inputs: dict[str, Any]) -> None:
        inputs["ingress"][0]["cidrBlocks"] = ["10.0.240.0/23"]

    result = mutated(rendered("dev"), edit("aws:ec2/securityGroup:SecurityGroup", "dev-local-kafka-sg", public_only))
    finding = one(found(result), flows.FLOW, "finops-consumer", "MSK dev-local-kafka-msk:9098")
    assert "10.0.240.0/23" in finding.message and "10.0.0.0/20" in finding.message


def test_an_egress_default_deny_in_the_gateway_namespace_blocks_its_calls_to_redis() -> None:
    deny = dict(next(r for r in rendered("dev").resources if r.name.endswith("ns-llm-gateway-default-deny")).__dict__)
    egress = RenderedResource(
        **{
            **deny,
            "urn": deny["urn"] + "-egress",
            "name": deny["name"] + "-egress",
            "inputs": {
                **deny["inputs"],
                "metadata": {"name": "deny-egress", "namespace": "llm-gateway"},
                "spec": {"podSelector": {}, "policyTypes": ["Egress"]},
            },
        }
    )
    findings = found(mutated(rendered("dev"), lambda r: r, extra=[egress]))
    finding = one(findings, flows.FLOW, "ai-gateway", "ElastiCache", "on the way out")
    assert "llm-gateway/deny-egress" in finding.message
    one(findings, flows.FLOW, "ai-gateway (llm-gateway) -> model-gateway (llm-gateway):8080", "deny-egress")


def test_qdrant_behind_a_load_balancer_is_found() -> None:
    def public(inputs: dict[str, Any]) -> None:
        inputs["spec"]["type"] = "LoadBalancer"

    finding = one(found(mutated(rendered("dev"), edit("Service", "qdrant", public))), flows.EXPOSED, "qdrant")
    assert "type LoadBalancer" in finding.message and finding.urn.endswith("qdrant-service")


def test_kafka_brokers_in_public_subnets_are_found() -> None:
    public = ["dev-local-network-public-a", "dev-local-network-public-b"]

    def move(inputs: dict[str, Any]) -> None:
        ids = {r.name: r for r in rendered("dev").resources if r.name in public}
        inputs["brokerNodeGroupInfo"]["clientSubnets"] = [physical_id(ids[n].type, n) for n in public]

    finding = one(
        found(mutated(rendered("dev"), edit("aws:msk/cluster:Cluster", "dev-local-kafka-msk", move))),
        flows.EXPOSED,
        "public subnets",
    )
    assert "dev-local-network-public-a" in finding.message


def redis_admitting(sources: dict[str, Any]) -> RenderResult:
    def only(inputs: dict[str, Any]) -> None:
        inputs["ingress"] = [{"protocol": "tcp", "fromPort": 6379, "toPort": 6379, **sources}]

    return mutated(rendered("dev"), edit("aws:ec2/securityGroup:SecurityGroup", "dev-local-redis-sg", only))


def test_a_redis_group_admitting_the_clusters_node_security_group_is_not_flagged() -> None:
    # Security-group references, not ranges: EKS puts the cluster's group on its managed nodes.
    assert found(redis_admitting({"securityGroups": [cluster_security_group_id("dev-local-cluster-eks")]})) == []


def test_a_redis_group_admitting_another_security_group_blocks_the_pods() -> None:
    kafka_sg = physical_id("aws:ec2/securityGroup:SecurityGroup", "dev-local-kafka-sg")
    finding = one(found(redis_admitting({"securityGroups": [kafka_sg]})), flows.FLOW, "ElastiCache dev-local-redis-rg")
    assert "admits TCP 6379 only from dev-local-kafka-sg" in finding.message


def test_a_public_gateway_policy_that_admits_only_pods_shuts_out_its_own_load_balancer() -> None:
    def in_cluster_only(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ingress"][0]["from"] = [{"namespaceSelector": {}}]

    result = mutated(rendered("dev"), edit("NetworkPolicy", "ai-gateway-ingress", in_cluster_only))
    finding = one(found(result), flows.FLOW, "load balancer of llm-gateway/ai-gateway", "ai-gateway (llm-gateway):8080")
    assert "10.0.240.0/24" in finding.message and finding.urn.endswith("ai-gateway-service")


def test_a_publicly_accessible_database_is_found() -> None:
    template = next(r for r in rendered("dev").resources if r.name == "dev-local-redis-rg")
    database = RenderedResource(
        urn=template.urn.replace("dev-local-redis-rg", "dev-local-ledger-db"),
        type="aws:rds/instance:Instance",
        name="dev-local-ledger-db",
        parent=template.parent,
        provider=template.provider,
        region=template.region,
        inputs={
            "engine": "postgres",
            "publiclyAccessible": True,
            "vpcSecurityGroupIds": template.inputs["securityGroupIds"],
        },
        custom=True,
    )
    finding = one(found(mutated(rendered("dev"), lambda r: r, extra=[database])), flows.EXPOSED, "RDS")
    assert "public access is on" in finding.message and finding.urn == database.urn


def test_clickhouse_admitting_the_whole_internet_by_ip_block_is_found() -> None:
    def world(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ingress"][0]["from"].append({"ipBlock": {"cidr": "0.0.0.0/0"}})

    finding = one(found(mutated(rendered("dev"), edit("NetworkPolicy", "clickhouse-ingress", world))), flows.EXPOSED)
    assert "clickhouse" in finding.message and "ipBlock 0.0.0.0/0" in finding.message


def test_a_program_without_a_spec_whose_gateway_config_embeds_with_a_pool_it_never_wires_is_found() -> None:
    # The gateway's config names its region "eu"; the graph of a spec-less program names it eu-central-1.
    def embed_with_chat(inputs: dict[str, Any]) -> None:
        platform = json.loads(inputs["data"]["platform.json"])
        platform["cache"]["semantic"].update(enabled=True, embedding_pool="chat")
        inputs["data"]["platform.json"] = json.dumps(platform)

    result = mutated(example().result, edit("ConfigMap", "ai-gateway-config", embed_with_chat))
    finding = one(found(result, None), flows.FLOW, "embedding pool chat has no address")
    assert "no POOL_URL_CHAT" in finding.message


def egress_policy(spec_: dict[str, Any]) -> RenderedResource:
    """A NetworkPolicy in llm-gateway, made from the namespace's default-deny resource."""
    deny = next(r for r in rendered("dev").resources if r.name.endswith("ns-llm-gateway-default-deny"))
    manifest = {**deny.inputs, "metadata": {"name": "egress-allow-list", "namespace": "llm-gateway"}, "spec": spec_}
    return dataclasses.replace(deny, urn=deny.urn + "-egress", name=deny.name + "-egress", inputs=manifest)


def test_an_egress_allow_list_that_forgets_dns_is_found_though_every_tcp_port_is_open() -> None:
    tcp = [{"port": p, "protocol": "TCP"} for p in (8080, 8000, 6333, 4317, 6379, 9098)]
    policy = egress_policy({"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": tcp}]})
    findings = found(mutated(rendered("dev"), lambda r: r, extra=[policy]))
    assert {f.message.split(" -> ")[1].split(":")[0] for f in findings} == {
        "cluster DNS (kube-system, k8s-app=kube-dns)"
    }
    one(findings, flows.FLOW, "ai-gateway (llm-gateway) -> cluster DNS", "model-gateway-peers.llm-gateway.svc")


def test_an_egress_allow_list_with_dns_is_not_flagged() -> None:
    dns = {
        "to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
        "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
    }
    tcp = {"ports": [{"port": p, "protocol": "TCP"} for p in (8080, 8000, 6333, 4317, 6379, 9098)]}
    policy = egress_policy({"podSelector": {}, "policyTypes": ["Egress"], "egress": [dns, tcp]})
    assert found(mutated(rendered("dev"), lambda r: r, extra=[policy])) == []


@pytest.mark.parametrize(
    ("engine", "port"),
    [
        ("postgres", 5432),
        ("aurora-postgresql", 5432),
        ("mysql", 3306),
        ("aurora-mysql", 3306),
        ("mariadb", 3306),
        ("oracle-ee", 1521),
        ("sqlserver-se", 1433),
        ("db2-se", 50000),
    ],
)
def test_each_rds_engine_listens_on_its_own_default_port(engine: str, port: int) -> None:
    from tokenplane.proof.deployability.flows import rds_default_port

    assert rds_default_port(engine) == port
