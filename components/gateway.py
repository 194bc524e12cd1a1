"""What the AI gateway and the model gateway share: a hardened Deployment of the serving image.

The runtime config is a ``GatewayConfig``'s document (the spec itself, for a
spec-driven stack), rendered into a ConfigMap and read by the same pydantic
models, so the gateway cannot disagree with the plan. A checksum of it in the
pod template rolls the pods whenever it changes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from tokenplane.components import kube
from tokenplane.components.arguments import check_base_url
from tokenplane.components.base import Component
from tokenplane.components.batch_files import GATEWAY_ACTIONS, files_env, files_statements
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.components.iam import irsa_role, msk_statements, policy_document
from tokenplane.components.kube import Namespace
from tokenplane.components.naming import LABEL_REGION, NS_MONITORING, app_labels, checksum
from tokenplane.contract import PREREQUISITES_ANNOTATION, SECRETS_DIR, k8s_secret_parts
from tokenplane.runtime_env import DEFAULT_METRICS_PORT, MSK_IAM, Var, env_list, pool_url_var
from tokenplane.spec import Environment, Region

GATEWAY_PORT = 8080
# A public gateway without a certificate (a spec with no domain: dev, staging) listens here, plain HTTP.
PLAIN_HTTP_PORT = 80
# The AI gateway's /metrics (per-tenant usage and cost) is served here, never on its public port.
METRICS_PORT = DEFAULT_METRICS_PORT
CONFIG_DIR = "/etc/tokenplane"
SPOOL_DIR = "/var/spool/tokenplane"
# A gateway replica plans for 1,000 req/s: its benchmark target is 1,500 per core, and it gets two cores.
RPS_PER_REPLICA = 1000
SPOOL_LIMIT = "2Gi"  # usage events queued on disk while Kafka is unreachable (the gateway bounds it too)


@dataclass(frozen=True, kw_only=True)
class ServingDeps:
    """What every pod of the serving image needs from its region: its runtime config (``GatewayConfig``),
    the image, the data stores, the cluster's identity provider and the telemetry endpoint. The gateways,
    the batch workers and the metering consumer share it."""

    config: GatewayConfig
    image: pulumi.Input[str]
    redis_url: pulumi.Input[str]
    kafka_bootstrap: pulumi.Input[str]
    kafka_cluster_arn: pulumi.Input[str]
    qdrant_url: str
    oidc_provider_arn: pulumi.Input[str]
    oidc_issuer: pulumi.Input[str]
    account_id: pulumi.Input[str]
    tags: dict[str, str]
    otel_endpoint: str = ""

    @property
    def region(self) -> Region:
        """The region these pods serve (``config.region``)."""
        return self.config.region


@dataclass(frozen=True, kw_only=True)
class GatewayArgs:
    """One gateway (``AiGateway`` or ``ModelGateway``) in one region.

    Args:
        deps: the region's image, data stores, cluster identity and runtime config (``ServingDeps``).
        namespace: where its objects go (``Namespace.create`` or ``Namespace.existing``).
        pool_urls: pool name -> its base URL: the model gateway's backends (``VllmPool.replicas_url``, a
            headless Service it resolves to each replica), and the AI gateway's semantic-cache embedding pool
            (``VllmPool.service_url``, ``wiring.embedding_pool``).
        model_gateway_url: the model gateway's base URL (``ModelGateway.url``), which the AI gateway and batch
            workers call: scheme, host and port, without /v1 (the client appends the OpenAI path); a literal
            URL with a path raises ``ValueError``. Pool URLs given as strings are held to the same rule.
        files_bucket: the bucket the Batch API's files live in (``BatchWorkers.results_bucket``); only the AI
            gateway serves files.
        app: the Kubernetes name of its objects; default ``ai-gateway`` or ``model-gateway``. Two gateways in
            one namespace need two.
        clients: NetworkPolicy peers allowed to call it; default, for the model gateway, the AI gateway, the
            batch workers and Prometheus, and for the AI gateway anyone (it sits behind the load balancer).
        certificate_arn: the TLS listener's ACM certificate (``components.tls``), issued; only the AI gateway has
            a public listener.
        env_secrets: values of the spec's ``env://`` secrets (variable -> value, Pulumi secrets): with every one
            its process reads, the stack creates the app's env Secret before its pods; otherwise the Secret is a
            declared prerequisite, which someone must create before pulumi up waits for the pods.
    """

    deps: ServingDeps
    namespace: Namespace
    pool_urls: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    model_gateway_url: str = ""
    files_bucket: pulumi.Input[str] | None = None
    app: str | None = None
    clients: list[dict[str, Any]] | None = None
    certificate_arn: pulumi.Input[str] | None = None
    env_secrets: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The clients post to base URL + /v1/...: a base URL with a path of its own 404s every request.
        check_base_url("GatewayArgs", "model_gateway_url", self.model_gateway_url)
        for pool, urls in self.pool_urls.items():
            # POOL_URL_<POOL> may list several replicas, comma-separated (runtime_env.pool_urls).
            for url in urls.split(",") if isinstance(urls, str) else [urls]:
                check_base_url("GatewayArgs", f"pool_urls[{pool!r}]", url.strip() if isinstance(url, str) else url)
        # The processes read a pool's replicas from POOL_URL_<POOL> (runtime_env.pool_urls), by the spec pool's
        # name: a URL under any other key (a model's name, a Service's) is read by nobody, and the pool it was
        # meant for is silently unavailable. Refused here, where the mistake is made.
        region = self.deps.config.region
        placed = [p.pool for p in region.pools]
        stray = sorted(set(self.pool_urls) - set(placed))
        if stray:
            raise ValueError(
                f"GatewayArgs.pool_urls: {', '.join(map(repr, stray))} is not a pool placed in region "
                f"{region.name!r} (its pools: {', '.join(map(repr, placed)) or 'none'}); key each URL by its pool's "
                "name (VllmPool.service_url of the pool named so in the spec): the gateways read POOL_URL_<POOL> "
                "by pool name, so a URL under another key reaches no process and its pool stays unavailable"
            )


GATEWAY_CPU = 2.0  # vCPUs per gateway pod, requested and limited (Guaranteed QoS)


def replica_bounds(config: GatewayConfig) -> tuple[int, int]:
    """Enough replicas for the region's peak with a third to spare; at least 3 in prod for AZ spread."""
    floor = 3 if config.environment is Environment.PROD else 2
    need = math.ceil(config.peak_rps * config.region.traffic_share / RPS_PER_REPLICA * 1.3)
    low = max(floor, need)
    return low, max(low * 3, floor * 2)


