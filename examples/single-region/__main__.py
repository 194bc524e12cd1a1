"""One region of LLM serving, composed from tokenplane's components without a spec file.

A VPC, an EKS cluster with its add-ons, one GPU node group and the vLLM pool that
runs on it, Redis, Kafka and Qdrant, and the two gateways in front. Each
component gets only what it needs: the pool its model and engine settings, the
network its AZs. The gateways' runtime config is the one place that holds the
whole platform (tenants, routing, pools), because the gateway process reads it.

Run it with ``pulumi up``; check it offline with
``tokenplane check --program examples/single-region``.
"""

import json

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from tokenplane.components import (
    AiGateway,
    Cluster,
    ClusterAddons,
    ClusterAddonsArgs,
    ClusterArgs,
    GatewayArgs,
    GpuNodeGroup,
    GpuNodeGroupArgs,
    Images,
    ImagesArgs,
    Kafka,
    KafkaArgs,
    ModelGateway,
    Namespace,
    Network,
    NetworkArgs,
    Observability,
    ObservabilityArgs,
    Redis,
    RedisArgs,
    VectorDb,
    VectorDbArgs,
    VllmMirror,
    VllmMirrorArgs,
    VllmPool,
    VllmPoolArgs,
    publish_jobs,
    secure_bucket,
    serving_deps,
    system_cpu_at_maxima,
    tls_only,
)
from tokenplane.spec import (
    Budget,
    ClassSpec,
    Environment,
    Jurisdiction,
    ModelSet,
    Placement,
    Platform,
    PlatformSpec,
    Pool,
    Queues,
    Region,
    RegistryModel,
    Routing,
    Tier,
    TokenRange,
    WorkloadClass,
)

NAME = "acme"
cloud_region = pulumi.Config("aws").require("region")
azs: list[str] = json.loads(pulumi.Config().require("azs"))
# The public listener's TLS certificate: an ISSUED ACM certificate in this region for your gateway's host name
# (the stack's own domain and DNS are yours; tokenplane's spec-driven stacks request and validate one themselves).
certificate_arn = pulumi.Config().require("certificateArn")
tags = {"team": "ml-platform", "managed-by": "pulumi"}

# The model and the pool: what the vLLM replicas load and how they run.
model = RegistryModel(
    name="qwen-7b-chat",
    version="v1",
    preset="qwen2.5-7b",
    uri="s3://acme-models/qwen-7b-chat/v1/",
    sha256="5f1a9c0e2b7d4c38a6e1f0b9d2c7a4e6f8b1d3c5a7e9f0b2d4c6e8a0b1c3d5e7",
    tokenizer="Qwen/Qwen2.5-7B-Instruct",
    prompt_contract="chat-v1",
)
chat = Pool(name="chat", tier=Tier.SMALL, model=model.name, gpu="L4", classes=[WorkloadClass.A])
placement = Placement(pool=chat.name, min_replicas=1, max_replicas=2)
interactive = ClassSpec(
    share=1.0,
    prompt_tokens=TokenRange(min=50, max=1000),
    output_tokens=TokenRange(min=20, max=400),
    ttft_p95_ms=500,
)
region = Region(
    name="eu", cloud_region=cloud_region, azs=azs, jurisdiction=Jurisdiction.EU, traffic_share=1.0, pools=[placement]
)

# The gateways' runtime config: the platform as the gateway process reads it, built from the same pool and model.
config = PlatformSpec(
    platform=Platform(name=NAME, environment=Environment.DEV, peak_rps=5),
    budget=Budget(max_usd_per_hour=20),
    regions=[region],
    models=[model],
    pools=[chat],
    workload_classes={WorkloadClass.A: interactive},
    routing=Routing(mix={Tier.SMALL: 1.0}),
)
# An explicit provider: nothing lands in whatever region the CLI defaults to.
provider = aws.Provider("aws", region=cloud_region, default_tags=aws.ProviderDefaultTagsArgs(tags=tags))
on_aws = pulumi.ResourceOptions(provider=provider)

network = Network("eu-network", NetworkArgs(azs=azs, cluster_name=f"{NAME}-eu", tags=tags), on_aws)
cluster = Cluster(
    "eu-cluster",
    ClusterArgs(
        name=f"{NAME}-eu",
        kubernetes_version="1.35",  # in EKS standard support (tokenplane/proof/deployability/support.json)
        cloud_region=cloud_region,
        private_subnet_ids=network.private_subnet_ids,
        public_subnet_ids=network.public_subnet_ids,
        tags=tags,
        # Room on the system nodes for the gateways, Qdrant and Prometheus at their autoscaling maxima.
        system_cpu=system_cpu_at_maxima(config, region),
    ),
    on_aws,
)
kube = k8s.Provider("eu-k8s", kubeconfig=cluster.kubeconfig, enable_server_side_apply=True)
on_both = pulumi.ResourceOptions(providers=[provider, kube])
addons = ClusterAddons(
    "eu-addons",
    ClusterAddonsArgs(cluster=cluster, vpc_id=network.vpc_id, cloud_region=cloud_region, tags=tags),
    on_both,
)
gpus = GpuNodeGroup(
    "eu-gpu-chat",
    GpuNodeGroupArgs(
        pool=chat,
        placement=placement,
        cluster_name=cluster.name,
        node_role_arn=cluster.node_role_arn,
        subnet_ids=network.private_subnet_ids,
        tags=tags,
    ),
    on_aws,
)

