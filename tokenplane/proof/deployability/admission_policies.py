"""A ValidatingAdmissionPolicy and its binding do not deny the cluster's own workloads.

A ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) judges every request its ``matchConstraints`` and its
binding's ``matchResources`` select (resourceRules: apiGroups, apiVersions, resources, operations; a
namespaceSelector over the namespace's labels, an objectSelector over the object's; a binding without
matchResources matches every namespace) by its CEL ``validations``. A validation that evaluates to false denies the
request where the binding's validationActions hold Deny; one whose evaluation errors (``no such key: containers``)
denies it too under failurePolicy Fail, the default
(https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/, "Matching requests",
"Validation actions", "Failure policy"; type checking only warns, in status.typeChecking). The rule evaluates each
bound policy's validations, with a CEL library (``common-expression-language``), on what it will meet as a CREATE
(``object``, ``oldObject`` null, ``request``):

- the program's own rendered Kubernetes objects, and the Pods its workloads' controllers create from their
  templates: a denied one fails ``pulumi up`` (and, with the policy in place first, every later rollout);
- the pods EKS runs on every node whatever the program does (the DaemonSet controller's pod creations are
  admitted like any other): aws-node (amazon-vpc-cni-k8s config/master/aws-k8s-cni.yaml: its aws-vpc-cni-init init
  container and its network policy agent are privileged), kube-proxy (privileged), and the EBS CSI node plugin
  where the add-on is installed (aws-ebs-csi-driver charts: the ebs-plugin container is privileged); a denied node
  pod never starts, so a new node's network never comes up and it never becomes Ready.

Only what is sure is reported. Expressions the library cannot compile, or that use what it lacks (Kubernetes CEL
extensions: ``quantity()``, ``url()``, regex and list extensions, ``authorizer``; ``params``, ``variables``,
``namespaceObject``), are skipped as unknown, not wrong; so are policies with a paramKind or matchConditions that do
not evaluate to true. On the program's objects an expression that reads a field the API server fills by default
before admission (a Deployment's strategy, a container's imagePullPolicy, ...) is skipped; on the EKS node pods,
which the rule models only in part (names, namespace, securityContext, hostNetwork; not the labels the DaemonSet
controller adds), an expression that reads any other field, or an objectSelector, is not judged.

Cannot see: mutating admission (policies or webhooks) that changes an object before validation, UPDATE and DELETE
requests, objects that Helm charts or operators create, CoreDNS and other add-ons' pods, and policies created
outside the program.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability import reachability
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, Graph, KubeObject
from tokenplane.proof.deployability.kube_resources import plural

RULE = "admission-denies-workloads"
ADDON = "aws:eks/addon:Addon"
NAME_LABEL = "kubernetes.io/metadata.name"
# Fields the API server sets by default before validating admission runs (pkg/apis/*/v1/defaults.go): an expression
# that reads one of them is not judged on the program's manifests, which lack them.
DEFAULTED = frozenset(
    {
        "strategy",
        "revisionHistoryLimit",
        "progressDeadlineSeconds",
        "replicas",
        "updateStrategy",
        "podManagementPolicy",
        "minReadySeconds",
        "restartPolicy",
        "dnsPolicy",
        "schedulerName",
        "terminationGracePeriodSeconds",
        "enableServiceLinks",
        "imagePullPolicy",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "protocol",
        "successThreshold",
        "failureThreshold",
        "periodSeconds",
        "timeoutSeconds",
        "sessionAffinity",
        "type",
        "ipFamilies",
        "ipFamilyPolicy",
        "internalTrafficPolicy",
        "clusterIP",
        "clusterIPs",
        "uid",
        "creationTimestamp",
        "generation",
        "resourceVersion",
        "status",
        "managedFields",
        "preemptionPolicy",
        "priority",
        "concurrencyPolicy",
        "suspend",
        "backoffLimit",
        "completionMode",
        "podReplacementPolicy",
        "parallelism",
        "completions",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
        "defaultMode",
        "targetPort",
        "scheme",
        "apiVersion",
        "fieldPath",
        "ownerReferences",
    }
)
# What the EKS node pods below model faithfully: an expression reading anything else is not judged on them.
MODELLED = frozenset(
    {
        "metadata",
        "name",
        "namespace",
        "spec",
        "containers",
        "initContainers",
        "securityContext",
        "privileged",
        "hostNetwork",
        "kind",
        "operation",
    }
)
UNSUPPORTED = re.compile(r"\b(params|variables|namespaceObject|authorizer|quantity|url|ip|cidr|format)\b")
FIELD = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\()?")


@dataclass(frozen=True)
class Target:
    """One CREATE the policy may meet: the object, where it comes from, and what its denial breaks."""

    group: str
    version: str
    resource: str
    namespace: str | None
    obj: dict[str, Any]
    what: str
    consequence: str
    system: bool  # an EKS node pod the rule models in part


def _pod(name: str, containers: list[dict[str, Any]], init: list[dict[str, Any]], labels: dict[str, str]) -> Any:
    spec: dict[str, Any] = {"hostNetwork": True, "containers": containers}
    if init:
        spec["initContainers"] = init
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{name}-x7k2p", "namespace": "kube-system", "labels": labels, "generateName": f"{name}-"},
        "spec": spec,
    }


PRIVILEGED = {"privileged": True}
NODE_NOT_READY = (
    "it never starts on a node that joins (the GPU group's first node, every scale-out, every node group update), "
    "so the node's pod network never comes up, it never becomes Ready and nothing schedules there"
)


def eks_node_pods(has_ebs_csi: bool) -> list[Target]:
    """The node pods EKS runs (aws-k8s-cni.yaml, kube-proxy, the EBS CSI node plugin), as CREATEs of pods."""
    pods = [
        (
            "aws-node",
            _pod(
                "aws-node",
                [
                    {"name": "aws-node", "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_RAW"]}}},
                    {
                        "name": "aws-eks-nodeagent",
                        "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}, "privileged": True},
                    },
                ],
                [{"name": "aws-vpc-cni-init", "securityContext": dict(PRIVILEGED)}],
                {"k8s-app": "aws-node"},
            ),
        ),
        (
            "kube-proxy",
            _pod(
                "kube-proxy",
                [{"name": "kube-proxy", "securityContext": dict(PRIVILEGED)}],
                [],
                {"k8s-app": "kube-proxy"},
            ),
        ),
    ]
    if has_ebs_csi:
        pods.append(
            (
                "ebs-csi-node",
                _pod(
                    "ebs-csi-node",
                    [
                        {"name": "ebs-plugin", "securityContext": dict(PRIVILEGED)},
                        {
                            "name": "node-driver-registrar",
                            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
                        },
                        {
                            "name": "liveness-probe",
                            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
                        },
                    ],
                    [],
                    {"app": "ebs-csi-node"},
                ),
            )
        )
    return [
        Target(
            "", "v1", "pods", "kube-system", pod, f"EKS's {name} DaemonSet's pods in kube-system", NODE_NOT_READY, True
        )
        for name, pod in pods
    ]


def _defaulted_pod(template: Mapping[str, Any], owner: str, namespace: str) -> dict[str, Any]:
    """A controller's pod CREATE from ``template``, with the defaults the checks may read set as the API server sets
    them (SetDefaults_PodSpec: an empty securityContext; a container's resources are always present)."""
    spec = dict(template.get("spec") or {})
    spec.setdefault("securityContext", {})
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [{"resources": {}, **c} if isinstance(c, dict) else c for c in spec[key]]
    meta = dict(template.get("metadata") or {})
    meta["namespace"] = namespace
    meta.setdefault("name", f"{owner}-x7k2p")  # generateName is resolved before admission
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def own_targets(graph: Graph, region: str) -> list[Target]:
    out = []
    for o in graph.kube_objects:
        if o.resource.region != region or o.is_patch or not o.kind or "metadata" not in o.manifest:
            continue
        if o.kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "CustomResourceDefinition"):
            continue
        api = str(o.manifest.get("apiVersion", ""))
        group, _, version = api.rpartition("/")
        namespaced = "namespace" in (o.manifest.get("metadata") or {})
        fails = "once the policy is in place the API server refuses its create (a fresh stack, a replacement), so pulumi up fails"
        out.append(
            Target(
                group,
                version,
                plural(o.kind),
                o.namespace if namespaced else None,
                o.manifest,
                f"{o.kind} {o.namespace}/{o.name}",
                fails,
                False,
            )
        )
        template = o.pod_template()
        if template and o.kind != "Pod":
            out.append(
                Target(
                    "",
                    "v1",
                    "pods",
                    o.namespace,
                    _defaulted_pod(template, o.name, o.namespace),
                    f"the pods of {o.kind} {o.namespace}/{o.name}",
                    "its controller's pod creates are refused, so it never has a running pod",
                    False,
                )
            )
    return out


OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def selects(selector: Any, labels: Mapping[str, Any]) -> bool | None:
    """A label selector over ``labels`` (an absent one selects all); None where it cannot be decided (a value unknown
    at render time, an operator the API server would refuse)."""
    if selector is None:
        return True
    if not isinstance(selector, dict) or not all(
        isinstance(v, str) for v in (selector.get("matchLabels") or {}).values()
    ):
        return None
    for expr in selector.get("matchExpressions") or []:
        if not (
            isinstance(expr, dict)
            and isinstance(expr.get("key"), str)
            and expr.get("operator") in OPERATORS
            and all(isinstance(v, str) for v in expr.get("values") or [])
        ):
            return None
    return reachability.selects(selector, {str(k): str(v) for k, v in labels.items()})


def _rule_matches(rule: Any, target: Target) -> bool | None:
    if not isinstance(rule, dict):
        return None

    def within(field: str, value: str) -> bool | None:
        listed = rule.get(field)
        if not isinstance(listed, list) or not all(isinstance(v, str) for v in listed):
            return None
        return "*" in listed or value in listed

    checks = [
        within("apiGroups", target.group),
        within("apiVersions", target.version),
        within("resources", target.resource),
        within("operations", "CREATE"),
    ]
    if any(c is False for c in checks):
        return False
    if any(c is None for c in checks):
        return None
    scope = rule.get("scope", "*")
    namespaced = target.namespace is not None
    return not ((scope == "Namespaced" and not namespaced) or (scope == "Cluster" and namespaced))


