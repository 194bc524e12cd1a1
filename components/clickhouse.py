"""ClickHouse: the FinOps ledger in the cluster, replicated across the AZs, backed up to S3.

The official server image as a StatefulSet (no operator: one fewer controller to run and upgrade), three
replicas in prod spread one per AZ, each with an embedded ClickHouse Keeper, so that the three together are
the Raft quorum that replication needs and an AZ outage leaves two of three. The ``finops`` database is
created with the ``Replicated`` engine, so every table the migrations create (``serving/finops/migrations``)
is replicated without DDL of its own. Data sits on encrypted gp3 (``gp3-encrypted``, ``ClusterAddons``).

Credentials: a random password kept in Secrets Manager (the source of truth an operator reads it from) and
mirrored into the namespace's Secret that the server and the metering consumer mount. NetworkPolicies let
the consumer and Grafana reach the HTTP port, and only the replicas reach each other's replication and
Keeper ports. Backups: a CronJob runs ``BACKUP DATABASE finops TO S3(...)`` into the registry bucket every
``finops.backup_every_hours``: that is the ledger's RPO. The usage topics keep a week of events
(``queues.topics[].retention_hours``), so rows written after the last backup can be replayed from Kafka
into a restored ledger, idempotently (the consumer deduplicates on the event id).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pulumi_random as random

from tokenplane.components import kube
from tokenplane.components.arguments import EnvironmentName, check_environment
from tokenplane.components.base import Component
from tokenplane.components.iam import OidcCluster, irsa_role, policy_document
from tokenplane.components.kube import Namespace
from tokenplane.components.naming import NS_MONITORING, app_labels
from tokenplane.components.pins import CLICKHOUSE_IMAGE
from tokenplane.runtime_env import Var
from tokenplane.spec import Environment

CREDENTIALS_DIR = "/var/run/secrets/clickhouse"  # the credentials Secret, mounted as files (user, password)

APP = "clickhouse"
DATABASE = "finops"
HTTP_PORT = 8123
NATIVE_PORT = 9000  # clickhouse-client's protocol: the backup job, and distributed queries between replicas
BACKUP_APP = f"{APP}-backup"
INTERSERVER_PORT = 9009  # replication: parts fetched between replicas
KEEPER_PORT = 9181
RAFT_PORT = 9234
CLICKHOUSE_UID = 101  # the official image's clickhouse user and group
STORAGE_CLASS = "gp3-encrypted"
VOLUME_GIB = {"prod": 500, "staging": 100, "dev": 20}
BACKUP_PREFIX = "finops-backups"
USER = "finops"
SERVER_CPU = 2.0  # requested per replica: merges and the chargeback's aggregations
WRITABLE = (  # emptyDirs under a read-only root filesystem
    ("tmp", "/tmp"),
    ("logs", "/var/log/clickhouse-server"),
    ("users", "/etc/clickhouse-server/users.d"),
    ("configd", "/etc/clickhouse-server/config.d"),
)
CREDENTIALS_SECRET = "clickhouse-credentials"  # the namespace's Secret: the server's and the consumer's password
# Readable by the pod's fsGroup only: each reader runs with the Secret's files in its group (kube.pod_security).
CREDENTIALS_MODE = 0o440


def credentials_volume() -> dict[str, Any]:
    """The credentials Secret as a volume: files, not environment values, so they stay out of the pod spec."""
    return {"name": "credentials", "secret": {"secretName": CREDENTIALS_SECRET, "defaultMode": CREDENTIALS_MODE}}


CREDENTIALS_MOUNT = {"name": "credentials", "mountPath": CREDENTIALS_DIR, "readOnly": True}
# The official image's entrypoint reads the user and password from its environment to write users.d; the
# shell puts them there from the mounted files, for the entrypoint's process only. `set -e`: a missing file
# stops the start instead of creating a user without a password.
_READ_CREDENTIALS = (
    f'set -eu; CLICKHOUSE_USER="$(cat {CREDENTIALS_DIR}/user)"; '
    f'{Var.CLICKHOUSE_PASSWORD.value}="$(cat {CREDENTIALS_DIR}/password)"; '
    f"export CLICKHOUSE_USER {Var.CLICKHOUSE_PASSWORD.value}; "
)


@dataclass(frozen=True, kw_only=True)
class ClickHouseArgs:
    """The FinOps ledger in one region.

    Args:
        environment: ``prod`` runs three replicas (one per AZ), ``dev`` and ``staging`` one; any other value
            raises ``ValueError``.
        namespace: where its objects go; its volumes use the ``gp3-encrypted`` StorageClass.
        backup_bucket: the registry bucket; backups go under ``finops-backups/<region>/``.
        backup_every_hours: the backup interval, the ledger's RPO.
        region: the spec region's name (the backup prefix).
        cluster: the ``Cluster`` (or ``ExistingCluster``) whose OIDC provider the servers' S3 role trusts.
        clients: NetworkPolicy peers allowed on the HTTP port (the metering consumer, Grafana).
        tags: AWS tags.
    """

    environment: EnvironmentName | Environment
    namespace: Namespace
    backup_bucket: pulumi.Input[str]
    backup_every_hours: int
    region: str
    cluster: OidcCluster
    clients: list[dict[str, Any]]
    tags: dict[str, str]

    def __post_init__(self) -> None:
        check_environment(type(self).__name__, self.environment)


def server_replicas(environment: str) -> int:
    """Three in prod (one per AZ: a Keeper quorum survives an AZ), one elsewhere."""
    return 3 if environment == "prod" else 1


def _keeper_xml(replicas: int, namespace: str) -> str:
    """The embedded Keeper's Raft members and the one-shard cluster of ``replicas`` replicas."""
    host = f"{APP}-{{i}}.{APP}-headless.{namespace}.svc.cluster.local"
    raft = "".join(
        f"<server><id>{i + 1}</id><hostname>{host.format(i=i)}</hostname><port>{RAFT_PORT}</port></server>"
        for i in range(replicas)
    )
    nodes = "".join(f"<node><host>{host.format(i=i)}</host><port>{KEEPER_PORT}</port></node>" for i in range(replicas))
    shard = "".join(
        f"<replica><host>{host.format(i=i)}</host><port>{NATIVE_PORT}</port></replica>" for i in range(replicas)
    )
    return (
        "<clickhouse>"
        # The image's own config.d (listen_host) is hidden by the writable emptyDir mounted over config.d.
        "<listen_host>0.0.0.0</listen_host>"
        "<macros><shard>1</shard><replica from_env='HOSTNAME'/></macros>"
        f"<keeper_server><tcp_port>{KEEPER_PORT}</tcp_port><server_id from_env='KEEPER_ID'/>"
        "<log_storage_path>/var/lib/clickhouse/coordination/log</log_storage_path>"
        "<snapshot_storage_path>/var/lib/clickhouse/coordination/snapshots</snapshot_storage_path>"
        f"<raft_configuration>{raft}</raft_configuration></keeper_server>"
        f"<zookeeper>{nodes}</zookeeper>"
        f"<remote_servers><finops><shard><internal_replication>true</internal_replication>{shard}</shard>"
        "</finops></remote_servers>"
        f"<interserver_http_port>{INTERSERVER_PORT}</interserver_http_port>"
        "<s3><use_environment_credentials>true</use_environment_credentials></s3>"
        "</clickhouse>"
    )


