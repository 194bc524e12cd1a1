"""Every annotation a controller acts on sits on the kind of object that controller reads it from.

An annotation is free text to the API server: any object takes any annotation, so one put on the wrong object is
accepted and never read. The controllers below each read theirs from one kind, and ignore it elsewhere; in
particular a workload's own ``metadata.annotations`` are not copied to its pods (only the pod template's are:
https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#pod-template), so an annotation meant for
the pods does nothing on the Deployment.

- ``prometheus.io/*``: Prometheus's ``kubernetes_sd_configs`` expose a pod's annotations to the ``role: pod``
  job and a Service's to the ``role: endpoints``/``service`` jobs
  (https://prometheus.io/docs/prometheus/latest/configuration/configuration/#kubernetes_sd_config); no role
  reads a workload's.
- ``cluster-autoscaler.kubernetes.io/safe-to-evict``: the Cluster Autoscaler reads the pod's
  (https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/FAQ.md); ``karpenter.sh/do-not-disrupt``:
  Karpenter reads the pod's or the node's.
- ``eks.amazonaws.com/role-arn`` (and the web identity's other settings): EKS's pod identity webhook reads the
  ServiceAccount's and mutates the pods that run as it
  (https://docs.aws.amazon.com/eks/latest/userguide/associate-service-account-role.html); on a pod or a
  workload it gives no credentials.
- ``service.beta.kubernetes.io/*``: the Service's load balancer; ``alb.ingress.kubernetes.io/*``: the Ingress's
  (and, for a backend's settings, its Service's); ``kubernetes.io/ingress.class``: the Ingress's.
- ``storageclass.kubernetes.io/is-default-class`` and ``ingressclass.kubernetes.io/is-default-class``: the class's
  own.

Only these annotations are judged: any other may have a reader the checks do not know.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import POD_KINDS, Graph, KubeObject

RULE = "annotation-placed"


@dataclass(frozen=True)
class Reader:
    """Who reads an annotation (keys equal to ``key``, or under it where it ends in '/') and from which kinds."""

    key: str
    kinds: frozenset[str]
    reader: str

    def reads(self, key: str) -> bool:
        return key.startswith(self.key) if self.key.endswith("/") else key == self.key


_POD_OR_SERVICE = frozenset({"Pod", "Service", "Endpoints"})
_SERVICE_ACCOUNT = frozenset({"ServiceAccount"})
READERS = (
    Reader(
        "prometheus.io/", _POD_OR_SERVICE, "Prometheus's kubernetes_sd (role pod reads pods', role endpoints Services')"
    ),
    Reader("cluster-autoscaler.kubernetes.io/safe-to-evict", frozenset({"Pod"}), "the Cluster Autoscaler"),
    Reader("karpenter.sh/do-not-disrupt", frozenset({"Pod", "Node"}), "Karpenter"),
    Reader("eks.amazonaws.com/role-arn", _SERVICE_ACCOUNT, "EKS's pod identity webhook"),
    Reader("eks.amazonaws.com/sts-regional-endpoints", _SERVICE_ACCOUNT, "EKS's pod identity webhook"),
    Reader("eks.amazonaws.com/token-expiration", _SERVICE_ACCOUNT, "EKS's pod identity webhook"),
    Reader("eks.amazonaws.com/audience", _SERVICE_ACCOUNT, "EKS's pod identity webhook"),
    Reader("service.beta.kubernetes.io/", frozenset({"Service"}), "the Service's load balancer controller"),
    Reader("alb.ingress.kubernetes.io/", frozenset({"Ingress", "Service"}), "the AWS Load Balancer Controller"),
    Reader("kubernetes.io/ingress.class", frozenset({"Ingress"}), "the ingress controllers"),
    Reader("storageclass.kubernetes.io/is-default-class", frozenset({"StorageClass"}), "the claims' admission plugin"),
    Reader(
        "ingressclass.kubernetes.io/is-default-class", frozenset({"IngressClass"}), "the Ingresses' admission plugin"
    ),
)


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube_objects:
        yield from _misplaced(obj, obj.kind, _annotations(obj.manifest.get("metadata")), "metadata.annotations")
        if obj.kind in POD_KINDS and obj.kind != "Pod":
            template = obj.pod_template().get("metadata")
            yield from _misplaced(obj, "Pod", _annotations(template), "its pod template's annotations")


def _misplaced(obj: KubeObject, kind: str, annotations: dict[str, str], where: str) -> Iterator[Finding]:
    pod_annotations = _annotations(obj.pod_template().get("metadata")) if obj.kind in POD_KINDS else {}
    for key, value in annotations.items():
        reader = next((r for r in READERS if r.reads(key)), None)
        if reader is None or kind in reader.kinds:
            continue
        if "Pod" in reader.kinds and kind != "Pod" and pod_annotations.get(key) == value:
            continue  # also on the pod template, where it is read: the workload's copy is only redundant
        yield Finding(
            RULE,
            obj.urn,
            f"{obj.kind} {obj.namespace}/{obj.name} carries {key}: {value!r} in {where}, where {reader.reader} never "
            f"reads it (it reads it from a {' or '.join(sorted(reader.kinds))}): the API server accepts any "
            "annotation anywhere, so the setting silently does nothing",
            _fix(obj, key, reader),
        )


def _fix(obj: KubeObject, key: str, reader: Reader) -> str:
    if "Pod" in reader.kinds:
        return (
            f"put {key} on the pod template (spec.template.metadata.annotations; pod_annotations= in components.kube)"
        )
    if reader.kinds == _SERVICE_ACCOUNT:
        account = obj.pod_template().get("spec", {}).get("serviceAccountName") if obj.kind in POD_KINDS else None
        return f"annotate the ServiceAccount {account or 'the pods run as'} with {key}, and run the pods as it"
    return f"move {key} to the {' or '.join(sorted(reader.kinds))} it configures"


def _annotations(metadata: object) -> dict[str, str]:
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return {str(k): str(v) for k, v in annotations.items()} if isinstance(annotations, dict) else {}
