"""Small builders for the Kubernetes objects every workload needs, so each is written once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

PROMETHEUS_URL = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
KEDA_API_VERSION = "keda.sh/v1alpha1"
SERVING_UID = 10001  # the serving image's unprivileged user (serving/images/Dockerfile)


def pod_security(*, user: int = SERVING_UID, group: int | None = None, fs_group: int | None = None) -> dict[str, Any]:
    """A pod ``securityContext``: never root, and the runtime's default seccomp profile.

    ``fs_group`` makes mounted volumes writable by ``group``, for images that write to a volume as their user.
    """
    context: dict[str, Any] = {"runAsNonRoot": True, "runAsUser": user}
    if group is not None:
        context["runAsGroup"] = group
    if fs_group is not None:
        context["fsGroup"] = fs_group
    context["seccompProfile"] = {"type": "RuntimeDefault"}
    return context


def container_security(*, read_only_root: bool = True) -> dict[str, Any]:
    """A container ``securityContext``: no privilege escalation, no capabilities, an immutable image.

    ``read_only_root=False`` only for an image that writes outside its mounted volumes.
    """
    context: dict[str, Any] = {"runAsNonRoot": True, "allowPrivilegeEscalation": False}
    if read_only_root:
        context["readOnlyRootFilesystem"] = True
    context["capabilities"] = {"drop": ["ALL"]}
    return context


@dataclass(frozen=True)
class Namespace:
    """The namespace a component deploys into: its name and, where the program creates it, the resource.

    Components take one explicitly, so that nothing lands in a namespace no one creates (the API server
    rejects such objects; the mocks would not). Their children wait for ``resource``.

    Args:
        name: the namespace's name.
        resource: the ``Namespace`` resource that creates it; None for one that exists already.
    """

    name: str
    resource: pulumi.Resource | None = None

    @classmethod
    def create(
        cls, name: str, *, logical: str, opts: pulumi.ResourceOptions, labels: dict[str, str] | None = None
    ) -> Namespace:
        """Create ``name`` with a default-deny ingress policy; workloads in it open only what they need."""
        return cls(name, namespace(name, logical, opts, labels=labels))

    @classmethod
    def existing(cls, name: str) -> Namespace:
        """A namespace the cluster already has (``kube-system``, or one another stack owns)."""
        return cls(name)

    def after(self) -> list[pulumi.Resource]:
        """What a child in this namespace waits for."""
        return [self.resource] if self.resource is not None else []


# The AWS Load Balancer Controller injects target-health readiness gates into the pods of namespaces so labelled
# (https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/deploy/pod_readiness_gate/).
READINESS_GATE_INJECT = "elbv2.k8s.aws/pod-readiness-gate-inject"


def namespace(
    name: str, logical: str, opts: pulumi.ResourceOptions, *, labels: dict[str, str] | None = None
) -> k8s.core.v1.Namespace:
    """A namespace that denies all ingress by default; workloads open only what they need."""
    ns = k8s.core.v1.Namespace(
        logical,
        metadata={
            "name": name,
            "labels": {
                "kubernetes.io/metadata.name": name,
                "app.kubernetes.io/part-of": "tokenplane",
                **(labels or {}),
            },
        },
        opts=opts,
    )
    k8s.networking.v1.NetworkPolicy(
        f"{logical}-default-deny",
        metadata={"name": "default-deny-ingress", "namespace": name},
        spec={"podSelector": {}, "policyTypes": ["Ingress"]},
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[ns])),
    )
    return ns


def allow_ingress(
    logical: str,
    *,
    namespace: str,
    app: str,
    port: int,
    sources: list[dict[str, Any]],
    opts: pulumi.ResourceOptions,
    name: str | None = None,
) -> k8s.networking.v1.NetworkPolicy:
    """Allow ingress to ``app`` on ``port`` from the given peers only (an empty list means from anywhere)."""
    rule: dict[str, Any] = {"ports": [{"port": port, "protocol": "TCP"}]}
    if sources:
        rule["from"] = sources
    return k8s.networking.v1.NetworkPolicy(
        logical,
        metadata={"name": name or f"{app}-ingress", "namespace": namespace},
        spec={
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
            "policyTypes": ["Ingress"],
            "ingress": [rule],
        },
        opts=opts,
    )


def peer(namespace: str, app: str | None = None) -> dict[str, Any]:
    """A NetworkPolicy peer: pods of ``app`` in ``namespace``, or the whole namespace."""
    out: dict[str, Any] = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}
    if app is not None:
        out["podSelector"] = {"matchLabels": {"app.kubernetes.io/name": app}}
    return out


def pdb(logical: str, *, namespace: str, app: str, opts: pulumi.ResourceOptions) -> k8s.policy.v1.PodDisruptionBudget:
    """At most one pod of ``app`` down at a time for voluntary disruptions (node drains, upgrades)."""
    spec: dict[str, Any] = {"maxUnavailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": app}}}
    return k8s.policy.v1.PodDisruptionBudget(
        logical, metadata={"name": app, "namespace": namespace}, spec=spec, opts=opts
    )


def scaled_object(
    logical: str,
    *,
    namespace: str,
    target: str,
    min_replicas: int,
    max_replicas: int,
    cooldown_seconds: int,
    triggers: list[dict[str, Any]],
    opts: pulumi.ResourceOptions,
) -> k8s.apiextensions.CustomResource:
    """A KEDA ScaledObject. Several triggers act as OR: the HPA takes the largest replica count."""
    return k8s.apiextensions.CustomResource(
        logical,
        api_version=KEDA_API_VERSION,
        kind="ScaledObject",
        metadata={"name": target, "namespace": namespace},
        spec={
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicaCount": min_replicas,
            "maxReplicaCount": max_replicas,
            "pollingInterval": 15,
            "cooldownPeriod": cooldown_seconds,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        # Scale out at once, scale in one replica a minute after the delay: GPUs are slow to return.
                        "scaleUp": {
                            "stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 60}],
                        },
                        "scaleDown": {
                            "stabilizationWindowSeconds": min(cooldown_seconds, 3600),
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                        },
                    }
                }
            },
            "triggers": triggers,
        },
        opts=opts,
    )


def prometheus_trigger(name: str, query: str, threshold: float) -> dict[str, Any]:
    """A KEDA Prometheus trigger whose metric is compared as a per-pool value (metricType Value)."""
    return {
        "type": "prometheus",
        "name": name,
        "metricType": "Value",
        "metadata": {"serverAddress": PROMETHEUS_URL, "query": query, "threshold": f"{threshold:g}"},
    }


def helm_release(
    logical: str,
    pin: tuple[str, str, str],
    *,
    namespace: str,
    values: dict[str, Any],
    opts: pulumi.ResourceOptions,
) -> k8s.helm.v3.Release:
    """A Helm release of a pinned chart ((chart, version, repository) from ``components.pins``), named as the chart."""
    chart, version, repo = pin
    return k8s.helm.v3.Release(
        logical,
        name=chart,
        chart=chart,
        version=version,
        namespace=namespace,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repo),
        values=values,
        opts=opts,
    )


# --- workload builders: the container, probe, pod and StatefulSet blocks every component repeats ---------


def resources(
    cpu: str, memory: str, *, cpu_limit: str | None = None, memory_limit: str | None = None
) -> dict[str, Any]:
    """A container's requests and limits; a limit left out equals its request (Guaranteed for that resource)."""
    return {
        "requests": {"cpu": cpu, "memory": memory},
        "limits": {"cpu": cpu_limit or cpu, "memory": memory_limit or memory},
    }


