"""A managed node group runs its cluster's Kubernetes version, and an AMI release of that version.

CreateNodegroup's ``version``: "By default, the Kubernetes version of the cluster is used, and this is the only
accepted specified value" (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html): a node
group named with another version is refused (InvalidParameterException) and never created. A kubelet newer than its
API server is outside Kubernetes' skew policy in any case (https://kubernetes.io/releases/version-skew-policy/:
"kubelet must not be newer than kube-apiserver"), so UpdateNodegroupVersion refuses one too. An older one is what a
control-plane upgrade leaves behind until the nodes follow, allowed up to three minors (1.28 and later): only a lag
beyond that is judged, since a program that upgrades its cluster before its pinned node groups is a staged upgrade.

``releaseVersion`` names an EKS-optimized AMI release: for Amazon Linux it is ``<kubernetes>-<date>``
(``1.35.0-20260101``), and one of another Kubernetes minor than the node group's is refused the same way
(https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html, ``releaseVersion``: "of the
Kubernetes version"; the releases: awslabs/amazon-eks-ami CHANGELOG). Bottlerocket's releases are its own OS
versions: not judged.

Cannot see: a cluster version left to EKS's default (the node group's is then not compared), nor a cluster the program
does not create.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, NODE_GROUP, Graph

RULE = "node-group-version"
MINOR = re.compile(r"^(\d+)\.(\d+)")
# kubelet may be up to three minors older than kube-apiserver (Kubernetes 1.28 and later; EKS's own pages say the
# same for its node groups: https://docs.aws.amazon.com/eks/latest/userguide/update-managed-node-group.html).
MAX_SKEW = 3
AMAZON_LINUX_RELEASE = re.compile(r"^(\d+\.\d+)\.\d+-\d{8}$")


def _minor(version: str) -> tuple[int, int] | None:
    match = MINOR.match(version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _skewed(nodes: tuple[int, int], cluster: tuple[int, int]) -> bool:
    """Nodes ahead of the control plane, or further behind than the skew policy allows."""
    return nodes > cluster or (nodes[0] == cluster[0] and cluster[1] - nodes[1] > MAX_SKEW) or nodes[0] != cluster[0]


def check(graph: Graph) -> Iterator[Finding]:
    for group in graph.of_type(NODE_GROUP):
        clusters = [c for c in graph.referenced(group, "clusterName") if c.type == CLUSTER]
        cluster_version = clusters[0].inputs.get("version") if len(clusters) == 1 else None
        cluster_minor = _minor(cluster_version) if isinstance(cluster_version, str) else None
        version = group.inputs.get("version")
        minor = _minor(version) if isinstance(version, str) else None
        if minor is not None and cluster_minor is not None and _skewed(minor, cluster_minor):
            ahead = minor > cluster_minor
            why = (
                "a kubelet newer than its API server is outside Kubernetes' version skew policy, and CreateNodegroup "
                "accepts only the cluster's own version (InvalidParameterException): the node group is never created"
                if ahead
                else f"a kubelet more than {MAX_SKEW} minors older than its API server is outside Kubernetes' version "
                "skew policy, and EKS creates node groups only at the cluster's own version (InvalidParameterException)"
            )
            yield Finding(
                RULE,
                group.urn,
                f"node group {group.name} asks for Kubernetes {version} on cluster {clusters[0].name}, which runs "
                f"{cluster_version}: {why}",
                "drop version (the node group follows the cluster), or set it to the cluster's "
                f"{cluster_version}" + ("; upgrade the control plane first, then the node groups" if ahead else ""),
            )
        release = group.inputs.get("releaseVersion")
        ami = str(group.inputs.get("amiType") or "")
        expected = minor or cluster_minor
        if not isinstance(release, str) or ami.startswith(("BOTTLEROCKET", "WINDOWS", "CUSTOM")) or expected is None:
            continue
        match = AMAZON_LINUX_RELEASE.match(release)
        if match is None:
            continue  # not an Amazon Linux release's form: unknown, not judged
        release_minor = _minor(match.group(1))
        if release_minor != expected:
            of = ".".join(map(str, expected))
            yield Finding(
                RULE,
                group.urn,
                f"node group {group.name} pins AMI release {release}, built for Kubernetes {match.group(1)}, on "
                f"Kubernetes {of}: EKS takes only a release of the node group's own version "
                "(InvalidParameterException), so the node group is not created (or not updated)",
                f"drop release_version (EKS picks the newest {of} release), or pin a {of} release "
                "(aws ssm get-parameter --name /aws/service/eks/optimized-ami/"
                f"{of}/amazon-linux-2023/x86_64/standard/recommended/release_version)",
            )
