"""Every RBAC grant reaches a token, and names a role that exists.

``rbac-grant-token``: a RoleBinding or ClusterRoleBinding whose subject is a ServiceAccount grants Kubernetes API
access to the pods that run as it, and they use it with the token the kubelet projects at
``/var/run/secrets/kubernetes.io/serviceaccount/token``. A pod that mounts none (``automountServiceAccountToken:
false`` on the pod, or on the ServiceAccount with the pod silent, and no projected ``serviceAccountToken`` volume of
its own) was granted access it can never use: a client built from the in-cluster config (client-go's
rest.InClusterConfig, as kube-state-metrics, operators and controllers build theirs) fails with "open
/var/run/secrets/kubernetes.io/serviceaccount/token: no such file or directory", the process exits, the pod
crash-loops and Pulumi's await on the workload times out (https://kubernetes.io/docs/tasks/configure-pod-container/
configure-service-account/#opt-out-of-api-credential-automounting; https://kubernetes.io/docs/tasks/
run-application/access-api-from-pod/). The pod's own field wins over the ServiceAccount's. A projected token for
another audience is not the API's: IRSA's (``sts.amazonaws.com``) and EKS Pod Identity's (``pods.eks.amazonaws.com``),
which the EKS webhook injects anyway, authenticate to AWS only. tokenplane's ``kube.pod_spec`` mounts no token (its
workloads never call the API); a program that gives one of its pods a grant passes
``automountServiceAccountToken=True``. Judged for the program's own pods (a chart's are not in the graph).

``rbac-role-exists``: a binding's roleRef is resolved when a request is authorized, not when the binding is created,
so a binding to a Role or ClusterRole that does not exist is accepted and grants nothing: every API call of its
subjects is Forbidden ("... cannot list resource ..."). Judged where nothing else could create the role: a Role in a
namespace no Helm release installs into, a ClusterRole in a region with no Helm release at all, that is not one of
the API server's or EKS's own (cluster-admin, admin, edit, view, system:*, eks:*). A roleRef kind Role that names a
ClusterRole of the program (or the reverse) is the usual form of this mistake.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject

RULE = "rbac-grant-token"
ROLE = "rbac-role-exists"
BINDINGS = ("RoleBinding", "ClusterRoleBinding")
AWS_AUDIENCES = frozenset({"sts.amazonaws.com", "pods.eks.amazonaws.com"})
BUILT_IN_ROLES = frozenset({"cluster-admin", "admin", "edit", "view"})
BUILT_IN_PREFIXES = ("system:", "eks:")


def _subjects(binding: KubeObject) -> Iterator[tuple[str, str]]:
    """(namespace, name) of each ServiceAccount subject; a RoleBinding's defaults to its own namespace (the
    authorizer's appliesToUser, pkg/registry/rbac/validation/rule.go)."""
    for subject in binding.manifest.get("subjects") or []:
        if isinstance(subject, dict) and subject.get("kind") == "ServiceAccount" and subject.get("name"):
            default = binding.namespace if binding.kind == "RoleBinding" else ""
            namespace = subject.get("namespace") or default
            if namespace:  # a ClusterRoleBinding's subject without one is api-validation's
                yield str(namespace), str(subject["name"])


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        grants: dict[tuple[str, str], KubeObject] = {}
        for binding in graph.kube(region, *BINDINGS):
            for key in _subjects(binding):
                grants.setdefault(key, binding)
        if not grants:
            continue
        accounts = {(a.namespace, a.name): a for a in graph.kube(region, "ServiceAccount")}
        for pod in graph.pod_bearers(region):
            spec = pod.pod_spec()
            named = spec.get("serviceAccountName") or spec.get("serviceAccount")
            if not named:
                continue  # the namespace's default account: a pod that names none asks for no grant
            account = str(named)
            granted = grants.get((pod.namespace, account))
            if granted is None or _mounts_token(spec, accounts.get((pod.namespace, account))):
                continue
            binding = granted
            ref = binding.manifest.get("roleRef") or {}
            where = (
                "automountServiceAccountToken false on the pod"
                if spec.get("automountServiceAccountToken") is False
                else f"automountServiceAccountToken false on ServiceAccount {pod.namespace}/{account}"
            )
            yield Finding(
                RULE,
                pod.urn,
                f"{pod.kind} {pod.namespace}/{pod.name} runs as ServiceAccount {pod.namespace}/{account}, which "
                f"{binding.kind} {binding.name} grants Kubernetes API access ({ref.get('kind')} {ref.get('name')}), "
                f"but its pods mount no service-account token ({where}, and no projected serviceAccountToken "
                'volume): a client built from the in-cluster config fails with "open /var/run/secrets/'
                'kubernetes.io/serviceaccount/token: no such file or directory", the process exits and the pod '
                "crash-loops, and Pulumi's await on it times out",
                "set automountServiceAccountToken: true in the pod spec (kube.pod_spec(..., "
                "automountServiceAccountToken=True)), or project a serviceAccountToken volume and mount it at "
                "/var/run/secrets/kubernetes.io/serviceaccount; or drop the binding if the pod never calls the API",
            )


def _mounts_token(spec: Mapping[str, Any], account: KubeObject | None) -> bool:
    own = spec.get("automountServiceAccountToken")
    if own is None and account is not None:
        own = account.manifest.get("automountServiceAccountToken")
    if own is not False:
        return True
    for volume in spec.get("volumes") or []:
        sources = (volume.get("projected") or {}).get("sources") if isinstance(volume, dict) else None
        for source in sources or []:
            token = source.get("serviceAccountToken") if isinstance(source, dict) else None
            if isinstance(token, dict) and token.get("audience") not in AWS_AUDIENCES:
                return True
    return False


def check_roles(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        releases = graph.of_type(HELM_RELEASE, region)
        charted = {str(r.inputs.get("namespace") or "default") for r in releases}
        roles = {(r.namespace, r.name) for r in graph.kube(region, "Role")}
        cluster_roles = {r.name for r in graph.kube(region, "ClusterRole")}
        for binding in graph.kube(region, *BINDINGS):
            ref = binding.manifest.get("roleRef")
            if not isinstance(ref, dict) or not isinstance(ref.get("name"), str):
                continue
            kind, name = ref.get("kind"), ref["name"]
            if kind == "Role" and binding.kind == "RoleBinding":
                if (binding.namespace, name) in roles or binding.namespace in charted:
                    continue
                other = (
                    " (a ClusterRole of that name exists: roleRef.kind ClusterRole)" if name in cluster_roles else ""
                )
            elif kind == "ClusterRole":
                if name in cluster_roles or releases or name in BUILT_IN_ROLES or name.startswith(BUILT_IN_PREFIXES):
                    continue
                found = any(r == name for _, r in roles)
                other = " (a Role of that name exists: roleRef.kind Role, in a RoleBinding)" if found else ""
            else:
                continue  # a kind the API server refuses: api-validation's
            scope = f"in namespace {binding.namespace} " if kind == "Role" else ""
            who = f"{binding.namespace}/{binding.name}" if binding.kind == "RoleBinding" else binding.name
            yield Finding(
                ROLE,
                binding.urn,
                f"{binding.kind} {who} binds {kind} {name!r}, which the "
                f"program does not create {scope}and nothing else here would{other}: the API server accepts the "
                "binding (a roleRef is resolved per request) but it grants nothing, and every API call of its "
                "subjects is Forbidden",
                f"create the {kind} {name!r}{' in ' + binding.namespace if kind == 'Role' else ''}, or point roleRef "
                "at the role that holds the rules (kind and name as created)",
            )
