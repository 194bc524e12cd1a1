"""Pulumi components that turn LLM serving into AWS and Kubernetes resources.

Use the whole platform from a spec::

    from components import LlmPlatform, LlmPlatformArgs
    from tokenplane.load import load_spec

    LlmPlatform("byteion", LlmPlatformArgs(spec=load_spec("stacks/byteion.yaml")))

or compose the parts in a program of your own, each from typed Args of what it
needs (``examples/single-region``; the reference is ``docs/components.md``)::

    pool = VllmPool("chat", VllmPoolArgs(pool=chat, models=ModelSet(models=[model]), nodes=gpus,
                                         namespace=serving, ...), opts)

Every component has the shape ``Name(name, args, opts=None)``; its Pulumi children
are named from ``name``, and its Kubernetes objects go into the ``Namespace`` it is
given. Components may import the core (the spec, ``pool_model``, ``runtime_env``,
``vllm_args``); never ``serving`` or ``policies``. Only a program reads
``pulumi.Config``.
"""

from components.ai_gateway import AiGateway
from components.batch_workers import BatchWorkers, BatchWorkersArgs
from components.clickhouse import ClickHouse, ClickHouseArgs
from components.cluster import Cluster, ClusterArgs
from components.cluster_addons import ClusterAddons, ClusterAddonsArgs, ExistingCluster
from components.gateway import GatewayArgs, ServingDeps
from components.global_routing import GlobalRouting, GlobalRoutingArgs
from components.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs, NodeSelection
from components.images import Images, ImagesArgs
from components.kafka import Kafka, KafkaArgs
from components.kube import Namespace
from components.metering import MeteringConsumer, MeteringConsumerArgs
from components.model_gateway import ModelGateway
from components.model_registry import ModelRegistry, ModelRegistryArgs
from components.network import Network, NetworkArgs, PrivateSubnets
from components.observability import Observability, ObservabilityArgs
from components.platform import LlmPlatform, LlmPlatformArgs
from components.redis import Redis, RedisArgs
from components.region import Region, RegionArgs
from components.storage import secure_bucket, tls_only
from components.vector_db import VectorDb, VectorDbArgs
from components.vllm_mirror import VllmMirror, VllmMirrorArgs
from components.vllm_pool import VllmPool, VllmPoolArgs
from components.weights_publish import publish_jobs
from components.wiring import serving_deps

__all__ = [
    "AiGateway",
    "BatchWorkers",
    "BatchWorkersArgs",
    "ClickHouse",
    "ClickHouseArgs",
    "Cluster",
    "ClusterAddons",
    "ClusterAddonsArgs",
    "ClusterArgs",
    "ExistingCluster",
    "GatewayArgs",
    "GlobalRouting",
    "GlobalRoutingArgs",
    "GpuNodeGroup",
    "GpuNodeGroupArgs",
    "Images",
    "ImagesArgs",
    "Kafka",
    "KafkaArgs",
    "LlmPlatform",
    "LlmPlatformArgs",
    "MeteringConsumer",
    "MeteringConsumerArgs",
    "ModelGateway",
    "ModelRegistry",
    "ModelRegistryArgs",
    "Namespace",
    "Network",
    "NetworkArgs",
    "NodeSelection",
    "Observability",
    "ObservabilityArgs",
    "PrivateSubnets",
    "Redis",
    "RedisArgs",
    "Region",
    "RegionArgs",
    "ServingDeps",
    "VectorDb",
    "VectorDbArgs",
    "VllmMirror",
    "VllmMirrorArgs",
    "VllmPool",
    "VllmPoolArgs",
    "publish_jobs",
    "secure_bucket",
    "serving_deps",
    "tls_only",
]