# Run by the image's entrypoint on a fresh volume: the Replicated database joins the others' on each replica.
INIT_SQL = (
    f"CREATE DATABASE IF NOT EXISTS {DATABASE} "
    f"ENGINE = Replicated('/clickhouse/databases/{DATABASE}', '{{shard}}', '{{replica}}');\n"
)


class ClickHouse(Component):
    """A replicated ClickHouse StatefulSet with embedded Keeper, its credentials, policies and backups."""

    MODULE = "clickhouse"

    url: str
    namespace: str
    region: str
    password: pulumi.Output[str]
    password_secret_arn: pulumi.Output[str]

    def __init__(self, name: str, args: ClickHouseArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        namespace = args.namespace.name
        self.wait_for(*args.namespace.after())
        replicas = server_replicas(args.environment)
        labels = app_labels(APP, "finops-store")
        password = random.RandomPassword(self.child("password"), length=32, special=False, opts=self.opts())
        secret = aws.secretsmanager.Secret(
            self.child("credentials"),
            name_prefix=f"tokenplane/{args.region}/clickhouse-",
            description="The FinOps ledger's ClickHouse password (user finops)",
            tags=args.tags,
            opts=self.opts(),
        )
        aws.secretsmanager.SecretVersion(
            self.child("credentials-version"), secret_id=secret.id, secret_string=password.result, opts=self.opts()
        )
        k8s.core.v1.Secret(
            self.child("k8s-credentials"),
            metadata={"name": CREDENTIALS_SECRET, "namespace": namespace, "labels": labels},
            type="Opaque",
            string_data={"user": USER, "password": password.result},
            opts=self.opts(),
        )
        k8s.core.v1.ConfigMap(
            self.child("config"),
            metadata={"name": f"{APP}-config", "namespace": namespace, "labels": labels},
            data={"replication.xml": _keeper_xml(replicas, namespace), "init.sql": INIT_SQL},
            opts=self.opts(),
        )
        role = irsa_role(
            self.child("role"),
            namespace=namespace,
            service_account=APP,
            oidc_provider_arn=args.cluster.oidc_provider_arn,
            oidc_issuer=args.cluster.oidc_issuer,
            policy=pulumi.Output.from_input(args.backup_bucket).apply(
                lambda bucket: policy_document(_backup_statements(str(bucket), args.region))
            ),
            tags=args.tags,
            opts=self.opts(),
        )
        k8s.core.v1.ServiceAccount(
            self.child("sa"),
            metadata={
                "name": APP,
                "namespace": namespace,
                "labels": labels,
                "annotations": {"eks.amazonaws.com/role-arn": role.arn},
            },
            opts=self.opts(),
        )
        self._services(namespace, labels)
        self._statefulset(namespace, labels, replicas, args.environment)
        self._policies(args, namespace)
        self._backups(args, namespace, labels)
        self.url = f"http://{APP}.{namespace}.svc:{HTTP_PORT}/{DATABASE}"
        self.namespace = namespace
        self.region = args.region
        self.password = password.result
        self.password_secret_arn = secret.arn
        self.register_outputs({"url": self.url, "replicas": replicas, "password_secret_arn": secret.arn})

    def _services(self, namespace: str, labels: dict[str, str]) -> None:
        ports = [("http", HTTP_PORT), ("native", NATIVE_PORT), ("interserver", INTERSERVER_PORT)]
        peers = [*ports, ("keeper", KEEPER_PORT), ("raft", RAFT_PORT)]
        k8s.core.v1.Service(
            self.child("headless"),
            metadata={"name": f"{APP}-headless", "namespace": namespace, "labels": labels},
            spec={
                "clusterIP": "None",
                "publishNotReadyAddresses": True,  # Keeper's members must find each other before any is ready
                "selector": {"app.kubernetes.io/name": APP},
                "ports": [{"name": n, "port": p, "targetPort": p} for n, p in peers],
            },
            opts=self.opts(),
        )
        k8s.core.v1.Service(
            self.child("service"),
            metadata={"name": APP, "namespace": namespace, "labels": labels},
            spec={
                "selector": {"app.kubernetes.io/name": APP},
                "ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports[:1]],
            },
            opts=self.opts(),
        )

    def _statefulset(self, namespace: str, labels: dict[str, str], replicas: int, environment: str) -> None:
        server = kube.container(
            APP,
            CLICKHOUSE_IMAGE,
            # KEEPER_ID is the pod's ordinal + 1: Keeper's server ids must be stable and distinct.
            command=[
                "/bin/bash",
                "-c",
                _READ_CREDENTIALS + "export KEEPER_ID=$(( ${HOSTNAME##*-} + 1 )); exec /entrypoint.sh",
            ],
            env=[{"name": "CLICKHOUSE_DB", "value": DATABASE}],
            ports=[
                {"name": n, "containerPort": p}
                for n, p in (
                    ("http", HTTP_PORT),
                    ("native", NATIVE_PORT),
                    ("interserver", INTERSERVER_PORT),
                    ("keeper", KEEPER_PORT),
                    ("raft", RAFT_PORT),
                )
            ],
            resources=kube.resources(f"{SERVER_CPU:g}", "8Gi", cpu_limit="4", memory_limit="16Gi"),
            readiness=kube.http_probe("/ping", HTTP_PORT, period_seconds=10),
            liveness=kube.http_probe("/ping", HTTP_PORT, period_seconds=20),
            # A read-only image; the entrypoint writes its user file to users.d, the server its logs and temp
            # files: each its own emptyDir.
            volumeMounts=[
                {"name": "data", "mountPath": "/var/lib/clickhouse"},
                *({"name": name, "mountPath": path} for name, path in WRITABLE),
                {
                    "name": "config",
                    "mountPath": "/etc/clickhouse-server/config.d/replication.xml",
                    "subPath": "replication.xml",
                },
                {"name": "config", "mountPath": "/docker-entrypoint-initdb.d/init.sql", "subPath": "init.sql"},
                CREDENTIALS_MOUNT,
            ],
        )
        # The server never calls the Kubernetes API; its S3 role (IRSA) is a projected token of its own.
        pod = kube.pod_spec(
            [server],
            security=kube.pod_security(user=CLICKHOUSE_UID, group=CLICKHOUSE_UID, fs_group=CLICKHOUSE_UID),
            service_account=APP,
            volumes=[
                {"name": "config", "configMap": {"name": f"{APP}-config"}},
                *({"name": name, "emptyDir": {"sizeLimit": "1Gi"}} for name, _ in WRITABLE),
                credentials_volume(),
            ],
        )
        kube.stateful_set(
            self.child("statefulset"),
            namespace=namespace,
            app=APP,
            labels=labels,
            replicas=replicas,
            pod=pod,
            volume="data",
            storage_class=STORAGE_CLASS,
            storage_gib=VOLUME_GIB.get(environment, 100),
            pod_management="Parallel",  # Keeper needs a quorum up at once; ordered start would wait
            opts=self.opts(),
        )
        kube.pdb(self.child("pdb"), namespace=namespace, app=APP, opts=self.opts())

    def _policies(self, args: ClickHouseArgs, namespace: str) -> None:
        kube.allow_ingress(
            self.child("netpol"),
            namespace=namespace,
            app=APP,
            port=HTTP_PORT,
            sources=[*args.clients, kube.peer(NS_MONITORING), kube.peer(namespace, APP)],
            opts=self.opts(),
        )
        kube.allow_ingress(
            self.child("netpol", "native"),
            namespace=namespace,
            app=APP,
            port=NATIVE_PORT,
            sources=[kube.peer(namespace, APP), kube.peer(namespace, BACKUP_APP)],  # replicas, and the backup job
            opts=self.opts(),
            name=f"{APP}-native",
        )
        for port_name, port in (("interserver", INTERSERVER_PORT), ("keeper", KEEPER_PORT), ("raft", RAFT_PORT)):
            kube.allow_ingress(
                self.child("netpol", port_name),
                namespace=namespace,
                app=APP,
                port=port,
                sources=[kube.peer(namespace, APP)],  # replicas only
                opts=self.opts(),
                name=f"{APP}-{port_name}",
            )

    def _backups(self, args: ClickHouseArgs, namespace: str, labels: dict[str, str]) -> None:
        """Every ``backup_every_hours``, a full backup of the database into the registry bucket (the RPO)."""
        target = pulumi.Output.from_input(args.backup_bucket).apply(
            lambda bucket: f"https://{bucket}.s3.amazonaws.com/{BACKUP_PREFIX}/{args.region}/"
        )
        script = target.apply(
            lambda url: (
                # BACKUP takes a literal destination: the timestamp is spliced in by the shell.
                f"set -eu; TS=$(date -u +%Y%m%dT%H%M%S); clickhouse-client --host {APP} "
                f'--user "$(cat {CREDENTIALS_DIR}/user)" --password "$(cat {CREDENTIALS_DIR}/password)" '
                f"--query \"BACKUP DATABASE {DATABASE} TO S3('{url}${{TS}}')\""
            )
        )
        k8s.batch.v1.CronJob(
            self.child("backup"),
            metadata={"name": f"{APP}-backup", "namespace": namespace, "labels": labels},
            spec={
                "schedule": f"0 */{args.backup_every_hours} * * *",
                "concurrencyPolicy": "Forbid",
                "successfulJobsHistoryLimit": 3,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": {
                    "spec": {
                        "backoffLimit": 2,
                        "template": {
                            "metadata": {"labels": {**labels, "app.kubernetes.io/name": BACKUP_APP}},
                            "spec": kube.pod_spec(
                                [
                                    kube.container(
                                        "backup",
                                        CLICKHOUSE_IMAGE,
                                        command=["/bin/bash", "-c", script],
                                        resources=kube.resources(
                                            "100m", "128Mi", cpu_limit="500m", memory_limit="512Mi"
                                        ),
                                        volumeMounts=[CREDENTIALS_MOUNT],
                                    )
                                ],
                                security=kube.pod_security(
                                    user=CLICKHOUSE_UID, group=CLICKHOUSE_UID, fs_group=CLICKHOUSE_UID
                                ),
                                volumes=[credentials_volume()],
                                restartPolicy="OnFailure",
                            ),
                        },
                    }
                },
            },
            opts=self.opts(),
        )


def _backup_statements(bucket: str, region: str) -> list[dict[str, Any]]:
    """The servers write and read their backups under the region's prefix, and nothing else of the bucket."""
    prefix = f"{BACKUP_PREFIX}/{region}/"
    return [
        {
            "Effect": "Allow",
            "Action": ["s3:PutObject", "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
            "Resource": [f"arn:aws:s3:::{bucket}/{prefix}*"],
        },
        {
            "Effect": "Allow",
            "Action": ["s3:ListBucket"],
            "Resource": [f"arn:aws:s3:::{bucket}"],
            "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}},
        },
    ]