def _matches(match: Any, target: Target, namespaces: Mapping[str, dict[str, Any]], *, required: bool) -> bool | None:
    """Whether matchConstraints / matchResources select the target's CREATE."""
    if match is None:
        return None if required else True
    if not isinstance(match, dict):
        return None
    rules = match.get("resourceRules")
    if rules is not None:
        if not isinstance(rules, list):
            return None
        found = [_rule_matches(r, target) for r in rules]
        if True not in found:
            return None if None in found else False
    elif required:
        return False  # a policy's matchConstraints without resourceRules matches nothing
    excluded = [_rule_matches(r, target) for r in match.get("excludeResourceRules") or []]
    if True in excluded:
        return False
    if None in excluded:
        return None
    labels = (target.obj.get("metadata") or {}).get("labels") or {}
    object_selector = match.get("objectSelector")
    if target.system and object_selector not in (None, {}):
        return None  # the node pods' labels are modelled only in part
    results = [selects(object_selector, labels if isinstance(labels, dict) else {})]
    if target.namespace is not None:
        ns_labels = namespaces.get(target.namespace, {NAME_LABEL: target.namespace})
        results.append(selects(match.get("namespaceSelector"), ns_labels))
    if False in results:
        return False
    return None if None in results else True


def _namespaces(graph: Graph, region: str) -> dict[str, dict[str, Any]]:
    """Each namespace's labels: the program's Namespaces' own plus the name label the API server sets."""
    out: dict[str, dict[str, Any]] = {}
    for ns in graph.kube(region, "Namespace"):
        labels = (ns.manifest.get("metadata") or {}).get("labels") or {}
        out[ns.name] = {**(labels if isinstance(labels, dict) else {}), NAME_LABEL: ns.name}
    return out


def fields(expression: str) -> set[str]:
    """The field names an expression selects (``.name``, not method calls ``.all(``)."""
    return {m.group(1) for m in FIELD.finditer(expression) if not m.group(2)}


def evaluate(expression: str, activation: dict[str, Any]) -> tuple[bool | None, str]:
    """(True/False, "") for a result; (False, error) where evaluation errors on a missing key (a denial under
    failurePolicy Fail); (None, "") where the library cannot judge it (unknown)."""
    try:
        import cel  # common-expression-language
    except ImportError:
        return None, ""
    try:
        result = cel.evaluate(expression, activation)
    except KeyError as error:
        return False, f"no such key: {error.args[0] if error.args else error}"
    except Exception:  # a parse error, an extension it lacks, a type it cannot handle: unknown
        return None, ""
    return (result, "") if isinstance(result, bool) else (None, "")


