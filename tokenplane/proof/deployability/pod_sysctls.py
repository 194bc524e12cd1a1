"""Every pod's sysctls are ones the kubelet of a node it may land on admits.

A pod's ``securityContext.sysctls`` are checked by the kubelet when the pod is bound to its node, not by the API
server: a name outside the kubelet's safe set and outside its ``allowedUnsafeSysctls`` is refused (pod status
Failed, reason ``SysctlForbidden``, ``forbidden sysctl: "net.core.somaxconn" not allowlisted``;
kubernetes/kubernetes pkg/kubelet/sysctl/allowlist.go, ``validateSysctl`` and ``Admit``), and so is a
network-namespaced sysctl (``net.*``) in a ``hostNetwork`` pod or an IPC one (``kernel.shm*``, ``kernel.msg*``,
``kernel.sem``, ``fs.mqueue.*``) in a ``hostIPC`` pod, allowlisted or not (``not allowed with host net enabled``).
The scheduler knows nothing of sysctls, so the ReplicaSet's replacement lands on such a node again: the Deployment
never becomes available and pulumi up's await times out. https://kubernetes.io/docs/tasks/administer-cluster/sysctl-cluster/

The safe set, by Kubernetes minor (pkg/kubelet/sysctl/safe_sysctls.go; https://kubernetes.io/docs/reference/node/
kernel-version-requirements/, "Pod sysctls"): kernel.shm_rmid_forced, net.ipv4.ip_local_port_range,
net.ipv4.tcp_syncookies, net.ipv4.ping_group_range and net.ipv4.ip_unprivileged_port_start always;
net.ipv4.ip_local_reserved_ports since 1.27; net.ipv4.tcp_keepalive_time, tcp_fin_timeout, tcp_keepalive_intvl and
tcp_keepalive_probes since 1.29; net.ipv4.tcp_rmem and tcp_wmem since 1.32. The kernel versions these need (4.15 at
most) are below every EKS AMI's. The cluster's minor is its ``version``; none set is EKS's default, a recent one.
A name may be written with slashes (``net/ipv4/ip_local_port_range``); the kubelet reads it with dots.

A node's ``allowedUnsafeSysctls``: EKS AMIs set none. A managed node group's launch template user data may add some
(AL2023 nodeadm ``spec.kubelet.config.allowedUnsafeSysctls`` or a ``--allowed-unsafe-sysctls`` flag, AL2's
bootstrap ``--kubelet-extra-args``, Bottlerocket's ``settings.kubernetes.allowed-unsafe-sysctls``; a pattern may end
in ``*``). A pod is judged on the node groups its selectors and tolerations let it land on (``scheduling``): on
one that does not admit its sysctls its pods are refused.

Cannot see: node groups whose user data is unknown at render time or comes from a launch template made elsewhere
(taken to allow any sysctl), regions where Karpenter makes nodes (not judged), Kubernetes minors newer than the
table (not judged), sysctls a container runtime refuses beyond the kubelet.
"""

from __future__ import annotations

import email
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, NODE_GROUP, Graph, KubeObject
from tokenplane.proof.deployability.node_disk import launch_template
from tokenplane.proof.deployability.node_user_data import user_data_text
from tokenplane.proof.deployability.scheduling import NodeGroup, lands_on

