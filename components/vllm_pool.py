"""VllmPool: one pool's vLLM replicas in one region, with its service, budget, policy and autoscaler."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from tokenplane.components import kube
from tokenplane.components.base import Component
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.gpu_node_group import GpuNodeGroup, NodeSelection
from tokenplane.components.iam import OidcCluster, irsa_role, policy_document
from tokenplane.components.kube import Namespace
from tokenplane.components.naming import (
    LABEL_POOL,
    LABEL_REGION,
    LABEL_TIER,
    NS_GATEWAY,
    NS_MONITORING,
    app_labels,
)
from tokenplane.components.pins import AWS_CLI_IMAGE, VLLM_IMAGE
from tokenplane.components.storage import bucket_name
from tokenplane.components.vllm_mirror import VllmMirror
from tokenplane.components.weights_publish import artifact_prefix
from tokenplane.contract import TIME_TO_READY_ANNOTATION, VLLM_VERSION_ANNOTATION
from tokenplane.model.rollout import plan_rollout
from tokenplane.model.startup import await_timeout_minutes, time_to_ready
from tokenplane.pool_model import node_for, nodes_for, replica_requests
from tokenplane.runtime_env import ENGINE_ENV, Var, env_list
from tokenplane.schedule import cron_window
from tokenplane.spec import ClassSpec, ModelLookup, ModelSet, Placement, Pool, WorkloadClass
from tokenplane.vllm_args import DEFAULT_PORT, artifacts, vllm_args
from tokenplane.weights_fetch import ARTIFACTS_ENV, FETCH_SCRIPT, MODELS_ENV, artifact_entry

MODELS_DIR = "/models"
# Weights cache on the node's instance-store RAID0 (see GpuNodeGroup), shared by every replica on the node.
NODE_CACHE = "/mnt/k8s-disks/0/tokenplane-models"
# The engine runs as a user the vllm/vllm-openai image does not define, on a read-only root filesystem: all
# it writes (its home, the torch.compile, Triton and FlashInfer caches, temp files) goes to emptyDirs, which
# on the GPU nodes sit on the instance-store RAID0 with kubelet's root. A UID >= 10000 cannot collide with
# an account of the host's. tests/components/test_vllm_nonroot.py starts the real engine this way.
VLLM_UID = 10001
SCRATCH_DIR = "/var/cache/vllm"
# Compile caches take a few GB per model and engine version; past this the kubelet evicts the pod
# rather than let it fill the node's disk.
SCRATCH_LIMIT = "20Gi"
TMP_LIMIT = "2Gi"  # temp files: the AWS CLI's downloads are streamed, vLLM's are small
DRAIN_SECONDS = 15  # preStop: time for endpoints to drop the pod before vLLM stops accepting
DEFAULT_DECODE_S_PER_TOKEN = 0.1  # grace-period estimate for a class without an E2E SLO
# Who may call a pool by default: the spec-driven model gateway, and Prometheus for /metrics.
DEFAULT_CLIENTS = (kube.peer(NS_GATEWAY, "model-gateway"), kube.peer(NS_MONITORING))


def scratch_env(home: str = SCRATCH_DIR) -> dict[Var, str]:
    """What a non-root engine needs set: a writable home and every cache under it."""
    cache = f"{home}/.cache"
    return {
        Var.HOME: home,
        Var.USER: "vllm",
        Var.XDG_CACHE_HOME: cache,
        Var.VLLM_CACHE_ROOT: f"{cache}/vllm",
        Var.TRITON_CACHE_DIR: f"{cache}/triton",
        Var.TORCHINDUCTOR_CACHE_DIR: f"{cache}/torchinductor",
    }


def fetch_security() -> dict[str, Any]:
    """The weight fetcher's ``securityContext``: the one container of the pod that runs as root.

    It writes the node's weight cache, a hostPath that kubelet creates root-owned (fsGroup does not
    apply to hostPath), and nothing else; it needs no capability for that, since root owns the directory.
    """
    return {**kube.container_security(), "runAsNonRoot": False, "runAsUser": 0}


@dataclass(frozen=True, kw_only=True)
class VllmPoolArgs:
    """What one pool's vLLM replicas need in one region: no more than the pool, its models and its cluster.

    ``Region`` builds it from the spec; a program of one's own builds it by hand (README, "Components").

    Args:
        pool: the pool: model name, GPU, TP x PP, engine settings, autoscaling.
        models: the registry models it serves (its model, and a speculative draft model if any): a
            ``ModelSet``, or the whole ``PlatformSpec``.
        nodes: the ``GpuNodeGroup`` its replicas run on, or a ``NodeSelection`` for nodes made elsewhere:
            the pods require its labels and tolerate its taints.
        namespace: where its objects go (``Namespace.create`` or ``Namespace.existing``).
        region: the region's name in the pods' labels (dashboards and alerts group by it).
        cloud_region: the AWS region its weights are fetched in.
        registry_bucket: the bucket holding its weights (``models/<name>/<version>/``), or its name.
        cluster: the ``Cluster`` (or an ``ExistingCluster``) whose OIDC provider its IAM role trusts.
        image: the vLLM image (``pins.VLLM_IMAGE``, or its regional mirror by digest).
        tags: AWS tags on its IAM role.
        placement: replica bounds; by default the node group's own.
        workload_classes: the classes' SLOs, which size how long a stopping replica may finish its streams.
        app: the Kubernetes name of its objects; default ``vllm-<pool>``. Two pools of one name in one
            namespace need two.
        clients: NetworkPolicy peers allowed to call it; default the model gateway and Prometheus.
        priority_scheduling: run vLLM's priority scheduler (the pool serves several priority levels:
            ``pool_performance.serves_several_levels``); the model gateway sends each request's level.
    """

    pool: Pool
    models: ModelLookup
    nodes: GpuNodeGroup | NodeSelection
    namespace: Namespace
    region: str
    cloud_region: str
    registry_bucket: aws.s3.Bucket | pulumi.Input[str]
    cluster: OidcCluster
    image: pulumi.Input[str]
    tags: dict[str, str] = field(default_factory=dict)
    placement: Placement | None = None
    workload_classes: Mapping[WorkloadClass, ClassSpec] = field(default_factory=dict)
    app: str | None = None
    clients: list[dict[str, Any]] | None = None
    priority_scheduling: bool = False

    @property
    def selection(self) -> NodeSelection:
        return self.nodes.selection if isinstance(self.nodes, GpuNodeGroup) else self.nodes

    def replicas(self) -> Placement:
        """The replica bounds: the given placement, else the node group's."""
        if self.placement is not None:
            return self.placement
        if isinstance(self.nodes, GpuNodeGroup):
            return self.nodes.placement
        raise ValueError(
            f"VllmPoolArgs for pool {self.pool.name!r}: nodes is a NodeSelection, which carries no replica bounds; "
            f"pass placement=Placement(pool={self.pool.name!r}, min_replicas=..., max_replicas=...)"
        )

    @classmethod
    def from_config(
        cls,
        config: GatewayConfig,
        *,
        pool: Pool | str,
        nodes: GpuNodeGroup | NodeSelection,
        namespace: Namespace,
        registry_bucket: aws.s3.Bucket | pulumi.Input[str],
        image: VllmMirror | pulumi.Input[str],
        tags: dict[str, str],
        cluster: OidcCluster | None = None,
        app: str | None = None,
        clients: list[dict[str, Any]] | None = None,
        priority_scheduling: bool = False,
    ) -> VllmPoolArgs:
        """The args of ``config``'s pool ``pool`` (a ``Pool`` of ``config.pools``, or its name): the region's
        names, its placement of the pool, the models and the classes' SLOs come from ``config``, so that the
        pool and the gateways that route to it read the same ones. ``cluster`` is by default the one the
        ``GpuNodeGroup`` ``nodes`` joined; ``image`` may be the ``VllmMirror``, whose copy in the config's
        cloud region the replicas pull.

        Raises:
            ValueError: ``pool`` is not one of ``config.pools`` (the error lists them), the region does not
                place it (add a ``Placement`` to ``config.region.pools``), or ``nodes`` is a ``NodeSelection``
                and no ``cluster`` is given.
        """
        name = pool if isinstance(pool, str) else pool.name
        found = next((p for p in config.pools if p.name == name), None)
        known = ", ".join(repr(p.name) for p in config.pools)
        if found is None or (not isinstance(pool, str) and found != pool):
            why = "is not one of" if found is None else "differs from the pool of that name in"
            raise ValueError(
                f"VllmPoolArgs.from_config: pool {name!r} {why} config.pools ({known}); pass one of those pools "
                f"or its name, or add it to GatewayConfig(pools=...)"
            )
        placement = next((p for p in config.region.pools if p.pool == name), None)
        if placement is None:
            raise ValueError(
                f"VllmPoolArgs.from_config: region {config.region.name!r} has no placement for pool {name!r}; "
                f"add Placement(pool={name!r}, min_replicas=..., max_replicas=...) to the region's pools"
            )
        if cluster is None:
            if not isinstance(nodes, GpuNodeGroup):
                raise ValueError(
                    f"VllmPoolArgs.from_config for pool {name!r}: nodes is a NodeSelection, which names no cluster; "
                    f"pass cluster= (the Cluster or ExistingCluster whose OIDC provider the pool's role trusts)"
                )
            cluster = nodes.cluster
        return cls(
            pool=found,
            models=ModelSet(models=list(config.models)),
            nodes=nodes,
            namespace=namespace,
            region=config.region.name,
            cloud_region=config.region.cloud_region,
            registry_bucket=registry_bucket,
            cluster=cluster,
            image=image.ref(config.region.cloud_region) if isinstance(image, VllmMirror) else image,
            tags=tags,
            placement=placement,
            workload_classes=config.workload_classes,
            app=app,
            clients=clients,
            priority_scheduling=priority_scheduling,
        )