# Namespaces are created here and handed to the components: nothing deploys into one no one creates.
on_cluster = pulumi.ResourceOptions(provider=kube, depends_on=[cluster.system_nodes])
serving = Namespace.create("llm-serving", logical="ns-serving", opts=on_cluster)
gateway = Namespace.create("llm-gateway", logical="ns-gateway", opts=on_cluster)
data = Namespace.create("llm-data", logical="ns-data", opts=on_cluster)
monitoring = Namespace.create("monitoring", logical="ns-monitoring", opts=on_cluster)
# Workloads wait for nodes to run on and for KEDA, whose CRD the pool's ScaledObject needs.
ready = pulumi.ResourceOptions(providers=[provider, kube], depends_on=[cluster.system_nodes, addons.keda])

# The images, in this region's ECR: the serving image for the gateways, vLLM mirrored for the pool.
images = Images("images", ImagesArgs(platform=NAME, providers={cloud_region: provider}, tags=tags), on_aws)
vllm = VllmMirror("vllm", VllmMirrorArgs(platform=NAME, providers={cloud_region: provider}, tags=tags), on_aws)

# The registry bucket the pool's replicas fetch weights from, and the Job that publishes them there first.
registry = secure_bucket("eu-registry", tags=tags, opts=on_aws)
tls_only("eu-registry-tls-only", bucket=registry, opts=on_aws)
published = publish_jobs(
    "eu-publish",
    namespace=serving,
    models=[model],
    bucket=registry.bucket,
    oidc_provider_arn=cluster.oidc_provider_arn,
    oidc_issuer=cluster.oidc_issuer,
    tags=tags,
    opts=on_aws,
    k8s_opts=ready,
)
pool = VllmPool(
    "eu-pool-chat",
    VllmPoolArgs(
        pool=chat,
        models=ModelSet(models=[model]),
        nodes=gpus,  # its replicas require this group's labels and tolerate its taints
        namespace=serving,
        region=region.name,
        cloud_region=cloud_region,
        registry_bucket=registry.bucket,
        oidc_provider_arn=cluster.oidc_provider_arn,
        oidc_issuer=cluster.oidc_issuer,
        image=vllm.ref(cloud_region),
        tags=tags,
        workload_classes={WorkloadClass.A: interactive},
    ),
    pulumi.ResourceOptions.merge(ready, pulumi.ResourceOptions(depends_on=list(published.values()))),
)

redis = Redis("eu-redis", RedisArgs(environment="dev", subnets=network.private, tags=tags), on_aws)
kafka = Kafka(
    "eu-kafka", KafkaArgs(environment="dev", subnets=network.private, topics=Queues().topics, tags=tags), on_aws
)
qdrant = VectorDb("eu-qdrant", VectorDbArgs(environment="dev", namespace=data), ready)

# Prometheus (kube-prometheus-stack): the pool's autoscaler queries it for queue wait, KV cache use and TTFT.
Observability(
    "eu-observability",
    ObservabilityArgs(
        spec=config,
        region=region,
        namespace=monitoring,
        oidc_provider_arn=cluster.oidc_provider_arn,
        oidc_issuer=cluster.oidc_issuer,
        tags=tags,
    ),
    ready,
)
deps = serving_deps(
    spec=config,
    region=region,
    image=images.ref(cloud_region),
    account_id=images.account_id,
    cluster=cluster,
    redis=redis,
    kafka=kafka,
    vector_db=qdrant,
    tags=tags,
)
model_gateway = ModelGateway(
    "eu-model-gateway",
    GatewayArgs(deps=deps, namespace=gateway, pool_urls={chat.name: pool.service_url}),
    ready,
)
ai_gateway = AiGateway(
    "eu-ai-gateway",
    GatewayArgs(deps=deps, namespace=gateway, model_gateway_url=model_gateway.url, certificate_arn=certificate_arn),
    # Its LoadBalancer Service gets an address only from the AWS Load Balancer Controller.
    pulumi.ResourceOptions.merge(ready, pulumi.ResourceOptions(depends_on=[addons.lb_controller])),
)

pulumi.export("cluster", cluster.name)
pulumi.export("pool_url", pool.service_url)
