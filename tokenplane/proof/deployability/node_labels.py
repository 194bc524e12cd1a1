"""A node group's labels and taints are ones EKS accepts and the kubelet may set on its own Node.

A node's kubelet registers the Node with the labels it is given (``--node-labels``: what a managed node group's
``labels`` become, and what a launch template's user data passes through nodeadm's ``kubelet.flags``, bootstrap.sh's
``--kubelet-extra-args`` or Bottlerocket's ``settings.kubernetes.node-labels``). The NodeRestriction admission plugin
lets a kubelet set only some keys under ``kubernetes.io``/``k8s.io`` on itself, and the kubelet refuses to start with
any other: kubernetes ``cmd/kubelet/app/options/options.go`` fails "unknown 'kubernetes.io' or 'k8s.io' labels
specified with --node-labels" for a key of those namespaces (or their subdomains) that
``k8s.io/kubelet/pkg/apis.IsKubeletLabel`` refuses; it allows the set ``KUBELET_LABELS`` and the namespaces
``kubelet.kubernetes.io`` and ``node.kubernetes.io`` with their subdomains. ``node-role.kubernetes.io/<role>`` is not
among them (https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#noderestriction).

EKS's managed node group API refuses such labels itself, and more: any label or taint key under ``kubernetes.io/``,
``k8s.io/`` or ``eks.amazonaws.com/`` (CreateNodegroup InvalidParameterException "Label cannot contain reserved
prefixes [kubernetes.io/, k8s.io/, eks.amazonaws.com/]" and "Taint cannot contain reserved prefixes [...]":
eksctl-io/eksctl#4007, aws/containers-roadmap#1451, kubernetes/cloud-provider-aws#242; EKS documents no exception).
Its API reference bounds the rest (API_CreateNodegroup.html, API_Taint.html, API_UpdateLabelsPayload.html): label
keys and values of 1-63 characters, at most 50 taints, taint keys of 1-63 and values of 0-63 characters, effects
``NO_SCHEDULE``, ``NO_EXECUTE``, ``PREFER_NO_SCHEDULE``; values are Kubernetes label values (alphanumerics, ``-_.``,
alphanumeric at both ends: "field must consist of alphanumeric characters, '-', '_' or '.'",
aws-controllers-k8s/community#2208).

So a managed node group with such a label or taint is never created (``pulumi up`` fails at it), and a launch
template whose user data gives the kubelet such a label makes nodes that never join (NodeCreationFailure "Instances
failed to join the kubernetes cluster": terraform-aws-modules/terraform-aws-eks#3346).

Cannot see: labels added after registration (by a controller or ``kubectl label``, which NodeRestriction does not
bind), and user data known only at apply time or in a launch template the program does not create.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph
from tokenplane.proof.deployability.node_disk import launch_template
from tokenplane.proof.deployability.node_user_data import user_data_text
from tokenplane.proof.render import RenderedResource

RULE = "node-group-labels"
# The prefixes CreateNodegroup refuses in a label or taint key (its error names them).
EKS_RESERVED = ("kubernetes.io", "k8s.io", "eks.amazonaws.com")
# k8s.io/kubelet/pkg/apis/well_known_labels.go: kubeletLabels and kubeletLabelNamespaces.
KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
    }
)
KUBELET_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
KUBERNETES_NAMESPACES = ("kubernetes.io", "k8s.io")
EFFECTS = ("NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE")
MAX_TAINTS = 50
MAX_LENGTH = 63
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
# --node-labels=k=v,k2=v2 (or a space before the list), as nodeadm's kubelet.flags, bootstrap.sh's
# --kubelet-extra-args and a plain kubelet command line write it.
NODE_LABELS_FLAG = re.compile(r"--node-labels[=\s]+([^\s'\"\]\\]+)")


def _in(namespace: str, domains: tuple[str, ...]) -> bool:
    return any(namespace == d or namespace.endswith("." + d) for d in domains)


def _namespace(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def eks_reserved(key: str) -> bool:
    """Whether CreateNodegroup refuses ``key`` as a label or taint key (a reserved prefix)."""
    return _in(_namespace(key), EKS_RESERVED)


def kubelet_refuses(key: str) -> bool:
    """Whether the kubelet refuses ``key`` in --node-labels (kubernetes' options.go with IsKubeletLabel)."""
    namespace = _namespace(key)
    if not _in(namespace, KUBERNETES_NAMESPACES):
        return False
    return key not in KUBELET_LABELS and not _in(namespace, KUBELET_NAMESPACES)


def check(graph: Graph) -> Iterator[Finding]:
    for group in graph.of_type(NODE_GROUP):
        yield from _api(group)
        yield from _user_data(graph, group)


def _refused(group: RenderedResource, what: str, fix: str) -> Finding:
    return Finding(
        RULE,
        group.urn,
        f"node group {group.name}: {what}; CreateNodegroup fails with InvalidParameterException and the node group "
        "is never created",
        fix,
    )


def _api(group: RenderedResource) -> Iterator[Finding]:
    labels = group.inputs.get("labels") or {}
    for raw_key, value in labels.items() if isinstance(labels, dict) else []:
        key = str(raw_key)
        if eks_reserved(key):
            yield _refused(
                group,
                f"label {key!r} is under a prefix EKS reserves ('Label cannot contain reserved prefixes "
                "[kubernetes.io/, k8s.io/, eks.amazonaws.com/]'; the kubelet may not set it on its Node either)",
                f"label it under your own prefix (e.g. {_own(key)}); a node role shown by kubectl cannot come from "
                "the node group",
            )
        elif not 1 <= len(key) <= MAX_LENGTH:
            yield _refused(group, f"label key {key[:70]!r} is {len(key)} characters (1-{MAX_LENGTH})", "shorten it")
        if isinstance(value, str) and (not 1 <= len(value) <= MAX_LENGTH or not LABEL_VALUE.match(value)):
            yield _refused(
                group,
                f"label {key!r} has value {value[:70]!r}: EKS takes 1-{MAX_LENGTH} characters of letters, digits, "
                "'-', '_' and '.', beginning and ending with a letter or digit",
                "give it such a value (e.g. 'true')",
            )
    taints = [t for t in group.inputs.get("taints") or [] if isinstance(t, dict)]
    if len(taints) > MAX_TAINTS:
        yield _refused(group, f"{len(taints)} taints (at most {MAX_TAINTS})", f"keep {MAX_TAINTS} or fewer")
    for taint in taints:
        taint_key, value, effect = taint.get("key"), taint.get("value"), taint.get("effect")
        if isinstance(taint_key, str) and eks_reserved(taint_key):
            yield _refused(
                group,
                f"taint {taint_key!r} is under a prefix EKS reserves ('Taint cannot contain reserved prefixes "
                "[kubernetes.io/, k8s.io/, eks.amazonaws.com/]')",
                f"taint it under your own prefix (e.g. {_own(taint_key)}) and tolerate that key",
            )
        elif isinstance(taint_key, str) and not 1 <= len(taint_key) <= MAX_LENGTH:
            yield _refused(
                group, f"taint key {taint_key[:70]!r} is {len(taint_key)} characters (1-{MAX_LENGTH})", "shorten it"
            )
        if isinstance(value, str) and (len(value) > MAX_LENGTH or not LABEL_VALUE.match(value)):
            yield _refused(
                group,
                f"taint {taint_key!r} has value {value[:70]!r}: EKS takes 0-{MAX_LENGTH} characters of letters, digits, "
                "'-', '_' and '.', beginning and ending with a letter or digit",
                "give it such a value, or none",
            )
        if isinstance(effect, str) and effect not in EFFECTS:
            yield _refused(
                group,
                f"taint {taint_key!r} has effect {effect!r} (EKS spells them {', '.join(EFFECTS)})",
                f"write the effect as one of {', '.join(EFFECTS)}",
            )


def _own(key: str) -> str:
    name = key.split("/", 1)[-1]
    return f"'example.com/{name}'"


def _user_data(graph: Graph, group: RenderedResource) -> Iterator[Finding]:
    _, template = launch_template(graph, group)
    raw = template.inputs.get("userData") if template is not None else None
    if template is None or not isinstance(raw, str) or not raw.strip():
        return
    refused = sorted({k for k in node_labels(user_data_text(raw)) if kubelet_refuses(k)})
    if not refused:
        return
    yield Finding(
        RULE,
        group.urn,
        f"node group {group.name}'s launch template {template.name} gives the kubelet --node-labels "
        f"{', '.join(refused)}: the kubelet refuses to start (\"unknown 'kubernetes.io' or 'k8s.io' labels specified "
        'with --node-labels"; NodeRestriction lets a kubelet set only kubelet.kubernetes.io/, node.kubernetes.io/ '
        "and the well-known topology/os/arch/instance-type keys), so its nodes never join and the node group fails "
        "NodeCreationFailure",
        "label under your own prefix or node.kubernetes.io/ (e.g. node.kubernetes.io/role), or set the label after "
        "registration from a controller",
    )


def node_labels(text: str) -> list[str]:
    """The label keys user data passes to the kubelet: --node-labels lists, and Bottlerocket's
    ``settings.kubernetes.node-labels`` table."""
    keys = [
        pair.split("=", 1)[0].strip()
        for match in NODE_LABELS_FLAG.finditer(text)
        for pair in match.group(1).split(",")
        if pair.strip()
    ]
    try:
        settings = tomllib.loads(text).get("settings")
    except tomllib.TOMLDecodeError:
        return keys
    table = (settings or {}).get("kubernetes", {}).get("node-labels") if isinstance(settings, dict) else None
    return keys + [str(k) for k in table] if isinstance(table, dict) else keys