def runtime_config(config: GatewayConfig) -> dict[str, str]:
    """The ConfigMap's data: the runtime document as JSON, and which region this copy serves."""
    return {"platform.json": config.document.model_dump_json(exclude_none=True), "region": config.region.name}


def runtime_objects(
    component: Component,
    *,
    app: str,
    namespace: str,
    labels: dict[str, str],
    config: GatewayConfig,
    redis_url: pulumi.Input[str],
    kafka_bootstrap: pulumi.Input[str],
) -> tuple[k8s.core.v1.ConfigMap, k8s.core.v1.Secret, dict[str, str]]:
    """What a serving pod reads at start: the spec ConfigMap and the Redis/Kafka Secret; also the config's data.

    The gateways and the batch workers build the same ``Gateway`` from them (``serving.gateway.runtime``).
    """
    data = runtime_config(config)
    config = k8s.core.v1.ConfigMap(
        component.child("config"),
        metadata={"name": f"{app}-config", "namespace": namespace, "labels": labels},
        data=data,
        opts=component.opts(),
    )
    secret = k8s.core.v1.Secret(
        component.child("secret"),
        metadata={"name": f"{app}-connections", "namespace": namespace, "labels": labels},
        type="Opaque",
        string_data={Var.REDIS_URL.value: redis_url, Var.KAFKA_BOOTSTRAP_SERVERS.value: kafka_bootstrap},
        opts=component.opts(),
    )
    return config, secret, data


