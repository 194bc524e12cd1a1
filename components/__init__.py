"""Pulumi components that turn LLM serving into AWS and Kubernetes resources.

Use the whole platform from a spec::

    from tokenplane.components import LlmPlatform, LlmPlatformArgs
    from tokenplane.load import load_spec

    LlmPlatform("byteion", LlmPlatformArgs(spec=load_spec("stacks/byteion.yaml")))

or compose the parts in a program of your own, each from typed Args of what it
needs (``examples/single-region``; the reference is ``docs/components.md``)::

    pool = VllmPool("chat", VllmPoolArgs(pool=chat, models=ModelSet(models=[model]), nodes=gpus,
                                         namespace=serving, ...), opts)
    config = GatewayConfig(name="acme", region=region, pools=[chat], models=[model], routing=..., ...)
    AiGateway("gateway", GatewayArgs(deps=serving_deps(config=config, ...), namespace=gateway), opts)

Everything such a program needs is importable from here: the components and their
Args, ``Namespace`` and ``peer`` (a NetworkPolicy peer, for ``clients=``), the
bucket and publish helpers, and ``artifact_sha256`` (a model's ``sha256``, also
``tokenplane hash-model DIR``).

Every component has the shape ``Name(name, args, opts=None)``; its Pulumi children
are named from ``name``, and its Kubernetes objects go into the ``Namespace`` it is
given. Components may import the core (the spec, ``pool_model``, ``runtime_env``,
``vllm_args``); never ``serving`` or ``policies``. Only a program reads
``pulumi.Config``.
"""

from tokenplane.components.ai_gateway import AiGateway
from tokenplane.components.batch_workers import BatchWorkers, BatchWorkersArgs
from tokenplane.components.clickhouse import ClickHouse, ClickHouseArgs
from tokenplane.components.cluster import Cluster, ClusterArgs, ExistingCluster
from tokenplane.components.cluster_addons import ClusterAddons, ClusterAddonsArgs
from tokenplane.components.foundation import Foundation, FoundationArgs
from tokenplane.components.gateway import GatewayArgs, ServingDeps
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.global_routing import GlobalRouting, GlobalRoutingArgs
from tokenplane.components.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs, NodeSelection
from tokenplane.components.images import Images, ImagesArgs
from tokenplane.components.kafka import Kafka, KafkaArgs
from tokenplane.components.kube import Namespace, peer
from tokenplane.components.metering import MeteringConsumer, MeteringConsumerArgs
from tokenplane.components.model_gateway import ModelGateway
from tokenplane.components.model_registry import ModelRegistry, ModelRegistryArgs
from tokenplane.components.network import Network, NetworkArgs, PrivateSubnets
from tokenplane.components.observability import Observability, ObservabilityArgs
from tokenplane.components.platform import LlmPlatform, LlmPlatformArgs
from tokenplane.components.redis import Redis, RedisArgs
from tokenplane.components.region import Region, RegionArgs
from tokenplane.components.storage import secure_bucket, tls_only
from tokenplane.components.system_capacity import system_cpu_at_maxima
from tokenplane.components.vector_db import VectorDb, VectorDbArgs
from tokenplane.components.vllm_mirror import VllmMirror, VllmMirrorArgs
from tokenplane.components.vllm_pool import VllmPool, VllmPoolArgs
from tokenplane.components.weights_publish import publish_jobs
from tokenplane.components.wiring import serving_deps
from tokenplane.weights_fetch import artifact_sha256

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
    "Foundation",
    "FoundationArgs",
    "GatewayArgs",
    "GatewayConfig",
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
    "artifact_sha256",
    "peer",
    "publish_jobs",
    "secure_bucket",
    "serving_deps",
    "system_cpu_at_maxima",
    "tls_only",
]