def _activation(target: Target) -> dict[str, Any]:
    return {
        "object": target.obj,
        "oldObject": None,
        "request": {
            "operation": "CREATE",
            "namespace": target.namespace or "",
            "kind": {"group": target.group, "version": target.version, "kind": target.obj.get("kind", "")},
            "resource": {"group": target.group, "version": target.version, "resource": target.resource},
        },
    }


def check(graph: Graph) -> Iterator[Finding]:
    regions = sorted({o.resource.region for o in graph.kube_objects if o.resource.region is not None})
    for region in regions:
        policies = {p.name: p for p in graph.kube(region, "ValidatingAdmissionPolicy")}
        bindings = graph.kube(region, "ValidatingAdmissionPolicyBinding")
        if not policies or not bindings:
            continue
        targets = own_targets(graph, region)
        if graph.of_type(CLUSTER, region):
            ebs = any(a.inputs.get("addonName") == "aws-ebs-csi-driver" for a in graph.of_type(ADDON, region))
            targets += eks_node_pods(ebs)
        namespaces = _namespaces(graph, region)
        for binding in bindings:
            spec = binding.manifest.get("spec") or {}
            policy = policies.get(str(spec.get("policyName")))
            actions = spec.get("validationActions")
            if policy is None or not isinstance(actions, list) or "Deny" not in actions:
                continue
            yield from _judge(binding, policy, targets, namespaces)


def _judge(
    binding: KubeObject, policy: KubeObject, targets: list[Target], namespaces: Mapping[str, dict[str, Any]]
) -> Iterator[Finding]:
    spec = policy.manifest.get("spec") or {}
    if spec.get("paramKind") is not None:
        return
    fail = spec.get("failurePolicy", "Fail") == "Fail"
    conditions = spec.get("matchConditions") or []
    validations = [v for v in spec.get("validations") or [] if isinstance(v, dict)]
    match_resources = (binding.manifest.get("spec") or {}).get("matchResources")
    for validation in validations:
        expression = validation.get("expression")
        if not isinstance(expression, str) or UNSUPPORTED.search(expression):
            continue
        names = fields(expression)
        denied = []
        for target in targets:
            if (target.system and not names <= MODELLED) or (not target.system and names & DEFAULTED):
                continue
            if _matches(spec.get("matchConstraints"), target, namespaces, required=True) is not True:
                continue
            if _matches(match_resources, target, namespaces, required=False) is not True:
                continue
            activation = _activation(target)
            if not all(_condition(c, activation) for c in conditions):
                continue
            result, error = evaluate(expression, activation)
            if result is False and (not error or fail):
                denied.append((target, error))
        if denied:
            yield _finding(binding, policy, validation, expression, denied)


def _condition(condition: Any, activation: dict[str, Any]) -> bool:
    """A matchCondition that surely holds (else the policy may not apply: not judged)."""
    expression = condition.get("expression") if isinstance(condition, dict) else None
    if not isinstance(expression, str) or UNSUPPORTED.search(expression):
        return False
    result, error = evaluate(expression, activation)
    return result is True and not error


def _finding(
    binding: KubeObject,
    policy: KubeObject,
    validation: dict[str, Any],
    expression: str,
    denied: list[tuple[Target, str]],
) -> Finding:
    first, error = denied[0]
    outcome = (
        f"resulted in error: {error} (failurePolicy Fail denies the request)"
        if error
        else f"is false ({validation.get('message') or 'failed expression: ' + expression!r})"
    )
    others = [t.what for t, _ in denied[1:4]]
    more = (
        f"; so are {', '.join(others)}" + (f" and {len(denied) - 4} more" if len(denied) > 4 else "") if others else ""
    )
    return Finding(
        RULE,
        binding.urn,
        f"ValidatingAdmissionPolicy {policy.name!r} with binding {binding.name!r} denies {first.what}: its "
        f"expression {expression!r}, evaluated on that CREATE, {outcome}, so {first.consequence}{more}",
        "scope the binding's matchResources (a namespaceSelector on the namespaces meant, excluding kube-system) or "
        "the policy's matchConstraints to the objects meant, and write the expression for the fields of the kind it "
        "matches (a Deployment's containers are at object.spec.template.spec.containers)",
    )