def http_probe(
    path: str, port: int | str, *, period_seconds: int, failure_threshold: int | None = None
) -> dict[str, Any]:
    """An HTTP GET probe; ``failure_threshold`` only where the kubelet's default (3) restarts too eagerly."""
    probe: dict[str, Any] = {"httpGet": {"path": path, "port": port}, "periodSeconds": period_seconds}
    if failure_threshold is not None:
        probe["failureThreshold"] = failure_threshold
    return probe


def container(
    name: str,
    image: pulumi.Input[str],
    *,
    resources: dict[str, Any],
    readiness: dict[str, Any] | None = None,
    liveness: dict[str, Any] | None = None,
    read_only_root: bool = True,
    **fields: Any,
) -> dict[str, Any]:
    """A container hardened as ``container_security`` says, with its resources and probes.

    ``fields`` are the container's other fields as the Kubernetes API names them (``command``, ``env``,
    ``envFrom``, ``ports``, ``volumeMounts``, ``lifecycle``).
    """
    out: dict[str, Any] = {"name": name, "image": image, **fields, "resources": resources}
    if readiness is not None:
        out["readinessProbe"] = readiness
    if liveness is not None:
        out["livenessProbe"] = liveness
    out["securityContext"] = container_security(read_only_root=read_only_root)
    return out


