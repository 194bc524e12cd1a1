"""Region: one AWS region's whole stack, from the VPC to the gateways."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components import kube
from components.ai_gateway import AiGateway
from components.base import Component
from components.batch_workers import BatchWorkers, BatchWorkersArgs
from components.cluster import Cluster, ClusterArgs
from components.gateway import GATEWAY_PORT, GatewayArgs, ServingDeps
from components.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs
from components.iam import irsa_role, policy_document
from components.kafka import Kafka, KafkaArgs
from components.lb_controller import lb_controller
from components.model_gateway import ModelGateway
from components.naming import APP_NAMESPACES, GPU_PRESENT_LABEL, NS_GATEWAY, NS_KEDA, cluster_name
from components.network import Network, NetworkArgs, vpc_cidr
from components.observability import Observability, ObservabilityArgs
from components.pins import CLUSTER_AUTOSCALER_CHART, DCGM_EXPORTER_CHART, KEDA_CHART, NVIDIA_DEVICE_PLUGIN_CHART
from components.redis import Redis, RedisArgs
from components.system_capacity import system_cpu_at_maxima
from components.tls import gateway_certificate
from components.vector_db import STORAGE_CLASS, VectorDb, VectorDbArgs
from components.vllm_pool import VllmPool, VllmPoolArgs
from components.weights_publish import publish_jobs
from tokenplane.spec import PlatformSpec, WorkloadClass
from tokenplane.spec import Region as RegionSpec
from tokenplane.vllm_args import artifacts

KEDA_PORTS = (6443, 9443)  # metrics API and admission webhook, called by the Kubernetes API server


@dataclass(frozen=True, kw_only=True)
class RegionArgs:
    spec: PlatformSpec
    region: RegionSpec
    registry_bucket: pulumi.Input[str]
    image: pulumi.Input[str]
    account_id: pulumi.Input[str]
    tags: dict[str, str]
    vllm_image: pulumi.Input[str]  # the pinned vLLM image in this region's ECR (VllmMirror), by digest


class Region(Component):
    """Network, EKS, GPU node groups, Redis, Kafka and Qdrant; then the pools, gateways and telemetry."""

    MODULE = "region"

    gateway_hostname: pulumi.Output[str]
    grafana_url: str

    def __init__(self, name: str, args: RegionArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        spec, region, tags = args.spec, args.region, args.tags
        environment = spec.platform.environment.value
        network = Network(
            self.child("network"),
            NetworkArgs(
                region=region,
                cluster_name=cluster_name(spec.platform.name, region.name),
                tags=tags,
                vpc_cidr=vpc_cidr(spec, region),
            ),
            self.opts(),
        )
        cluster = Cluster(
            self.child("cluster"),
            ClusterArgs(
                platform=spec.platform,
                region=region,
                private_subnet_ids=network.private_subnet_ids,
                public_subnet_ids=network.public_subnet_ids,
                tags=tags,
                system_cpu=system_cpu_at_maxima(spec, region),
            ),
            self.opts(),
        )
        k8s_provider = k8s.Provider(
            self.child("k8s"), kubeconfig=cluster.kubeconfig, enable_server_side_apply=True, opts=self.opts()
        )
        on_k8s = self.opts(providers=[k8s_provider])
        namespaces = [kube.namespace(ns, self.child("ns", ns), on_k8s) for ns in APP_NAMESPACES]
        lb_controller, keda = self._addons(region, cluster, k8s_provider, network.vpc_id, tags)
        for placement in region.pools:
            GpuNodeGroup(
                self.child("gpu", placement.pool),
                GpuNodeGroupArgs(
                    pool=spec.pool(placement.pool),
                    placement=placement,
                    cluster_name=cluster.name,
                    node_role_arn=cluster.node_role_arn,
                    subnet_ids=network.private_subnet_ids,
                    tags=tags,
                ),
                self.opts(),
            )
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
        ready: list[pulumi.Resource] = [*namespaces, cluster.system_nodes, keda]
        after_namespaces = self.opts(providers=[k8s_provider], depends_on=ready)
        vector_db = VectorDb(self.child("qdrant"), VectorDbArgs(environment=environment), after_namespaces)
        observability = Observability(
            self.child("observability"),
            ObservabilityArgs(
                spec=spec,
                region=region,
                oidc_provider_arn=cluster.oidc_provider_arn,
                oidc_issuer=cluster.oidc_issuer,
                tags=tags,
            ),
            after_namespaces,
        )
        needed = {m.ref: m for p in region.pools for m in artifacts(spec, spec.pool(p.pool))}
        published = publish_jobs(
            self.child("publish"),
            models=list(needed.values()),
            bucket=args.registry_bucket,
            oidc_provider_arn=cluster.oidc_provider_arn,
            oidc_issuer=cluster.oidc_issuer,
            tags=tags,
            opts=self.opts(),
            k8s_opts=after_namespaces,
        )
        pools = {
            placement.pool: VllmPool(
                self.child("pool", placement.pool),
                VllmPoolArgs(
                    spec=spec,
                    region=region,
                    pool=spec.pool(placement.pool),
                    placement=placement,
                    registry_bucket=args.registry_bucket,
                    oidc_provider_arn=cluster.oidc_provider_arn,
                    oidc_issuer=cluster.oidc_issuer,
                    tags=tags,
                    image=args.vllm_image,
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
        deps = ServingDeps(
            spec=spec,
            region=region,
            image=args.image,
            redis_url=redis.url,
            kafka_bootstrap=kafka.bootstrap_brokers,
            kafka_cluster_arn=kafka.cluster_arn,
            qdrant_url=vector_db.url,
            oidc_provider_arn=cluster.oidc_provider_arn,
            oidc_issuer=cluster.oidc_issuer,
            account_id=args.account_id,
            tags=tags,
            otel_endpoint=observability.otlp_endpoint,
        )
        model_gateway = ModelGateway(
            self.child("model-gateway"),
            GatewayArgs(deps=deps, pool_urls={name: pool.service_url for name, pool in pools.items()}),
            after_namespaces,
        )
        model_gateway_url = f"http://{model_gateway.app}.{NS_GATEWAY}.svc:{GATEWAY_PORT}/v1"
        serves_batch = any(WorkloadClass.D in spec.pool(p.pool).classes for p in region.pools)
        batch = (
            BatchWorkers(
                self.child("batch"),
                BatchWorkersArgs(deps=deps, model_gateway_url=model_gateway_url),
                after_namespaces,
            )
            if serves_batch
            else None
        )
        certificate = gateway_certificate(self, spec, region, tags)
        # The Batch API's files live in the workers' results bucket, the one place both pods can reach.
        # Passing the output orders the bucket before the gateway's role and pods that name it.
        ai_gateway = AiGateway(
            self.child("ai-gateway"),
            GatewayArgs(
                deps=deps,
                model_gateway_url=model_gateway_url,
                files_bucket=batch.results_bucket if batch is not None else None,
                certificate_arn=certificate.arn,
            ),
            self.opts(providers=[k8s_provider], depends_on=[*ready, lb_controller]),
        )
        self.gateway_hostname = ai_gateway.service.status.apply(
            lambda s: (s.load_balancer.ingress or [None])[0].hostname if s and s.load_balancer else ""
        )
        self.grafana_url = observability.grafana_url
        self.cluster_name = cluster.name
        self.certificate = certificate.requested
        self.grafana_admin_password = observability.grafana_admin_password
        self.kubeconfig = cluster.admin_kubeconfig
        self.register_outputs(
            {"cluster": cluster.name, "gateway_hostname": self.gateway_hostname, "grafana_url": self.grafana_url}
        )

    def _addons(
        self,
        region: RegionSpec,
        cluster: Cluster,
        k8s_provider: k8s.Provider,
        vpc_id: pulumi.Input[str],
        tags: dict[str, str],
    ) -> tuple[k8s.helm.v3.Release, k8s.helm.v3.Release]:
        """Cluster-wide add-ons: KEDA, the NVIDIA device plugin, DCGM exporter, Cluster Autoscaler, the AWS Load
        Balancer Controller and an encrypted gp3 class. Returns the controller's release, which LoadBalancers
        wait for, and KEDA's, whose CRD ScaledObjects need. Each release waits for the system nodes: Pulumi
        awaits a release's pods, which cannot run before there is a node."""
        on_k8s = self.opts(providers=[k8s_provider], depends_on=[cluster.system_nodes])
        keda_ns = k8s.core.v1.Namespace(
            self.child("ns", NS_KEDA),
            metadata={
                "name": NS_KEDA,
                "labels": {"kubernetes.io/metadata.name": NS_KEDA, "app.kubernetes.io/part-of": "tokenplane"},
            },
            opts=on_k8s,
        )
        # The API server reaches KEDA's metrics API and webhook from outside the pod network.
        k8s.networking.v1.NetworkPolicy(
            self.child("keda-netpol"),
            metadata={"name": "allow-apiserver", "namespace": NS_KEDA},
            spec={
                "podSelector": {},
                "policyTypes": ["Ingress"],
                "ingress": [{"ports": [{"port": p, "protocol": "TCP"} for p in KEDA_PORTS]}],
            },
            opts=self.opts(providers=[k8s_provider], depends_on=[keda_ns]),
        )
        k8s.storage.v1.StorageClass(
            self.child("gp3"),
            metadata={"name": STORAGE_CLASS},
            provisioner="ebs.csi.aws.com",
            parameters={"type": "gp3", "encrypted": "true"},
            volume_binding_mode="WaitForFirstConsumer",  # bind in the AZ the pod lands in
            allow_volume_expansion=True,
            reclaim_policy="Retain",
            opts=on_k8s,
        )
        releases: dict[str, k8s.helm.v3.Release] = {}
        for pin, namespace, values in (
            (KEDA_CHART, NS_KEDA, {"prometheus": {"operator": {"enabled": True}}}),
            (
                NVIDIA_DEVICE_PLUGIN_CHART,
                "kube-system",
                {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
            ),
            # GPU metrics (DCGM_FI_DEV_*) for the dashboards and any gpu_utilization trigger. Scraped through the
            # pod annotations Prometheus already follows: a ServiceMonitor would need its CRD installed first.
            (
                DCGM_EXPORTER_CHART,
                "kube-system",
                {
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "nodeSelector": {GPU_PRESENT_LABEL: "true"},
                    "serviceMonitor": {"enabled": False},
                    "podAnnotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9400"},
                },
            ),
        ):
            releases[pin[0]] = kube.helm_release(
                self.child(pin[0]),
                pin,
                namespace=namespace,
                values=values,
                opts=self.opts(providers=[k8s_provider], depends_on=[keda_ns, cluster.system_nodes]),
            )
        autoscaler_role = irsa_role(
            self.child("cluster-autoscaler-role"),
            namespace="kube-system",
            service_account="cluster-autoscaler",
            oidc_provider_arn=cluster.oidc_provider_arn,
            oidc_issuer=cluster.oidc_issuer,
            policy=policy_document(
                [
                    {
                        "Effect": "Allow",
                        "Action": [
                            "autoscaling:DescribeAutoScalingGroups",
                            "autoscaling:DescribeAutoScalingInstances",
                            "autoscaling:DescribeLaunchConfigurations",
                            "autoscaling:DescribeTags",
                            "ec2:DescribeInstanceTypes",
                            "ec2:DescribeLaunchTemplateVersions",
                            "eks:DescribeNodegroup",
                        ],
                        "Resource": ["*"],
                    },
                    {
                        "Effect": "Allow",
                        "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
                        "Resource": ["*"],
                        "Condition": {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true"}},
                    },
                ]
            ),
            tags=tags,
            opts=self.opts(),
        )
        kube.helm_release(
            self.child(CLUSTER_AUTOSCALER_CHART[0]),
            CLUSTER_AUTOSCALER_CHART,
            namespace="kube-system",
            values={
                "autoDiscovery": {"clusterName": cluster.name},
                "awsRegion": region.cloud_region,
                "rbac": {
                    "serviceAccount": {
                        "name": "cluster-autoscaler",
                        "annotations": {"eks.amazonaws.com/role-arn": autoscaler_role.arn},
                    }
                },
                # GPU nodes keep weights on local NVMe: that must not pin them forever.
                "extraArgs": {
                    "balance-similar-node-groups": True,
                    "skip-nodes-with-local-storage": False,
                    "expander": "least-waste",
                },
            },
            opts=on_k8s,
        )
        controller = lb_controller(
            self.child("aws-lb-controller"),
            cluster_name=cluster.name,
            cloud_region=region.cloud_region,
            vpc_id=vpc_id,
            oidc_provider_arn=cluster.oidc_provider_arn,
            oidc_issuer=cluster.oidc_issuer,
            tags=tags,
            opts=on_k8s,
        )
        return controller, releases[KEDA_CHART[0]]