def grace_period_seconds(classes: Mapping[WorkloadClass, ClassSpec], pool: Pool) -> int:
    """Long enough for the slowest in-flight stream of the pool's classes to finish after SIGTERM."""
    longest = 0.0
    for cls in pool.classes:
        c = classes.get(cls)
        if c is not None:
            e2e = c.e2e_p95_ms / 1000 if c.e2e_p95_ms else c.output_tokens.max * DEFAULT_DECODE_S_PER_TOKEN
            longest = max(longest, e2e)
    return DRAIN_SECONDS + max(60, math.ceil(longest * 1.5))


def scaling_triggers(pool: Pool, app: str, max_replicas: int | None = None) -> list[dict[str, Any]]:
    """KEDA triggers for the pool's composite signals and its predictive schedule."""
    signals = pool.autoscaling.signals
    sel = f'pool="{pool.name}"'
    triggers = []
    if signals.queue_wait_ms is not None:
        query = (
            f"1000 * sum(rate(vllm:request_queue_time_seconds_sum{{{sel}}}[1m])) / "
            f"clamp_min(sum(rate(vllm:request_queue_time_seconds_count{{{sel}}}[1m])), 1e-9)"
        )
        triggers.append(kube.prometheus_trigger("queue-wait-ms", query, signals.queue_wait_ms))
    if signals.kv_cache_usage is not None:
        # The V1 engine's name (the pinned 0.32 exports no vllm:gpu_cache_usage_perc, V0's name).
        query = f"avg(vllm:kv_cache_usage_perc{{{sel}}})"
        triggers.append(kube.prometheus_trigger("kv-cache-usage", query, signals.kv_cache_usage))
    if signals.ttft_p95_ms is not None:
        query = (
            f"1000 * histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{{{sel}}}[2m])))"
        )
        triggers.append(kube.prometheus_trigger("ttft-p95-ms", query, signals.ttft_p95_ms))
    if signals.gpu_utilization is not None:
        query = f'avg(DCGM_FI_DEV_GPU_UTIL{{pod=~"{app}-.*"}}) / 100'
        triggers.append(kube.prometheus_trigger("gpu-utilization", query, signals.gpu_utilization))
    for i, window in enumerate(pool.autoscaling.predictive):
        start, end = cron_window(window.cron, window.duration_minutes)
        triggers.append(
            {
                "type": "cron",
                "name": f"predictive-{i}",
                "metadata": {
                    "timezone": window.timezone,
                    "start": start,
                    "end": end,
                    # A window cannot lift the pool above its placement's ceiling in this region.
                    "desiredReplicas": str(min(window.min_replicas, max_replicas or window.min_replicas)),
                },
            }
        )
    return triggers


