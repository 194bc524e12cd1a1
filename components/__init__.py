"""Pulumi components that turn a tokenplane spec into AWS and Kubernetes resources.

Each can be used on its own in a Pulumi program::

    from components import LlmPlatform, LlmPlatformArgs
    from tokenplane.load import load_spec

    LlmPlatform("byteion", LlmPlatformArgs(spec=load_spec("stacks/byteion.yaml")))

Components may import the core (the spec, ``pool_model`` for a pool's node and
requests, ``runtime_env`` for the pods' environment, ``vllm_args`` for the engine's
flags); never ``serving`` or ``policies``. Only ``stacks/__main__.py`` reads
``pulumi.Config``.
"""

from components.ai_gateway import AiGateway
from components.batch_workers import BatchWorkers, BatchWorkersArgs
from components.cluster import Cluster, ClusterArgs
from components.gateway import GatewayArgs
from components.global_routing import GlobalRouting, GlobalRoutingArgs
from components.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs
from components.images import Images, ImagesArgs
from components.kafka import Kafka, KafkaArgs
from components.model_gateway import ModelGateway
from components.model_registry import ModelRegistry, ModelRegistryArgs
from components.network import Network, NetworkArgs
from components.observability import Observability, ObservabilityArgs
from components.platform import LlmPlatform, LlmPlatformArgs
from components.redis import Redis, RedisArgs
from components.region import Region, RegionArgs
from components.vector_db import VectorDb, VectorDbArgs
from components.vllm_mirror import VllmMirror, VllmMirrorArgs
from components.vllm_pool import VllmPool, VllmPoolArgs

__all__ = [
    "AiGateway",
    "BatchWorkers",
    "BatchWorkersArgs",
    "Cluster",
    "ClusterArgs",
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
    "ModelGateway",
    "ModelRegistry",
    "ModelRegistryArgs",
    "Network",
    "NetworkArgs",
    "Observability",
    "ObservabilityArgs",
    "Redis",
    "RedisArgs",
    "Region",
    "RegionArgs",
    "VectorDb",
    "VectorDbArgs",
    "VllmMirror",
    "VllmMirrorArgs",
    "VllmPool",
    "VllmPoolArgs",
]
