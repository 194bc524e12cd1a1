"""A container whose seccomp profile is ``Localhost`` finds that profile's file on its node.

A ``seccompProfile`` of type ``Localhost`` (the container's, else the pod's) names a file relative to the kubelet's
seccomp root, ``/var/lib/kubelet/seccomp`` (kubelet ``pkg/kubelet/kuberuntime/helpers.go``,
``getSeccompProfile``: ``filepath.Join(seccompProfileRoot, localhostProfile)``); the container runtime reads it when
it creates the container, and a missing file fails creation: ``CreateContainerError`` (containerd: ``cannot load
seccomp profile "/var/lib/kubelet/seccomp/...": open ...: no such file or directory``), retried for ever, so the
workload never becomes ready and pulumi up's await times out. https://kubernetes.io/docs/tutorials/security/seccomp/
("the kubelet ... will fail to start the container if the profile does not exist"). The EKS AMIs (Amazon Linux,
Bottlerocket) ship no profile there: something the program makes must put it there.

What counts as putting it there (any one in the region, and the region is not judged): a pod template with a
hostPath volume at, above or below ``/var/lib/kubelet/seccomp`` (a DaemonSet copying profiles); the Security
Profiles Operator (a Helm release of it, or any object of its API group, ``SeccompProfile`` included); a launch
template of a node group whose user data mentions ``seccomp``.

Cannot see: custom AMIs (``amiType`` CUSTOM or a launch template's ``imageId``, which may bake the profile in),
launch templates made outside the program, Karpenter or self-managed nodes (a region with NodePools is skipped),
profiles copied by something outside the program (a DaemonSet of another stack); a pod that lands on no managed
node group the program declares is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, NODE_GROUP, Graph
from tokenplane.proof.deployability.image_files import under
from tokenplane.proof.deployability.node_disk import known_ami
from tokenplane.proof.deployability.node_user_data import user_data_text
from tokenplane.proof.deployability.pod_sysctls import OTHER_NODE_KINDS
from tokenplane.proof.deployability.scheduling import NodeGroup, lands_on

RULE = "seccomp-profile-on-node"
SECCOMP_ROOT = "/var/lib/kubelet/seccomp"
SPO_GROUP = "security-profiles-operator.x-k8s.io"


def _profile(context: Any) -> Mapping[str, Any] | None:
    profile = context.get("seccompProfile") if isinstance(context, Mapping) else None
    return profile if isinstance(profile, Mapping) else None


def localhost_profiles(pod: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(container, localhostProfile) for each container whose effective seccomp profile is a known Localhost one."""
    pod_profile = _profile(pod.get("securityContext"))
    found: list[tuple[str, str]] = []
    for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
        if not isinstance(container, Mapping):
            continue
        profile = _profile(container.get("securityContext")) or pod_profile
        if profile is None or profile.get("type") != "Localhost":
            continue
        path = profile.get("localhostProfile")
        if isinstance(path, str) and path.strip():
            found.append((str(container.get("name")), path))
    return found


def _installs_profiles(graph: Graph, region: str) -> bool:
    for release in graph.of_type(HELM_RELEASE, region):
        if "security-profiles-operator" in f"{release.inputs.get('chart')} {release.inputs.get('name')}":
            return True
    for obj in graph.kube_objects:
        if obj.resource.region == region and SPO_GROUP in str(obj.manifest.get("apiVersion") or ""):
            return True
    for workload in graph.pod_bearers(region):
        pod = workload.pod_template().get("spec")
        for volume in (pod.get("volumes") if isinstance(pod, dict) else None) or []:
            host = volume.get("hostPath") if isinstance(volume, Mapping) else None
            path = host.get("path") if isinstance(host, Mapping) else None
            if host is not None and (
                not isinstance(path, str) or under(path, SECCOMP_ROOT) or under(SECCOMP_ROOT, path)
            ):
                return True  # a hostPath there (or one not known at render time)
    return False


def _bare_eks_ami(graph: Graph, group: NodeGroup) -> bool:
    """Whether the group's nodes boot an EKS AMI whose user data puts no seccomp profile on them."""
    known = known_ami(graph, group.resource)
    if known is None or known[0] not in ("AL", "BOTTLEROCKET"):
        return False
    template = known[1]
    raw = template.inputs.get("userData") if template is not None else None
    if raw is None:
        return True
    return isinstance(raw, str) and "seccomp" not in user_data_text(raw).lower()


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        if graph.kube(region, *OTHER_NODE_KINDS) or _installs_profiles(graph, region):
            continue
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        for workload in graph.pod_bearers(region):
            pod = workload.pod_template().get("spec")
            if not isinstance(pod, dict):
                continue
            profiles = localhost_profiles(pod)
            if not profiles:
                continue
            landing = [g for g in groups if lands_on(pod, g)]
            if not landing or not all(_bare_eks_ami(graph, g) for g in landing):
                continue
            container, path = profiles[0]
            yield Finding(
                RULE,
                workload.urn,
                f"{workload.kind} {workload.namespace}/{workload.name}'s container {container} uses the Localhost "
                f"seccomp profile {path}, read from {SECCOMP_ROOT}/{path.lstrip('/')} on its node, and nothing in "
                "the program puts it on the nodes it may land on "
                f"({', '.join(g.resource.name for g in landing)}: EKS AMIs, no DaemonSet with a hostPath there, "
                "no Security Profiles Operator, no user data writing it): the container is never created "
                '(CreateContainerError: "cannot load seccomp profile ... no such file or directory") and pulumi '
                "up's await times out",
                "use seccompProfile RuntimeDefault, or install the profile on every node first (the Security "
                "Profiles Operator's SeccompProfile, a DaemonSet copying it into a hostPath under "
                f"{SECCOMP_ROOT}, or the node group's launch-template user data)",
            )