def serving_pod_annotations(
    config_data: dict[str, str], metrics_port: int, env_secrets: Mapping[str, k8s.core.v1.Secret] | None = None
) -> dict[str, Any]:
    """A serving pod's annotations: the config's checksum (a changed spec rolls the pods), its scrape port, and a
    checksum of each Secret the pods read as env (``{what}-checksum``): env is read once at start, and a Secret
    replaced under its fixed name changes nothing else in the template, so without it the pods keep old values."""
    return {
        "tokenplane.io/config-checksum": checksum(config_data),
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(metrics_port),
        **{f"tokenplane.io/{what}-checksum": secret_checksum(s) for what, s in (env_secrets or {}).items()},
    }


def secret_checksum(secret: k8s.core.v1.Secret) -> pulumi.Output[str]:
    """The sha256 of a Secret's values: a one-way digest, so not marked secret (the Deployment stays readable)."""
    return pulumi.Output.unsecret(secret.string_data.apply(checksum))


# The gateways' and batch workers' writable paths under a read-only root filesystem: usage events wait in the
# spool while Kafka is away.
SERVING_MOUNTS = (
    {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
    {"name": "spool", "mountPath": SPOOL_DIR},
    {"name": "tmp", "mountPath": "/tmp"},
)


def serving_volumes(app: str) -> list[dict[str, Any]]:
    """The volumes behind ``SERVING_MOUNTS``: the app's spec ConfigMap, the spool and /tmp."""
    return [
        {"name": "config", "configMap": {"name": f"{app}-config"}},
        {"name": "spool", "emptyDir": {"sizeLimit": SPOOL_LIMIT}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}},
    ]


def mounted_secrets(
    refs: list[str], namespace: str, *, optional: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Volumes and mounts for the ``k8s://`` references among ``refs``: each Secret's keys as files under
    ``SECRETS_DIR/<namespace>/<name>/``, where ``serving.secrets`` reads them.

    A pod mounts Secrets of its own namespace only: a reference to another namespace gets no volume (the
    ``references-exist`` check reports it, with the fix), so that the pod does not wait on a mount that cannot be.
    """
    keys: dict[str, set[str]] = {}
    for parts in filter(None, (k8s_secret_parts(r) for r in refs)):
        if parts[0] == namespace:
            keys.setdefault(parts[1], set()).add(parts[2])
    volumes, mounts = [], []
    for name, wanted in sorted(keys.items()):
        volume = f"k8s-secret-{name.replace('.', '-')}"[:63].rstrip("-")
        items = [{"key": k, "path": k} for k in sorted(wanted)]
        source = {"secretName": name, "items": items} | ({"optional": True} if optional else {})
        volumes.append({"name": volume, "secret": source})
        mounts.append({"name": volume, "mountPath": f"{SECRETS_DIR}/{namespace}/{name}", "readOnly": True})
    return volumes, mounts


def env_secret_name(app: str) -> str:
    """The Kubernetes Secret that carries an app's ``env://`` secrets: created by the operator, per region."""
    return f"{app}-env-secrets"


def env_secret_entries(app: str, refs: list[str], *, optional: bool = False) -> list[dict[str, Any]]:
    """``env://VAR`` references as env entries from the app's env Secret, so the process finds VAR set.

    ``optional``: a key missing from the Secret leaves VAR unset instead of keeping the pod from starting."""
    variables = sorted({ref.removeprefix("env://") for ref in refs if ref.startswith("env://")})
    ref = {"name": env_secret_name(app)} | ({"optional": True} if optional else {})
    return [{"name": v, "valueFrom": {"secretKeyRef": {**ref, "key": v}}} for v in variables]


def env_variables(entries: list[dict[str, Any]]) -> list[str]:
    return [str(e["name"]) for e in entries]


def secret_arns(config: GatewayConfig, account_id: str) -> list[str]:
    """Secrets Manager ARNs of every aws-sm:// reference the gateways resolve (tenant and provider keys).

    A reference is a secret's name (``aws-sm://acme/key``: its ARN is the name and the six characters Secrets
    Manager appends, hence ``-*``) or its ARN (``aws-sm://arn:aws:secretsmanager:...``, copied from the console):
    then the ARN itself, and with ``-*`` for an ARN written without its suffix.
    """
    refs = [t.api_key_secret for t in config.tenants] + [p.api_key_secret for p in config.providers]
    arns: set[str] = set()
    for ref in (r.removeprefix("aws-sm://") for r in refs if r.startswith("aws-sm://")):
        if ref.startswith("arn:"):
            arns.update((ref, f"{ref}-*"))
        else:
            arns.add(f"arn:aws:secretsmanager:{config.region.cloud_region}:{account_id}:secret:{ref}-*")
    return sorted(arns)


def secret_statements(config: GatewayConfig, account_id: str) -> list[dict[str, Any]]:
    """Read every secret the gateways resolve (``secret_arns``); none when the config references none.

    A secret encrypted with a customer managed KMS key is decrypted with the caller's permissions: GetSecretValue
    also needs ``kms:Decrypt`` on that key, else AccessDeniedException "Access to KMS is not allowed" (Secrets
    Manager user guide, "Secret encryption and decryption", authorization:
    https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html#security-encryption-authz).
    The spec names secrets, not their keys, so the grant is the documented one for reading CMK-encrypted secrets:
    any key, only through Secrets Manager in this region (``kms:ViaService``) and so only for the secrets above; a
    key whose policy does not delegate to IAM (the default key policy does) must name the role itself.
    """
    arns = secret_arns(config, account_id)
    if not arns:
        return []
    via = f"secretsmanager.{config.region.cloud_region}.amazonaws.com"
    return [
        {"Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"], "Resource": arns},
        {
            "Effect": "Allow",
            "Action": ["kms:Decrypt"],
            "Resource": "*",
            "Condition": {"StringEquals": {"kms:ViaService": via}},
        },
    ]