RULE = "sysctls-allowed"
# (the first Kubernetes minor whose kubelet counts them safe, the sysctls): pkg/kubelet/sysctl/safe_sysctls.go.
SAFE_BY_MINOR: tuple[tuple[tuple[int, int], frozenset[str]], ...] = (
    (
        (1, 0),
        frozenset(
            {
                "kernel.shm_rmid_forced",
                "net.ipv4.ip_local_port_range",
                "net.ipv4.tcp_syncookies",
                "net.ipv4.ping_group_range",
                "net.ipv4.ip_unprivileged_port_start",
            }
        ),
    ),
    ((1, 27), frozenset({"net.ipv4.ip_local_reserved_ports"})),
    (
        (1, 29),
        frozenset(
            {
                "net.ipv4.tcp_keepalive_time",
                "net.ipv4.tcp_fin_timeout",
                "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes",
            }
        ),
    ),
    ((1, 32), frozenset({"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"})),
)
NEWEST_READ = (1, 35)  # the newest minor the table was read against; a newer one is not judged
MINOR = re.compile(r"^(\d+)\.(\d+)")
OTHER_NODE_KINDS = ("NodePool", "Provisioner", "EC2NodeClass")
UNSAFE_FLAG = re.compile(r"--allowed-unsafe-sysctls[= ]+['\"]?([^\s'\"]+)")
MENTIONS = re.compile(r"allowedunsafesysctls|allowed-unsafe-sysctls", re.IGNORECASE)


def safe_sysctls(minor: tuple[int, int]) -> frozenset[str]:
    """The kubelet's safe sysctls at Kubernetes ``minor`` (also Pod Security baseline's allowed set at it)."""
    return frozenset().union(*(names for since, names in SAFE_BY_MINOR if minor >= since))


def dotted(name: str) -> str:
    """A sysctl name as the kubelet reads it: slashes as separators when the first separator is one
    (convertSysctlVariableToDotsSeparator: ``net/ipv4/conf/eth0.100/rp_filter`` -> ``net.ipv4.conf.eth0/100.rp_filter``)."""
    first = next((c for c in name if c in "./"), ".")
    if first == ".":
        return name
    return name.translate(str.maketrans("./", "/."))


def namespace_of(name: str) -> str | None:
    """The kernel namespace a sysctl belongs to (pkg/kubelet/sysctl/namespace.go): ``net``, ``ipc``, or None."""
    if name.startswith("net."):
        return "net"
    if name.startswith(("kernel.shm", "kernel.msg", "fs.mqueue.")) or name == "kernel.sem":
        return "ipc"
    return None


