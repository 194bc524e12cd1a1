"""One region of LLM serving composed from tokenplane's components, without a spec file: a VPC, EKS and its add-ons,
a GPU node group with a vLLM pool, Redis, Kafka, Qdrant, and the two gateways, which read a ``GatewayConfig``.
``pulumi up`` runs it; ``tokenplane check --program examples/single-region`` checks it offline.
"""

import json

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

import tokenplane.components as tp
import tokenplane.spec as ts

NAME, tags = "acme", {"team": "ml-platform", "managed-by": "pulumi"}
cloud_region = pulumi.Config("aws").require("region")
azs: list[str] = json.loads(pulumi.Config().require("azs"))
# An ISSUED ACM certificate in this region for the gateway's host name (spec-driven stacks request their own).
certificate_arn = pulumi.Config().require("certificateArn")

# The model (sha256: `tokenplane hash-model DIR` of the weights uploaded to uri), its pool and the traffic class.
model = ts.RegistryModel(
    name="qwen-7b-chat",
    version="v1",
    preset="qwen2.5-7b",
    uri="s3://acme-models/qwen-7b-chat/v1/",
    sha256="5f1a9c0e2b7d4c38a6e1f0b9d2c7a4e6f8b1d3c5a7e9f0b2d4c6e8a0b1c3d5e7",
    tokenizer="Qwen/Qwen2.5-7B-Instruct",
    prompt_contract="chat-v1",
)
chat = ts.Pool(name="chat", tier=ts.Tier.SMALL, model=model.name, gpu="L4", classes=[ts.WorkloadClass.A])
placement = ts.Placement(pool=chat.name, min_replicas=1, max_replicas=2)
prompt, output = ts.TokenRange(min=50, max=1000), ts.TokenRange(min=20, max=400)
classes = {ts.WorkloadClass.A: ts.ClassSpec(share=1.0, prompt_tokens=prompt, output_tokens=output, ttft_p95_ms=500)}
region = ts.Region(
    name="eu", cloud_region=cloud_region, azs=azs, jurisdiction=ts.Jurisdiction.EU, traffic_share=1.0, pools=[placement]
)

# What the gateways route, price and admit with: the pool, its model, the routing (and tenants: none here).
# Amended after the blind run: the example gained a tenant (the AI gateway is Ready only with a key).
key = "aws-sm://acme/tenants/acme-apps/api-key"
tenant = ts.Tenant(name="acme-apps", rpm=600, tpm=200_000, allowed_tiers=[ts.Tier.SMALL], api_key_secret=key)
config = tp.GatewayConfig(
    name=NAME,
    region=region,
    pools=[chat],
    models=[model],
    workload_classes=classes,
    tenants=[tenant],
    routing=ts.Routing(mix={ts.Tier.SMALL: 1.0}),
    budget=ts.Budget(max_usd_per_hour=20),
    peak_rps=5,
    environment=ts.Environment.DEV,
)

# An explicit provider: nothing lands in whatever region the CLI defaults to.
aws_provider = aws.Provider("aws", region=cloud_region, default_tags=aws.ProviderDefaultTagsArgs(tags=tags))
on_aws, providers = pulumi.ResourceOptions(provider=aws_provider), {cloud_region: aws_provider}
network = tp.Network("eu-network", tp.NetworkArgs(azs=azs, cluster_name=f"{NAME}-eu", tags=tags), on_aws)
# The system nodes hold, at their autoscaling maxima, the two gateways (6 x 2 vCPU each at most), Prometheus with
# Grafana and the OTel collector, Qdrant and the add-ons. 1.35 is in EKS standard support (proof/.../support.json).
eks = tp.ClusterArgs(network=network, kubernetes_version="1.35", system_cpu=32, cloud_region=cloud_region, tags=tags)
cluster = tp.Cluster("eu-cluster", eks, on_aws)
kube = k8s.Provider("eu-k8s", kubeconfig=cluster.kubeconfig, enable_server_side_apply=True)
both = pulumi.ResourceOptions(providers=[aws_provider, kube])
addons_args = tp.ClusterAddonsArgs(cluster=cluster, vpc_id=network.vpc_id, cloud_region=cloud_region, tags=tags)
addons = tp.ClusterAddons("eu-addons", addons_args, both)
gpu = tp.GpuNodeGroupArgs(pool=chat, placement=placement, cluster=cluster, subnets=network.private, tags=tags)
gpus = tp.GpuNodeGroup("eu-gpu-chat", gpu, on_aws)

# Namespaces are created here and handed to the components: nothing deploys into one no one creates.
on_cluster = pulumi.ResourceOptions(provider=kube, depends_on=[cluster.system_nodes])
serving, gateway, data, monitoring = (
    tp.Namespace.create(f"llm-{n}" if n != "monitoring" else n, logical=f"ns-{n}", opts=on_cluster)
    for n in ("serving", "gateway", "data", "monitoring")
)
# Workloads wait for nodes to run on and for KEDA, whose CRD the pool's ScaledObject needs.
ready = pulumi.ResourceOptions(providers=[aws_provider, kube], depends_on=[cluster.system_nodes, addons.keda])
images = tp.Images("images", tp.ImagesArgs(platform=NAME, providers=providers, tags=tags), on_aws)
vllm = tp.VllmMirror("vllm", tp.VllmMirrorArgs(platform=NAME, providers=providers, tags=tags), on_aws)

