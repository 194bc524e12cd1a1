"""Roles and bindings as the API server's RBAC validators see them (part of ``api-validation``).

Sources: kubernetes/kubernetes ``pkg/apis/rbac/validation/validation.go`` (ValidateRole, ValidateClusterRole,
validatePolicyRule, ValidateRoleBinding, ValidateClusterRoleBinding, validateRoleBindingSubject), after the v1
defaults (``pkg/apis/rbac/v1/defaults.go``: an empty roleRef.apiGroup becomes rbac.authorization.k8s.io, a User's
or Group's empty subject apiGroup too, a ServiceAccount's stays ""). A rejected create fails ``pulumi up``, and
whatever waits on the binding (the workload whose pods use it) is never created.

- a rule: verbs required; a resource rule names apiGroups and resources, and resourceNames only with one resource;
  nonResourceURLs not in a (namespaced) Role, and not beside apiGroups, resources or resourceNames;
- a binding's roleRef: apiGroup rbac.authorization.k8s.io, kind Role or ClusterRole (a ClusterRoleBinding:
  ClusterRole only: a Role is namespaced and cannot grant cluster-wide), a name that is a path segment;
- a subject: a name; kind ServiceAccount, User or Group; a ServiceAccount's name a DNS-1123 subdomain
  (ValidateServiceAccountName), its apiGroup "", and in a ClusterRoleBinding its namespace (a RoleBinding's
  ServiceAccount subject defaults to the binding's namespace; a ClusterRoleBinding has none to default to); a
  User's or Group's apiGroup rbac.authorization.k8s.io.

``roleRef`` is immutable ("cannot change roleRef", ValidateRoleBindingUpdate): that is an update of a deployed
binding, which pulumi-kubernetes answers by replacing the binding; it is not judged offline.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.object_validation import rejected, unsupported

GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")
ROLES = ("Role", "ClusterRole")
BINDINGS = ("RoleBinding", "ClusterRoleBinding")


def check(graph: Graph) -> Iterator[Finding]:
    for role in graph.kube(None, *ROLES):
        for i, rule in enumerate(role.manifest.get("rules") or []):
            if isinstance(rule, dict):
                yield from _rule(role, f"rules[{i}]", rule)
    for binding in graph.kube(None, *BINDINGS):
        yield from _binding(binding)


def _rule(role: KubeObject, at: str, rule: Mapping[str, Any]) -> Iterator[Finding]:
    urls, groups, resources, names = (
        rule.get(f) or [] for f in ("nonResourceURLs", "apiGroups", "resources", "resourceNames")
    )
    if not rule.get("verbs"):
        yield rejected(
            role,
            f"has {at} without verbs",
            "validatePolicyRule: verbs: Required value: verbs must contain at least one value",
            "list the verbs the rule grants (get, list, watch, ...)",
        )
    if urls:
        if role.kind == "Role":
            yield rejected(
                role,
                f"has {at}.nonResourceURLs {urls}",
                "validatePolicyRule: nonResourceURLs: Invalid value: namespaced rules cannot apply to non-resource URLs",
                "grant non-resource URLs (/metrics, /healthz) in a ClusterRole, bound by a ClusterRoleBinding",
            )
        if groups or resources or names:
            yield rejected(
                role,
                f"has {at} with nonResourceURLs beside apiGroups/resources/resourceNames",
                "validatePolicyRule: nonResourceURLs: Invalid value: rules cannot apply to both regular resources and "
                "non-resource URLs",
                "split it into two rules: one with apiGroups and resources, one with nonResourceURLs",
            )
        return
    if not groups:
        yield rejected(
            role,
            f"has {at} without apiGroups",
            "validatePolicyRule: apiGroups: Required value: resource rules must supply at least one api group",
            'name the resources\' API groups ("" is the core group: pods, nodes, services, ...)',
        )
    if not resources:
        yield rejected(
            role,
            f"has {at} without resources",
            "validatePolicyRule: resources: Required value: resource rules must supply at least one resource",
            "list the resources (plural, lowercase: pods, deployments, ...)",
        )
    if names and len(resources) > 1:
        yield rejected(
            role,
            f"has {at} with resourceNames across {len(resources)} resources",
            "validatePolicyRule: resourceNames: Required value: resource names cannot apply to multiple resources",
            "give each resource whose objects are named its own rule",
        )


def _binding(binding: KubeObject) -> Iterator[Finding]:
    ref = binding.manifest.get("roleRef")
    ref = ref if isinstance(ref, dict) else {}
    group = ref.get("apiGroup") or GROUP
    if group != GROUP:
        yield unsupported(
            binding, "roleRef.apiGroup", group, (GROUP,), f"Validate{binding.kind}", f"set roleRef.apiGroup {GROUP}"
        )
    kinds = ROLES if binding.kind == "RoleBinding" else ("ClusterRole",)
    if ref.get("kind") not in kinds:
        fix = (
            "bind a ClusterRole (a Role is namespaced: grant it with a RoleBinding in its namespace)"
            if binding.kind == "ClusterRoleBinding"
            else "set roleRef.kind Role or ClusterRole"
        )
        yield unsupported(binding, "roleRef.kind", ref.get("kind"), kinds, f"Validate{binding.kind}", fix)
    name = ref.get("name")
    if not name:
        yield rejected(
            binding, "has no roleRef.name", f"Validate{binding.kind}: roleRef.name: Required value", "name the role"
        )
    elif str(name) in (".", "..") or any(c in str(name) for c in "/%"):
        yield rejected(
            binding,
            f"has roleRef.name {name!r}",
            f"Validate{binding.kind}: roleRef.name: Invalid value: ValidatePathSegmentName",
            "name the role without '/' or '%'",
        )
    for i, subject in enumerate(binding.manifest.get("subjects") or []):
        if isinstance(subject, dict):
            yield from _subject(binding, f"subjects[{i}]", subject)


def _subject(binding: KubeObject, at: str, subject: Mapping[str, Any]) -> Iterator[Finding]:
    kind, name, group = subject.get("kind"), subject.get("name"), subject.get("apiGroup")
    source = "validateRoleBindingSubject"
    if not name:
        yield rejected(binding, f"has {at} without a name", f"{source}: {at}.name: Required value", f"name the {kind}")
    if kind not in SUBJECT_KINDS:
        yield unsupported(
            binding,
            f"{at}.kind",
            kind,
            SUBJECT_KINDS,
            source,
            "bind a ServiceAccount, a User or a Group (case matters)",
        )
    elif kind == "ServiceAccount":
        if isinstance(name, str) and name and (errors := syntax.is_dns1123_subdomain(name)):
            yield rejected(
                binding,
                f"has {at}.name {name!r}, which {'; '.join(errors)}",
                f"{source}: ValidateServiceAccountName",
                "name the ServiceAccount as it is named (a DNS-1123 subdomain), without the system:serviceaccount: prefix",
            )
        if group:
            yield unsupported(
                binding,
                f"{at}.apiGroup",
                group,
                ("",),
                source,
                'drop apiGroup from the ServiceAccount subject (it is "")',
            )
        if binding.kind == "ClusterRoleBinding" and not subject.get("namespace"):
            yield rejected(
                binding,
                f"has {at} ServiceAccount {name!r} without a namespace",
                f"{source}: {at}.namespace: Required value (a ClusterRoleBinding has no namespace for the "
                "ServiceAccount to default to)",
                "give the subject the namespace the ServiceAccount lives in",
            )
    elif (group or GROUP) != GROUP:
        yield unsupported(binding, f"{at}.apiGroup", group, (GROUP,), source, f"set apiGroup {GROUP} (or leave it out)")