def zone_spread(app: str) -> list[dict[str, Any]]:
    """Spread ``app``'s pods evenly over the availability zones; an AZ outage takes at most its share."""
    return [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
        }
    ]


def pod_spec(
    containers: list[dict[str, Any]],
    *,
    security: dict[str, Any],
    service_account: str | None = None,
    volumes: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A pod spec that mounts no service-account token: tokenplane's workloads never call the Kubernetes API.

    IRSA still works: the EKS pod identity webhook projects the AWS token as a volume of its own. Nor does it
    get the service-link variables (``<SERVICE>_PORT=tcp://...`` for every Service in the namespace): the
    workloads find their peers by DNS, and a Service's name must not be able to set a program's setting.
    ``security`` is a ``pod_security``; ``fields`` are the pod's other fields (``terminationGracePeriodSeconds``, ...).
    """
    out: dict[str, Any] = {}
    if service_account is not None:
        out["serviceAccountName"] = service_account
    out["automountServiceAccountToken"] = False
    out["enableServiceLinks"] = False
    out.update(fields)
    out["securityContext"] = security
    out["containers"] = containers
    if volumes:
        out["volumes"] = volumes
    return out


def stateful_set(
    logical: str,
    *,
    namespace: str,
    app: str,
    labels: dict[str, str],
    replicas: int,
    pod: dict[str, Any],
    volume: str,
    storage_class: str,
    storage_gib: int,
    pod_management: str,
    opts: pulumi.ResourceOptions,
    annotations: dict[str, str] | None = None,
) -> k8s.apps.v1.StatefulSet:
    """A StatefulSet of ``app`` behind its ``<app>-headless`` Service, one ReadWriteOnce volume per replica,
    spread over the zones."""
    template: dict[str, Any] = {"labels": labels}
    if annotations:
        template["annotations"] = annotations
    return k8s.apps.v1.StatefulSet(
        logical,
        metadata={"name": app, "namespace": namespace, "labels": labels},
        spec={
            "serviceName": f"{app}-headless",
            "replicas": replicas,
            "podManagementPolicy": pod_management,
            "selector": {"matchLabels": {"app.kubernetes.io/name": app}},
            "template": {"metadata": template, "spec": {**pod, "topologySpreadConstraints": zone_spread(app)}},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": volume},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": storage_class,
                        "resources": {"requests": {"storage": f"{storage_gib}Gi"}},
                    },
                }
            ],
        },
        opts=opts,
    )


def deployment(
    logical: str,
    *,
    namespace: str,
    app: str,
    labels: dict[str, str],
    replicas: int,
    pod: dict[str, Any],
    opts: pulumi.ResourceOptions,
    pod_annotations: dict[str, str] | None = None,
    annotations: dict[str, pulumi.Input[str]] | None = None,
    strategy: dict[str, Any] | None = None,
) -> k8s.apps.v1.Deployment:
    """A Deployment of ``app`` selecting its pods by name; ``annotations`` go on the Deployment itself."""
    metadata: dict[str, Any] = {"name": app, "namespace": namespace, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    template: dict[str, Any] = {"labels": labels}
    if pod_annotations:
        template["annotations"] = pod_annotations
    spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": {"app.kubernetes.io/name": app}}}
    if strategy is not None:
        spec["strategy"] = strategy
    spec["template"] = {"metadata": template, "spec": pod}
    return k8s.apps.v1.Deployment(logical, metadata=metadata, spec=spec, opts=opts)
