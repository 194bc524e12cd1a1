"""The rules set 44's admission-policy misses led to (written after its blind run, so not held out), planted in the
shipped dev render (an EKS cluster in region "local", with the EBS CSI add-on) beside correct twins: the API
server's validation of a ValidatingAdmissionPolicyBinding and its policy (api-validation: validationActions with
Warn before Deny, a repeated or lowercase action, no actions, no policyName, a paramRef with name and selector, a
policy without matchConstraints or with an empty expression), and a bound policy's CEL that denies the cluster's own
workloads (admission-denies-workloads: a hostNetwork ban in every namespace but llm-serving, a privileged ban bound
to kube-system alone, a required label on the gateways' Deployments, an image-registry rule on Deployments, an
erroring pod-path expression on StatefulSets/Deployments under failurePolicy Fail). The held-out cases were a
Deny+Warn binding, a cluster-wide privileged ban and a Deployment policy reading a pod's path."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import admission_policies, object_validation
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
_findings = partial(planted_findings, stack=STACK)
PODS = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}
DEPLOYMENTS = {
    "apiGroups": ["apps"],
    "apiVersions": ["v1"],
    "operations": ["CREATE", "UPDATE"],
    "resources": ["deployments"],
}
NOT_PRIVILEGED = "!has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged"
PRIVILEGED_BAN = f"object.spec.containers.all(c, {NOT_PRIVILEGED}) && (!has(object.spec.initContainers) || object.spec.initContainers.all(c, {NOT_PRIVILEGED}))"
TOKENPLANE = ["llm-serving", "llm-gateway", "llm-data", "llm-batch"]


def _policy(name: str, rule: dict[str, Any], expression: str, **spec: Any) -> RenderedResource:
    body = {"matchConstraints": {"resourceRules": [rule]}, "validations": [{"expression": expression, "message": "no"}]}
    return planted(
        STACK,
        POLICY,
        f"planted-{name}",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {**body, **spec},
        },
        region=REGION,
    )


def _binding(
    name: str, actions: Any = ("Deny",), namespaces: dict[str, Any] | None = None, **spec: Any
) -> RenderedResource:
    body: dict[str, Any] = {"policyName": name, **spec}
    if actions is not None:
        body["validationActions"] = list(actions)
    if namespaces is not None:
        body["matchResources"] = {"namespaceSelector": namespaces}
    return planted(
        STACK,
        BINDING,
        f"planted-{name}-binding",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": body,
        },
        region=REGION,
    )


def _names(values: list[str], operator: str = "In") -> dict[str, Any]:
    return {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": operator, "values": values}]}


# --- api-validation: the binding's and the policy's own validation -------------------------------------------------


@pytest.mark.parametrize(
    ("binding", "words"),
    [
        (_binding("p", ["Warn", "Deny"]), "must not contain both Deny and Warn"),
        (_binding("p", ["Audit", "Audit"]), "lists Audit twice"),
        (_binding("p", ["deny"]), 'Unsupported value: "deny"'),
        (_binding("p", []), "at least one validation action is required"),
        (_binding("p", None), "has no spec.validationActions"),
        (_binding("", ["Deny"]), "has no spec.policyName"),
        (_binding("p", ["Deny"], paramRef={"name": "a", "selector": {}}), "name and selector are mutually exclusive"),
    ],
)
def test_a_binding_the_api_server_refuses_is_flagged(binding: RenderedResource, words: str) -> None:
    found = _findings(object_validation.check, binding)
    assert any(words in f.message for f in found), found


@pytest.mark.parametrize("actions", [["Deny", "Audit"], ["Warn"], ["Warn", "Audit"], ["Deny"], ["Audit"]])
def test_a_binding_with_allowed_actions_is_not_flagged(actions: list[str]) -> None:
    assert _findings(object_validation.check, _binding("p", actions, _names(TOKENPLANE))) == []


def test_a_policy_the_api_server_refuses_is_flagged() -> None:
    no_constraints = _policy("a", PODS, "true")
    no_constraints.inputs["spec"].pop("matchConstraints")
    empty = _policy("b", PODS, "")
    found = _findings(object_validation.check, no_constraints, empty)
    assert any("spec.matchConstraints: Required value" in f.message for f in found), found
    assert any("expression is not specified" in f.message for f in found), found
    assert _findings(object_validation.check, _policy("c", PODS, PRIVILEGED_BAN)) == []


# --- admission-denies-workloads --------------------------------------------------------------------------------


def _denials(*resources: RenderedResource) -> list[str]:
    return [f.message for f in _findings(admission_policies.check, *resources)]


def test_a_host_network_ban_outside_one_namespace_denies_aws_node() -> None:
    ban = "!has(object.spec.hostNetwork) || !object.spec.hostNetwork"
    found = _denials(
        _policy("no-host-net", PODS, ban), _binding("no-host-net", namespaces=_names(["llm-serving"], "NotIn"))
    )
    assert any("aws-node" in m and "never becomes Ready" in m for m in found), found
    scoped = _denials(_policy("no-host-net", PODS, ban), _binding("no-host-net", namespaces=_names(TOKENPLANE)))
    assert scoped == []


def test_a_privileged_ban_bound_to_kube_system_denies_kube_proxy_and_the_ebs_node_plugin() -> None:
    selector = {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}
    found = _denials(_policy("no-priv", PODS, PRIVILEGED_BAN), _binding("no-priv", ["Deny", "Audit"], selector))
    assert len(found) == 1, found
    assert "aws-node" in found[0] and "kube-proxy" in found[0] and "ebs-csi-node" in found[0], found


def test_a_required_label_denies_the_gateways_deployments() -> None:
    found = _denials(
        _policy("team-label", DEPLOYMENTS, "has(object.metadata.labels) && 'team' in object.metadata.labels"),
        _binding("team-label", namespaces={"matchLabels": {"kubernetes.io/metadata.name": "llm-gateway"}}),
    )
    assert any("Deployment llm-gateway/" in m and "pulumi up fails" in m for m in found), found


def test_a_registry_rule_on_deployments_denies_them() -> None:
    rule = "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.internal.example/'))"
    found = _denials(_policy("registry", DEPLOYMENTS, rule), _binding("registry", namespaces=_names(TOKENPLANE)))
    assert any("Deployment llm-" in m for m in found), found


def test_a_pod_path_on_a_deployment_errors_and_denies_under_fail_only() -> None:
    rule = "object.spec.volumes.all(v, !has(v.hostPath))"
    fail = _denials(_policy("host-path", DEPLOYMENTS, rule), _binding("host-path", namespaces=_names(TOKENPLANE)))
    assert any("no such key: volumes" in m for m in fail), fail
    ignore = _denials(
        _policy("host-path", DEPLOYMENTS, rule, failurePolicy="Ignore"),
        _binding("host-path", namespaces=_names(TOKENPLANE)),
    )
    assert ignore == []


@pytest.mark.parametrize(
    "resources",
    [
        # no Deny: Warn and Audit never refuse a request
        (_policy("no-priv", PODS, PRIVILEGED_BAN), _binding("no-priv", ["Warn", "Audit"])),
        # the tokenplane namespaces only: nothing there is privileged
        (_policy("no-priv", PODS, PRIVILEGED_BAN), _binding("no-priv", namespaces=_names(TOKENPLANE))),
        # a Kubernetes CEL extension the library lacks: unknown, not wrong
        (
            _policy(
                "limits",
                PODS,
                "object.spec.containers.all(c, quantity(c.resources.limits.cpu).isLessThan(quantity('1')))",
            ),
            _binding("limits"),
        ),
        # a field the API server defaults before admission: not judged on the manifests
        (_policy("strategy", DEPLOYMENTS, "object.spec.strategy.type == 'Recreate'"), _binding("strategy")),
        # a parameterised policy: its params are unknown
        (
            _policy("params", PODS, "false", paramKind={"apiVersion": "v1", "kind": "ConfigMap"}),
            _binding("params", paramRef={"name": "p", "parameterNotFoundAction": "Deny"}),
        ),
        # a binding whose policy does not exist
        (_binding("nowhere"),),
    ],
)
def test_policies_that_deny_nothing_the_rule_can_judge_are_not_flagged(resources: tuple[RenderedResource, ...]) -> None:
    assert _denials(*resources) == []
