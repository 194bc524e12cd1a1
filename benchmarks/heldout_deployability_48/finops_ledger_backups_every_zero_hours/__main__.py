"""One region of LLM serving composed from tokenplane's components, without a spec file: a VPC, EKS and its add-ons,
a GPU node group with a vLLM pool, Redis, Kafka, Qdrant, and the two gateways, which read a ``GatewayConfig``.
``pulumi up`` runs it; ``tokenplane check --program examples/single-region`` checks it offline.
"""

import pulumi
import pulumi_aws as aws

import tokenplane.components as tp
import tokenplane.spec as ts

NAME, tags = "acme", {"team": "ml-platform", "managed-by": "pulumi"}
cloud_region = pulumi.Config("aws").require("region")
azs: list[str] = pulumi.Config().require_object("azs")
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

# Who may call (the gateway is Ready only once it holds a key; this one is read from Secrets Manager, created
# beforehand), and what the gateways route, price and admit with: the pool, its model, the routing.
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
# The system nodes hold, at their autoscaling maxima, the two gateways (6 x 2 vCPU each at most), Prometheus with
# Grafana and the OTel collector, Qdrant and the add-ons. EKS runs the spec's default version (in standard support).
# The FinOps ledger (one 2-vCPU server in dev) and up to 4 one-vCPU metering consumers: 32 + 6 vCPU.
foundation = tp.FoundationArgs.from_config(config, provider=aws_provider, system_cpu=38, tags=tags)
# The VPC, EKS and its add-ons, and the namespaces (nothing deploys into one no one creates). Workloads take
# `eu.ready`: they wait for nodes to run on and for KEDA, whose CRD the pool's ScaledObject needs.
eu = tp.Foundation("eu", foundation, on_aws)
serving, gateway, data, monitoring = eu.serving, eu.gateway, eu.data, eu.monitoring
gpus = eu.gpu_nodes("eu-gpu-chat", chat, placement)
images = tp.Images("images", tp.ImagesArgs(platform=NAME, providers=providers, tags=tags), on_aws)
vllm = tp.VllmMirror("vllm", tp.VllmMirrorArgs(platform=NAME, providers=providers, tags=tags), on_aws)

# The registry bucket the replicas fetch weights from, and the Job that publishes them there first.
registry = tp.secure_bucket("eu-registry", tags=tags, opts=on_aws)
tp.tls_only("eu-registry-tls-only", bucket=registry, opts=on_aws)
jobs = eu.publish_jobs("eu-publish", models=[model], bucket=registry)
# Its replicas require the GPU group's labels and tolerate its taints, and start after their weights are published.
pool_args = tp.VllmPoolArgs.from_config(
    config, pool=chat, nodes=gpus, namespace=serving, registry_bucket=registry, image=vllm, tags=tags
)
pool = tp.VllmPool("eu-pool-chat", pool_args, eu.ready_after(*jobs.values()))
redis = tp.Redis("eu-redis", tp.RedisArgs(environment="dev", subnets=eu.network.private, tags=tags), on_aws)
kafka_args = tp.KafkaArgs(environment="dev", subnets=eu.network.private, topics=config.queues.topics, tags=tags)
kafka = tp.Kafka("eu-kafka", kafka_args, on_aws)
qdrant = tp.VectorDb("eu-qdrant", tp.VectorDbArgs(environment="dev", namespace=data), eu.ready)
deps = tp.serving_deps(
    config=config, images=images, cluster=eu.cluster, redis=redis, kafka=kafka, vector_db=qdrant, tags=tags
)
# The FinOps ledger and the metering consumer that fills it from the usage, audit and batch topics; the
# ledger backs up into the registry bucket every 0 hours (its RPO) and admits the consumer on its HTTP port.
ledger_args = tp.ClickHouseArgs(
    environment="dev",
    namespace=data,
    backup_bucket=registry.bucket,
    backup_every_hours=0,
    region=region.name,
    cluster=eu.cluster,
    clients=[tp.peer(data.name, "finops-consumer")],
    tags=tags,
)
ledger = tp.ClickHouse("eu-ledger", ledger_args, eu.ready)
metering = tp.MeteringConsumerArgs(deps=deps, namespace=data, store_url=ledger.url)
tp.MeteringConsumer("eu-metering", metering, eu.ready_after(ledger))
# Prometheus scrapes the pool and the gateways: the pool's KEDA triggers query it, and without it they never
# have data and the pool never scales. No metering consumer runs here (usage events stay on Kafka), so the
# FinOps plane's alerts, which would read series nothing exports, are off (from_config's default).
metrics = tp.ObservabilityArgs.from_config(config, namespace=monitoring, cluster=eu.cluster, tags=tags)
tp.Observability("eu-observability", metrics, eu.ready_after(eu.addons))
model_gateway = tp.ModelGateway(
    "eu-model-gateway", tp.GatewayArgs(deps=deps, namespace=gateway, pool_urls={chat.name: pool.service_url}), eu.ready
)
tp.AiGateway(
    "eu-ai-gateway",
    tp.GatewayArgs(deps=deps, namespace=gateway, model_gateway_url=model_gateway.url, certificate_arn=certificate_arn),
    # Its LoadBalancer Service gets an address only from the AWS Load Balancer Controller.
    eu.ready_after(eu.addons.lb_controller),
)

pulumi.export("cluster", eu.cluster.name)
pulumi.export("pool_url", pool.service_url)