class GatewayWorkload(Component):
    """Base of AiGateway and ModelGateway; subclasses set the app name, module and exposure."""

    MODULE = "gateway"
    APP: str
    SERVING_MODULE: str
    PUBLIC = False
    METRICS_PORT: int | None = None  # a port of its own for /metrics; None: /metrics on GATEWAY_PORT

    service: k8s.core.v1.Service

    def __init__(self, name: str, args: GatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        app, runtime, region = args.app or self.APP, args.deps.config, args.deps.region
        namespace = args.namespace.name
        self.wait_for(*args.namespace.after())
        labels = app_labels(app, "gateway", **{LABEL_REGION: region.name})
        config, secret, config_data = runtime_objects(
            self,
            app=app,
            namespace=namespace,
            labels=labels,
            config=runtime,
            redis_url=args.deps.redis_url,
            kafka_bootstrap=args.deps.kafka_bootstrap,
        )
        role = self._role(args, app, namespace)
        account = k8s.core.v1.ServiceAccount(
            self.child("sa"),
            metadata={
                "name": app,
                "namespace": namespace,
                "labels": labels,
                "annotations": {"eks.amazonaws.com/role-arn": role.arn},
            },
            automount_service_account_token=True,
            opts=self.opts(),
        )
        env = env_list(
            {
                Var.CONFIG: f"{CONFIG_DIR}/platform.json",
                Var.REGION: region.name,
                Var.SPOOL_DIR: SPOOL_DIR,
                Var.QDRANT_URL: args.deps.qdrant_url,
                Var.AWS_REGION: region.cloud_region,
                Var.KAFKA_SASL_MECHANISM: MSK_IAM,
                Var.MODEL_GATEWAY_URL: args.model_gateway_url or None,
                Var.OTEL_ENDPOINT: args.deps.otel_endpoint or None,
            }
        )
        env.extend(self.files_env(args))
        low, high = replica_bounds(runtime)
        env.extend(self.replica_env(low))
        env.extend(self.peer_env(app, namespace))
        secret_env = self.secret_env(app, runtime)
        env.extend(secret_env)
        env_secret = self._env_secret(app, namespace, labels, env_variables(secret_env), args)
        secret_volumes, secret_mounts = mounted_secrets(
            self.secret_refs(runtime), namespace, optional=self.SECRETS_OPTIONAL
        )
        env.extend({"name": pool_url_var(pool), "value": url} for pool, url in sorted(args.pool_urls.items()))
        ports = [{"name": "http", "containerPort": GATEWAY_PORT}]
        if self.METRICS_PORT is not None:
            env.extend(env_list({Var.METRICS_PORT: str(self.METRICS_PORT)}))
            ports.append({"name": "metrics", "containerPort": self.METRICS_PORT})
        container = kube.container(
            app,
            args.deps.image,
            command=["python", "-m", self.SERVING_MODULE],
            ports=ports,
            env=env,
            envFrom=[{"secretRef": {"name": f"{app}-connections"}}],
            resources=kube.resources(f"{GATEWAY_CPU:g}", "2Gi"),
            readiness=kube.http_probe("/readyz", GATEWAY_PORT, period_seconds=5),
            liveness=kube.http_probe("/healthz", GATEWAY_PORT, period_seconds=5, failure_threshold=6),
            # Let the LB drain the pod before SIGTERM reaches the server; streams then finish in the grace period.
            lifecycle={"preStop": {"exec": {"command": ["/bin/sh", "-c", "sleep 10"]}}},
            volumeMounts=[*SERVING_MOUNTS, *secret_mounts],
        )
        deployment = kube.deployment(
            self.child("deployment"),
            namespace=namespace,
            app=app,
            labels=labels,
            replicas=low,
            # Secrets the pods read that the stack must not create (their values never belong in it):
            # `tokenplane plan` lists them as prerequisites, and the deployability check holds them to it.
            annotations={PREREQUISITES_ANNOTATION: f"secret/{env_secret_name(app)}"}
            if secret_env and env_secret is None
            else None,
            strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            pod_annotations=serving_pod_annotations(
                config_data,
                self.METRICS_PORT or GATEWAY_PORT,
                {"connections": secret, **({"env-secrets": env_secret} if env_secret else {})},
            ),
            # IRSA's token is a projected volume of its own; the gateway never calls the Kubernetes API.
            pod=kube.pod_spec(
                [container],
                security=kube.pod_security(group=kube.SERVING_UID, fs_group=kube.SERVING_UID),
                service_account=app,
                volumes=[*serving_volumes(app), *secret_volumes],
                terminationGracePeriodSeconds=120,
                topologySpreadConstraints=kube.zone_spread(app),
            ),
            opts=self.opts(
                depends_on=[config, secret, account, *([env_secret] if env_secret else [])],
                ignore_changes=["spec.replicas"],  # the HPA owns replicas
            ),
        )
        k8s.autoscaling.v2.HorizontalPodAutoscaler(
            self.child("hpa"),
            metadata={"name": app, "namespace": namespace, "labels": labels},
            spec={
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": app},
                "minReplicas": low,
                "maxReplicas": high,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
                    }
                ],
            },
            opts=self.opts(depends_on=[deployment]),
        )
        kube.pdb(self.child("pdb"), namespace=namespace, app=app, opts=self.opts())
        kube.allow_ingress(
            self.child("netpol"),
            namespace=namespace,
            app=app,
            port=GATEWAY_PORT,
            sources=args.clients if args.clients is not None else self.ingress_sources(),
            opts=self.opts(),
        )
        if self.METRICS_PORT is not None:
            kube.allow_ingress(
                self.child("metrics-netpol"),
                namespace=namespace,
                app=app,
                port=self.METRICS_PORT,
                sources=[kube.peer(NS_MONITORING)],  # Prometheus only
                name=f"{app}-metrics-ingress",
                opts=self.opts(),
            )
        service_spec: dict[str, Any] = {
            "selector": {"app.kubernetes.io/name": app},
            "ports": [{"name": "http", "port": self.service_port(args), "targetPort": "http"}],
            "type": "LoadBalancer" if self.PUBLIC else "ClusterIP",
        }
        annotations = self.service_annotations(args)
        self.service = k8s.core.v1.Service(
            self.child("service"),
            metadata={"name": app, "namespace": namespace, "labels": labels, "annotations": annotations},
            spec=service_spec,
            opts=self.opts(),
        )
        peers = self.peer_service(app, namespace, labels)
        self.app = app
        # Its in-cluster base URL: what the AI gateway and the batch workers are given as model_gateway_url.
        # The headless Service where there is one, so that its callers deal their requests over the processes
        # (serving/modelgw/peers.py) rather than leave the split to kube-proxy's pick per connection.
        # Without /v1: the client appends the OpenAI path (serving/modelgw/client.py), /v1 included.
        self.url = f"http://{peers or app}.{namespace}.svc:{GATEWAY_PORT}"
        self.register_outputs({"deployment": deployment.metadata["name"], "service": self.service.metadata["name"]})

    def ingress_sources(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def service_annotations(self, args: GatewayArgs) -> dict[str, pulumi.Input[str]]:
        return {}

    def service_port(self, args: GatewayArgs) -> int:
        """The Service's port: 443 (TLS at the NLB) when public with a certificate, 80 without one, else the pods'."""
        if not self.PUBLIC:
            return GATEWAY_PORT
        return 443 if args.certificate_arn is not None else PLAIN_HTTP_PORT

    def _env_secret(
        self, app: str, namespace: str, labels: dict[str, str], variables: list[str], args: GatewayArgs
    ) -> k8s.core.v1.Secret | None:
        """The app's env Secret from the given values, when every variable it reads has one; else None.

        Created by the stack, it exists before the pods (a hand-made one can only be made once the cluster and
        namespace exist, while pulumi up already waits for the pods)."""
        if not variables or any(v not in args.env_secrets for v in variables):
            return None
        return k8s.core.v1.Secret(
            self.child("env-secrets"),
            metadata={"name": env_secret_name(app), "namespace": namespace, "labels": labels},
            string_data={v: pulumi.Output.secret(args.env_secrets[v]) for v in variables},
            opts=self.opts(),
        )

    SECRETS_OPTIONAL = False  # whether the process starts without a secret it resolves (marking its user unavailable)

    def secret_refs(self, config: GatewayConfig) -> list[str]:
        """The config's secret references this process resolves; none by default."""
        return []

    def secret_env(self, app: str, config: GatewayConfig) -> list[dict[str, Any]]:
        """Env entries for the ``env://`` references among ``secret_refs``."""
        return env_secret_entries(app, self.secret_refs(config), optional=self.SECRETS_OPTIONAL)

    def files_env(self, args: GatewayArgs) -> list[dict[str, Any]]:
        """Container env for the Batch API's file store: the bucket's, where one is given."""
        return files_env(args.files_bucket) if args.files_bucket is not None else []

    def replica_env(self, min_replicas: int) -> list[dict[str, Any]]:
        """Container env derived from the HPA's floor; none unless the serving module reads it."""
        return []

    def peer_env(self, app: str, namespace: str) -> list[dict[str, Any]]:
        """Container env that tells a process its peers and its own address; none unless it balances with them."""
        return []

    def peer_service(self, app: str, namespace: str, labels: dict[str, str]) -> str | None:
        """A headless Service listing the processes to each other (``peer_env``) and to callers; its name, or
        None: none by default."""
        return None

    def iam_statements(
        self, args: GatewayArgs, account_id: str, kafka_arn: str, files_bucket: str = ""
    ) -> list[dict[str, Any]]:
        """Connect to this region's MSK cluster and use its topics; read the referenced secrets and files."""
        # The gateways only produce (usage and audit events): no ReadData, which would also need consumer-group
        # grants (msk-iam-actions) for nothing.
        statements = msk_statements(kafka_arn, ["kafka-cluster:DescribeTopic", "kafka-cluster:WriteData"])
        statements.extend(secret_statements(args.deps.config, account_id))
        if files_bucket:
            statements.extend(files_statements(files_bucket, GATEWAY_ACTIONS))
        return statements

    def _role(self, args: GatewayArgs, app: str, namespace: str) -> aws.iam.Role:
        bucket = args.files_bucket if args.files_bucket is not None else ""
        policy = pulumi.Output.all(args.deps.account_id, args.deps.kafka_cluster_arn, bucket).apply(
            lambda a: policy_document(self.iam_statements(args, str(a[0]), str(a[1]), str(a[2])))
        )
        return irsa_role(
            self.child("role"),
            namespace=namespace,
            service_account=app,
            oidc_provider_arn=args.deps.oidc_provider_arn,
            oidc_issuer=args.deps.oidc_issuer,
            policy=policy,
            tags=args.deps.tags,
            opts=self.opts(),
        )
