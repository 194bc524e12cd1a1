"""Every annotation that only one controller reads is on a cluster where that controller runs.

An annotation is free text to the API server: one that no installed controller reads is accepted and does nothing.
``annotation-placed`` holds each annotation to the kind its reader reads it from; this rule holds the annotations
that only an add-on the cluster may lack reads to that add-on being installed by the program:

- ``iam.amazonaws.com/role``: read from a pod's annotations by kube2iam
  (https://github.com/jtblin/kube2iam#kubernetes-annotation; its chart's notes: "Add an iam.amazonaws.com/role
  annotation to your pods with the role you want them to assume") or kiam (https://github.com/uswitch/kiam), each
  a DaemonSet that intercepts the pods' calls to the instance metadata API. EKS reads no such annotation: its pod
  identity webhook reads only ``eks.amazonaws.com/role-arn`` (and the web identity's other settings) on the
  ServiceAccount (https://github.com/aws/amazon-eks-pod-identity-webhook#eks-walkthrough; its annotation prefix is
  ``eks.amazonaws.com``), and EKS Pod Identity reads its associations. Without kube2iam or kiam the pods' SDKs
  fall back to the instance profile: they run as the node's role, not the one named, and calls that role does not
  allow are denied (AccessDenied).

Judged where the program creates the EKS cluster (not with ``--assume cluster``: an existing cluster may run the
add-on) and no Helm release, DaemonSet or other object of the add-on is in the region. Not flagged: a
ServiceAccount (or pods running as one) that also has the IRSA annotation, or an EKS Pod Identity association with
the ``eks-pod-identity-agent`` add-on in the region: the pods get the role that way.

It cannot see: an add-on installed outside the program on a cluster the program creates (by hand, by GitOps).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, HELM_RELEASE, POD_KINDS, Graph, KubeObject, lookup
from tokenplane.proof.deployability.iam_policy import POD_IDENTITY, ROLE_ANNOTATION

RULE = "annotation-reader-installed"
ADDON = "aws:eks/addon:Addon"
POD_IDENTITY_AGENT = "eks-pod-identity-agent"


@dataclass(frozen=True)
class AddOnReader:
    """An annotation (``key``) only an add-on reads, the names its releases and objects carry, and what happens
    without it."""

    key: str
    names: tuple[str, ...]
    reader: str
    without: str
    fix: str


READERS = (
    AddOnReader(
        "iam.amazonaws.com/role",
        ("kube2iam", "kiam"),
        "kube2iam or kiam",
        "the pods' SDKs fall back to the instance profile and run as the node's role, not the one named, so the calls "
        "only that role allows are denied (AccessDenied)",
        f"for IRSA annotate the ServiceAccount with {ROLE_ANNOTATION}: ROLE_ARN (the role trusting the cluster's "
        "OIDC provider for it), or create an aws.eks.PodIdentityAssociation with the eks-pod-identity-agent add-on; "
        "or install kube2iam/kiam",
    ),
)


def check(graph: Graph) -> Iterator[Finding]:
    if graph.assumed.cluster:
        return
    for region in {r.region for r in graph.of_type(CLUSTER)}:
        for reader in READERS:
            if _installed(graph, region, reader):
                continue
            for obj in graph.kube(region, "ServiceAccount", *POD_KINDS):
                yield from _unread(graph, region, obj, reader)


def _installed(graph: Graph, region: str | None, reader: AddOnReader) -> bool:
    def named(text: object) -> bool:
        return isinstance(text, str) and any(n in text.lower() for n in reader.names)

    releases = graph.of_type(HELM_RELEASE, region)
    if any(named(r.inputs.get("chart")) or named(r.inputs.get("name")) or named(r.name) for r in releases):
        return True
    for obj in graph.kube(region, *POD_KINDS):
        containers = (obj.pod_template().get("spec") or {}).get("containers") or []
        if named(obj.name) or any(isinstance(c, dict) and named(c.get("image")) for c in containers):
            return True
    return False


def _unread(graph: Graph, region: str | None, obj: KubeObject, reader: AddOnReader) -> Iterator[Finding]:
    if obj.kind == "ServiceAccount":
        where, account = "metadata.annotations", obj.name
        annotations = lookup(obj.manifest, "metadata.annotations")
    else:
        where = "metadata.annotations" if obj.kind == "Pod" else "its pod template's annotations"
        account = str((obj.pod_template().get("spec") or {}).get("serviceAccountName") or "default")
        annotations = lookup(obj.pod_template(), "metadata.annotations")
    value = annotations.get(reader.key) if isinstance(annotations, dict) else None
    if value is None or _credentialed(graph, region, obj.namespace, account):
        return
    yield Finding(
        RULE,
        obj.urn,
        f"{obj.kind} {obj.namespace}/{obj.name} carries {reader.key}: {value!r} in {where}, which only "
        f"{reader.reader} reads, and neither runs in this cluster (no Helm release or DaemonSet of it): nothing "
        f"reads the annotation, {reader.without}",
        reader.fix,
    )


def _credentialed(graph: Graph, region: str | None, namespace: str, account: str) -> bool:
    """Whether pods running as ``namespace/account`` get a role another way: IRSA's annotation on the
    ServiceAccount, or a Pod Identity association with the agent add-on."""
    for sa in graph.kube(region, "ServiceAccount"):
        annotations = lookup(sa.manifest, "metadata.annotations")
        named = sa.namespace == namespace and sa.name == account
        if named and isinstance(annotations, dict) and annotations.get(ROLE_ANNOTATION):
            return True
    agent = any(a.inputs.get("addonName") == POD_IDENTITY_AGENT for a in graph.of_type(ADDON, region))
    return agent and any(
        p.inputs.get("namespace") == namespace and p.inputs.get("serviceAccount") == account
        for p in graph.of_type(POD_IDENTITY, region)
    )
