"""VectorDb: Qdrant on the cluster, holding the semantic cache and retrieval collections."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from tokenplane.components import kube
from tokenplane.components.arguments import EnvironmentName, check_environment
from tokenplane.components.base import Component
from tokenplane.components.kube import Namespace
from tokenplane.components.naming import NS_BATCH, NS_GATEWAY, NS_MONITORING, app_labels
from tokenplane.components.pins import QDRANT_IMAGE
from tokenplane.spec import Environment

APP = "qdrant"
HTTP_PORT = 6333
GRPC_PORT = 6334
QDRANT_UID, QDRANT_FS_GROUP = 1000, 3000  # the user of the official image; its storage volume is group-writable
P2P_PORT = 6335
STORAGE_CLASS = "gp3-encrypted"
VOLUME_GIB = {"prod": 200, "staging": 100, "dev": 20}


@dataclass(frozen=True, kw_only=True)
class VectorDbArgs:
    """Qdrant in one cluster.

    Args:
        environment: ``prod`` runs three replicas in distributed mode, ``dev`` and ``staging`` one; any other
            value raises ``ValueError``.
        namespace: where its objects go (``Namespace.create`` or ``Namespace.existing``); its volumes use the
            ``gp3-encrypted`` StorageClass that ``ClusterAddons`` creates.
        clients: NetworkPolicy peers allowed to call it; default the gateway, batch and monitoring namespaces.
    """

    environment: EnvironmentName | Environment
    namespace: Namespace
    clients: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        check_environment(type(self).__name__, self.environment)


DEFAULT_CLIENTS = (kube.peer(NS_GATEWAY), kube.peer(NS_BATCH), kube.peer(NS_MONITORING))


class VectorDb(Component):
    """A Qdrant StatefulSet: three replicas in distributed mode in prod, one elsewhere."""

    MODULE = "vector_db"

    url: str

    def __init__(self, name: str, args: VectorDbArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        namespace = args.namespace.name
        self.wait_for(*args.namespace.after())
        prod = args.environment == "prod"
        replicas = 3 if prod else 1
        labels = app_labels(APP, "vector-db")
        env = [{"name": "QDRANT__SERVICE__GRPC_PORT", "value": str(GRPC_PORT)}]
        command = ["./entrypoint.sh"]
        if prod:
            # Distributed mode: replicas find the first pod through the headless service.
            env.append({"name": "QDRANT__CLUSTER__ENABLED", "value": "true"})
            command = [
                "/bin/bash",
                "-c",
                f'if [ "${{HOSTNAME##*-}}" = 0 ]; then exec ./entrypoint.sh --uri http://${{HOSTNAME}}.{APP}-headless:{P2P_PORT}; '
                f"else exec ./entrypoint.sh --bootstrap http://{APP}-0.{APP}-headless:{P2P_PORT}; fi",
            ]
        ports = [("http", HTTP_PORT), ("grpc", GRPC_PORT), ("p2p", P2P_PORT)]
        k8s.core.v1.Service(
            self.child("headless"),
            metadata={"name": f"{APP}-headless", "namespace": namespace, "labels": labels},
            spec={
                "clusterIP": "None",
                "publishNotReadyAddresses": True,  # peers must find each other before they are ready
                "selector": {"app.kubernetes.io/name": APP},
                "ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports],
            },
            opts=self.opts(),
        )
        k8s.core.v1.Service(
            self.child("service"),
            metadata={"name": APP, "namespace": namespace, "labels": labels},
            spec={
                "selector": {"app.kubernetes.io/name": APP},
                "ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports[:2]],
            },
            opts=self.opts(),
        )
        qdrant = kube.container(
            APP,
            QDRANT_IMAGE,
            command=command,
            env=env,
            ports=[{"name": n, "containerPort": p} for n, p in ports],
            resources=kube.resources("1", "4Gi", cpu_limit="2", memory_limit="8Gi"),
            readiness=kube.http_probe("/readyz", HTTP_PORT, period_seconds=10),
            liveness=kube.http_probe("/livez", HTTP_PORT, period_seconds=20),
            read_only_root=False,  # Qdrant writes snapshot and WAL temp files in the image's /qdrant tree
            volumeMounts=[{"name": "storage", "mountPath": "/qdrant/storage"}],
        )
        # Qdrant never calls the Kubernetes API (its peers are found through the headless Service).
        pod = kube.pod_spec([qdrant], security=kube.pod_security(user=QDRANT_UID, fs_group=QDRANT_FS_GROUP))
        kube.stateful_set(
            self.child("statefulset"),
            namespace=namespace,
            app=APP,
            labels=labels,
            replicas=replicas,
            pod=pod,
            volume="storage",
            storage_class=STORAGE_CLASS,
            storage_gib=VOLUME_GIB.get(args.environment, 100),
            pod_management="OrderedReady",
            annotations={"prometheus.io/scrape": "true", "prometheus.io/port": str(HTTP_PORT)},
            opts=self.opts(),
        )
        kube.pdb(self.child("pdb"), namespace=namespace, app=APP, opts=self.opts())
        kube.allow_ingress(
            self.child("netpol"),
            namespace=namespace,
            app=APP,
            port=HTTP_PORT,
            sources=list(args.clients if args.clients is not None else DEFAULT_CLIENTS),
            opts=self.opts(),
        )
        if prod:  # peers replicate to each other over the p2p port
            kube.allow_ingress(
                self.child("netpol-p2p"),
                namespace=namespace,
                app=APP,
                port=P2P_PORT,
                sources=[kube.peer(namespace, APP)],
                opts=self.opts(),
                name=f"{APP}-p2p",
            )
        self.url = f"http://{APP}.{namespace}.svc:{HTTP_PORT}"
        self.register_outputs({"url": self.url, "replicas": replicas})
