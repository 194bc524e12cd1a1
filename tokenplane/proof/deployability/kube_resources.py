"""The API groups and resources (with their subresources) that a Kubernetes API server serves by itself.

Source: the Kubernetes API reference (https://kubernetes.io/docs/reference/kubernetes-api/, each kind's plural
resource and its ``/status``, ``/scale``... operations) and the discovery a cluster answers (``kubectl
api-resources``; a resource's subresources are the ``name/sub`` entries of ``/apis/<group>/<version>``), written by
hand for Kubernetes 1.29 to 1.37 as their union, alpha and beta groups included (a cluster may turn them on), so a
resource served by any of those releases counts as served. Left out: ``extensions``, a group removed in 1.22, that no
EKS version still serves. Kept: ``policy/podsecuritypolicies`` (removed in 1.25), so that an old rule is not judged.
Beside the served resources, the names that the authorizers ask RBAC about without a REST path: the kubelet's
``nodes/{stats,metrics,log,spec,pods,healthz,configz,checkpoint,proxy}`` (pkg/kubelet/server/auth.go), impersonation's
``users``, ``groups``, ``serviceaccounts`` and ``userextras/<key>``, ``uids`` (staging/src/k8s.io/apiserver/pkg/
endpoints/filters/impersonation.go) and the certificate ``signers`` ("approve", "sign"). ``metrics.k8s.io`` is
metrics-server's aggregated API (https://github.com/kubernetes-sigs/metrics-server): pods and nodes.

``covers(group, version)`` checks the table against the kinds the cluster's release has (the OpenAPI schemas
``render.validate_manifest`` reads, one per group/version/kind): a group with a kind the table lacks (a release newer
than the table) is not judged.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re

_STATUS = ("status",)
_SCALE = ("scale", "status")

# group -> resource -> its subresources
BUILT_IN: dict[str, dict[str, tuple[str, ...]]] = {
    "": {
        "bindings": (),
        "componentstatuses": (),
        "configmaps": (),
        "endpoints": (),
        "events": (),
        "limitranges": (),
        "namespaces": ("finalize", "status"),
        "nodes": ("proxy", "status", "stats", "metrics", "log", "spec", "pods", "healthz", "configz", "checkpoint"),
        "persistentvolumeclaims": _STATUS,
        "persistentvolumes": _STATUS,
        "pods": (
            "attach",
            "binding",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "proxy",
            "resize",
            "status",
        ),
        "podtemplates": (),
        "replicationcontrollers": _SCALE,
        "resourcequotas": _STATUS,
        "secrets": (),
        "serviceaccounts": ("token",),
        "services": ("proxy", "status"),
        "users": (),  # impersonation
        "groups": (),  # impersonation
    },
    "admissionregistration.k8s.io": {
        "mutatingwebhookconfigurations": (),
        "validatingwebhookconfigurations": (),
        "validatingadmissionpolicies": _STATUS,
        "validatingadmissionpolicybindings": (),
        "mutatingadmissionpolicies": (),
        "mutatingadmissionpolicybindings": (),
    },
    "apiextensions.k8s.io": {"customresourcedefinitions": _STATUS},
    "apiregistration.k8s.io": {"apiservices": _STATUS},
    "apps": {
        "controllerrevisions": (),
        "daemonsets": _STATUS,
        "deployments": _SCALE,
        "replicasets": _SCALE,
        "statefulsets": _SCALE,
    },
    "authentication.k8s.io": {"selfsubjectreviews": (), "tokenreviews": (), "uids": (), "userextras": ()},
    "authorization.k8s.io": {
        "localsubjectaccessreviews": (),
        "selfsubjectaccessreviews": (),
        "selfsubjectrulesreviews": (),
        "subjectaccessreviews": (),
    },
    "autoscaling": {"horizontalpodautoscalers": _STATUS},
    "batch": {"cronjobs": _STATUS, "jobs": _STATUS},
    "certificates.k8s.io": {
        "certificatesigningrequests": ("approval", "status"),
        "clustertrustbundles": (),
        "podcertificaterequests": _STATUS,
        "signers": (),
    },
    "coordination.k8s.io": {"leases": (), "leasecandidates": ()},
    "discovery.k8s.io": {"endpointslices": ()},
    "events.k8s.io": {"events": ()},
    "flowcontrol.apiserver.k8s.io": {"flowschemas": _STATUS, "prioritylevelconfigurations": _STATUS},
    "internal.apiserver.k8s.io": {"storageversions": _STATUS},
    "networking.k8s.io": {
        "ingressclasses": (),
        "ingresses": _STATUS,
        "ipaddresses": (),
        "networkpolicies": _STATUS,
        "servicecidrs": _STATUS,
    },
    "node.k8s.io": {"runtimeclasses": ()},
    "policy": {"poddisruptionbudgets": _STATUS, "podsecuritypolicies": ()},
    "rbac.authorization.k8s.io": {"clusterrolebindings": (), "clusterroles": (), "rolebindings": (), "roles": ()},
    "resource.k8s.io": {
        "deviceclasses": (),
        "devicetaintrules": _STATUS,
        "podschedulingcontexts": _STATUS,
        "resourceclaims": _STATUS,
        "resourceclaimtemplates": (),
        "resourceclasses": (),
        "resourceslices": (),
        "resourcepoolstatusrequests": _STATUS,
    },
    "scheduling.k8s.io": {"priorityclasses": (), "workloads": (), "podgroups": _STATUS, "compositepodgroups": _STATUS},
    "lifecycle.k8s.io": {"evictionrequests": _STATUS},
    "storage.k8s.io": {
        "csidrivers": (),
        "csinodes": (),
        "csistoragecapacities": (),
        "storageclasses": (),
        "volumeattachments": _STATUS,
        "volumeattributesclasses": (),
    },
    "storagemigration.k8s.io": {"storageversionmigrations": _STATUS},
    "metrics.k8s.io": {"nodes": (), "pods": ()},
}
# A resource whose subresource is any name (impersonation's userextras/<extra key>).
ANY_SUBRESOURCE = {("authentication.k8s.io", "userextras")}


def names(group: str) -> set[str]:
    """Every resource and resource/subresource of a built-in group, as an RBAC rule spells them."""
    out: set[str] = set()
    for resource, subresources in BUILT_IN.get(group, {}).items():
        out.add(resource)
        out.update(f"{resource}/{sub}" for sub in subresources)
    return out


def serves(group: str, resource: str) -> bool:
    """Whether built-in ``group`` has ``resource`` as an RBAC rule names it: exact, or ``*/sub`` (any resource's
    subresource ``sub``), as rbacv1 ResourceMatches compares them; ``*`` matches anything."""
    table = BUILT_IN.get(group)
    if table is None:
        return False
    if resource == "*":
        return True
    base, slash, sub = resource.partition("/")
    if base == "*" and slash:
        return any(sub in subs for subs in table.values())
    if not slash:
        return base in table
    return base in table and (sub in table[base] or ((group, base) in ANY_SUBRESOURCE and sub not in ("", "*")))


IRREGULAR_PLURALS = {"Endpoints": "endpoints"}


def plural(kind: str) -> str:
    """A built-in kind's resource name (its lowercase plural: Pod pods, NetworkPolicy networkpolicies)."""
    if kind in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[kind]
    lower = kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":  # NetworkPolicy networkpolicies, Gateway gateways
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    return lower + "s"