def cluster_minor(graph: Graph, region: str) -> tuple[int, int] | None:
    """The region's cluster's Kubernetes minor; EKS's default (the newest read) when it sets none; None if unknown."""
    clusters = graph.of_type(CLUSTER, region)
    if len(clusters) != 1:
        return None
    version = clusters[0].inputs.get("version")
    if version is None:
        return NEWEST_READ
    match = MINOR.match(version) if isinstance(version, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


@dataclass(frozen=True)
class Allowed:
    """What a node group's kubelets allow beyond the safe set: names and prefixes, or anything (unknown)."""

    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    anything: bool = False

    def admits(self, name: str) -> bool:
        return self.anything or name in self.names or name.startswith(self.prefixes)


def _patterns(values: Any) -> list[str]:
    if isinstance(values, str):
        return [v.strip() for v in values.split(",") if v.strip()]
    return [str(v) for v in values] if isinstance(values, list) else []


def unsafe_allowed(text: str) -> Allowed:
    """The ``allowedUnsafeSysctls`` user data gives the kubelet; ``anything`` when it names some this cannot read."""
    if not MENTIONS.search(text):
        return Allowed()
    found = [p for m in UNSAFE_FLAG.finditer(text) for p in _patterns(m.group(1))]
    try:  # Bottlerocket: TOML settings
        settings = tomllib.loads(text).get("settings")
        if isinstance(settings, dict):
            found += _patterns((settings.get("kubernetes") or {}).get("allowed-unsafe-sysctls"))
    except tomllib.TOMLDecodeError:
        pass
    message = email.message_from_string(text.lstrip())
    parts = message.get_payload() if message.is_multipart() else [message]
    for part in parts if isinstance(parts, list) else []:
        body = part.get_payload(decode=False) if isinstance(part, email.message.Message) else None
        try:
            for doc in yaml.safe_load_all(body) if isinstance(body, str) else []:
                if isinstance(doc, dict):
                    config = ((doc.get("spec") or {}).get("kubelet") or {}).get("config") or {}
                    found += _patterns(config.get("allowedUnsafeSysctls") if isinstance(config, dict) else None)
        except yaml.YAMLError:
            continue
    if not found:
        return Allowed(anything=True)
    names = [dotted(p) for p in found]
    return Allowed(frozenset(n for n in names if not n.endswith("*")), tuple(n[:-1] for n in names if n.endswith("*")))


def group_allows(graph: Graph, group: NodeGroup) -> Allowed:
    named, template = launch_template(graph, group.resource)
    if named and template is None:
        return Allowed(anything=True)  # a launch template made elsewhere: its user data is not known
    if template is None:
        return Allowed()
    raw = template.inputs.get("userData")
    if raw is None:
        return Allowed()
    if not isinstance(raw, str):
        return Allowed(anything=True)
    return unsafe_allowed(user_data_text(raw))


def refusal(name: str, pod: Mapping[str, Any], safe: frozenset[str], allowed: Allowed) -> str | None:
    """Why the kubelet refuses sysctl ``name`` (dotted) in ``pod`` on a node allowing ``allowed``; None if it admits it."""
    if name not in safe and not allowed.admits(name):
        return f'"{name}" not allowlisted'
    space = namespace_of(name)
    if (space == "net" and pod.get("hostNetwork") is True) or (space == "ipc" and pod.get("hostIPC") is True):
        return f'"{name}" not allowed with host {space} enabled'
    return None


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        minor = cluster_minor(graph, region)
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        if minor is None or minor > NEWEST_READ or not groups or graph.kube(region, *OTHER_NODE_KINDS):
            continue
        safe = safe_sysctls(minor)
        allows = {g.resource.urn: group_allows(graph, g) for g in groups}
        for workload in graph.pod_bearers(region):
            pod = workload.pod_template().get("spec")
            if not isinstance(pod, dict):
                continue
            context = pod.get("securityContext")
            sysctls = context.get("sysctls") if isinstance(context, dict) else None
            names = [dotted(s["name"]) for s in sysctls or [] if isinstance(s, dict) and isinstance(s.get("name"), str)]
            if not names:
                continue
            landing = [g for g in groups if lands_on(pod, g)]
            refusing: dict[str, str] = {}
            for group in landing:
                why = next((w for n in names if (w := refusal(n, pod, safe, allows[group.resource.urn]))), None)
                if why is not None:
                    refusing[group.resource.name] = why
            if refusing:
                yield _finding(workload, minor, landing, refusing)


def _finding(
    workload: KubeObject, minor: tuple[int, int], landing: list[NodeGroup], refusing: dict[str, str]
) -> Finding:
    what = f"{workload.kind} {workload.namespace}/{workload.name}"
    every = len(refusing) == len(landing)
    reasons = "; ".join(f"{group}: forbidden sysctl: {why}" for group, why in refusing.items())
    where = (
        "every node group it may land on"
        if every
        else f"node groups {', '.join(refusing)} (of {', '.join(g.resource.name for g in landing)} it may land on)"
    )
    return Finding(
        RULE,
        workload.urn,
        f"{what}'s pods set sysctls the kubelet of {where} refuses on Kubernetes {minor[0]}.{minor[1]} (safe set: "
        f"pkg/kubelet/sysctl/safe_sysctls.go; no allowedUnsafeSysctls in the node's kubelet config): {reasons}. The "
        "kubelet rejects each pod bound there (status Failed, reason SysctlForbidden) and the scheduler, which does "
        "not know sysctls, places the replacement there again"
        + (", so it never becomes ready and pulumi up's await times out" if every else ""),
        "drop the sysctl (or use one of the safe set, or set it in the image's entrypoint where it is not "
        "namespaced), or allow it on a node group (nodeadm NodeConfig spec.kubelet.config.allowedUnsafeSysctls in "
        "its launch template) and pin the pod to that group with a nodeSelector and a taint it tolerates",
    )
