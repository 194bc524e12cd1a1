"""Region: one AWS region's whole stack, from the VPC to the gateways."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from tokenplane.components.ai_gateway import AiGateway
from tokenplane.components.base import Component
from tokenplane.components.batch_workers import BatchWorkers, BatchWorkersArgs
from tokenplane.components.cluster import Cluster, ClusterArgs
from tokenplane.components.cluster_addons import ClusterAddons, ClusterAddonsArgs
from tokenplane.components.finops import finops_plane
from tokenplane.components.gateway import GatewayArgs
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs
from tokenplane.components.images import Images
from tokenplane.components.kafka import Kafka, KafkaArgs
from tokenplane.components.kube import READINESS_GATE_INJECT, Namespace
from tokenplane.components.model_gateway import ModelGateway
from tokenplane.components.naming import (
    APP_NAMESPACES,
    NS_BATCH,
    NS_DATA,
    NS_GATEWAY,
    NS_MONITORING,
    NS_SERVING,
    cluster_name,
)
from tokenplane.components.network import Network, NetworkArgs, vpc_cidr
from tokenplane.components.observability import Observability, ObservabilityArgs
from tokenplane.components.redis import Redis, RedisArgs
from tokenplane.components.system_capacity import system_cpu_at_maxima
from tokenplane.components.tls import gateway_certificate
from tokenplane.components.vector_db import VectorDb, VectorDbArgs
from tokenplane.components.vllm_mirror import VllmMirror
from tokenplane.components.vllm_pool import VllmPool, VllmPoolArgs
from tokenplane.components.weights_publish import publish_jobs
from tokenplane.components.wiring import embedding_pool, pool_clients, serving_deps
from tokenplane.model.scheduling import serves_several_levels
from tokenplane.spec import PlatformSpec, WorkloadClass
from tokenplane.spec import Region as RegionSpec
from tokenplane.vllm_args import artifacts


@dataclass(frozen=True, kw_only=True)
class RegionArgs:
    """The spec and one of its regions, with what the platform shares across regions: the registry bucket, the
    serving image and the pinned vLLM image (each copied to every region's ECR), and the tags."""

    spec: PlatformSpec
    region: RegionSpec
    registry_bucket: pulumi.Input[str]
    images: Images
    tags: dict[str, str]
    vllm: VllmMirror
    # The spec's env:// secret values (variable -> value), for the gateways' env Secrets (GatewayArgs).
    env_secrets: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


class Region(Component):
    """Network, EKS, GPU node groups, Redis, Kafka and Qdrant; then the pools, gateways and telemetry."""

    MODULE = "region"

    gateway_hostname: pulumi.Output[str]
    grafana_url: str

    def __init__(self, name: str, args: RegionArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        spec, region, tags = args.spec, args.region, args.tags
        environment = spec.platform.environment
        network = Network(
            self.child("network"),
            NetworkArgs(
                azs=region.azs,
                cluster_name=cluster_name(spec.platform.name, region.name),
                tags=tags,
                vpc_cidr=vpc_cidr(spec, region),
            ),
            self.opts(),
        )
        cluster = Cluster(
            self.child("cluster"),
            ClusterArgs(
                network=network,
                kubernetes_version=spec.platform.kubernetes_version,
                cloud_region=region.cloud_region,
                # One per AZ in prod, so that an AZ outage leaves system capacity; two elsewhere.
                system_nodes=3 if environment == "prod" else 2,
                tags=tags,
                system_cpu=system_cpu_at_maxima(spec, region),
                admin_role_arns=list(spec.platform.admin_role_arns),
            ),
            self.opts(),
        )
        k8s_provider = k8s.Provider(
            self.child("k8s"), kubeconfig=cluster.kubeconfig, enable_server_side_apply=True, opts=self.opts()
        )
        on_k8s = self.opts(providers=[k8s_provider])
        # The gateway namespace's pods get the controller's target-health readiness gate (see Foundation); the
        # namespace does not wait for the controller, whose webhook admits pods that their ReplicaSets retry.
        namespaces = {
            ns: Namespace.create(
                ns,
                logical=self.child("ns", ns),
                opts=on_k8s,
                labels={READINESS_GATE_INJECT: "enabled"} if ns == NS_GATEWAY else None,
            )
            for ns in APP_NAMESPACES
        }
        # Named as this region, so that its children keep the names (and, by alias, the URNs) they had
        # when they were the Region's own.
        addons = ClusterAddons(
            self.component_name,
            ClusterAddonsArgs(
                cluster=cluster, vpc_id=network.vpc_id, cloud_region=region.cloud_region, tags=tags, moved_from=self
            ),
            on_k8s,
        )
        lb_controller, keda = addons.lb_controller, addons.keda
        gpu_nodes = {
            placement.pool: GpuNodeGroup(
                self.child("gpu", placement.pool),
                GpuNodeGroupArgs(
                    pool=spec.pool(placement.pool),
                    placement=placement,
                    cluster=cluster,
                    subnets=network.private,
                    tags=tags,
                ),
                self.opts(),
            )
            for placement in region.pools
        }
        redis = Redis(
            self.child("redis"),
            RedisArgs(environment=environment, subnets=network.private, tags=tags),
            self.opts(),
        )
        kafka = Kafka(
            self.child("kafka"),
            KafkaArgs(environment=environment, subnets=network.private, topics=spec.queues.topics, tags=tags),
            self.opts(),
        )
        # Workloads wait for nodes to run on and for KEDA, whose CRD their ScaledObjects need.
        ready: list[pulumi.Resource] = [
            *(ns.resource for ns in namespaces.values() if ns.resource),
            cluster.system_nodes,
            keda,
        ]
        after_namespaces = self.opts(providers=[k8s_provider], depends_on=ready)
        vector_db = VectorDb(
            self.child("qdrant"), VectorDbArgs(environment=environment, namespace=namespaces[NS_DATA]), after_namespaces
        )
        observability = Observability(
            self.child("observability"),
            ObservabilityArgs.from_spec(spec, region, namespace=namespaces[NS_MONITORING], cluster=cluster, tags=tags),
            after_namespaces,
        )
        needed = {m.ref: m for p in region.pools for m in artifacts(spec, spec.pool(p.pool))}
        published = publish_jobs(
            self.child("publish"),
            namespace=namespaces[NS_SERVING],
            models=list(needed.values()),
            bucket=args.registry_bucket,
            cluster=cluster,
            tags=tags,
            opts=self.opts(),
            k8s_opts=after_namespaces,
        )
        pools = {
            placement.pool: VllmPool(
                self.child("pool", placement.pool),
                VllmPoolArgs(
                    pool=spec.pool(placement.pool),
                    models=spec,
                    nodes=gpu_nodes[placement.pool],
                    namespace=namespaces[NS_SERVING],
                    region=region.name,
                    cloud_region=region.cloud_region,
                    registry_bucket=args.registry_bucket,
                    cluster=cluster,
                    image=args.vllm.ref(region.cloud_region),
                    tags=tags,
                    placement=placement,
                    workload_classes=spec.workload_classes,
                    priority_scheduling=serves_several_levels(spec, spec.pool(placement.pool)),
                    clients=pool_clients(spec, region, placement.pool),
                ),
                # A pool's replicas verify weights that must already be in the region's bucket.
                self.opts(
                    providers=[k8s_provider],
                    depends_on=[
                        *ready,
                        *(published[m.ref] for m in artifacts(spec, spec.pool(placement.pool)) if m.ref in published),
                    ],
                ),
            )
            for placement in region.pools
        }
        deps = serving_deps(
            config=GatewayConfig.from_spec(spec, region.name),
            images=args.images,
            cluster=cluster,
            redis=redis,
            kafka=kafka,
            vector_db=vector_db,
            tags=tags,
            otel_endpoint=observability.otlp_endpoint,
        )
        model_gateway = ModelGateway(
            self.child("model-gateway"),
            GatewayArgs(
                deps=deps,
                namespace=namespaces[NS_GATEWAY],
                # Each replica's address (the headless Service): the model gateway balances per request itself.
                pool_urls={name: pool.replicas_url for name, pool in pools.items()},
                env_secrets=args.env_secrets,
            ),
            after_namespaces,
        )
        model_gateway_url = model_gateway.url
        serves_batch = any(WorkloadClass.D in spec.pool(p.pool).classes for p in region.pools)
        batch = (
            BatchWorkers(
                self.child("batch"),
                BatchWorkersArgs(deps=deps, namespace=namespaces[NS_BATCH], model_gateway_url=model_gateway_url),
                after_namespaces,
            )
            if serves_batch
            else None
        )
        if spec.finops.enabled:
            finops_plane(self, spec, deps, namespaces[NS_DATA], args.registry_bucket, cluster, after_namespaces)
        certificate = gateway_certificate(self, spec, region, tags)
        embedder = embedding_pool(spec, region)
        # The Batch API's files live in the workers' results bucket, the one place both pods can reach.
        # Passing the output orders the bucket before the gateway's role and pods that name it.
        ai_gateway = AiGateway(
            self.child("ai-gateway"),
            GatewayArgs(
                deps=deps,
                namespace=namespaces[NS_GATEWAY],
                model_gateway_url=model_gateway_url,
                # The semantic cache's embedder calls its pool directly (wiring.embedding_pool).
                pool_urls={embedder: pools[embedder].service_url} if embedder is not None else {},
                files_bucket=batch.results_bucket if batch is not None else None,
                certificate_arn=certificate.arn if certificate is not None else None,
                env_secrets=args.env_secrets,
            ),
            self.opts(providers=[k8s_provider], depends_on=[*ready, lb_controller]),
        )
        self.gateway_hostname = ai_gateway.service.status.apply(
            lambda s: (s.load_balancer.ingress or [None])[0].hostname if s and s.load_balancer else ""
        )
        self.grafana_url = observability.grafana_url
        self.cluster_name = cluster.name
        self.certificate = certificate.requested if certificate is not None else None
        self.grafana_admin_password = observability.grafana_admin_password
        self.kubeconfig = cluster.admin_kubeconfig
        self.register_outputs(
            {"cluster": cluster.name, "gateway_hostname": self.gateway_hostname, "grafana_url": self.grafana_url}
        )
