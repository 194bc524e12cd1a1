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
the API server's or EKS's own (cluster-admin, admin, edit, view, system:*, eks:*: the bootstrap roles of
plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go, and those EKS creates, https://docs.aws.amazon.com/eks/
latest/userguide/default-roles-users.html). A roleRef kind Role that names a ClusterRole of the program (or kind
ClusterRole naming the program's Role in the binding's namespace) is the usual form of this mistake, and is judged
even beside Helm releases: the authorizer looks the name up under the roleRef's kind only
(pkg/registry/rbac/validation/rule.go, GetRoleReferenceRules, returns NotFound), so the program's role of the other
kind grants nothing through the binding.

``rbac-rule-resolves``: nor does the API server check that a rule's ``apiGroups`` and ``resources`` name anything
(pkg/apis/rbac/validation/validation.go, validatePolicyRule, only asks for some), and the authorizer compares them by
exact string: a rule's group matches a request's group when equal or ``*`` (APIGroupMatches), its resource when
equal to the request's resource or ``resource/subresource``, ``*``, or ``*/subresource`` (ResourceMatches,
pkg/apis/rbac/v1/evaluation_helpers.go; ``pods/*`` is no wildcard). So a rule that names the core group by its
version or a name (``v1``, ``core``: the core group is ``""``, https://kubernetes.io/docs/reference/
access-authn-authz/rbac/#role-example), a group/version (``apps/v1``), a singular, capitalised or misspelt resource
(``deployment``, ``Pods``) or subresource (``pods/logs``: the subresource is ``pods/log``,
https://kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to-resources) is accepted and grants
nothing: its subjects are refused ("... cannot get resource "pods/log" in API group "" ..."). Judged against the
API groups and resources Kubernetes serves itself (``kube_resources``, checked against the cluster release's
kinds): a rule's resource is flagged when none of the rule's groups serves it. A rule with a group the check cannot
know (``*``, a dotted group that is not Kubernetes' own: a CRD's, the program's charts' or an aggregated API's) is
not judged; a dotless group other than Kubernetes' own, or one that is no DNS subdomain, is no group any cluster
serves (a CRD's group "should be a domain with at least one dot", ValidateCustomResourceDefinitionSpec).
ClusterRoles with an aggregationRule (whose rules the controller writes) are not judged.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability import kube_resources
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject
from tokenplane.proof.deployability.targets import kubernetes_version

RULE = "rbac-grant-token"
ROLE = "rbac-role-exists"
RULES = "rbac-rule-resolves"
CORE_ALIASES = frozenset({"v1", "core", "core/v1", "api", "api/v1"})
BINDINGS = ("RoleBinding", "ClusterRoleBinding")
AWS_AUDIENCES = frozenset({"sts.amazonaws.com", "pods.eks.amazonaws.com"})
BUILT_IN_ROLES = frozenset({"cluster-admin", "admin", "edit", "view"})
BUILT_IN_PREFIXES = ("system:", "eks:")


def subjects(binding: KubeObject) -> Iterator[tuple[str, str]]:
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
            for key in subjects(binding):
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
                'kubernetes.io/serviceaccount/token: no such file or directory", '
                + (
                    "and every run of the Job fails"
                    if pod.kind in ("Job", "CronJob")
                    else "the process exits and the pod crash-loops, and Pulumi's await on it times out"
                ),
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
                if (binding.namespace, name) in roles:
                    continue
                if binding.namespace in charted and name not in cluster_roles:
                    continue  # a chart in the namespace may make it; a ClusterRole of the name says it is the kind
                other = (
                    " (a ClusterRole of that name exists: roleRef.kind ClusterRole)" if name in cluster_roles else ""
                )
            elif kind == "ClusterRole":
                if name in cluster_roles or name in BUILT_IN_ROLES or name.startswith(BUILT_IN_PREFIXES):
                    continue
                found = any(
                    r == name and (binding.kind == "ClusterRoleBinding" or ns == binding.namespace) for ns, r in roles
                )
                if releases and not found:
                    continue  # a chart may make it; a Role of the name beside the binding says it is the kind
                other = (
                    " (a Role of that name exists: roleRef.kind Role, in a RoleBinding; the authorizer looks the name "
                    "up as a ClusterRole only)"
                    if found
                    else ""
                )
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


def check_rules(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        version = kubernetes_version(graph, region)
        for role in graph.kube(region, "Role", "ClusterRole"):
            if role.manifest.get("aggregationRule"):
                continue
            for i, rule in enumerate(role.manifest.get("rules") or []):
                if isinstance(rule, dict) and not rule.get("nonResourceURLs"):
                    yield from _rule(role, f"rules[{i}]", rule, version)


def _rule(role: KubeObject, at: str, rule: Mapping[str, Any], version: str) -> Iterator[Finding]:
    groups, resources = rule.get("apiGroups"), rule.get("resources")
    if not isinstance(groups, list) or not isinstance(resources, list) or not groups or not resources:
        return  # unknown at render time, or a rule api-validation refuses
    if not all(isinstance(g, str) for g in [*groups, *resources]):
        return
    served: list[str] = []
    unserved: list[str] = []
    for group in groups:
        if group == "*":
            return
        if group in kube_resources.BUILT_IN:
            if not kube_resources.covers(group, version):
                return  # a release newer than the table: its resources are not all known here
            served.append(group)
        elif "." not in group or syntax.is_dns1123_subdomain(group):
            unserved.append(group)
        else:
            return  # a CRD's or an aggregated API's group: its resources are not known here
    dead = [r for r in resources if not any(kube_resources.serves(g, r) for g in served)]
    if not dead:
        return
    who = f"{role.namespace}/{role.name}" if role.kind == "Role" else role.name
    verbs = [str(v) for v in rule.get("verbs") or []]
    group_notes = [_group_note(g) for g in unserved]
    meant = [g for _, _, g in group_notes if g is not None]
    notes, fixes = [n for n, _, _ in group_notes], [f for _, f, _ in group_notes if f]
    requests = []  # (resource, group) of each request the rule was meant to allow
    for resource in dead:
        note, fix, right, group = _resource_note(resource, served, meant)
        notes.append(note)
        fixes += [fix] if fix else []
        requests.append((right, group))
    name, group = requests[0]
    lost = "this rule grants nothing" if len(dead) == len(resources) else f"it grants nothing on {', '.join(dead)}"
    yield Finding(
        RULES,
        role.urn,
        f"{role.kind} {who} {at} grants {', '.join(verbs) or 'nothing'} on {', '.join(dead)} in API groups "
        f"{json.dumps(groups)}, which no group of the rule serves ({'; '.join(notes)}): the API "
        "server does not validate a rule's groups and resources, and RBAC matches them by exact string, so the "
        f"role is created and {lost}: its subjects are refused (... cannot "
        f'{verbs[0] if verbs else "get"} resource "{name}" in API group "{group}" ...)',
        "; ".join(dict.fromkeys(fixes)) or "name the resources as the API serves them (kubectl api-resources)",
    )


def _serving_groups(resource: str) -> list[str]:
    return [g for g in kube_resources.BUILT_IN if kube_resources.serves(g, resource)]


def _group_note(group: str) -> tuple[str, str, str | None]:
    """(why the group is none, the fix, the group meant where it is plain)."""
    name, slash, _ = group.partition("/")
    if group.lower() in CORE_ALIASES or (slash and name.lower() in CORE_ALIASES):
        return f'"{group}" is no API group: the core group (pods, services, ...) is ""', 'write apiGroups [""]', ""
    if slash and name in kube_resources.BUILT_IN:
        return f'"{group}" is a group/version: the group is "{name}"', f'write apiGroups ["{name}"]', name
    if group.lower() in kube_resources.BUILT_IN:
        lower = group.lower()
        return f'"{group}" is no API group (groups are lowercase)', f'write apiGroups ["{lower}"]', lower
    if group == "extensions":
        return '"extensions" is no longer served (removed in Kubernetes 1.22)', "", None
    return f'"{group}" is no API group the cluster serves', "", None


def _resource_note(resource: str, served: list[str], meant: list[str]) -> tuple[str, str, str, str]:
    """(why the resource matches nothing, the fix, the resource and group a request for it has)."""
    base, slash, sub = resource.partition("/")
    if any(kube_resources.serves(g, resource) for g in meant):
        group = next(g for g in meant if kube_resources.serves(g, resource))
        return f'{resource} is served in API group "{group}"', "", resource, group
    if elsewhere := _serving_groups(resource):
        where = " or ".join(f'"{g}"' for g in elsewhere)
        return (
            f"{resource} is served in API group {where}",
            f"put {resource} under apiGroups [{where}]",
            resource,
            elsewhere[0],
        )
    groups = [*served, *meant]
    if slash and sub == "*" and base != "*":
        subs = sorted({s for g in groups for s in kube_resources.BUILT_IN[g].get(base, ())})
        return (
            f'"{resource}" is no wildcard (RBAC matches "*" and "*/subresource" only)',
            f"list the subresources meant ({', '.join(f'{base}/{s}' for s in subs) or 'none here'})",
            resource,
            groups[0] if groups else "",
        )
    known = {n: g for g in reversed(groups) for n in kube_resources.names(g)}
    lower = resource.lower()
    close = [lower] if lower in known else difflib.get_close_matches(lower, sorted(known), n=1, cutoff=0.75)
    if close:
        right = close[0]
        why = "resources are lowercase" if right == lower else f'the resource is "{right}"'
        return f'"{resource}" is not served ({why})', f'write "{right}"', right, known[right]
    where = ", ".join(f'"{g}"' for g in groups) or "none"
    return f'no group of the rule ({where}) has "{resource}"', "", resource, groups[0] if groups else ""