@functools.lru_cache(maxsize=16)
def release_kinds(kubernetes_version: str) -> dict[str, frozenset[str]]:
    """group -> the kinds Kubernetes ``kubernetes_version`` defines (its OpenAPI definitions' group-version-kinds)."""
    from kubernetes_validate import utils  # type: ignore[import-untyped]  # the package ships no type hints

    def minor(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in utils.major_minor(v).split(".") if p.isdigit())

    known = utils.all_versions()
    version = ([v for v in known if minor(v) <= minor(kubernetes_version)] or known[:1])[-1]
    root = importlib.resources.files("kubernetes_validate") / f"kubernetes-json-schema/v{version}-local-strict"
    definitions = json.loads((root / "_definitions.json").read_text())
    out: dict[str, set[str]] = {}
    for definition in (definitions.get("definitions") or {}).values():
        for gvk in definition.get("x-kubernetes-group-version-kind") or []:
            kind = str(gvk.get("kind"))
            if re.fullmatch(r"[A-Z]\w*", kind) and not kind.endswith(("List", "Options")):
                out.setdefault(str(gvk.get("group")), set()).add(kind)
    return {group: frozenset(kinds) for group, kinds in out.items()}


NOT_RESOURCES = frozenset(
    {"WatchEvent", "Status", "APIGroup", "APIVersions", "APIResource", "Scale", "Eviction", "Binding", "TokenRequest"}
)


def covers(group: str, kubernetes_version: str) -> bool:
    """Whether the table holds every resource of ``group`` that the release defines a kind for."""
    table = BUILT_IN.get(group)
    if table is None:
        return False
    kinds = release_kinds(kubernetes_version).get(group, frozenset())
    return all(plural(k) in table for k in kinds - NOT_RESOURCES)