class VllmPool(Component):
    """A Deployment of the pinned vLLM image with weights on NVMe, its Services, a PDB and a KEDA autoscaler."""

    MODULE = "vllm_pool"

    service_url: pulumi.Output[str]
    replicas_url: pulumi.Output[str]  # the headless Service: every ready replica's address, for the model gateway

    def __init__(self, name: str, args: VllmPoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        spec, pool, placement, selection = args.models, args.pool, args.replicas(), args.selection
        node = node_for(pool)
        # Checked before anything registers: a pool on nodes of another type would never be scheduled.
        if selection.instance_type is not None and selection.instance_type != node.name:
            raise ValueError(
                f"VllmPool {name}: pool {pool.name!r} needs {node.name} nodes ({pool.gpu}, "
                f"{pool.gpus_per_replica} GPUs a replica), but its nodes are "
                f"{selection.instance_type}; give it a GpuNodeGroup built for this pool"
            )
        super().__init__(name, opts)
        namespace = args.namespace.name
        self.wait_for(*args.namespace.after())
        app = args.app or f"vllm-{pool.name}"
        labels = app_labels(
            app, "inference", **{LABEL_POOL: pool.name, LABEL_TIER: pool.tier.value, LABEL_REGION: args.region}
        )
        requests = replica_requests(pool)
        needed = artifacts(spec, pool)
        timeout = await_timeout_minutes(spec, pool)
        rollout = plan_rollout(
            placement.max_replicas, self._spare_replicas(args, placement), time_to_ready(spec, pool).total
        )

        role = self._weights_role(args, app, needed)
        account = k8s.core.v1.ServiceAccount(
            self.child("sa"),
            metadata={
                "name": app,
                "namespace": namespace,
                "labels": labels,
                "annotations": {"eks.amazonaws.com/role-arn": role.arn},
            },
            opts=self.opts(),
        )
        fetch_env = [
            {"name": MODELS_ENV, "value": MODELS_DIR},
            *env_list({Var.AWS_REGION: args.cloud_region, Var.HOME: "/tmp"}),
            {
                "name": ARTIFACTS_ENV,
                "value": pulumi.Output.from_input(bucket_name(args.registry_bucket)).apply(
                    lambda bucket: " ".join(
                        artifact_entry(m.ref, m.sha256, f"s3://{bucket}/{artifact_prefix(m)}") for m in needed
                    )
                ),
            },
        ]
        fetch = {
            "name": "fetch-weights",
            "image": AWS_CLI_IMAGE,
            "command": ["/bin/sh", "-c", FETCH_SCRIPT],
            "env": fetch_env,
            "volumeMounts": [{"name": "models", "mountPath": MODELS_DIR}, {"name": "tmp", "mountPath": "/tmp"}],
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
            "securityContext": fetch_security(),
        }
        resources = {
            "cpu": str(requests.cpu),
            "memory": f"{requests.memory_gib}Gi",
            "nvidia.com/gpu": str(requests.gpus),
        }
        probe = {"httpGet": {"path": "/health", "port": DEFAULT_PORT}}
        startup_checks = math.ceil(pool.autoscaling.cold_start_seconds / 10) + 6
        container = {
            "name": "vllm",
            "image": args.image,
            "command": ["vllm", "serve"],
            "args": vllm_args(spec, pool, models_dir=MODELS_DIR, priority_scheduling=args.priority_scheduling),
            "ports": [{"name": "http", "containerPort": DEFAULT_PORT}],
            "env": env_list({**ENGINE_ENV, **scratch_env()}),
            # Requests equal limits: a Guaranteed pod is the last to be evicted from a GPU node.
            "resources": {"requests": resources, "limits": resources},
            "startupProbe": {**probe, "periodSeconds": 10, "failureThreshold": startup_checks},
            "readinessProbe": {**probe, "periodSeconds": 5, "failureThreshold": 2},
            "livenessProbe": {**probe, "periodSeconds": 15, "failureThreshold": 4, "timeoutSeconds": 5},
            "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", f"sleep {DRAIN_SECONDS}"]}}},
            "volumeMounts": [
                {"name": "models", "mountPath": MODELS_DIR, "readOnly": True},
                {"name": "dshm", "mountPath": "/dev/shm"},
                {"name": "scratch", "mountPath": SCRATCH_DIR},
                {"name": "tmp", "mountPath": "/tmp"},
            ],
            "securityContext": kube.container_security(),
        }
        pod_spec = {
            "serviceAccountName": app,
            # IRSA's web-identity token is a projected volume of its own; nothing here calls the Kubernetes API.
            "automountServiceAccountToken": False,
            # No service-link variables: a Service named vllm in the namespace would set VLLM_PORT=tcp://..., which
            # vLLM parses as its own port at start and exits (vllm/envs.py, get_vllm_port). Peers are found by DNS.
            "enableServiceLinks": False,
            "securityContext": kube.pod_security(user=VLLM_UID, group=VLLM_UID, fs_group=VLLM_UID),
            "terminationGracePeriodSeconds": grace_period_seconds(args.workload_classes, pool),
            "initContainers": [fetch],
            "containers": [container],
            # The node group's own labels and taints (GpuNodeGroup.selection): scheduled there by construction.
            "tolerations": selection.tolerations(),
            "affinity": selection.affinity(),
            # Spread replicas over AZs so that one AZ outage takes only its share of the pool.
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
                }
            ],
            "volumes": [
                {"name": "models", "hostPath": {"path": NODE_CACHE, "type": "DirectoryOrCreate"}},
                # Tensor parallelism exchanges activations through shared memory (NCCL).
                {
                    "name": "dshm",
                    "emptyDir": {"medium": "Memory", "sizeLimit": f"{min(requests.memory_gib // 2, 64)}Gi"},
                },
                {"name": "scratch", "emptyDir": {"sizeLimit": SCRATCH_LIMIT}},
                {"name": "tmp", "emptyDir": {"sizeLimit": TMP_LIMIT}},
            ],
        }
        annotations = {
            VLLM_VERSION_ANNOTATION: VLLM_IMAGE.rsplit(":v", 1)[1],
            "prometheus.io/scrape": "true",
            "prometheus.io/port": str(DEFAULT_PORT),
            "prometheus.io/path": "/metrics",
        }
        deployment = k8s.apps.v1.Deployment(
            self.child("deployment"),
            metadata={
                "name": app,
                "namespace": namespace,
                "labels": labels,
                "annotations": {TIME_TO_READY_ANNOTATION: f"{time_to_ready(spec, pool).total:.0f}"},
            },
            spec={
                "replicas": placement.min_replicas,
                "selector": {"matchLabels": {"app.kubernetes.io/name": app}},
                # A third of the pool per wave (tokenplane.model.rollout): surging into the node group's spare slots,
                # taking replicas down where there are none; one at a time would outlast any update timeout.
                "strategy": rollout.strategy(),
                "template": {"metadata": {"labels": labels, "annotations": annotations}, "spec": pod_spec},
            },
            opts=self.opts(
                depends_on=[account],
                ignore_changes=["spec.replicas"],  # KEDA owns the replica count
                # A first replica waits for a GPU node, a ~13 GB image and the weights before its own cold
                # start: far past pulumi-kubernetes' 10-minute default await (tokenplane.model.startup).
                # An update waits for every wave of the rollout, each a whole time to Ready.
                custom_timeouts=pulumi.CustomTimeouts(
                    create=f"{timeout}m", update=f"{max(timeout, rollout.timeout_minutes)}m"
                ),
            ),
        )
        if pool.autoscaling.warm_pool > 0:
            self._prefetch(app, namespace, labels, fetch, pod_spec)
        service = k8s.core.v1.Service(
            self.child("service"),
            metadata={"name": app, "namespace": namespace, "labels": labels},
            spec={
                "type": "ClusterIP",
                "selector": {"app.kubernetes.io/name": app},
                "ports": [{"name": "http", "port": DEFAULT_PORT, "targetPort": "http"}],
            },
            opts=self.opts(),
        )
        # The model gateway balances each request over the replicas itself (serving.modelgw.balancer: fewest
        # pending prefills), so it needs every ready pod's address, which a headless Service's DNS name lists
        # (serving.modelgw.discovery re-reads it). Through the ClusterIP Service above, kube-proxy would pick a
        # pod per connection at random and keep-alive would pin requests to it: the 87.7% against 99% that
        # tokenplane.sim.gateway records for random dealing. The ClusterIP stays for the other callers.
        replicas_service = k8s.core.v1.Service(
            self.child("replicas"),
            metadata={"name": f"{app}-replicas", "namespace": namespace, "labels": labels},
            spec={
                "clusterIP": "None",
                "selector": {"app.kubernetes.io/name": app},
                "ports": [{"name": "http", "port": DEFAULT_PORT, "targetPort": "http"}],
            },
            opts=self.opts(),
        )
        kube.pdb(self.child("pdb"), namespace=namespace, app=app, opts=self.opts())
        # Only the model gateway sends requests; Prometheus scrapes /metrics.
        kube.allow_ingress(
            self.child("netpol"),
            namespace=namespace,
            app=app,
            port=DEFAULT_PORT,
            sources=list(args.clients if args.clients is not None else DEFAULT_CLIENTS),
            opts=self.opts(),
        )
        kube.scaled_object(
            self.child("scaler"),
            namespace=namespace,
            target=app,
            min_replicas=placement.min_replicas,
            max_replicas=placement.max_replicas,
            cooldown_seconds=int(pool.autoscaling.scale_down_delay_seconds),
            triggers=scaling_triggers(pool, app, placement.max_replicas),
            opts=self.opts(depends_on=[deployment]),
        )
        self.app = app
        # Without /v1: its callers append the OpenAI path, /v1 included (serving/modelgw/providers/vllm.py,
        # the semantic cache's HttpKeyEmbedder), as tokenplane dev's pool URLs do.
        self.service_url = service.metadata.apply(lambda m: f"http://{m['name']}.{namespace}.svc:{DEFAULT_PORT}")
        self.replicas_url = replicas_service.metadata.apply(
            lambda m: f"http://{m['name']}.{namespace}.svc:{DEFAULT_PORT}"
        )
        self.register_outputs(
            {
                "deployment": deployment.metadata["name"],
                "service_url": self.service_url,
                "replicas_url": self.replicas_url,
                "role_arn": role.arn,
            }
        )

    @staticmethod
    def _spare_replicas(args: VllmPoolArgs, placement: Placement) -> int:
        """Replicas that fit on the node group beyond the pool's maximum (its warm nodes): room to surge into.
        None known for nodes made elsewhere (a ``NodeSelection``)."""
        if not isinstance(args.nodes, GpuNodeGroup):
            return 0
        spare = 0
        while spare < placement.max_replicas and nodes_for(args.pool, placement.max_replicas + spare + 1) <= (
            args.nodes.counts.max
        ):
            spare += 1
        return spare

    def _weights_role(self, args: VllmPoolArgs, app: str, needed: list[Any]) -> aws.iam.Role:
        """IRSA: the pool's pods may read their own artifacts from the registry bucket, nothing else."""
        policy = pulumi.Output.from_input(bucket_name(args.registry_bucket)).apply(
            lambda bucket: policy_document(
                [
                    {
                        "Effect": "Allow",
                        "Action": ["s3:GetObject"],
                        "Resource": [f"arn:aws:s3:::{bucket}/models/{m.name}/{m.version}/*" for m in needed],
                    },
                    {
                        "Effect": "Allow",
                        "Action": ["s3:ListBucket"],
                        "Resource": [f"arn:aws:s3:::{bucket}"],
                        "Condition": {"StringLike": {"s3:prefix": [f"models/{m.name}/{m.version}/*" for m in needed]}},
                    },
                ]
            )
        )
        return irsa_role(
            self.child("weights-role"),
            namespace=args.namespace.name,
            service_account=app,
            oidc_provider_arn=args.cluster.oidc_provider_arn,
            oidc_issuer=args.cluster.oidc_issuer,
            policy=policy,
            tags=args.tags,
            opts=self.opts(),
        )

    def _prefetch(
        self, app: str, namespace: str, labels: dict[str, str], fetch: dict[str, Any], pod_spec: dict[str, Any]
    ) -> None:
        """Warm pool: every node of the pool gets the weights on NVMe before a replica needs them."""
        pause = {
            "name": "hold",
            "image": AWS_CLI_IMAGE,
            "command": ["/bin/sh", "-c", "trap 'exit 0' TERM; while true; do sleep 3600 & wait $!; done"],
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "50m", "memory": "32Mi"}},
            # It only sleeps: no root, no capabilities (the pod security policies hold it to that).
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "runAsNonRoot": True,
                "runAsUser": 65534,
                "capabilities": {"drop": ["ALL"]},
            },
        }
        prefetch_labels = {
            **labels,
            "app.kubernetes.io/name": f"{app}-prefetch",
            "app.kubernetes.io/component": "weights-prefetch",
        }
        k8s.apps.v1.DaemonSet(
            self.child("prefetch"),
            metadata={"name": f"{app}-prefetch", "namespace": namespace, "labels": prefetch_labels},
            spec={
                "selector": {"matchLabels": {"app.kubernetes.io/name": f"{app}-prefetch"}},
                "template": {
                    "metadata": {"labels": prefetch_labels},
                    "spec": {
                        "serviceAccountName": app,
                        "automountServiceAccountToken": False,
                        "securityContext": pod_spec["securityContext"],
                        "initContainers": [fetch],
                        "containers": [pause],
                        "tolerations": pod_spec["tolerations"],
                        "affinity": pod_spec["affinity"],
                        "volumes": [v for v in pod_spec["volumes"] if v["name"] in ("models", "tmp")],
                    },
                },
            },
            opts=self.opts(),
        )