# The registry bucket the replicas fetch weights from, and the Job that publishes them there first.
registry = tp.secure_bucket("eu-registry", tags=tags, opts=on_aws)
tp.tls_only("eu-registry-tls-only", bucket=registry, opts=on_aws)
jobs = tp.publish_jobs(
    "eu-publish",
    namespace=serving,
    models=[model],
    bucket=registry,
    cluster=cluster,
    tags=tags,
    opts=on_aws,
    k8s_opts=ready,
)
pool = tp.VllmPool(
    "eu-pool-chat",
    tp.VllmPoolArgs(
        pool=chat,
        models=ts.ModelSet(models=[model]),
        nodes=gpus,  # its replicas require this group's labels and tolerate its taints
        namespace=serving,
        region=region.name,
        cloud_region=cloud_region,
        registry_bucket=registry,
        cluster=cluster,
        image=vllm.ref(cloud_region),
        tags=tags,
        workload_classes=classes,
    ),
    pulumi.ResourceOptions.merge(ready, pulumi.ResourceOptions(depends_on=list(jobs.values()))),
)
redis = tp.Redis("eu-redis", tp.RedisArgs(environment="dev", subnets=network.private, tags=tags), on_aws)
kafka_args = tp.KafkaArgs(environment="dev", subnets=network.private, topics=config.queues.topics, tags=tags)
kafka = tp.Kafka("eu-kafka", kafka_args, on_aws)
qdrant = tp.VectorDb("eu-qdrant", tp.VectorDbArgs(environment="dev", namespace=data), ready)
deps = tp.serving_deps(
    config=config, images=images, cluster=cluster, redis=redis, kafka=kafka, vector_db=qdrant, tags=tags
)
# Prometheus scrapes the pool and the gateways: the pool's KEDA triggers query it, and without it they never
# have data and the pool never scales. No metering consumer runs here (usage events stay on Kafka), so the
# FinOps plane's alerts, which would read series nothing exports, are off (from_config's default).
metrics = tp.ObservabilityArgs.from_config(config, namespace=monitoring, cluster=cluster, tags=tags)
observability = tp.Observability(
    "eu-observability", metrics, pulumi.ResourceOptions.merge(ready, pulumi.ResourceOptions(depends_on=[addons]))
)
model_gateway = tp.ModelGateway(
    "eu-model-gateway", tp.GatewayArgs(deps=deps, namespace=gateway, pool_urls={chat.name: pool.service_url}), ready
)
tp.AiGateway(
    "eu-ai-gateway",
    tp.GatewayArgs(deps=deps, namespace=gateway, model_gateway_url=model_gateway.url, certificate_arn=certificate_arn),
    # Its LoadBalancer Service gets an address only from the AWS Load Balancer Controller.
    pulumi.ResourceOptions.merge(ready, pulumi.ResourceOptions(depends_on=[addons.lb_controller])),
)

pulumi.export("cluster", cluster.name)
pulumi.export("pool_url", pool.service_url)

# --- held-out case ---------------------------------------------------------------------------------
tools_ns = k8s.core.v1.Namespace("tools-ns", metadata={"name": "tools"}, opts=on_cluster)
on_tools = pulumi.ResourceOptions(provider=kube, depends_on=[cluster.system_nodes, tools_ns])

web = k8s.apps.v1.Deployment(
    "router-cache",
    metadata={"name": "router-cache", "namespace": "tools", "labels": {"app": "router-cache"}},
    spec={
        
        "selector": {"matchLabels": {"app": "router-cache"}},
        "template": {
            "metadata": {"labels": {"app": "router-cache"}},
            "spec": {
                
                "containers": [
                    {
                        "name": "web",
                        "image": "public.ecr.aws/nginx/nginx:1.27",
                        "ports": [{"name": "http", "containerPort": 80}],
                        "env": [],
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                        "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 5},
                    }
                ],
            },
        },
    },
    opts=on_tools,
)
web_svc = k8s.core.v1.Service(
    "router-cache-svc",
    metadata={"name": "router-cache", "namespace": "tools", "labels": {"app": "router-cache"}},
    spec={"selector": {"app": "router-cache"}, "ports": [{"name": "http", "port": 80, "targetPort": 80}]},
    opts=on_tools,
)

k8s.apiextensions.CustomResource(
    "router-cache-scaler",
    api_version="keda.sh/v1alpha1",
    kind="ScaledObject",
    metadata={"name": "router-cache", "namespace": "tools"},
    spec={
        "scaleTargetRef": {"name": "router-cache"},
        "minReplicaCount": 2,
        "maxReplicaCount": 6,
        "triggers": [
            {
                "type": "prometheus",
                "metadata": {
                    "serverAddress": "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
                    "query": 'sum(vllm:num_requests_waiting{namespace="llm-serving"})',
                    "threshold": "4",
                },
            }
        ],
    },
    opts=on_tools,
)
